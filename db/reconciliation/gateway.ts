import { z } from 'zod';
import {
  chargeSetupWindowMs,
  chargeStaleGraceMs,
  notCreatedStatus,
  type PendingCharge,
  type PendingRedemption,
} from '../../src/reconciliation/gateway.ts';
import type { ReconcileTool } from '../../src/reconciliation/tools.ts';
import { finishCharge } from '../charges.ts';
import type { Pool, Queryable } from '../pool.ts';
import { redemptionRow } from '../redemptions.ts';
import { many } from '../sql.ts';
import { currencyEnum, existingTx } from './shared.ts';

/**
 * The gateway reconcile tools' SQL (docs/reconciliation.md, "Gateway tools"): the pages of
 * PENDING_PAYMENT redemptions and PENDING charges a batch finds, the rows' final status once
 * their owners have booked, and the one booking a run makes itself, the outcome of a charge whose
 * workflow has ended, through the charge's own guarded transition (db/charges.ts `finishCharge`,
 * under `charge:<id>:settle|fail`). The gateway reads, the hand-over and the items are
 * services/reconcile-gateway.ts.
 */

const pendingRedemptionRow = redemptionRow
  .pick({ id: true, token_id: true, bearer_pubkey: true, bearer_owner_id: true, issuer_owner_id: true, amount_minor: true, fee_minor: true, currency: true, gateway_transfer_id: true, rail: true })
  .extend({ reference_tx_id: z.string().uuid().nullable() });

/** A page of PENDING_PAYMENT redemptions by id, after `after` (a checked uuid cursor; null: the start). */
export function pendingRedemptions(db: Queryable, after: string | null, limit: number): Promise<(PendingRedemption & { rail: 'pix' | 'boleto' })[]> {
  return many(db, pendingRedemptionRow, {
    name: 'reconcile-pending-redemptions',
    text: `SELECT r.id, r.token_id, r.bearer_pubkey, r.bearer_owner_id, r.issuer_owner_id, r.amount_minor, r.fee_minor, r.currency,
                  r.gateway_transfer_id, r.rail, ${existingTx('r.request_tx_id')}
             FROM redemptions r
            WHERE r.status = 'PENDING_PAYMENT' AND ($1::uuid IS NULL OR r.id > $1)
            ORDER BY r.id LIMIT $2`,
    values: [after, limit],
  });
}

const pendingChargeRow = z.object({
  id: z.string().uuid(),
  owner_id: z.string(),
  amount_minor: z.bigint(),
  currency: currencyEnum,
  gateway_payment_id: z.string().nullable(),
  stale: z.boolean(),
  setup_over: z.boolean(),
  reference_tx_id: z.string().uuid().nullable(),
});

/**
 * A page of PENDING charges by id, after `after` (a checked uuid cursor; null: the start), each
 * with whether it is stale (the end of its due date plus the charge workflow's grace has passed)
 * and whether its gateway setup is over.
 */
export function pendingCharges(db: Queryable, after: string | null, limit: number): Promise<PendingCharge[]> {
  return many(db, pendingChargeRow, {
    name: 'reconcile-pending-charges',
    text: `SELECT c.id, c.owner_id, c.amount_minor, c.currency, c.gateway_payment_id,
                  ((c.due_date + 1)::timestamp AT TIME ZONE 'America/Sao_Paulo')
                    + make_interval(secs => (CASE WHEN c.billing_type = 'PIX' THEN $3 ELSE $4 END)::double precision / 1000)
                    < now() AS stale,
                  c.created_at + make_interval(secs => $5::double precision / 1000) < now() AS setup_over,
                  ${existingTx('c.created_tx_id')}
             FROM charges c
            WHERE c.status = 'PENDING' AND ($1::uuid IS NULL OR c.id > $1)
            ORDER BY c.id LIMIT $2`,
    values: [after, limit, chargeStaleGraceMs.PIX, chargeStaleGraceMs.BOLETO, chargeSetupWindowMs],
  });
}

const finalRow = z.object({
  id: z.string().uuid(),
  status: z.string(),
  /** The settlement or failure booking, when the ledger holds it. */
  tx_id: z.string().uuid().nullable(),
});

/** The rows' status now, with the booking of a final one, by id. */
export async function readFinal(
  db: Queryable,
  subject: 'redemption' | 'charge',
  ids: readonly string[],
): Promise<Map<string, { status: string; txId: string | null }>> {
  if (ids.length === 0) return new Map();
  const table = subject === 'redemption' ? 'redemptions' : 'charges';
  const rows = await many(db, finalRow, {
    name: `reconcile-final-${table}`,
    text: `SELECT s.id, s.status,
                  (SELECT lt.id FROM ledger_transactions lt
                    WHERE lt.id = CASE s.status WHEN 'SETTLED' THEN s.settle_tx_id WHEN 'FAILED' THEN s.fail_tx_id END) AS tx_id
             FROM ${table} s WHERE s.id = ANY ($1::uuid[])`,
    values: [ids],
  });
  return new Map(rows.map((row) => [row.id, { status: row.status, txId: row.tx_id }]));
}

/**
 * Books the outcome of a charge whose workflow has ended, through the charge's own guarded
 * transition (db/charges.ts finishCharge: `charge:<id>:settle` or `charge:<id>:fail`), with what
 * the gateway says of it (NOT_CREATED: no gateway payment was ever created).
 */
export async function finishEndedCharge(
  pool: Pool,
  chargeId: string,
  verdict: 'SETTLE' | 'FAIL',
  gatewayStatus: string,
  tool: ReconcileTool,
): Promise<void> {
  if (verdict === 'SETTLE') {
    await finishCharge(pool, chargeId, { status: 'SETTLED', gatewayStatus });
    return;
  }
  const reason =
    gatewayStatus === notCreatedStatus
      ? `reconcile ${tool}: no gateway payment was ever created`
      : `reconcile ${tool}: the gateway charge is ${gatewayStatus}`;
  await finishCharge(pool, chargeId, { status: 'FAILED', gatewayStatus: gatewayStatus === notCreatedStatus ? null : gatewayStatus, reason });
}
