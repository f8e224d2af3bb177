/**
 * The service's issue receipt (docs/protocol.md section 19): the service's signature, made when it
 * registered a PLC and reserved its amount, over the PLC's commitment. Offline, a receiver checks
 * the issuer's signature and the chain (section 7); the receipt tells it, in addition, that the
 * commitment was registered and backed: a PLC that was never created online carries none.
 *
 * The receipt travels beside the commitment, never inside it: the commitment stays protocol 2.0,
 * its bytes and hashes unchanged. A receipt is 137 bytes:
 *
 *   offset size field
 *        0    1 receipt format, 0x01
 *        1   32 service public key (the key that signed; looked up in the receiver's trust list)
 *       33   32 commitment hash it covers (SHA-256 of the 118 commitment bytes, section 5.2)
 *       65    8 issued_at, u64 milliseconds since the Unix epoch (when the service signed)
 *       73   64 Ed25519 signature over the signed message below
 *
 * The signed message (128 bytes) repeats, from the commitment, what a receiver needs to read:
 *
 *   offset size field
 *        0   19 tag "svc:plc:receipt:v1\0"
 *       19    1 receipt format, 0x01
 *       20   32 service public key
 *       52   32 commitment hash
 *       84   16 token id
 *      100    8 amount in minor units, u64
 *      108    3 currency, ASCII upper case
 *      111    1 the currency's decimals
 *      112    8 expires_at, u64 ms
 *      120    8 issued_at, u64 ms
 *
 * Trust: a receiver keeps a list of receipt keys, each with a validity period (the signed
 * blocklist carries it, blocklist.ts); a receipt verifies when its key is on that list, its
 * signature verifies, and its issued_at lies within the key's period. Pure and isomorphic.
 */
import { currencyDecimals, domainTags, hashBytes, publicKeyBytes, signatureBytes, timestampMsMax } from './constants.ts';
import { bytesEqual, bytesToHex, concatBytes, isTimestampMs, u64be, u8, utf8, uuidToBytes } from './bytes.ts';
import { checkCommitmentFields, computeCommitmentHash } from './commitment.ts';
import { ProtocolError } from './errors.ts';
import { isValidPublicKey, publicKeyOf, sign, verifySignature } from './keys.ts';
import type { Plc, PlcCommitment } from './types.ts';

/** The receipt format byte (offset 0 of a receipt, offset 19 of its signed message). */
export const issueReceiptFormat = 0x01;
/** Length of a receipt of format 0x01. */
export const issueReceiptBytes = 137;
/** Length of the signed message. */
export const issueReceiptMessageBytes = 128;
/**
 * Bound on the receipt bytes the PLC's forms carry (JSON, CBOR): the forms carry them opaque, so
 * a cut or damaged receipt reaches the verifier, which names what is wrong with it.
 */
export const issueReceiptCarriedBytesMax = 256;
/** Most receipt keys a trust list holds: a current key and the ones being rotated out. */
export const receiptKeysMax = 16;

/** A key the receiver trusts for receipts issued from `validFromMs` to `validUntilMs`, both inclusive. */
export interface ReceiptKey {
  readonly publicKey: Uint8Array;
  readonly validFromMs: number;
  readonly validUntilMs: number;
}

export interface IssueReceipt {
  readonly servicePublicKey: Uint8Array;
  readonly commitmentHash: Uint8Array;
  readonly issuedAtMs: number;
  readonly signature: Uint8Array;
}

/** Why a receipt is refused, in the order the verifier checks (docs/protocol.md 19.3). Stable codes. */
export const receiptRejectionReasons = [
  'missing',
  'truncated',
  'malformed',
  'wrong_commitment',
  'untrusted_key',
  'wrong_key',
  'key_not_valid_at_time',
] as const;
export type ReceiptRejectionReason = (typeof receiptRejectionReasons)[number];

export type ReceiptVerification =
  | { readonly ok: true; readonly receipt: IssueReceipt; readonly key: ReceiptKey }
  | { readonly ok: false; readonly reason: ReceiptRejectionReason; readonly detail: string };

