/**
 * The one error the adapter throws. `retryable` is the only thing a caller needs to decide what
 * to do: a Temporal activity rethrows a retryable error as-is (Temporal retries it with bounded
 * backoff, and the idempotency key makes the retry safe) and turns a non-retryable one into a
 * non-retryable application failure (a business refusal, a bad request, a bad credential).
 *
 * Retryable: timeouts, connection errors, HTTP 5xx, 429 and 408. Not retryable: every other 4xx
 * (validation, 401, 404, idempotency-key reuse), an answer we cannot parse, and a request the
 * adapter refuses to send.
 */

/** Codes the adapter assigns itself; codes from the gateway's error body are passed through as the gateway wrote them. */
export const gatewayClientErrorCodes = {
  timeout: 'TIMEOUT',
  network: 'NETWORK_ERROR',
  aborted: 'ABORTED',
  invalidResponse: 'INVALID_RESPONSE',
  invalidRequest: 'INVALID_REQUEST',
} as const;

export interface GatewayErrorDetail {
  code: string;
  description: string;
}

export interface GatewayErrorInit {
  operation: string;
  status: number | null;
  code: string;
  retryable: boolean;
  errors?: readonly GatewayErrorDetail[];
  retryAfterMs?: number | null;
  cause?: unknown;
}

export class GatewayError extends Error {
  /** The client method that failed, e.g. "createPayment". */
  readonly operation: string;
  /** HTTP status, or null when no answer arrived (timeout, connection error) or the request was never sent. */
  readonly status: number | null;
  /** The gateway's first error code, or one of `gatewayClientErrorCodes`, or a default per status. */
  readonly code: string;
  readonly retryable: boolean;
  /** Every error the gateway listed in its body. */
  readonly errors: readonly GatewayErrorDetail[];
  /** From a Retry-After header, when the gateway sent one. */
  readonly retryAfterMs: number | null;

  constructor(message: string, init: GatewayErrorInit) {
    super(message, init.cause === undefined ? undefined : { cause: init.cause });
    this.name = 'GatewayError';
    this.operation = init.operation;
    this.status = init.status;
    this.code = init.code;
    this.retryable = init.retryable;
    this.errors = init.errors ?? [];
    this.retryAfterMs = init.retryAfterMs ?? null;
  }
}

export function isGatewayError(error: unknown): error is GatewayError {
  return error instanceof GatewayError;
}

/** Whether an HTTP status means "try again later" rather than "this request is wrong". */
export function isRetryableStatus(status: number): boolean {
  return status >= 500 || status === 429 || status === 408;
}

/** The code used when the gateway's error body names none. */
export function defaultCodeForStatus(status: number): string {
  switch (status) {
    case 400:
      return 'BAD_REQUEST';
    case 401:
      return 'UNAUTHORIZED';
    case 403:
      return 'FORBIDDEN';
    case 404:
      return 'NOT_FOUND';
    case 408:
      return 'REQUEST_TIMEOUT';
    case 409:
      return 'CONFLICT';
    case 422:
      return 'UNPROCESSABLE';
    case 429:
      return 'RATE_LIMITED';
    default:
      return status >= 500 ? 'SERVER_ERROR' : `HTTP_${status}`;
  }
}

/**
 * What a failed call means for the caller, decided once here: `timeout` (no answer in time: the
 * call may or may not have happened), `unavailable` (the gateway failed: 5xx, no connection, an
 * answer we cannot read), `not_found` (404), `too_soon` (429: the gateway's own rate or cooldown,
 * with `retryAfterMs`), `refused` (any other 4xx: the request or our credential is wrong).
 */
export type GatewayFailureKind = 'timeout' | 'unavailable' | 'not_found' | 'too_soon' | 'refused';

export function gatewayFailureKind(error: GatewayError): GatewayFailureKind {
  if (error.code === gatewayClientErrorCodes.timeout || error.code === gatewayClientErrorCodes.aborted || error.status === 408) return 'timeout';
  if (error.status === null || error.status >= 500 || error.code === gatewayClientErrorCodes.invalidResponse) return 'unavailable';
  if (error.status === 404) return 'not_found';
  if (error.status === 429) return 'too_soon';
  return 'refused';
}
