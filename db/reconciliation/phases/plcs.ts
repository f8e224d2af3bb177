import { z } from 'zod';
import { ledgerKeys } from '../../../src/ledger/keys.ts';
import { overduePlcPlan, plcIssuePlan, releasedPlcPlan, type PlcRepairFacts } from '../../../src/reconciliation/ledger-repairs.ts';
import { many, maybeOne } from '../../sql.ts';
import { currencyEnum, existingTx, hasTx } from '../shared.ts';
import { pointRowAt, rowRepairPhase } from './row-repair.ts';

/** PLCs whose issue or release booking is missing (release-expired-promises, plc-issue-bookings). */

const plcRepairRow = z.object({
  token_id: z.string().uuid(),
  issuer_owner_id: z.string(),
  amount_minor: z.bigint(),
  currency: currencyEnum,
  status: z.enum(['ISSUED', 'TRANSFERRED', 'REDEEMED', 'EXPIRED', 'CANCELLED']),
  reference_tx_id: z.string().uuid().nullable(),
});
type PlcRepairRow = z.infer<typeof plcRepairRow>;

const plcRepairColumns = `p.token_id, p.issuer_owner_id, p.amount_minor, p.currency, p.status, ${existingTx('p.issue_tx_id')}`;

function facts(row: PlcRepairRow): PlcRepairFacts {
  return {
    tokenId: row.token_id,
    issuerId: row.issuer_owner_id,
    currency: row.currency,
    amountMinor: row.amount_minor,
    status: row.status,
    referenceTransactionId: row.reference_tx_id,
  };
}

const tokenId = (row: PlcRepairRow) => row.token_id;

/**
 * release-expired-promises, first part: PLCs already EXPIRED (or CANCELLED) whose release was
 * never booked (no `plc:<token_id>:release`): their PROMISED amount is stuck. The release is
 * booked with the key releasePlc uses and the PLC's final_tx_id pointed at it.
 */
export const releasedPlcsPhase = rowRepairPhase<PlcRepairRow>({
  name: 'released-plcs',
  candidates: (db, _ctx, after, limit) =>
    many(db, plcRepairRow, {
      name: 'reconcile-released-plcs',
      text: `SELECT ${plcRepairColumns} FROM plcs p
              WHERE p.status IN ('EXPIRED', 'CANCELLED') AND ($1::uuid IS NULL OR p.token_id > $1)
                AND NOT ${hasTx(ledgerKeys.plcRelease.sql('p.token_id'))}
              ORDER BY p.token_id LIMIT $2`,
      values: [after, limit],
    }),
  recheck: (client, _ctx, key) =>
    maybeOne(client, plcRepairRow, {
      name: 'reconcile-released-plc-lock',
      text: `SELECT ${plcRepairColumns} FROM plcs p
              WHERE p.token_id = $1 AND p.status IN ('EXPIRED', 'CANCELLED') AND NOT ${hasTx(ledgerKeys.plcRelease.sql('p.token_id'))}
              FOR UPDATE OF p`,
      values: [key],
    }),
  key: tokenId,
  plan: (row) => releasedPlcPlan(facts(row)),
  afterPost: pointRowAt('reconcile-released-plc-point', 'UPDATE plcs SET final_tx_id = $2 WHERE token_id = $1', tokenId),
});

const overdueCondition = `p.status IN ('ISSUED', 'TRANSFERRED') AND p.redemption_id IS NULL
  AND p.expires_at + make_interval(secs => $2::double precision / 1000) < now()`;

/**
 * release-expired-promises, second part: live PLCs past their expiry (plus the clock tolerance)
 * with no redemption in flight, which neither their own workflow nor the expire-tokens sweep
 * expired. Expired here exactly as releasePlc does it (guarded status change, PLC_EXPIRED under
 * `plc:<token_id>:release`, final_tx_id), so the PLC's workflow, if it still runs, finds it done.
 */
export const overduePlcsPhase = rowRepairPhase<PlcRepairRow>({
  name: 'overdue-plcs',
  candidates: (db, ctx, after, limit) =>
    many(db, plcRepairRow, {
      name: 'reconcile-overdue-plcs',
      text: `SELECT ${plcRepairColumns} FROM plcs p
              WHERE ($1::uuid IS NULL OR p.token_id > $1) AND ${overdueCondition}
              ORDER BY p.token_id LIMIT $3`,
      values: [after, ctx.params.expiryGraceMs ?? 0, limit],
    }),
  recheck: (client, ctx, key) =>
    maybeOne(client, plcRepairRow, {
      name: 'reconcile-overdue-plc-lock',
      text: `SELECT ${plcRepairColumns} FROM plcs p WHERE p.token_id = $1 AND ${overdueCondition} FOR UPDATE OF p`,
      values: [key, ctx.params.expiryGraceMs ?? 0],
    }),
  key: tokenId,
  plan: (row) => overduePlcPlan(facts(row)),
  afterPost: pointRowAt(
    'reconcile-overdue-plc-expire',
    `UPDATE plcs SET status = 'EXPIRED', final_tx_id = $2, status_changed_at = now() WHERE token_id = $1`,
    tokenId,
  ),
});

/**
 * The per-owner reconcile (POST /api/v1/balance/{owner_id}/reconcile): the owner's live PLCs
 * whose PLC_ISSUED (`plc:<token_id>:issue`, AVAILABLE -> PROMISED) is missing. A PLC and its
 * booking are written in one transaction (db/plcs.ts issuePlc), so normally there are none.
 */
export const liveIssuedPlcsPhase = rowRepairPhase<PlcRepairRow>({
  name: 'live-plcs',
  candidates: (db, ctx, after, limit) =>
    many(db, plcRepairRow, {
      name: 'reconcile-live-plcs',
      text: `SELECT ${plcRepairColumns} FROM plcs p
              WHERE p.issuer_owner_id = $1 AND p.status IN ('ISSUED', 'TRANSFERRED') AND ($2::uuid IS NULL OR p.token_id > $2)
                AND NOT ${hasTx(ledgerKeys.plcIssue.sql('p.token_id'))}
              ORDER BY p.token_id LIMIT $3`,
      values: [ctx.params.ownerId ?? null, after, limit],
    }),
  recheck: (client, ctx, key) =>
    maybeOne(client, plcRepairRow, {
      name: 'reconcile-live-plc-lock',
      text: `SELECT ${plcRepairColumns} FROM plcs p
              WHERE p.token_id = $1 AND p.issuer_owner_id = $2 AND p.status IN ('ISSUED', 'TRANSFERRED')
                AND NOT ${hasTx(ledgerKeys.plcIssue.sql('p.token_id'))}
              FOR UPDATE OF p`,
      values: [key, ctx.params.ownerId ?? null],
    }),
  key: tokenId,
  plan: (row) => plcIssuePlan(facts(row)),
  afterPost: pointRowAt('reconcile-live-plc-point', 'UPDATE plcs SET issue_tx_id = $2 WHERE token_id = $1', tokenId),
});
