import type { PlcState } from '../activities/plc.ts';
import { toPlcState } from '../services/plc-state.ts';
import { expiryBucketOf, type PlcRow, type TransferRow } from '../db/plcs.ts';
import { workflowIds } from '../workflows/ids.ts';
import { msToIso } from '../src/protocol/index.ts';
import { money } from './schemas/money.ts';

type PlcStatusView = ReturnType<typeof statusView>;

/** The PLC as the status endpoints show it. */
export function toPlcStatus(row: PlcRow): PlcStatusView {
  // toPlcState fills every field from a row.
  return toPlcStatusFromState(toPlcState(row)) as PlcStatusView;
}

/**
 * The same view built from the issue's own result (the row its INSERT returned), or null when the
 * result lacks a field (recorded by an older worker): then the caller reads the row.
 */
export function toPlcStatusFromState(state: PlcState): PlcStatusView | null {
  const { headHash, commitmentHash, redemptionInFlight, statusChangedAtMs } = state;
  if (headHash === undefined || commitmentHash === undefined || redemptionInFlight === undefined || statusChangedAtMs === undefined) return null;
  return statusView(state, { headHash, commitmentHash, redemptionInFlight, statusChangedAtMs });
}

function statusView(state: PlcState, rest: Required<Pick<PlcState, 'headHash' | 'commitmentHash' | 'redemptionInFlight' | 'statusChangedAtMs'>>) {
  return {
    token_id: state.tokenId,
    status: state.status,
    amount: money(BigInt(state.amountMinor), state.currency),
    currency: state.currency,
    issuer_pubkey: state.issuerPubkey,
    bearer_pubkey: state.bearerPubkey,
    chain_length: state.chainLength,
    head_hash: rest.headHash,
    commitment_hash: rest.commitmentHash,
    created_at: msToIso(state.createdAtMs),
    expires_at: msToIso(state.expiresAtMs),
    redemption_in_flight: rest.redemptionInFlight,
    updated_at: new Date(rest.statusChangedAtMs).toISOString(),
  };
}

export function toChainEntry(row: TransferRow) {
  return {
    position: row.position,
    sender_pubkey: row.sender_pubkey,
    recipient_pubkey: row.recipient_pubkey,
    timestamp: msToIso(Number(row.timestamp_ms)),
    nonce: row.nonce,
    prev_hash: row.prev_hash,
    signature: row.signature,
    hash: row.record_hash,
    registered_at: row.registered_at.toISOString(),
  };
}

/** The full PLC JSON (docs/protocol.md) rebuilt from the stored rows, with the issue receipt kept for it (section 19), if any. */
export function toPlcJson(row: PlcRow, transfers: TransferRow[], issueReceipt: string | null = null) {
  return {
    version: row.version,
    token_id: row.token_id,
    issuer_pubkey: row.issuer_pubkey,
    amount: money(row.amount_minor, row.currency),
    currency: row.currency,
    created_at: msToIso(Number(row.created_at_ms)),
    expires_at: msToIso(Number(row.expires_at_ms)),
    nonce: row.nonce,
    commitment_hash: row.commitment_hash,
    signature: row.signature,
    transfer_chain: transfers.map((t) => {
      const { position: _position, registered_at: _registeredAt, ...record } = toChainEntry(t);
      return record;
    }),
    ...(issueReceipt === null ? {} : { issue_receipt: issueReceipt }),
  };
}

/**
 * The workflow an operator looks a PLC's expiry up in (docs/plc.md, "Expiry by time buckets"):
 * its expiry bucket's `plc-expiry-<minute>`, or, for a PLC issued before buckets, its own `plc-<token_id>`.
 */
export function expiryWorkflowIdOf(
  row: Pick<PlcRow, 'token_id' | 'expiry_due_at'>,
  config: { TEMPORAL_TASK_QUEUE: string; PLC_EXPIRY_BUCKET_MS: number },
): string {
  const dueAt = row.expiry_due_at ?? null;
  return dueAt === null
    ? workflowIds.plc(row.token_id)
    : workflowIds.plcExpiryBucket(expiryBucketOf(dueAt, config.PLC_EXPIRY_BUCKET_MS).start.getTime(), config.TEMPORAL_TASK_QUEUE);
}
