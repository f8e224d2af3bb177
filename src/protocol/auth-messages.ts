/**
 * Signed authorisation messages: everything a key authorises besides a transfer. Each message
 * starts with its own domain prefix and carries a timestamp (milliseconds since the Unix epoch)
 * that the server checks for freshness (`checkFreshness`) and never accepts twice.
 *
 *   cancel   "svc:cancel:v2:" (14) | token id (16) | commitment hash (32) | timestamp u64 (8)      = 70 bytes
 *   redeem   "svc:redeem:v2:" (14) | token id (16) | chain head hash (32) | timestamp u64 (8)
 *            | rail length u8 | rail ASCII | destination length u16 | destination UTF-8
 *   backup   UTF-8 "svc:backup:{device_id}:{public_key}:{operation_timestamp}"
 *   recover  UTF-8 "svc:recover:{device_id}:{public_key}:{operation_timestamp}"
 *
 * In the text messages `public_key` is 64 lowercase hex digits and `operation_timestamp` the
 * decimal milliseconds without leading zeros. No message is 32 bytes long, so none can be
 * confused with the issuer's signature over a 32-byte commitment hash; the binary prefixes and
 * the text prefixes differ in their first bytes, so no two kinds can be confused with each other.
 */
import {
  authFreshnessWindowMsDefault,
  destinationBytesMax,
  deviceIdPattern,
  domainTags,
  hashBytes,
  publicKeyBytes,
  settlementRails,
  signatureBytes,
  type SettlementRail,
} from './constants.ts';
import { bytesToHex, concatBytes, isBytes, isTimestampMs, u16be, u64be, u8, utf8, uuidToBytes } from './bytes.ts';
import { sha256 } from '@noble/hashes/sha2.js';
import { ProtocolError } from './errors.ts';
import { isValidPublicKey, publicKeyOf, sign, verifySignature } from './keys.ts';

function assertTimestamp(timestampMs: number): void {
  if (!isTimestampMs(timestampMs)) throw new ProtocolError('invalid_argument', `timestamp out of range: ${timestampMs}`);
}

function assertHash(hash: Uint8Array, what: string): void {
  if (!isBytes(hash, hashBytes)) throw new ProtocolError('invalid_argument', `${what} is ${hashBytes} bytes`);
}

// ---------------------------------------------------------------------------------------------
// Cancel: the issuer withdraws a PLC that has not been transferred.

export interface CancelRequest {
  readonly tokenId: string;
  readonly commitmentHash: Uint8Array;
  readonly timestampMs: number;
}

export interface CancelAuthorization extends CancelRequest {
  readonly issuerPublicKey: Uint8Array;
  readonly signature: Uint8Array;
}

export function encodeCancelMessage(request: CancelRequest): Uint8Array {
  assertHash(request.commitmentHash, 'commitment hash');
  assertTimestamp(request.timestampMs);
  return concatBytes(domainTags.cancel, uuidToBytes(request.tokenId), request.commitmentHash, u64be(request.timestampMs));
}

export function signCancel(request: CancelRequest, issuerSecretKey: Uint8Array): CancelAuthorization {
  const message = encodeCancelMessage(request);
  return {
    tokenId: request.tokenId,
    commitmentHash: request.commitmentHash.slice(),
    timestampMs: request.timestampMs,
    issuerPublicKey: publicKeyOf(issuerSecretKey),
    signature: sign(message, issuerSecretKey),
  };
}

/**
 * True when the signature verifies under `issuerPublicKey`. The caller still checks that this key
 * is the PLC's issuer, that the commitment hash is the PLC's, and the timestamp's freshness.
 */
export function verifyCancel(authorization: CancelAuthorization): boolean {
  try {
    if (!isValidPublicKey(authorization.issuerPublicKey)) return false;
    return verifySignature(authorization.signature, encodeCancelMessage(authorization), authorization.issuerPublicKey);
  } catch {
    return false;
  }
}

// ---------------------------------------------------------------------------------------------
// Redeem: the bearer asks for settlement of the chain state whose head hash it names.

export interface RedeemRequest {
  readonly tokenId: string;
  /** The head of the chain being redeemed: the last record's hash (commitment hash if none). */
  readonly headHash: Uint8Array;
  readonly settlementRail: SettlementRail;
  /** For rail `pix` the Pix key, for `boleto` the digitable line; 1..140 UTF-8 bytes. */
  readonly destination: string;
  readonly timestampMs: number;
}

export interface RedeemAuthorization extends RedeemRequest {
  readonly bearerPublicKey: Uint8Array;
  readonly signature: Uint8Array;
}

export function isSettlementRail(value: unknown): value is SettlementRail {
  return typeof value === 'string' && (settlementRails as readonly string[]).includes(value);
}

export function encodeRedeemMessage(request: RedeemRequest): Uint8Array {
  assertHash(request.headHash, 'head hash');
  assertTimestamp(request.timestampMs);
  if (!isSettlementRail(request.settlementRail)) {
    throw new ProtocolError('invalid_argument', `settlement rail must be one of ${settlementRails.join(', ')}`);
  }
  const destination = utf8(request.destination);
  if (destination.length < 1 || destination.length > destinationBytesMax) {
    throw new ProtocolError('invalid_argument', `destination must be 1 to ${destinationBytesMax} UTF-8 bytes`);
  }
  const rail = utf8(request.settlementRail);
  return concatBytes(
    domainTags.redeem,
    uuidToBytes(request.tokenId),
    request.headHash,
    u64be(request.timestampMs),
    u8(rail.length),
    rail,
    u16be(destination.length),
    destination,
  );
}

