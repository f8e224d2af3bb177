/**
 * The one domain error type. Its codes are a closed set: `api/plugins/errors.ts` maps every code
 * to exactly one HTTP status in a `Record<ErrorCode, number>`, so adding a code here without a
 * status fails to compile. Codes are stable: clients branch on them.
 */
export const errorCodes = [
  // Generic
  'NOT_FOUND',
  'CONFLICT',
  'RATE_LIMITED',
  'SERVICE_UNAVAILABLE',
  // A header the request carries is malformed (named in the answer); checked before any use.
  'INVALID_HEADER',
  // A dependency (PostgreSQL, Temporal) did not answer within its configured bound, or refused
  // the connection: 503 with Retry-After, `details.dependency` naming it.
  'DEPENDENCY_TIMEOUT',
  'DEPENDENCY_UNAVAILABLE',
  // Administration authentication
  'UNAUTHENTICATED',
  'FORBIDDEN',
  'INVALID_CREDENTIALS',
  // Too many failed logins for this account: wait (Retry-After), or an operator unlocks it.
  'LOGIN_THROTTLED',
  // Administrators (super_admin routes and npm run admin): unknown name, name taken, and the
  // change that would leave no active super_admin.
  'ADMIN_USER_NOT_FOUND',
  'ADMIN_USER_EXISTS',
  'LAST_SUPER_ADMIN',
  // Feature flags (canary rollout)
  'FEATURE_NOT_ENABLED',
  // Money and ledger
  'INVALID_AMOUNT',
  'UNSUPPORTED_CURRENCY',
  'INSUFFICIENT_FUNDS',
  'ACCOUNT_FROZEN',
  'ACCOUNT_NOT_FOUND',
  'LEDGER_UNBALANCED',
  'LEDGER_INVALID_POSTING',
  'IDEMPOTENCY_KEY_REUSED',
  'IDEMPOTENCY_REQUEST_IN_PROGRESS',
  // PLCs and the offline protocol
  'PLC_NOT_FOUND',
  'PLC_INVALID',
  'PLC_ALREADY_EXISTS',
  'PLC_AMOUNT_ABOVE_MAXIMUM',
  'PLC_DAILY_LIMIT_EXCEEDED',
  'PLC_NOT_FRESH',
  'PLC_EXPIRED',
  'PLC_NOT_CANCELLABLE',
  'PLC_CANCELLED_AFTER_TRANSFER',
  'PLC_NOT_TRANSFERABLE',
  'PLC_MISMATCH',
  'DOUBLE_SPEND_DETECTED',
  'SIGNATURE_INVALID',
  'AUTHORIZATION_STALE',
  'AUTHORIZATION_REPLAYED',
  'RISK_FLAG_NOT_FOUND',
  // The blocklist (docs/protocol.md section 18): a key a fork proved to cheat is refused as
  // issuer, hop signer and bearer; an admin lifts a block that is in force.
  'KEY_BLOCKED',
  'KEY_NOT_BLOCKED',
  // Settlement
  'PLC_ALREADY_REDEEMED',
  'PLC_NOT_REDEEMABLE',
  'NOT_CURRENT_BEARER',
  'UNSUPPORTED_RAIL',
  'BOLETO_INVALID',
  'BOLETO_AMOUNT_MISMATCH',
  'GATEWAY_UNAVAILABLE',
  'GATEWAY_REFUSED',
  'WEBHOOK_UNAUTHORIZED',
  'CHARGE_NOT_FOUND',
  // Gateway webhooks and monitoring
  'WEBHOOK_NOT_FOUND',
  'WEBHOOK_COOLDOWN',
  'GATEWAY_ERROR',
  'GATEWAY_TIMEOUT',
  // Security: PIN and key backup (docs/security.md)
  'PIN_NOT_REGISTERED',
  'PIN_ALREADY_REGISTERED',
  'PIN_INCORRECT',
  'PIN_LOCKED',
  'PIN_RESET_EMAIL_UNAVAILABLE',
  'PIN_RESET_TOKEN_INVALID',
  'KEY_BACKUP_NOT_FOUND',
  'KEY_BACKUP_SIGNATURE_REQUIRED',
  'KEY_BACKUP_DEVICES_EXCEEDED',
  // An operator's retry of a settlement
  'REDEMPTION_NOT_FOUND',
  'REDEMPTION_ALREADY_SETTLED',
  'REDEMPTION_FAILED_FINAL',
  'REDEMPTION_NOT_STALLED',
  'RETRY_NOT_SUPPORTED',
  // Business customers and their API credentials (docs/b2b.md)
  'TAX_ID_INVALID',
  'B2B_CUSTOMER_NOT_FOUND',
  'B2B_CUSTOMER_EXISTS',
  'B2B_TRANSITION_INVALID',
  'B2B_CUSTOMER_NOT_ACTIVE',
  'API_KEY_NOT_FOUND',
  'API_KEY_ALREADY_ROTATED',
  'API_SCOPE_NOT_IN_PLAN',
  // A signed request refused (docs/b2b.md, "Refusals"): 401 for the credential or the signature, 403 for the right
  'API_SIGNATURE_MISSING',
  'API_KEY_UNKNOWN',
  'API_KEY_REVOKED',
  'API_KEY_EXPIRED',
  'API_TIMESTAMP_STALE',
  'API_SIGNATURE_INVALID',
  'API_NONCE_REPLAYED',
  'API_SCOPE_MISSING',
  // POS batch sync
  'POS_BATCH_TOO_LARGE',
  'POS_BATCH_CONFLICT',
  'POS_BATCH_IN_PROGRESS',
  'POS_DESTINATION_MISMATCH',
  // Reputation and progressive limits (docs/limits-and-fees.md)
  'REPUTATION_NOT_FOUND',
  'DEVICE_NOT_FOUND',
  'LIMIT_REQUEST_NOT_FOUND',
  'LIMIT_REQUEST_ALREADY_OPEN',
  'LIMIT_REQUEST_NOT_PENDING',
  'LIMIT_INCREASE_NOT_NEEDED',
  'LIMIT_ABOVE_CEILING',
  // Fees with consent (docs/limits-and-fees.md)
  'FEE_SCHEDULE_VERSION_UNKNOWN',
  'FEE_SCHEDULE_SUPERSEDED',
  'FEE_CONSENT_REQUIRED',
  'FEE_EXCEEDS_AMOUNT',
] as const;

