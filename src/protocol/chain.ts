/**
 * Verification of a PLC and its transfer chain, expiry against a device clock, and fork
 * detection. Wallets and the server call the same `verifyPlc`, so they can never disagree about
 * whether a chain is valid.
 */
import {
  chainLengthMax,
  clockToleranceMsDefault,
  clockToleranceMsMax,
  hashBytes,
  signatureBytes,
} from './constants.ts';
import { bytesEqual, bytesToHex, isBytes } from './bytes.ts';
import { checkCommitmentFields, computeCommitmentHash } from './commitment.ts';
import { verifySignature, withSignatureVerifier, type SignatureVerifier } from './keys.ts';
import { checkRecord, computeRecordHash, encodeTransferMessage, isRecordWellFormed } from './transfer.ts';
import type { Plc, PlcCommitment, Rejection, TransferRecord } from './types.ts';

export interface VerifyOptions {
  /** Slack around the PLC's life for record timestamps; default 5 minutes, at most 1 hour. */
  readonly clockToleranceMs?: number;
  /**
   * Checks the issuer's signature and every record's signature in `verifyPlc`; default the
   * library's own (@noble/ed25519, strict). A replacement must give exactly the library's answers
   * (docs/protocol.md section 2), only faster: the server passes one over Node's crypto module
   * (infra/ed25519-node.ts). Called only after the length checks, and synchronously.
   */
  readonly verifySignature?: SignatureVerifier;
  /**
   * What a verifier already checked and kept: the issuer's signature and the first records of the
   * chain, each with its hash and signature. A presented record equal to the one kept at its
   * position (same recomputed hash, which covers every field but the signature, and the same
   * signature bytes) skips the two costly checks it already passed (its signature and its
   * recipient key's validity); likewise the issuer's signature. Every other rule (links, sender,
   * timestamps, nonces, lengths) still runs on the whole chain, so the answer is the one a full
   * verification gives, as long as what was kept had itself passed `verifyPlc`. The server passes
   * the chain it registered; a wallet has no use for it.
   */
  readonly verifiedPrefix?: VerifiedPrefix;
}

export interface VerifiedPrefix {
  readonly issuerSignature: Uint8Array;
  readonly records: readonly { readonly hash: Uint8Array; readonly signature: Uint8Array }[];
}

export interface Verified {
  readonly ok: true;
  /** Recomputed from the commitment fields. */
  readonly commitmentHash: Uint8Array;
  /** The hash a next record must link to: the last record's hash, or the commitment hash. */
  readonly headHash: Uint8Array;
  /** Who holds the PLC now and alone may transfer or redeem it. */
  readonly bearerPublicKey: Uint8Array;
  readonly chainLength: number;
}

export type PlcVerification = Verified | Rejection;

function resolveTolerance(options: VerifyOptions | undefined): number {
  const toleranceMs = options?.clockToleranceMs ?? clockToleranceMsDefault;
  // A caller passing a nonsensical tolerance is a programmer error, not hostile input.
  if (!Number.isSafeInteger(toleranceMs) || toleranceMs < 0 || toleranceMs > clockToleranceMsMax) {
    throw new RangeError(`clockToleranceMs must be an integer from 0 to ${clockToleranceMsMax}`);
  }
  return toleranceMs;
}

/**
 * Verifies the commitment, the issuer's signature and every transfer record, stopping at the
 * first failure. Checks run in the order of docs/protocol.md section 7; each failure has a stable
 * reason code and the index of the offending record (null for the commitment). Never throws on
 * bad input: anything unexpected in the PLC's shape answers `malformed`.
 *
 * It does not look at the clock: whether the PLC has expired by now is `checkExpiry`.
 */
export function verifyPlc(plc: Plc, options?: VerifyOptions): PlcVerification {
  const clockToleranceMs = resolveTolerance(options);
  const verifier = options?.verifySignature;
  if (verifier !== undefined && typeof verifier !== 'function') {
    throw new TypeError('verifySignature must be a function');
  }
  try {
    // Every signature check below, the records' in `checkRecord` included, goes to `verifier`.
    return withSignatureVerifier(verifier, () => verifyUnchecked(plc, clockToleranceMs, options?.verifiedPrefix));
  } catch (error) {
    return { ok: false, reason: 'malformed', index: null, detail: `unexpected input: ${String(error)}` };
  }
}

