/**
 * Transfer records: one hop of a PLC from its current bearer to a new one.
 *
 * Signed message (108 bytes), in the spec's order "recipient key, timestamp, nonce, previous
 * chain hash", behind a domain tag:
 *
 *   tag "svc:plc:transfer:v2\0" (20) | recipient key (32) | timestamp u64 ms (8) | nonce (16) | previous hash (32)
 *
 * Record hash: SHA-256( tag "svc:plc:record:v2\0" (18) | sender key (32) | signed message (108) ).
 *
 * The record hash leaves the signature out on purpose. A signer can always produce a second valid
 * signature over the same message (Ed25519 signing is deterministic only by convention), so a hash
 * over the signature would give one transfer two identities, and the honest chain built on either
 * would look like a fork. Without it, a record's identity is exactly what was authorised: who
 * sent, to whom, when, with which nonce, after which record.
 */
import { sha256 } from '@noble/hashes/sha2.js';
import {
  chainLengthMax,
  clockToleranceMsDefault,
  domainTags,
  hashBytes,
  nonceBytes,
  publicKeyBytes,
  signatureBytes,
} from './constants.ts';
import { bytesEqual, bytesToHex, concatBytes, isBytes, isTimestampMs, u64be } from './bytes.ts';
import { ProtocolError } from './errors.ts';
import { assertPublicKey, isValidPublicKey, publicKeyOf, randomNonce, sign, verifySignature } from './keys.ts';
import { computeCommitmentHash } from './commitment.ts';
import type { Plc, PlcCommitment, Rejection, TransferRecord } from './types.ts';

export const transferMessageBytesLength = 108;
export const recordHashInputBytesLength = 158;

export interface TransferContent {
  readonly recipientPublicKey: Uint8Array;
  readonly timestampMs: number;
  readonly nonce: Uint8Array;
  readonly prevHash: Uint8Array;
}

/** The exact bytes the sender signs. */
export function encodeTransferMessage(content: TransferContent): Uint8Array {
  const bytes = concatBytes(
    domainTags.transfer,
    content.recipientPublicKey,
    u64be(content.timestampMs),
    content.nonce,
    content.prevHash,
  );
  if (bytes.length !== transferMessageBytesLength) {
    throw new ProtocolError('invalid_argument', 'transfer fields have the wrong lengths');
  }
  return bytes;
}

/** The exact bytes hashed into the record's own hash. */
export function encodeRecordHashInput(record: Omit<TransferRecord, 'signature' | 'hash'>): Uint8Array {
  if (!isBytes(record.senderPublicKey, publicKeyBytes)) throw new ProtocolError('invalid_argument', 'sender key is 32 bytes');
  return concatBytes(domainTags.record, record.senderPublicKey, encodeTransferMessage(record));
}

export function computeRecordHash(record: Omit<TransferRecord, 'signature' | 'hash'>): Uint8Array {
  return sha256(encodeRecordHashInput(record));
}

export function isRecordWellFormed(record: unknown): record is TransferRecord {
  if (record === null || typeof record !== 'object') return false;
  const r = record as Partial<Record<keyof TransferRecord, unknown>>;
  return (
    isBytes(r.senderPublicKey, publicKeyBytes) &&
    isBytes(r.recipientPublicKey, publicKeyBytes) &&
    isTimestampMs(r.timestampMs) &&
    isBytes(r.nonce, nonceBytes) &&
    isBytes(r.prevHash, hashBytes) &&
    isBytes(r.signature, signatureBytes) &&
    isBytes(r.hash, hashBytes)
  );
}

/** What a record is checked against: the commitment and everything before it in the chain. */
export interface RecordContext {
  readonly commitment: PlcCommitment;
  /** Recomputed, never the carried value. */
  readonly commitmentHash: Uint8Array;
  /** The previous record with its recomputed hash; undefined for the first record. */
  readonly previous: { readonly record: TransferRecord; readonly hash: Uint8Array } | undefined;
  /** Hex of every nonce earlier in the chain. */
  readonly seenNonces: ReadonlySet<string>;
  readonly clockToleranceMs: number;
  /**
   * The hash of the record with the same signature kept at this position by an earlier full
   * verification (`VerifyOptions.verifiedPrefix`): when the recomputed hash equals it, the
   * recipient key and the signature were already checked and are not checked again.
   */
  readonly keptRecord?: Uint8Array | undefined;
}

export type RecordCheck = { readonly ok: true; readonly hash: Uint8Array } | Rejection;

/**
 * Checks one well-formed record against its context, in the documented order (docs/protocol.md
 * section 7). On success returns the record's recomputed hash, which the next record links to.
 */
