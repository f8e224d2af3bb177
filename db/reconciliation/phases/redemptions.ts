import { z } from 'zod';
import { ledgerKeys } from '../../../src/ledger/keys.ts';
import { redemptionFailPlan } from '../../../src/reconciliation/ledger-repairs.ts';
import { exec, many, maybeOne } from '../../sql.ts';
import { redemptionRow } from '../../redemptions.ts';
import { existingTx, hasTx } from '../shared.ts';
import { rowRepairPhase } from './row-repair.ts';

/** Redemptions whose failure booking is missing (fix-failed-pending). */

const redemptionRepairRow = redemptionRow
  .pick({ id: true, token_id: true, bearer_owner_id: true, issuer_owner_id: true, amount_minor: true, currency: true })
  .extend({ reference_tx_id: z.string().uuid().nullable() });
type RedemptionRepairRow = z.infer<typeof redemptionRepairRow>;
const redemptionRepairColumns = `r.id, r.token_id, r.bearer_owner_id, r.issuer_owner_id, r.amount_minor, r.currency, ${existingTx('r.request_tx_id')}`;
const failedRedemptionCondition = `r.status = 'FAILED' AND ${hasTx(ledgerKeys.redemptionRequest.sql('r.id'))}
  AND NOT ${hasTx(ledgerKeys.redemptionFail.sql('r.id'))}`;

/**
 * fix-failed-pending, redemptions: FAILED redemptions whose REDEEM_REQUESTED was booked but whose
 * REDEEM_FAILED (`redemption:<id>:fail`) never was: the bearer's PENDING still holds the amount
 * and the issuer's promise was never restored. Booked as finishRedemption books it (bearer
 * PENDING -> issuer PROMISED: the PLC reverted), fail_tx_id pointed at it, and the PLC's
 * redemption mark cleared if it still names this redemption, so the PLC can be redeemed again.
 */
export const failedRedemptionsPhase = rowRepairPhase<RedemptionRepairRow>({
  name: 'failed-redemptions',
  candidates: (db, _ctx, after, limit) =>
    many(db, redemptionRepairRow, {
      name: 'reconcile-failed-redemptions',
      text: `SELECT ${redemptionRepairColumns} FROM redemptions r
              WHERE ($1::uuid IS NULL OR r.id > $1) AND ${failedRedemptionCondition}
              ORDER BY r.id LIMIT $2`,
      values: [after, limit],
    }),
  recheck: async (client, _ctx, key) => {
    const row = await maybeOne(client, redemptionRepairRow, {
      name: 'reconcile-failed-redemption-lock',
      text: `SELECT ${redemptionRepairColumns} FROM redemptions r WHERE r.id = $1 AND ${failedRedemptionCondition} FOR UPDATE OF r`,
      values: [key],
    });
    // The PLC after the redemption, in finishRedemption's order.
    if (row !== null) {
      await exec(client, { name: 'reconcile-failed-redemption-lock-plc', text: 'SELECT 1 FROM plcs WHERE token_id = $1 FOR UPDATE', values: [row.token_id] });
    }
    return row;
  },
  key: (row) => row.id,
  plan: (row) =>
    redemptionFailPlan({
      redemptionId: row.id,
      bearerId: row.bearer_owner_id,
      issuerId: row.issuer_owner_id,
      currency: row.currency,
      amountMinor: row.amount_minor,
      referenceTransactionId: row.reference_tx_id,
    }),
  afterPost: async (client, row, transactionId) => {
    await exec(client, {
      name: 'reconcile-failed-redemption-point',
      text: 'UPDATE redemptions SET fail_tx_id = $2, updated_at = now() WHERE id = $1',
      values: [row.id, transactionId],
    });
    await exec(client, {
      name: 'reconcile-failed-redemption-revert-plc',
      text: 'UPDATE plcs SET redemption_id = NULL WHERE token_id = $1 AND redemption_id = $2',
      values: [row.token_id, row.id],
    });
  },
});
