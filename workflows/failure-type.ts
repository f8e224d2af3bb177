/** The domain code of a refusal: the `type` of the first ApplicationFailure in the cause chain. */
export function failureType(error: unknown): string {
  let current: unknown = error;
  for (let depth = 0; depth < 5 && typeof current === 'object' && current !== null; depth += 1) {
    const { type, cause } = current as { type?: unknown; cause?: unknown };
    if (typeof type === 'string') return type;
    current = cause;
  }
  return 'UNKNOWN';
}