export function checkRecord(context: RecordContext, record: TransferRecord, index: number): RecordCheck {
  const fail = (reason: Rejection['reason'], detail: string): Rejection => ({ ok: false, reason, index, detail });
  const expectedPrevHash = context.previous?.hash ?? context.commitmentHash;
  if (!bytesEqual(record.prevHash, expectedPrevHash)) {
    return fail('broken_link', 'previous hash does not match the previous record (or the commitment)');
  }
  const expectedSender = context.previous?.record.recipientPublicKey ?? context.commitment.issuerPublicKey;
  if (!bytesEqual(record.senderPublicKey, expectedSender)) {
    return fail('wrong_sender', 'sender is not the current bearer (the previous recipient, or the issuer)');
  }
  // Computed up front (it is cheap) so that a record kept by an earlier verification can skip the
  // two costly checks; the order in which failures are reported does not change.
  const hash = computeRecordHash(record);
  const alreadyVerified = context.keptRecord !== undefined && bytesEqual(context.keptRecord, hash);
  if (!alreadyVerified && !isValidPublicKey(record.recipientPublicKey)) {
    return fail('invalid_public_key', 'recipient key is not a valid Ed25519 public key');
  }
  if (bytesEqual(record.recipientPublicKey, record.senderPublicKey)) {
    return fail('self_transfer', 'sender and recipient are the same key');
  }
  const earliestMs = context.commitment.createdAtMs - context.clockToleranceMs;
  const latestMs = context.commitment.expiresAtMs + context.clockToleranceMs;
  if (record.timestampMs < earliestMs || record.timestampMs > latestMs) {
    return fail('timestamp_out_of_range', "timestamp is outside the PLC's life give or take the clock tolerance");
  }
  if (context.previous !== undefined && record.timestampMs < context.previous.record.timestampMs) {
    return fail('timestamp_decreasing', 'timestamp is earlier than the previous record');
  }
  if (context.seenNonces.has(bytesToHex(record.nonce))) {
    return fail('duplicate_nonce', 'nonce already used earlier in this chain');
  }
  if (!bytesEqual(record.hash, hash)) {
    return fail('record_hash_mismatch', 'carried record hash differs from the recomputed one');
  }
  if (!alreadyVerified && !verifySignature(record.signature, encodeTransferMessage(record), record.senderPublicKey)) {
    return fail('invalid_signature', "sender's signature does not verify");
  }
  return { ok: true, hash };
}

/** The key that may sign the next record: the last recipient, or the issuer of a fresh PLC. */
export function currentBearer(plc: Plc): Uint8Array {
  const last = plc.transferChain.at(-1);
  return last === undefined ? plc.commitment.issuerPublicKey : last.recipientPublicKey;
}

/** The hash the next record links to: the last record's hash, or the commitment hash. */
export function chainHeadHash(plc: Plc): Uint8Array {
  const last = plc.transferChain.at(-1);
  return last === undefined ? computeCommitmentHash(plc.commitment) : computeRecordHash(last);
}

/**
 * The low-level primitive: signs a record over exactly the given content and computes its hash,
 * checking no chain rule. Use `appendTransfer` to extend a PLC; this exists for implementers of
 * other front ends and for building the invalid test vectors.
 */
export function signTransferRecord(content: TransferContent, senderSecretKey: Uint8Array): TransferRecord {
  const senderPublicKey = publicKeyOf(senderSecretKey);
  const message = encodeTransferMessage(content);
  const unsigned = {
    senderPublicKey,
    recipientPublicKey: content.recipientPublicKey,
    timestampMs: content.timestampMs,
    nonce: content.nonce,
    prevHash: content.prevHash,
  };
  return { ...unsigned, signature: sign(message, senderSecretKey), hash: computeRecordHash(unsigned) };
}

export interface AppendTransferParams {
  readonly senderSecretKey: Uint8Array;
  readonly recipientPublicKey: Uint8Array;
  readonly timestampMs: number;
  /** Defaults to 16 fresh random bytes; fixed in test vectors. */
  readonly nonce?: Uint8Array;
  readonly clockToleranceMs?: number;
}

/**
 * Signs a transfer to `recipientPublicKey` and returns the PLC with the record appended. The
 * input PLC is assumed verified (the wallet verifies what it stores); the new record is checked
 * against every chain rule so that this never produces a chain `verifyPlc` would refuse.
 */
export function appendTransfer(plc: Plc, params: AppendTransferParams): Plc {
  const senderPublicKey = publicKeyOf(params.senderSecretKey);
  assertPublicKey(params.recipientPublicKey, 'recipient key');
  if (!bytesEqual(senderPublicKey, currentBearer(plc))) {
    throw new ProtocolError('not_bearer', 'only the current bearer can transfer this PLC');
  }
  if (plc.transferChain.length >= chainLengthMax) {
    throw new ProtocolError('rule_violation', `a chain holds at most ${chainLengthMax} records`, { reason: 'chain_too_long' });
  }
  if (!isTimestampMs(params.timestampMs)) {
    throw new ProtocolError('invalid_argument', `timestamp out of range: ${params.timestampMs}`);
  }
  const nonce = params.nonce?.slice() ?? randomNonce(nonceBytes);
  const commitmentHash = computeCommitmentHash(plc.commitment);
  const last = plc.transferChain.at(-1);
  const prevHash = last === undefined ? commitmentHash : computeRecordHash(last);
  const record = signTransferRecord(
    { recipientPublicKey: params.recipientPublicKey.slice(), timestampMs: params.timestampMs, nonce, prevHash },
    params.senderSecretKey,
  );
  const check = checkRecord(
    {
      commitment: plc.commitment,
      commitmentHash,
      previous: last === undefined ? undefined : { record: last, hash: prevHash },
      seenNonces: new Set(plc.transferChain.map((r) => bytesToHex(r.nonce))),
      clockToleranceMs: params.clockToleranceMs ?? clockToleranceMsDefault,
    },
    record,
    plc.transferChain.length,
  );
  if (!check.ok) throw new ProtocolError('rule_violation', check.detail, { reason: check.reason });
  return { ...plc, transferChain: [...plc.transferChain, record] };
}