/** The 128 bytes the service signs. Throws `invalid_argument` for a commitment that fails its checks. */
export function encodeIssueReceiptMessage(commitment: PlcCommitment, servicePublicKey: Uint8Array, issuedAtMs: number): Uint8Array {
  const check = checkCommitmentFields(commitment);
  if (!check.ok) throw new ProtocolError('invalid_argument', check.detail, { reason: check.reason });
  if (!(servicePublicKey instanceof Uint8Array) || servicePublicKey.length !== publicKeyBytes) {
    throw new ProtocolError('invalid_argument', `the service key is ${publicKeyBytes} bytes`);
  }
  if (!isTimestampMs(issuedAtMs)) throw new ProtocolError('invalid_argument', 'issued_at must be integer milliseconds up to 9999-12-31');
  const currency = commitment.currency as keyof typeof currencyDecimals;
  const bytes = concatBytes(
    domainTags.receipt,
    u8(issueReceiptFormat),
    servicePublicKey,
    computeCommitmentHash(commitment),
    uuidToBytes(commitment.tokenId),
    u64be(commitment.amountMinor),
    utf8(currency),
    u8(currencyDecimals[currency]),
    u64be(commitment.expiresAtMs),
    u64be(issuedAtMs),
  );
  if (bytes.length !== issueReceiptMessageBytes) throw new Error(`assertion failed: receipt message is ${bytes.length} bytes`);
  return bytes;
}

/** The 137 receipt bytes of `receipt`'s fields. */
export function encodeIssueReceipt(receipt: IssueReceipt): Uint8Array {
  if (
    receipt.servicePublicKey.length !== publicKeyBytes ||
    receipt.commitmentHash.length !== hashBytes ||
    receipt.signature.length !== signatureBytes ||
    !isTimestampMs(receipt.issuedAtMs)
  ) {
    throw new ProtocolError('invalid_argument', 'a receipt field has the wrong length or range');
  }
  return concatBytes(u8(issueReceiptFormat), receipt.servicePublicKey, receipt.commitmentHash, u64be(receipt.issuedAtMs), receipt.signature);
}

export interface SignIssueReceiptParams {
  readonly commitment: PlcCommitment;
  readonly serviceSecretKey: Uint8Array;
  readonly issuedAtMs: number;
}

/** Signs the receipt of `commitment` (the service side, at registration): its 137 bytes. */
export function signIssueReceipt(params: SignIssueReceiptParams): Uint8Array {
  const servicePublicKey = publicKeyOf(params.serviceSecretKey);
  const message = encodeIssueReceiptMessage(params.commitment, servicePublicKey, params.issuedAtMs);
  return encodeIssueReceipt({
    servicePublicKey,
    commitmentHash: computeCommitmentHash(params.commitment),
    issuedAtMs: params.issuedAtMs,
    signature: sign(message, params.serviceSecretKey),
  });
}

export type IssueReceiptDecoding =
  | { readonly ok: true; readonly receipt: IssueReceipt }
  | { readonly ok: false; readonly reason: 'missing' | 'truncated' | 'malformed'; readonly detail: string };

/** Splits receipt bytes into their fields; checks lengths, the format byte and issued_at only. */
export function decodeIssueReceipt(bytes: unknown): IssueReceiptDecoding {
  if (bytes === undefined || bytes === null) return { ok: false, reason: 'missing', detail: 'the PLC carries no issue receipt' };
  if (!(bytes instanceof Uint8Array)) return { ok: false, reason: 'malformed', detail: 'the receipt is not a byte string' };
  if (bytes.length === 0) return { ok: false, reason: 'missing', detail: 'the PLC carries an empty issue receipt' };
  if (bytes[0] !== issueReceiptFormat) return { ok: false, reason: 'malformed', detail: `unknown receipt format 0x${bytes[0]!.toString(16).padStart(2, '0')}` };
  if (bytes.length < issueReceiptBytes) return { ok: false, reason: 'truncated', detail: `the receipt is ${bytes.length} bytes, ${issueReceiptBytes} expected` };
  if (bytes.length > issueReceiptBytes) return { ok: false, reason: 'malformed', detail: `the receipt is ${bytes.length} bytes, ${issueReceiptBytes} expected` };
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const high = view.getUint32(65, false);
  const low = view.getUint32(69, false);
  const issuedAtMs = high * 0x1_0000_0000 + low;
  if (high > 0x1f_ffff || !isTimestampMs(issuedAtMs)) return { ok: false, reason: 'malformed', detail: 'issued_at is beyond 9999-12-31' };
  return {
    ok: true,
    receipt: {
      servicePublicKey: bytes.slice(1, 33),
      commitmentHash: bytes.slice(33, 65),
      issuedAtMs,
      signature: bytes.slice(73, 137),
    },
  };
}

