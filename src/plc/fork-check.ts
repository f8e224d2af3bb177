import { bytesToHex, findForkAgainstKnown, transferRecordToJson, type TransferRecord, type TransferRecordJson } from '../protocol/index.ts';
import { fromTransferRecord, toTransferRecord, type KnownRecord } from './register-transfers.ts';

/**
 * The server's fork check (docs/protocol.md section 8), the pure part: does a presented chain fork
 * from the chain the server registered? Every route that receives a chain runs it first, before
 * looking at the PLC's status (services/fork-check.ts): a fork is a proof against its signer
 * whatever became of the PLC since.
 *
 * One fork is one PLC state spent twice by one key: the same token id, previous hash and culprit.
 * However many different successors of that state are shown, and however often, it is one fork,
 * flagged once and counted at each showing.
 */
export interface ForkFinding {
  readonly tokenId: string;
  /** Position of the two conflicting records in their chains. */
  readonly index: number;
  readonly culpritPubkey: string;
  readonly prevHash: string;
  /** The record the server registered at that position. */
  readonly registered: KnownRecord;
  /** The presented record that conflicts with it. */
  readonly presented: KnownRecord;
}

export function findFork(
  tokenId: string,
  known: readonly KnownRecord[],
  presented: readonly TransferRecord[],
  knownRecords: readonly TransferRecord[] = known.map(toTransferRecord),
): ForkFinding | null {
  const comparison = findForkAgainstKnown(knownRecords, presented);
  if (comparison.kind !== 'fork') return null;
  const registered = known[comparison.index];
  const presentedRecord = presented[comparison.index];
  if (registered === undefined || presentedRecord === undefined) return null;
  return {
    tokenId,
    index: comparison.index,
    culpritPubkey: bytesToHex(comparison.culpritPublicKey),
    prevHash: bytesToHex(comparison.evidence.prevHash),
    registered,
    presented: fromTransferRecord(presentedRecord),
  };
}

/** The risk flag's dedupe key: one flag per (PLC, spent state, culprit). */
export function forkFlagKey(finding: ForkFinding): string {
  return `fork:${finding.tokenId}:${finding.prevHash}:${finding.culpritPubkey}`;
}

export interface ForkEvidenceJson {
  readonly token_id: string;
  readonly culprit_pubkey: string;
  readonly prev_hash: string;
  readonly position: number;
  /** Both records in full, in the protocol's JSON record form: `verifyForkEvidence` checks them offline. */
  readonly registered_record: TransferRecordJson;
  readonly presented_record: TransferRecordJson;
}

export function forkEvidenceJson(finding: ForkFinding): ForkEvidenceJson {
  return {
    token_id: finding.tokenId,
    culprit_pubkey: finding.culpritPubkey,
    prev_hash: finding.prevHash,
    position: finding.index,
    registered_record: transferRecordToJson(toTransferRecord(finding.registered)),
    presented_record: transferRecordToJson(toTransferRecord(finding.presented)),
  };
}

/** The finding behind a registration decision that found a fork (src/plc/register-transfers.ts). */
export function forkFindingOf(tokenId: string, decision: { index: number; culpritPubkey: string; known: KnownRecord; presented: KnownRecord }): ForkFinding {
  return {
    tokenId,
    index: decision.index,
    culpritPubkey: decision.culpritPubkey,
    prevHash: decision.known.prevHash,
    registered: decision.known,
    presented: decision.presented,
  };
}
