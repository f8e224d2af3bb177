/**
 * The PLC commitment: canonical bytes of the immutable fields, their SHA-256 hash, and the
 * issuer's signature over that hash.
 *
 * Canonical bytes (118 bytes, every field fixed width, big-endian integers):
 *
 *   offset size field
 *        0   22 tag "svc:plc:commitment:v2\0"
 *       22    1 length of the version string (3)
 *       23    3 version, ASCII "2.0"
 *       26   16 token id (the UUID's 16 bytes)
 *       42   32 issuer public key
 *       74    8 amount in minor units, u64
 *       82    3 currency, ASCII upper case
 *       85    1 the currency's decimals (2 for BRL, USD, EUR)
 *       86    8 created_at, u64 milliseconds since the Unix epoch
 *       94    8 expires_at, u64 milliseconds since the Unix epoch
 *      102   16 nonce
 */
import { sha256 } from '@noble/hashes/sha2.js';
import {
  currencyDecimals,
  domainTags,
  hashBytes,
  isPlcCurrency,
  nonceBytes,
  protocolVersion,
  publicKeyBytes,
  signatureBytes,
  ttlMsMax,
  ttlMsMin,
  hourMs,
  ttlHoursMax,
  ttlHoursMin,
} from './constants.ts';
import { concatBytes, isBytes, isTimestampMs, isUuidV4, u64be, u8, utf8, uuidToBytes, uuidV4FromBytes } from './bytes.ts';
import { isValidAmountMinor } from './amount.ts';
import { ProtocolError } from './errors.ts';
import { isValidPublicKey, publicKeyOf, randomNonce, sign } from './keys.ts';
import type { Plc, PlcCommitment, Rejection } from './types.ts';

export const commitmentBytesLength = 118;

type FieldCheck = { readonly ok: true } | Rejection;

const accepted: FieldCheck = { ok: true };

function reject(reason: Rejection['reason'], detail: string): Rejection {
  return { ok: false, reason, index: null, detail };
}

/**
 * Checks every commitment field, in the documented order, without throwing. Shared by the
 * verifier and by `createPlc`, so a builder can never produce what a verifier refuses.
 */
export function checkCommitmentFields(commitment: PlcCommitment): FieldCheck {
  const c = commitment as Partial<Record<keyof PlcCommitment, unknown>> | null;
  if (c === null || typeof c !== 'object') return reject('malformed', 'commitment is not an object');
  if (
    typeof c.version !== 'string' ||
    typeof c.tokenId !== 'string' ||
    !isBytes(c.issuerPublicKey, publicKeyBytes) ||
    typeof c.amountMinor !== 'bigint' ||
    typeof c.currency !== 'string' ||
    typeof c.createdAtMs !== 'number' ||
    typeof c.expiresAtMs !== 'number' ||
    !isBytes(c.nonce, nonceBytes)
  ) {
    return reject('malformed', 'a commitment field has the wrong type or length');
  }
  if (c.version !== protocolVersion) return reject('unsupported_version', `version ${c.version} is not ${protocolVersion}`);
  if (!isUuidV4(c.tokenId)) return reject('invalid_token_id', 'token id is not a lowercase UUID v4');
  if (!isPlcCurrency(c.currency)) return reject('unsupported_currency', `currency ${c.currency} is not a protocol currency`);
  if (!isValidAmountMinor(c.amountMinor)) return reject('invalid_amount', `amount ${c.amountMinor} is not in 1..10^15 minor units`);
  if (!isTimestampMs(c.createdAtMs) || !isTimestampMs(c.expiresAtMs)) {
    return reject('invalid_timestamp', 'created_at and expires_at must be integer milliseconds up to 9999-12-31');
  }
  const ttlMs = c.expiresAtMs - c.createdAtMs;
  if (ttlMs < ttlMsMin || ttlMs > ttlMsMax) {
    return reject('invalid_ttl', `time to live ${ttlMs} ms is outside ${ttlHoursMin}..${ttlHoursMax} hours`);
  }
  if (!isValidPublicKey(c.issuerPublicKey)) return reject('invalid_public_key', 'issuer key is not a valid Ed25519 public key');
  return accepted;
}

