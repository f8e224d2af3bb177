import type { PlcState } from '../activities/plc.ts';
import type { PlcRow } from '../db/plcs.ts';

/** A PLC's row as the PLC workflow's messages and the API's views carry it (`PlcState`). */
export function toPlcState(row: PlcRow): PlcState {
  return {
    tokenId: row.token_id,
    status: row.status,
    amountMinor: row.amount_minor.toString(),
    currency: row.currency,
    issuerPubkey: row.issuer_pubkey,
    bearerPubkey: row.bearer_pubkey,
    chainLength: row.chain_length,
    createdAtMs: Number(row.created_at_ms),
    expiresAtMs: Number(row.expires_at_ms),
    issueTxId: row.issue_tx_id,
    finalTxId: row.final_tx_id,
    headHash: row.head_hash,
    commitmentHash: row.commitment_hash,
    redemptionInFlight: row.redemption_id !== null && row.status !== 'REDEEMED',
    statusChangedAtMs: row.status_changed_at.getTime(),
  };
}