function verifyUnchecked(plc: Plc, clockToleranceMs: number, prefix: VerifiedPrefix | undefined): PlcVerification {
  if (plc === null || typeof plc !== 'object') {
    return { ok: false, reason: 'malformed', index: null, detail: 'PLC is not an object' };
  }
  if (!isBytes(plc.commitmentHash, hashBytes) || !isBytes(plc.issuerSignature, signatureBytes) || !Array.isArray(plc.transferChain)) {
    return { ok: false, reason: 'malformed', index: null, detail: 'a PLC field has the wrong type or length' };
  }
  const commitmentCheck = checkCommitmentFields(plc.commitment);
  if (!commitmentCheck.ok) return commitmentCheck;
  // The chain bound comes before any per-record work, so hostile input cannot make us verify more
  // than `chainLengthMax` signatures.
  if (plc.transferChain.length > chainLengthMax) {
    return { ok: false, reason: 'chain_too_long', index: chainLengthMax, detail: `chain has ${plc.transferChain.length} records, at most ${chainLengthMax}` };
  }
  const malformedIndex = plc.transferChain.findIndex((record) => !isRecordWellFormed(record));
  if (malformedIndex !== -1) {
    return { ok: false, reason: 'malformed', index: malformedIndex, detail: 'a record field has the wrong type or length' };
  }

  const commitmentHash = computeCommitmentHash(plc.commitment);
  if (!bytesEqual(plc.commitmentHash, commitmentHash)) {
    return { ok: false, reason: 'commitment_hash_mismatch', index: null, detail: 'carried commitment hash differs from the recomputed one' };
  }
  const issuerSignatureKept = prefix !== undefined && bytesEqual(prefix.issuerSignature, plc.issuerSignature);
  if (!issuerSignatureKept && !verifySignature(plc.issuerSignature, commitmentHash, plc.commitment.issuerPublicKey)) {
    return { ok: false, reason: 'invalid_issuer_signature', index: null, detail: "issuer's signature over the commitment hash does not verify" };
  }

  let previous: { record: TransferRecord; hash: Uint8Array } | undefined;
  const seenNonces = new Set<string>();
  for (const [index, record] of plc.transferChain.entries()) {
    const kept = prefix?.records[index];
    const check = checkRecord(
      {
        commitment: plc.commitment,
        commitmentHash,
        previous,
        seenNonces,
        clockToleranceMs,
        keptRecord: kept !== undefined && bytesEqual(kept.signature, record.signature) ? kept.hash : undefined,
      },
      record,
      index,
    );
    if (!check.ok) return check;
    seenNonces.add(bytesToHex(record.nonce));
    previous = { record, hash: check.hash };
  }
  return {
    ok: true,
    commitmentHash,
    headHash: previous?.hash ?? commitmentHash,
    bearerPublicKey: previous?.record.recipientPublicKey ?? plc.commitment.issuerPublicKey,
    chainLength: plc.transferChain.length,
  };
}

export type ExpiryCheck =
  | { readonly ok: true }
  | { readonly ok: false; readonly reason: 'expired' | 'not_yet_valid' };

/**
 * Is the PLC alive at `nowMs` by a device clock that may be off by up to the tolerance? Expired
 * once `nowMs > expires_at + tolerance`; not yet valid while `nowMs < created_at - tolerance` (a
 * PLC from the future means one of the two clocks is badly wrong).
 */
export function checkExpiry(commitment: PlcCommitment, nowMs: number, options?: VerifyOptions): ExpiryCheck {
  const toleranceMs = resolveTolerance(options);
  if (nowMs > commitment.expiresAtMs + toleranceMs) return { ok: false, reason: 'expired' };
  if (nowMs < commitment.createdAtMs - toleranceMs) return { ok: false, reason: 'not_yet_valid' };
  return { ok: true };
}

export type RecordClockCheck =
  | { readonly ok: true }
  | { readonly ok: false; readonly reason: 'timestamp_in_future'; readonly index: number; readonly detail: string };

/**
 * Are the chain's records no later than `nowMs` plus the tolerance, by the clock of whoever
 * receives the chain (docs/protocol.md section 7.4)? A record signed later than that was made by a
 * device whose clock runs ahead; the server refuses it at every route that receives a chain, and
 * a wallet refuses to receive it. The answer names the first such record (timestamps never
 * decrease along a verified chain, so every later one is in the future too). Time only moves
 * forward, so a chain that passed once passes at every later instant: records registered before
 * need no second look.
 */
export function checkRecordClock(chain: readonly Pick<TransferRecord, 'timestampMs'>[], nowMs: number, options?: VerifyOptions): RecordClockCheck {
  const toleranceMs = resolveTolerance(options);
  const index = chain.findIndex((record) => record.timestampMs > nowMs + toleranceMs);
  if (index === -1) return { ok: true };
  return {
    ok: false,
    reason: 'timestamp_in_future',
    index,
    detail: `record ${index} is timestamped ${chain[index]!.timestampMs - nowMs} ms after this clock, more than the ${toleranceMs} ms tolerance`,
  };
}

