/**
 * The wallet's calls to the service that serves it (same origin): JSON with the device id header,
 * an Idempotency-Key where a retry must not act twice, a timeout. A refusal carries the service's
 * code and message.
 */
export class ApiError extends Error {
  readonly status: number;
  readonly code: string | null;
  constructor(status: number, code: string | null, message: string) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

const timeoutMs = 15_000;

async function call(method: 'GET' | 'POST', path: string, deviceId: string, body?: unknown, idempotencyKey?: string): Promise<unknown> {
  const headers: Record<string, string> = { 'x-device-id': deviceId };
  if (body !== undefined) headers['content-type'] = 'application/json';
  if (idempotencyKey !== undefined) headers['idempotency-key'] = idempotencyKey;
  let response: Response;
  try {
    response = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), signal: AbortSignal.timeout(timeoutMs) });
  } catch {
    throw new ApiError(0, 'offline', 'The service cannot be reached: this needs a connection.');
  }
  const text = await response.text();
  let parsed: unknown = null;
  try {
    parsed = text === '' ? null : JSON.parse(text);
  } catch {
    parsed = text;
  }
  if (!response.ok) {
    const record = (parsed ?? {}) as { code?: string; message?: string; detail?: { msg?: string; type?: string }[] };
    const message = record.message ?? record.detail?.[0]?.msg ?? `the service answered ${response.status}`;
    throw new ApiError(response.status, record.code ?? record.detail?.[0]?.type ?? null, message);
  }
  return parsed;
}

export const getJson = (path: string, deviceId: string): Promise<unknown> => call('GET', path, deviceId);
export const postJson = (path: string, deviceId: string, body: unknown, idempotencyKey?: string): Promise<unknown> => call('POST', path, deviceId, body, idempotencyKey);