export type ErrorCode = (typeof errorCodes)[number];

/**
 * `details.field` (and `details.location`, default "body") name the input at fault when the code
 * maps to 422, so the answer can take the HTTPValidationError shape.
 */
export class DomainError extends Error {
  readonly code: ErrorCode;
  readonly details: Record<string, unknown> | undefined;

  constructor(code: ErrorCode, message: string, details?: Record<string, unknown>) {
    super(message);
    this.name = 'DomainError';
    this.code = code;
    this.details = details;
  }
}

export function isDomainError(value: unknown): value is DomainError {
  return value instanceof DomainError;
}

/** Programmer errors: a broken invariant crashes loudly instead of being handled. */
export function assert(condition: unknown, message: string): asserts condition {
  if (!condition) throw new Error(`assertion failed: ${message}`);
}

/**
 * An error and the causes it wraps (`error.cause`), outermost first, at most `depth` of them: the
 * one walk every reader of a wrapped failure uses (a Temporal update failure around an activity
 * failure around the refusal, a pg error inside a pool error). Stops at the first link that is
 * not an object.
 */
export function* causesOf(error: unknown, depth = 6): Generator<object> {
  let current: unknown = error;
  for (let seen = 0; seen < depth && typeof current === 'object' && current !== null; seen += 1) {
    yield current;
    current = (current as { cause?: unknown }).cause;
  }
}
