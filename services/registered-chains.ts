import { LRUCache } from 'lru-cache';
import { bytesToHex, hexToBytes, type TransferRecord, type VerifiedPrefix } from '../src/protocol/index.ts';
import { toTransferRecord, type KnownRecord } from '../src/plc/register-transfers.ts';

/**
 * What this process last saw registered for a live PLC: its commitment, its chain (verified when
 * it was registered) and the head the database had then. The transfer route uses it to skip the
 * read that would fetch the same facts, and to verify only the records that are new; the append
 * is still a compare-and-set on the chain's length and head in the database, so a stale entry
 * costs one failed write and a read, never a wrong answer. Registered records never change, so
 * an entry's chain stays true as a prefix of the PLC's chain even when the PLC has moved on.
 *
 * Bounded (least recently used out first); an entry is only written after the database accepted
 * the state it describes. Each API replica has its own, and a replica without the entry reads.
 */
export interface RegisteredChain {
  tokenId: string;
  /** Hex; the entry only serves a PLC whose carried commitment hash is this one. */
  commitmentHash: string;
  expiresAtMs: number;
  /** ISSUED (no hop) or TRANSFERRED, without a redemption in flight, when the entry was written. */
  status: 'ISSUED' | 'TRANSFERRED';
  chainLength: number;
  headHash: string;
  known: readonly KnownRecord[];
  /** `known` decoded, for the chain comparison. */
  knownRecords: readonly TransferRecord[];
  /** The signatures verified when the chain was registered. */
  prefix: VerifiedPrefix;
}

export class RegisteredChains {
  private readonly cache: LRUCache<string, RegisteredChain> | null;

  constructor(maxEntries: number) {
    this.cache = maxEntries > 0 ? new LRUCache({ max: maxEntries }) : null;
  }

  get(tokenId: string): RegisteredChain | undefined {
    return this.cache?.get(tokenId);
  }

  forget(tokenId: string): void {
    this.cache?.delete(tokenId);
  }

  remember(entry: RegisteredChain): void {
    this.cache?.set(entry.tokenId, entry);
  }

  /** A PLC just issued: no hop yet, its head is its commitment hash. */
  rememberIssued(plc: { tokenId: string; commitmentHash: Uint8Array; issuerSignature: Uint8Array; expiresAtMs: number }): void {
    if (this.cache === null) return;
    const commitmentHash = bytesToHex(plc.commitmentHash);
    this.cache.set(plc.tokenId, {
      tokenId: plc.tokenId,
      commitmentHash,
      expiresAtMs: plc.expiresAtMs,
      status: 'ISSUED',
      chainLength: 0,
      headHash: commitmentHash,
      known: [],
      knownRecords: [],
      prefix: { issuerSignature: plc.issuerSignature, records: [] },
    });
  }

  /**
   * The chain after an append the database accepted: `previous` (this entry, or the one built
   * from the row read) plus the records appended, in position order.
   */
  rememberExtended(previous: RegisteredChain, appended: readonly (KnownRecord & { position: number })[], head: { chainLength: number; headHash: string }): void {
    if (this.cache === null) return;
    const fresh = appended.map(({ position: _position, ...record }) => record);
    const freshRecords = fresh.map(toTransferRecord);
    this.cache.set(previous.tokenId, {
      ...previous,
      status: 'TRANSFERRED',
      chainLength: head.chainLength,
      headHash: head.headHash,
      known: [...previous.known, ...fresh],
      knownRecords: [...previous.knownRecords, ...freshRecords],
      prefix: {
        issuerSignature: previous.prefix.issuerSignature,
        records: [...previous.prefix.records, ...freshRecords.map((record) => ({ hash: record.hash, signature: record.signature }))],
      },
    });
  }
}

/** An entry built from a row and chain read from the database (the route's slow path). */
export function registeredChainOf(row: {
  token_id: string;
  commitment_hash: string;
  signature: string;
  expires_at_ms: string | number | bigint;
  status: string;
  chain_length: number;
  head_hash: string;
  redemption_id: string | null;
}, known: readonly KnownRecord[]): RegisteredChain | null {
  if ((row.status !== 'ISSUED' && row.status !== 'TRANSFERRED') || row.redemption_id !== null || known.length !== row.chain_length) return null;
  const knownRecords = known.map(toTransferRecord);
  return {
    tokenId: row.token_id,
    commitmentHash: row.commitment_hash,
    expiresAtMs: Number(row.expires_at_ms),
    status: row.status,
    chainLength: row.chain_length,
    headHash: row.head_hash,
    known,
    knownRecords,
    prefix: { issuerSignature: hexToBytes(row.signature, 64), records: knownRecords.map((record) => ({ hash: record.hash, signature: record.signature })) },
  };
}