export function signRedeem(request: RedeemRequest, bearerSecretKey: Uint8Array): RedeemAuthorization {
  const message = encodeRedeemMessage(request);
  return {
    tokenId: request.tokenId,
    headHash: request.headHash.slice(),
    settlementRail: request.settlementRail,
    destination: request.destination,
    timestampMs: request.timestampMs,
    bearerPublicKey: publicKeyOf(bearerSecretKey),
    signature: sign(message, bearerSecretKey),
  };
}

/**
 * True when the signature verifies under `bearerPublicKey`. The caller still checks, against a
 * verified chain, that this key is the bearer and that `headHash` is that chain's head.
 */
export function verifyRedeem(authorization: RedeemAuthorization): boolean {
  try {
    if (!isValidPublicKey(authorization.bearerPublicKey)) return false;
    return verifySignature(authorization.signature, encodeRedeemMessage(authorization), authorization.bearerPublicKey);
  } catch {
    return false;
  }
}

// ---------------------------------------------------------------------------------------------
// Key backup and recovery: the spec's exact text messages (Authentication 8 and 9).

export interface KeyOperation {
  readonly deviceId: string;
  readonly publicKey: Uint8Array;
  readonly operationTimestampMs: number;
}

export interface SignedKeyOperation extends KeyOperation {
  readonly signature: Uint8Array;
}

export type KeyOperationKind = 'backup' | 'recover';

export function isDeviceId(value: unknown): value is string {
  return typeof value === 'string' && deviceIdPattern.test(value);
}

/** The exact text signed, e.g. "svc:backup:phone-1:3d40...660c:1795860000000". */
export function keyOperationMessage(kind: KeyOperationKind, operation: KeyOperation): string {
  if (!isDeviceId(operation.deviceId)) {
    throw new ProtocolError('invalid_argument', 'device id must be 1 to 128 characters of A-Z a-z 0-9 . _ -');
  }
  if (!isBytes(operation.publicKey, publicKeyBytes)) throw new ProtocolError('invalid_argument', 'public key is 32 bytes');
  assertTimestamp(operation.operationTimestampMs);
  return `svc:${kind}:${operation.deviceId}:${bytesToHex(operation.publicKey)}:${operation.operationTimestampMs}`;
}

export function signKeyOperation(kind: KeyOperationKind, operation: Omit<KeyOperation, 'publicKey'>, secretKey: Uint8Array): SignedKeyOperation {
  const publicKey = publicKeyOf(secretKey);
  const full = { ...operation, publicKey };
  return { ...full, signature: sign(utf8(keyOperationMessage(kind, full)), secretKey) };
}

export function verifyKeyOperation(kind: KeyOperationKind, signed: SignedKeyOperation): boolean {
  try {
    if (!isValidPublicKey(signed.publicKey) || !isBytes(signed.signature, signatureBytes)) return false;
    return verifySignature(signed.signature, utf8(keyOperationMessage(kind, signed)), signed.publicKey);
  } catch {
    return false;
  }
}

// ---------------------------------------------------------------------------------------------
// Identity of an authorisation: what the server records to accept each one once (section 9.4).

/**
 * SHA-256(signer public key (32) | the exact signed message). Two presentations of one
 * authorisation have the same hash whatever their signatures (a signer can make several valid
 * signatures over one message); two different authorisations never do.
 */
export function authorizationHash(signerPublicKey: Uint8Array, message: Uint8Array): Uint8Array {
  if (!isBytes(signerPublicKey, publicKeyBytes)) throw new ProtocolError('invalid_argument', 'public key is 32 bytes');
  return sha256(concatBytes(signerPublicKey, message));
}

export function cancelAuthorizationHash(authorization: CancelAuthorization): Uint8Array {
  return authorizationHash(authorization.issuerPublicKey, encodeCancelMessage(authorization));
}

export function redeemAuthorizationHash(authorization: RedeemAuthorization): Uint8Array {
  return authorizationHash(authorization.bearerPublicKey, encodeRedeemMessage(authorization));
}

export function keyOperationHash(kind: KeyOperationKind, operation: KeyOperation): Uint8Array {
  return authorizationHash(operation.publicKey, utf8(keyOperationMessage(kind, operation)));
}

// ---------------------------------------------------------------------------------------------
// Freshness.

export type FreshnessCheck = { readonly ok: true } | { readonly ok: false; readonly reason: 'too_old' | 'in_future' };

/**
 * Accepts a message timestamp within `windowMs` of `nowMs` on either side (device clocks drift
 * both ways). Freshness bounds how long the server must remember used messages to refuse replays:
 * a replay older than the window fails here, a younger one hits the server's used-message store.
 */
export function checkFreshness(timestampMs: number, nowMs: number, windowMs: number = authFreshnessWindowMsDefault): FreshnessCheck {
  if (!Number.isSafeInteger(windowMs) || windowMs < 0) throw new RangeError('windowMs must be a non-negative integer');
  if (timestampMs < nowMs - windowMs) return { ok: false, reason: 'too_old' };
  if (timestampMs > nowMs + windowMs) return { ok: false, reason: 'in_future' };
  return { ok: true };
}