/** Why a trust list is not well formed (keys strictly ascending, periods in order); null when it is. */
export function receiptKeysProblem(keys: readonly ReceiptKey[]): string | null {
  if (keys.length > receiptKeysMax) return `at most ${receiptKeysMax} receipt keys`;
  for (let i = 0; i < keys.length; i += 1) {
    const entry = keys[i] as ReceiptKey;
    if (!(entry.publicKey instanceof Uint8Array) || entry.publicKey.length !== publicKeyBytes) return `receipt key ${i} is not ${publicKeyBytes} bytes`;
    if (!isTimestampMs(entry.validFromMs) || !isTimestampMs(entry.validUntilMs)) return `receipt key ${i}: its period must be instants in ms`;
    if (entry.validFromMs > entry.validUntilMs) return `receipt key ${i}: valid_from is after valid_until`;
    if (i > 0 && compareBytes((keys[i - 1] as ReceiptKey).publicKey, entry.publicKey) >= 0) return `receipt keys must be strictly ascending (key ${i})`;
  }
  return null;
}

function compareBytes(a: Uint8Array, b: Uint8Array): number {
  for (let i = 0; i < Math.min(a.length, b.length); i += 1) {
    const diff = (a[i] as number) - (b[i] as number);
    if (diff !== 0) return diff;
  }
  return a.length - b.length;
}

/**
 * Checks `receipt` (the bytes the PLC carries, or undefined) against `commitment` and the
 * receiver's trust list, in this order: present; format and length (`truncated` when shorter);
 * covers this commitment (`wrong_commitment`); names a trusted key (`untrusted_key`); the
 * signature verifies under that key over the message rebuilt from the commitment (`wrong_key`);
 * issued_at lies within the key's validity period (`key_not_valid_at_time`). Never throws.
 */
export function verifyIssueReceipt(commitment: PlcCommitment, receipt: unknown, trustedKeys: readonly ReceiptKey[]): ReceiptVerification {
  try {
    const decoded = decodeIssueReceipt(receipt);
    if (!decoded.ok) return decoded;
    const r = decoded.receipt;
    const check = checkCommitmentFields(commitment);
    if (!check.ok) return { ok: false, reason: 'malformed', detail: `the commitment fails its checks: ${check.detail}` };
    if (!bytesEqual(r.commitmentHash, computeCommitmentHash(commitment))) {
      return { ok: false, reason: 'wrong_commitment', detail: "the receipt covers another commitment than this PLC's" };
    }
    const key = trustedKeys.find((entry) => bytesEqual(entry.publicKey, r.servicePublicKey));
    if (key === undefined) {
      return { ok: false, reason: 'untrusted_key', detail: `signed by ${bytesToHex(r.servicePublicKey)}, not a receipt key this receiver trusts` };
    }
    const message = encodeIssueReceiptMessage(commitment, r.servicePublicKey, r.issuedAtMs);
    if (!isValidPublicKey(r.servicePublicKey) || !verifySignature(r.signature, message, r.servicePublicKey)) {
      return { ok: false, reason: 'wrong_key', detail: `the signature does not verify under ${bytesToHex(r.servicePublicKey)}` };
    }
    if (r.issuedAtMs < key.validFromMs || r.issuedAtMs > key.validUntilMs) {
      return {
        ok: false,
        reason: 'key_not_valid_at_time',
        detail: `issued at ${r.issuedAtMs}, outside the key's validity ${key.validFromMs}..${key.validUntilMs}`,
      };
    }
    return { ok: true, receipt: r, key };
  } catch (error) {
    return { ok: false, reason: 'malformed', detail: `unexpected input: ${String(error)}` };
  }
}

/** `verifyIssueReceipt` over a PLC's commitment and the receipt it carries. */
export function verifyPlcReceipt(plc: Plc, trustedKeys: readonly ReceiptKey[]): ReceiptVerification {
  return verifyIssueReceipt(plc.commitment, plc.issueReceipt, trustedKeys);
}

/**
 * The receipt keys a receiver trusts: those of its verified blocklist when the list carries them
 * (format v2); otherwise, before it has one, the service key it trusts for the blocklist, for any
 * issued_at. A v2 list that leaves a key out revokes it.
 */
export function receiptTrustOf(list: { readonly receiptKeys?: readonly ReceiptKey[] | undefined } | undefined, trustedServiceKey: Uint8Array): readonly ReceiptKey[] {
  if (list?.receiptKeys !== undefined) return list.receiptKeys;
  return [{ publicKey: trustedServiceKey, validFromMs: 0, validUntilMs: timestampMsMax }];
}

/** A PLC with `receipt` attached (or replaced): the commitment and chain unchanged. */
export function withIssueReceipt(plc: Plc, receipt: Uint8Array): Plc {
  return { ...plc, issueReceipt: receipt.slice() };
}
