/**
 * The internal (in-memory) form of a PLC. Keys, hashes, nonces and signatures are raw bytes;
 * money is a bigint of minor units; instants are integer milliseconds since the Unix epoch.
 * The JSON form (schemas.ts) and the compact transport form (transport.ts) convert to and from it.
 */
import type { ProtocolVersion } from './constants.ts';

/** The immutable fields the issuer commits to; their canonical bytes are in commitment.ts. */
export interface PlcCommitment {
  readonly version: ProtocolVersion;
  /** Canonical lowercase UUID v4. */
  readonly tokenId: string;
  readonly issuerPublicKey: Uint8Array;
  readonly amountMinor: bigint;
  /** ISO 4217 code of a protocol currency (constants.ts `currencyDecimals`). */
  readonly currency: string;
  readonly createdAtMs: number;
  readonly expiresAtMs: number;
  /** 16 random bytes making every commitment unique, even for equal amounts and times. */
  readonly nonce: Uint8Array;
}

export interface TransferRecord {
  readonly senderPublicKey: Uint8Array;
  readonly recipientPublicKey: Uint8Array;
  readonly timestampMs: number;
  readonly nonce: Uint8Array;
  /** Hash of the previous record, or the commitment hash for the first record. */
  readonly prevHash: Uint8Array;
  /** The sender's Ed25519 signature over the record's signed message (transfer.ts). */
  readonly signature: Uint8Array;
  /** This record's hash as carried; `verifyPlc` recomputes it and compares. */
  readonly hash: Uint8Array;
}

export interface Plc {
  readonly commitment: PlcCommitment;
  /** The commitment hash as carried; `verifyPlc` recomputes it and compares. */
  readonly commitmentHash: Uint8Array;
  /** The issuer's Ed25519 signature over the 32-byte commitment hash. */
  readonly issuerSignature: Uint8Array;
  /** Ordered from the issuer's first transfer to the current bearer; at most `chainLengthMax`. */
  readonly transferChain: readonly TransferRecord[];
  /**
   * The service's issue receipt as carried (receipt.ts, docs/protocol.md section 19): beside the
   * commitment, not part of it; opaque to the forms, checked by `verifyIssueReceipt`. Absent in a
   * PLC never registered online, or in one from before receipts.
   */
  readonly issueReceipt?: Uint8Array | undefined;
}

/**
 * Why `verifyPlc` refused a PLC. Stable codes: clients, the server's error bodies and the test
 * vectors name them. Listed in the order the verifier checks them (docs/protocol.md section 7);
 * `malformed` and `invalid_public_key` are checked twice, first for the commitment, then for each
 * record.
 */
export const rejectionReasons = [
  'malformed',
  'unsupported_version',
  'invalid_token_id',
  'unsupported_currency',
  'invalid_amount',
  'invalid_timestamp',
  'invalid_ttl',
  'invalid_public_key',
  'chain_too_long',
  'commitment_hash_mismatch',
  'invalid_issuer_signature',
  'broken_link',
  'wrong_sender',
  'self_transfer',
  'timestamp_out_of_range',
  'timestamp_decreasing',
  'duplicate_nonce',
  'record_hash_mismatch',
  'invalid_signature',
] as const;

export type RejectionReason = (typeof rejectionReasons)[number];

export interface Rejection {
  readonly ok: false;
  readonly reason: RejectionReason;
  /** Index of the offending transfer record, or null when the commitment itself is at fault. */
  readonly index: number | null;
  /** A human-readable explanation; not stable, do not branch on it. */
  readonly detail: string;
}
