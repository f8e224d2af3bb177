/**
 * The protocol library's one thrown error type. Builders and decoders throw it; the verifier
 * (`verifyPlc`) never throws and answers with a reason code instead (see chain.ts).
 *
 * Codes are a closed set and stable: callers (the API layer, the wallet) branch on them, and
 * `api/` maps them to its own domain errors.
 */
export const protocolErrorCodes = [
  /** A builder was given a value outside the protocol's ranges (amount, TTL, timestamp...). */
  'invalid_argument',
  /** Text that should be lowercase hex is not, or has the wrong length. */
  'invalid_hex',
  /** Text that should be base45 (RFC 9285) is not. */
  'invalid_base45',
  /** The compact transport form (CBOR or its PLC2: text) is malformed. */
  'invalid_transport',
  /** The PLC would not fit the transport text form (one QR code, version 40-L). */
  'transport_too_large',
  /** A JSON form (PLC or authorisation) fails its schema. */
  'invalid_json',
  /** A public key is not a canonical, non-small-order Ed25519 point. */
  'invalid_public_key',
  /** A secret key is not 32 bytes. */
  'invalid_secret_key',
  /** The signer of a new transfer record is not the PLC's current bearer. */
  'not_bearer',
  /** A new transfer record would break a chain rule; `detail.reason` names the rule. */
  'rule_violation',
  /** A sealed payload is too short, too long or of an unknown format version. */
  'sealed_malformed',
  /** A sealed payload failed authentication: wrong key, or tampered with. */
  'sealed_authentication_failed',
  /** A sealed payload was sealed by another key than the one the caller expected. */
  'unexpected_sender',
] as const;

export type ProtocolErrorCode = (typeof protocolErrorCodes)[number];

export class ProtocolError extends Error {
  readonly code: ProtocolErrorCode;
  readonly detail: Readonly<Record<string, unknown>> | undefined;

  constructor(code: ProtocolErrorCode, message: string, detail?: Record<string, unknown>) {
    super(message);
    this.name = 'ProtocolError';
    this.code = code;
    this.detail = detail;
  }
}

export function isProtocolError(value: unknown): value is ProtocolError {
  return value instanceof ProtocolError;
}