/** The 118 canonical bytes. Throws `invalid_argument` for a commitment that fails its checks. */
export function encodeCommitment(commitment: PlcCommitment): Uint8Array {
  const check = checkCommitmentFields(commitment);
  if (!check.ok) throw new ProtocolError('invalid_argument', check.detail, { reason: check.reason });
  const version = utf8(commitment.version);
  const currency = commitment.currency as keyof typeof currencyDecimals;
  const bytes = concatBytes(
    domainTags.commitment,
    u8(version.length),
    version,
    uuidToBytes(commitment.tokenId),
    commitment.issuerPublicKey,
    u64be(commitment.amountMinor),
    utf8(currency),
    u8(currencyDecimals[currency]),
    u64be(commitment.createdAtMs),
    u64be(commitment.expiresAtMs),
    commitment.nonce,
  );
  if (bytes.length !== commitmentBytesLength) throw new Error(`assertion failed: commitment is ${bytes.length} bytes`);
  return bytes;
}

export function computeCommitmentHash(commitment: PlcCommitment): Uint8Array {
  const hash = sha256(encodeCommitment(commitment));
  if (hash.length !== hashBytes) throw new Error('assertion failed: SHA-256 output is 32 bytes');
  return hash;
}

export interface CreatePlcParams {
  readonly issuerSecretKey: Uint8Array;
  readonly amountMinor: bigint;
  readonly currency: string;
  readonly createdAtMs: number;
  /** Either a whole number of hours (1..168) or an explicit `expiresAtMs`. */
  readonly ttlHours?: number;
  readonly expiresAtMs?: number;
  /** Defaults to a fresh random UUID v4; fixed in test vectors. */
  readonly tokenId?: string;
  /** Defaults to 16 fresh random bytes; fixed in test vectors. */
  readonly nonce?: Uint8Array;
}

/** Builds and signs a new PLC with an empty transfer chain. Throws `ProtocolError`. */
export function createPlc(params: CreatePlcParams): Plc {
  const issuerPublicKey = publicKeyOf(params.issuerSecretKey);
  if ((params.ttlHours === undefined) === (params.expiresAtMs === undefined)) {
    throw new ProtocolError('invalid_argument', 'give exactly one of ttlHours and expiresAtMs');
  }
  let expiresAtMs: number;
  if (params.ttlHours !== undefined) {
    if (!Number.isInteger(params.ttlHours) || params.ttlHours < ttlHoursMin || params.ttlHours > ttlHoursMax) {
      throw new ProtocolError('invalid_argument', `ttlHours must be a whole number from ${ttlHoursMin} to ${ttlHoursMax}`);
    }
    expiresAtMs = params.createdAtMs + params.ttlHours * hourMs;
  } else {
    expiresAtMs = params.expiresAtMs as number;
  }
  const commitment: PlcCommitment = {
    version: protocolVersion,
    tokenId: params.tokenId ?? uuidV4FromBytes(randomNonce(16)),
    issuerPublicKey,
    amountMinor: params.amountMinor,
    currency: params.currency,
    createdAtMs: params.createdAtMs,
    expiresAtMs,
    nonce: params.nonce?.slice() ?? randomNonce(nonceBytes),
  };
  const check = checkCommitmentFields(commitment);
  if (!check.ok) throw new ProtocolError('invalid_argument', check.detail, { reason: check.reason });
  const commitmentHash = computeCommitmentHash(commitment);
  const issuerSignature = sign(commitmentHash, params.issuerSecretKey);
  if (issuerSignature.length !== signatureBytes) throw new Error('assertion failed: Ed25519 signature is 64 bytes');
  return { commitment, commitmentHash, issuerSignature, transferChain: [] };
}
