/** Command-line options of the benchmarks. */

/** An option's whole number from `min` (1 unless given) to `max`, or an error naming the option. */
export function positiveInt(name: string, text: string, max: number, min = 1): number {
  const value = Number(text);
  if (!Number.isInteger(value) || value < min || value > max) throw new Error(`--${name} must be an integer from ${min} to ${max}, got "${text}"`);
  return value;
}