/**
 * Two transfer records with the same previous hash, both signed by the same key: that key spent
 * the PLC twice. The pair is a self-contained proof anyone can check with `verifyForkEvidence`.
 */
export interface ForkEvidence {
  readonly prevHash: Uint8Array;
  readonly culpritPublicKey: Uint8Array;
  readonly first: TransferRecord;
  readonly second: TransferRecord;
}

export type ChainComparison =
  /** Same records, same order. */
  | { readonly kind: 'identical'; readonly length: number }
  /** The second chain continues the first; `newRecords` are the ones after the common prefix. */
  | { readonly kind: 'extends'; readonly commonLength: number; readonly newRecords: readonly TransferRecord[] }
  /** The second chain is a strict prefix of the first: an older state of the same PLC. */
  | { readonly kind: 'behind'; readonly commonLength: number }
  /** The chains diverge at `index` after the same previous hash: a double spend by the culprit. */
  | { readonly kind: 'fork'; readonly index: number; readonly culpritPublicKey: Uint8Array; readonly evidence: ForkEvidence }
  /** The chains diverge at `index` without sharing a previous hash: at least one is invalid. */
  | { readonly kind: 'unrelated'; readonly index: number };

/**
 * Compares two chains of the same PLC record by record. Records are compared by their recomputed
 * hash (their identity), so two signatures over the same transfer count as one record. Both
 * chains should have passed `verifyPlc`; this function does not verify signatures itself.
 */
export function compareTransferChains(first: readonly TransferRecord[], second: readonly TransferRecord[]): ChainComparison {
  const commonMax = Math.min(first.length, second.length);
  for (let index = 0; index < commonMax; index++) {
    const a = first[index]!;
    const b = second[index]!;
    if (bytesEqual(computeRecordHash(a), computeRecordHash(b))) continue;
    if (bytesEqual(a.prevHash, b.prevHash) && bytesEqual(a.senderPublicKey, b.senderPublicKey)) {
      return {
        kind: 'fork',
        index,
        culpritPublicKey: a.senderPublicKey,
        evidence: { prevHash: a.prevHash, culpritPublicKey: a.senderPublicKey, first: a, second: b },
      };
    }
    return { kind: 'unrelated', index };
  }
  if (first.length === second.length) return { kind: 'identical', length: first.length };
  if (second.length > first.length) {
    return { kind: 'extends', commonLength: first.length, newRecords: second.slice(first.length) };
  }
  return { kind: 'behind', commonLength: second.length };
}

export type ForkDetection = ChainComparison | { readonly kind: 'different_plc' };

/** Fork detection between two copies of a PLC; `different_plc` when the commitments differ. */
export function detectFork(first: Plc, second: Plc): ForkDetection {
  if (!bytesEqual(computeCommitmentHash(first.commitment), computeCommitmentHash(second.commitment))) {
    return { kind: 'different_plc' };
  }
  return compareTransferChains(first.transferChain, second.transferChain);
}

/**
 * The server's view: `known` is the chain it has registered for a PLC, `presented` the chain a
 * transfer registration or a redemption brings. `extends` is the only acceptable answer for a new
 * hop; `identical` for a redemption of the known state; `behind` means the presenter is replaying
 * a state the PLC has already left; `fork` carries the proof against the double spender.
 */
export function findForkAgainstKnown(known: readonly TransferRecord[], presented: readonly TransferRecord[]): ChainComparison {
  return compareTransferChains(known, presented);
}

/**
 * Checks a fork proof on its own: two different records, the same previous hash, the same sender
 * (the culprit), both signatures valid. False for anything else, including malformed input.
 */
export function verifyForkEvidence(evidence: ForkEvidence): boolean {
  try {
    const { first, second, prevHash, culpritPublicKey } = evidence;
    if (!isRecordWellFormed(first) || !isRecordWellFormed(second) || !isBytes(prevHash, hashBytes)) return false;
    if (!bytesEqual(first.prevHash, prevHash) || !bytesEqual(second.prevHash, prevHash)) return false;
    if (!bytesEqual(first.senderPublicKey, culpritPublicKey) || !bytesEqual(second.senderPublicKey, culpritPublicKey)) return false;
    if (bytesEqual(computeRecordHash(first), computeRecordHash(second))) return false;
    return (
      verifySignature(first.signature, encodeTransferMessage(first), culpritPublicKey) &&
      verifySignature(second.signature, encodeTransferMessage(second), culpritPublicKey)
    );
  } catch {
    return false;
  }
}
