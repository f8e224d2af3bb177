import { bytesToHex, computeRecordHash, findForkAgainstKnown, hexToBytes, type TransferRecord } from '../protocol/index.ts';
import { canTransfer, type PlcStatus } from './lifecycle.ts';

/**
 * What registering a presented chain does to the chain the server knows, decided purely from the
 * two chains (both already verified). Only an extension is written; a fork is refused with its
 * proof; an older or equal state changes nothing.
 */

export interface KnownRecord {
  senderPubkey: string;
  recipientPubkey: string;
  timestampMs: number;
  nonce: string;
  prevHash: string;
  signature: string;
  recordHash: string;
}

export type RegistrationDecision =
  | { kind: 'extend'; records: (KnownRecord & { position: number })[]; headHash: string; bearerPubkey: string; chainLength: number }
  | { kind: 'unchanged' }
  | { kind: 'fork'; index: number; culpritPubkey: string; known: KnownRecord; presented: KnownRecord & { position: number } }
  | { kind: 'unrelated'; index: number }
  | { kind: 'refuse'; status: PlcStatus };

export function toTransferRecord(record: KnownRecord): TransferRecord {
  return {
    senderPublicKey: hexToBytes(record.senderPubkey, 32),
    recipientPublicKey: hexToBytes(record.recipientPubkey, 32),
    timestampMs: record.timestampMs,
    nonce: hexToBytes(record.nonce, 16),
    prevHash: hexToBytes(record.prevHash, 32),
    signature: hexToBytes(record.signature, 64),
    hash: hexToBytes(record.recordHash, 32),
  };
}

export function fromTransferRecord(record: TransferRecord): KnownRecord {
  return {
    senderPubkey: bytesToHex(record.senderPublicKey),
    recipientPubkey: bytesToHex(record.recipientPublicKey),
    timestampMs: record.timestampMs,
    nonce: bytesToHex(record.nonce),
    prevHash: bytesToHex(record.prevHash),
    signature: bytesToHex(record.signature),
    recordHash: bytesToHex(computeRecordHash(record)),
  };
}

export function decideRegistration(
  plc: { status: PlcStatus; redemptionInFlight: boolean },
  known: readonly KnownRecord[],
  presented: readonly TransferRecord[],
  /** `known` already decoded (`toTransferRecord`), when the caller keeps it. */
  knownRecords: readonly TransferRecord[] = known.map(toTransferRecord),
): RegistrationDecision {
  const comparison = findForkAgainstKnown(knownRecords, presented);
  switch (comparison.kind) {
    case 'identical':
    case 'behind':
      return { kind: 'unchanged' };
    case 'fork': {
      const presentedRecord = presented[comparison.index];
      const knownRecord = known[comparison.index];
      if (presentedRecord === undefined || knownRecord === undefined) return { kind: 'unrelated', index: comparison.index };
      return {
        kind: 'fork',
        index: comparison.index,
        culpritPubkey: bytesToHex(comparison.culpritPublicKey),
        known: knownRecord,
        presented: { ...fromTransferRecord(presentedRecord), position: comparison.index },
      };
    }
    case 'unrelated':
      return { kind: 'unrelated', index: comparison.index };
    case 'extends': {
      if (!canTransfer(plc.status, plc.redemptionInFlight)) return { kind: 'refuse', status: plc.status };
      const records = comparison.newRecords.map((record, offset) => ({
        ...fromTransferRecord(record),
        position: comparison.commonLength + offset,
      }));
      const last = records[records.length - 1];
      if (last === undefined) return { kind: 'unchanged' };
      return {
        kind: 'extend',
        records,
        headHash: last.recordHash,
        bearerPubkey: last.recipientPubkey,
        chainLength: comparison.commonLength + records.length,
      };
    }
  }
}
