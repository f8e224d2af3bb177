import { z } from 'zod';
import { moneyModel, type Entry } from '../src/ledger/money-model.ts';
import { paidFailedRepair, type PaidFailedRedemptionFacts } from '../src/reconciliation/gateway-audit.ts';
import { reconcileIdempotencyKey } from '../src/reconciliation/tools.ts';
import { bookFor, postTransaction } from './ledger.ts';
import { withTransaction, type Pool, type Queryable } from './pool.ts';
import type { ItemRecord } from '../src/reconciliation/items.ts';
import { recordItems } from './reconciliation/runs.ts';
import { bucketState } from './reconciliation/shared.ts';
import { redemptionColumns, redemptionRow, type RedemptionRow } from './redemptions.ts';
import { exec, many, maybeOne, one } from './sql.ts';
import { ledgerKeys } from '../src/ledger/keys.ts';

/**
 * The gateway audit's SQL (docs/reconciliation.md, "The gateway audit"). A run stores what it
 * lists at the gateway in `gateway_audit_objects` (migration 23_gateway_audit), then joins it with our
 * redemptions and charges to find candidates, one query per kind of mismatch, each paged by its
 * key. A transfer or payment is *attributed* to the redemption or charge that recorded its id,
 * else to the one its `externalReference` names (our id). Candidates are only that: the activity
 * reads each again from the gateway and from our rows before it reports it
 * (services/gateway-audit.ts). The one repair, a FAILED redemption the gateway paid out, is
 * one transaction here.
 */

const uuidText = `'^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$'`;
const referenceUuid = (column: string) => `(CASE WHEN ${column} ~ ${uuidText} THEN ${column}::uuid END)`;

export interface AuditObject {
  kind: 'transfer' | 'payment';
  gatewayId: string;
  status: string;
  outcome: 'paid' | 'failed' | 'open';
  amountMinor: bigint;
  externalReference: string | null;
  dateCreated: string;
}

/** Stores one listed page; a page listed twice (a retried batch, a list that shifted) stores each object once. */
export async function storeAuditObjects(db: Queryable, runId: string, objects: readonly AuditObject[]): Promise<void> {
  if (objects.length === 0) return;
  await exec(db, {
    name: 'gateway-audit-store',
    text: `INSERT INTO gateway_audit_objects (run_id, kind, gateway_id, status, outcome, amount_minor, external_reference, date_created)
           SELECT $1, x.kind, x.gateway_id, x.status, x.outcome, x.amount_minor, x.external_reference, x.date_created
             FROM jsonb_to_recordset($2::jsonb) AS x(kind text, gateway_id text, status text, outcome text, amount_minor bigint,
                                                    external_reference text, date_created text)
           ON CONFLICT (run_id, kind, gateway_id) DO UPDATE
             SET status = EXCLUDED.status, outcome = EXCLUDED.outcome, amount_minor = EXCLUDED.amount_minor`,
    values: [
      runId,
      JSON.stringify(
        objects.map((o) => ({
          kind: o.kind,
          gateway_id: o.gatewayId,
          status: o.status,
          outcome: o.outcome,
          amount_minor: o.amountMinor.toString(),
          external_reference: o.externalReference,
          date_created: o.dateCreated.slice(0, 40),
        })),
      ),
    ],
  });
}

/** Deletes the run's scratch rows, and those of runs that ended without getting to their last phase. */
export async function forgetAuditObjects(db: Queryable, runId: string): Promise<number> {
  return exec(db, {
    name: 'gateway-audit-forget',
    text: `DELETE FROM gateway_audit_objects o
            WHERE o.run_id = $1
               OR o.run_id IN (SELECT r.id FROM reconciliation_runs r
                                WHERE r.status <> 'RUNNING' AND r.id IN (SELECT DISTINCT run_id FROM gateway_audit_objects))`,
    values: [runId],
  });
}

const startedRow = z.object({ started_at: z.date() });

/** When the run started: our rows created after it may have gateway resources the listing never saw. */
export async function runStartedAt(db: Queryable, runId: string): Promise<Date> {
  return (await one(db, startedRow, { name: 'gateway-audit-run-start', text: 'SELECT started_at FROM reconciliation_runs WHERE id = $1', values: [runId] }))
    .started_at;
}

/** Transfers as listed, each with the redemption it is attributed to (recorded id first, then reference). */
const attributedTransfers = `
  SELECT o.gateway_id, o.status, o.outcome, o.amount_minor, o.external_reference,
         coalesce(rec.id, ref.id) AS redemption_id, (rec.id IS NOT NULL) AS recorded
    FROM gateway_audit_objects o
    LEFT JOIN redemptions rec ON rec.gateway_transfer_id = o.gateway_id
    LEFT JOIN redemptions ref ON rec.id IS NULL AND ref.id = ${referenceUuid('o.external_reference')}
   WHERE o.run_id = $1 AND o.kind = 'transfer'`;

/** Payments as listed, each with the charge it is attributed to. */
const attributedPayments = `
  SELECT o.gateway_id, o.status, o.outcome, o.amount_minor, o.external_reference,
         coalesce(rec.id, ref.id) AS charge_id, (rec.id IS NOT NULL) AS recorded
    FROM gateway_audit_objects o
    LEFT JOIN charges rec ON rec.gateway_payment_id = o.gateway_id
    LEFT JOIN charges ref ON rec.id IS NULL AND ref.id = ${referenceUuid('o.external_reference')}
   WHERE o.run_id = $1 AND o.kind = 'payment'`;

/**
 * Every transfer our rows recorded, with its redemption and PLC: each redemption's current payout
 * attempt, and the attempts an operator's retry closed (redemption_payout_attempts, migration 21_settlement_retries).
 */
const recordedTransfers = `
  SELECT r.gateway_transfer_id AS transfer_id, r.id AS redemption_id, r.token_id FROM redemptions r WHERE r.gateway_transfer_id IS NOT NULL
  UNION
  SELECT a.gateway_transfer_id, r.id, r.token_id FROM redemption_payout_attempts a JOIN redemptions r ON r.id = a.redemption_id
   WHERE a.gateway_transfer_id IS NOT NULL`;

const keyRow = z.object({ key: z.string() });

async function keys(db: Queryable, name: string, text: string, values: unknown[]): Promise<string[]> {
  return (await many(db, keyRow, { name, text, values })).map((row) => row.key);
}

export interface CandidatePage {
  runId: string;
  after: string | null;
  limit: number;
}

/** Transfers listed as paid whose redemption is FAILED (key: the transfer id). */
export function paidTransfersOfFailedRedemptions(db: Queryable, page: CandidatePage): Promise<string[]> {
  return keys(
    db,
    'gateway-audit-failed-paid',
    `WITH t AS (${attributedTransfers})
     SELECT t.gateway_id AS key FROM t JOIN redemptions r ON r.id = t.redemption_id
      WHERE t.outcome = 'paid' AND r.status = 'FAILED' AND ($2::text IS NULL OR t.gateway_id > $2)
      ORDER BY t.gateway_id LIMIT $3`,
    [page.runId, page.after, page.limit],
  );
}

/**
 * SETTLED redemptions of the window (created since `since`, before the run started) whose
 * recorded transfer was not listed as paid (key: the redemption id).
 */
export function settledRedemptionsWithoutPaidTransfer(db: Queryable, page: CandidatePage & { since: string; before: Date }): Promise<string[]> {
  return keys(
    db,
    'gateway-audit-settled-unpaid',
    `SELECT r.id::text AS key FROM redemptions r
      WHERE r.status = 'SETTLED' AND r.created_at >= ($4::date::timestamp AT TIME ZONE 'America/Sao_Paulo') AND r.created_at < $5
        AND NOT EXISTS (SELECT 1 FROM gateway_audit_objects o
                         WHERE o.run_id = $1 AND o.kind = 'transfer' AND o.gateway_id = r.gateway_transfer_id AND o.outcome = 'paid')
        AND ($2::uuid IS NULL OR r.id > $2::uuid)
      ORDER BY r.id LIMIT $3`,
    [page.runId, page.after, page.limit, page.since, page.before],
  );
}

/**
 * PLCs with a paid transfer that may have more than one (key: the token id): two or more listed
 * as paid, or one and a transfer recorded by another of its redemptions that the listing did not
 * show (created before the window), which the activity reads.
 */
export function plcsMaybePaidTwice(db: Queryable, page: CandidatePage): Promise<string[]> {
  return keys(
    db,
    'gateway-audit-paid-twice',
    `WITH t AS (${attributedTransfers}),
          paid AS (SELECT r.token_id, t.gateway_id FROM t JOIN redemptions r ON r.id = t.redemption_id WHERE t.outcome = 'paid')
     SELECT k.token_id::text AS key FROM (SELECT DISTINCT token_id FROM paid) k
      WHERE ((SELECT count(*) FROM paid p WHERE p.token_id = k.token_id) >= 2
             OR EXISTS (SELECT 1 FROM (${recordedTransfers}) r2
                         WHERE r2.token_id = k.token_id
                           AND NOT EXISTS (SELECT 1 FROM gateway_audit_objects o
                                            WHERE o.run_id = $1 AND o.kind = 'transfer' AND o.gateway_id = r2.transfer_id)))
        AND ($2::uuid IS NULL OR k.token_id > $2::uuid)
      ORDER BY k.token_id LIMIT $3`,
    [page.runId, page.after, page.limit],
  );
}

/** Transfers listed for a PLC's redemptions, and the transfers its redemptions recorded: what the activity reads for it. */
export async function transfersOfPlc(db: Queryable, runId: string, tokenId: string): Promise<{ transferId: string; redemptionId: string }[]> {
  const rows = await many(db, z.object({ transfer_id: z.string(), redemption_id: z.string().uuid() }), {
    name: 'gateway-audit-plc-transfers',
    text: `WITH t AS (${attributedTransfers})
           SELECT t.gateway_id AS transfer_id, t.redemption_id::text AS redemption_id
             FROM t JOIN redemptions r ON r.id = t.redemption_id WHERE r.token_id = $2
           UNION
           SELECT r.transfer_id, r.redemption_id::text FROM (${recordedTransfers}) r WHERE r.token_id = $2
           ORDER BY 1 LIMIT 50`,
    values: [runId, tokenId],
  });
  return rows.map((row) => ({ transferId: row.transfer_id, redemptionId: row.redemption_id }));
}

/** Transfers listed as paid that no redemption accounts for (key: the transfer id). */
export function unattributedPaidTransfers(db: Queryable, page: CandidatePage): Promise<string[]> {
  return keys(
    db,
    'gateway-audit-unknown-payouts',
    `WITH t AS (${attributedTransfers})
     SELECT t.gateway_id AS key FROM t
      WHERE t.outcome = 'paid' AND t.redemption_id IS NULL AND ($2::text IS NULL OR t.gateway_id > $2)
      ORDER BY t.gateway_id LIMIT $3`,
    [page.runId, page.after, page.limit],
  );
}

/** Transfers not failed whose amount differs from their redemption's payout (key: the transfer id). */
export function transfersWithOtherAmount(db: Queryable, page: CandidatePage): Promise<string[]> {
  return keys(
    db,
    'gateway-audit-payout-amounts',
    `WITH t AS (${attributedTransfers})
     SELECT t.gateway_id AS key FROM t JOIN redemptions r ON r.id = t.redemption_id
      WHERE t.outcome <> 'failed' AND t.amount_minor <> r.amount_minor - r.fee_minor AND ($2::text IS NULL OR t.gateway_id > $2)
      ORDER BY t.gateway_id LIMIT $3`,
    [page.runId, page.after, page.limit],
  );
}

/** Payments listed as paid whose charge is FAILED (key: the payment id). */
export function paidPaymentsOfFailedCharges(db: Queryable, page: CandidatePage): Promise<string[]> {
  return keys(
    db,
    'gateway-audit-failed-charges-paid',
    `WITH p AS (${attributedPayments})
     SELECT p.gateway_id AS key FROM p JOIN charges c ON c.id = p.charge_id
      WHERE p.outcome = 'paid' AND c.status = 'FAILED' AND ($2::text IS NULL OR p.gateway_id > $2)
      ORDER BY p.gateway_id LIMIT $3`,
    [page.runId, page.after, page.limit],
  );
}

/** SETTLED charges of the window whose recorded payment was not listed as paid (key: the charge id). */
export function settledChargesWithoutPaidPayment(db: Queryable, page: CandidatePage & { since: string; before: Date }): Promise<string[]> {
  return keys(
    db,
    'gateway-audit-settled-charges-unpaid',
    `SELECT c.id::text AS key FROM charges c
      WHERE c.status = 'SETTLED' AND c.created_at >= ($4::date::timestamp AT TIME ZONE 'America/Sao_Paulo') AND c.created_at < $5
        AND NOT EXISTS (SELECT 1 FROM gateway_audit_objects o
                         WHERE o.run_id = $1 AND o.kind = 'payment' AND o.gateway_id = c.gateway_payment_id AND o.outcome = 'paid')
        AND ($2::uuid IS NULL OR c.id > $2::uuid)
      ORDER BY c.id LIMIT $3`,
    [page.runId, page.after, page.limit, page.since, page.before],
  );
}

/** Charges with two or more payments listed as paid (key: the charge id). */
export function chargesPaidTwice(db: Queryable, page: CandidatePage): Promise<string[]> {
  return keys(
    db,
    'gateway-audit-charges-paid-twice',
    `WITH p AS (${attributedPayments})
     SELECT p.charge_id::text AS key FROM p WHERE p.outcome = 'paid' AND p.charge_id IS NOT NULL AND ($2::uuid IS NULL OR p.charge_id > $2::uuid)
      GROUP BY p.charge_id HAVING count(*) >= 2 ORDER BY p.charge_id LIMIT $3`,
    [page.runId, page.after, page.limit],
  );
}

/** The payments listed for a charge (by its recorded id or its reference). */
export async function paymentsOfCharge(db: Queryable, runId: string, chargeId: string): Promise<string[]> {
  return keys(
    db,
    'gateway-audit-charge-payments',
    `WITH p AS (${attributedPayments}) SELECT p.gateway_id AS key FROM p WHERE p.charge_id = $2::uuid ORDER BY 1 LIMIT 50`,
    [runId, chargeId],
  );
}

/** Payments listed as paid that no charge accounts for (key: the payment id). */
export function unattributedPaidPayments(db: Queryable, page: CandidatePage): Promise<string[]> {
  return keys(
    db,
    'gateway-audit-unknown-payments',
    `WITH p AS (${attributedPayments})
     SELECT p.gateway_id AS key FROM p
      WHERE p.outcome = 'paid' AND p.charge_id IS NULL AND ($2::text IS NULL OR p.gateway_id > $2)
      ORDER BY p.gateway_id LIMIT $3`,
    [page.runId, page.after, page.limit],
  );
}

/** Payments not failed whose amount differs from their charge's (key: the payment id). */
export function paymentsWithOtherAmount(db: Queryable, page: CandidatePage): Promise<string[]> {
  return keys(
    db,
    'gateway-audit-charge-amounts',
    `WITH p AS (${attributedPayments})
     SELECT p.gateway_id AS key FROM p JOIN charges c ON c.id = p.charge_id
      WHERE p.outcome <> 'failed' AND p.amount_minor <> c.amount_minor AND ($2::text IS NULL OR p.gateway_id > $2)
      ORDER BY p.gateway_id LIMIT $3`,
    [page.runId, page.after, page.limit],
  );
}


/** Every redemption of a PLC, oldest first (a PLC has a handful at most; bounded all the same). */
export function redemptionsOfPlc(db: Queryable, tokenId: string): Promise<RedemptionRow[]> {
  return many(db, redemptionRow, {
    name: 'gateway-audit-plc-redemptions',
    text: `SELECT ${redemptionColumns} FROM redemptions WHERE token_id = $1 ORDER BY created_at, id LIMIT 50`,
    values: [tokenId],
  });
}

const lockedPlcRow = z.object({ status: z.string(), redemption_id: z.string().uuid().nullable() });
const otherLiveRow = z.object({ other_live: z.boolean() });

/**
 * What the repair of a FAILED redemption paid out at the gateway depends on, read from the
 * redemption, its PLC and the PLC's other redemptions; under their row locks when `lock` (the
 * repair's own transaction), without (a dry run's look).
 */
export async function readPaidFailedFacts(
  db: Queryable,
  redemptionId: string,
  transfer: { id: string; amountMinor: bigint; externalReference: string | null },
  lock = false,
): Promise<{ redemption: RedemptionRow; facts: PaidFailedRedemptionFacts } | null> {
  const forUpdate = lock ? 'FOR UPDATE' : '';
  const redemption = await maybeOne(db, redemptionRow, {
    name: `gateway-audit-redemption${lock ? '-lock' : ''}`,
    text: `SELECT ${redemptionColumns} FROM redemptions WHERE id = $1 ${forUpdate}`,
    values: [redemptionId],
  });
  if (redemption === null) return null;
  const plc = await one(db, lockedPlcRow, {
    name: `gateway-audit-plc${lock ? '-lock' : ''}`,
    text: `SELECT status, redemption_id FROM plcs WHERE token_id = $1 ${forUpdate}`,
    values: [redemption.token_id],
  });
  const other = await one(db, otherLiveRow, {
    name: 'gateway-audit-other-live',
    text: `SELECT EXISTS (SELECT 1 FROM redemptions WHERE token_id = $1 AND id <> $2 AND status IN ('PENDING_PAYMENT', 'SETTLED')) AS other_live`,
    values: [redemption.token_id, redemption.id],
  });
  return {
    redemption,
    facts: {
      redemptionStatus: redemption.status,
      transferIsItsOwn:
        redemption.gateway_transfer_id === transfer.id || (redemption.gateway_transfer_id === null && transfer.externalReference === redemption.id),
      transferAmountMinor: transfer.amountMinor,
      expectedAmountMinor: redemption.amount_minor - redemption.fee_minor,
      plcStatus: plc.status,
      plcRedemptionId: plc.redemption_id,
      otherLiveRedemption: other.other_live,
    },
  };
}

export type PaidFailedRepairResult =
  | { kind: 'repaired'; settleTxId: string; reversalTxId: string; entries: Entry[] }
  | { kind: 'unsafe'; why: string }
  | { kind: 'gone' };

/**
 * The repair of a FAILED redemption whose own transfer the gateway paid out (docs/reconciliation.md,
 * "The gateway audit"), in one database transaction under the redemption's and the PLC's row
 * locks, checked again there (src/reconciliation/gateway-audit.ts `paidFailedRepair`):
 *
 * 1. the failure's reversal, a RECONCILIATION transaction with REDEEM_FAILED's legs negated
 *    (issuer PROMISED -> bearer PENDING), under `reconcile:<run_id>:<item key>`;
 * 2. the settlement the redemption would have booked, REDEEM_SETTLED (bearer PENDING -> world
 *    AVAILABLE, the fee to `fees`), under the redemption's own key `redemption:<id>:settle`;
 * 3. the redemption SETTLED with the transfer's status, the PLC REDEEMED with the settlement;
 * 4. the item, FIXED, recorded by `record` in the same transaction: all or nothing.
 *
 * A ledger refusal (the issuer's PROMISED no longer holds the amount) is thrown as the DomainError
 * it is; nothing of the repair is kept.
 */
export async function repairPaidFailedRedemption(
  pool: Pool,
  input: {
    runId: string;
    itemKey: string;
    redemptionId: string;
    transferId: string;
    transferStatus: string;
    transferAmountMinor: bigint;
    transferReference: string | null;
    /** The item to record with the repair, given the two bookings. */
    item: (booked: { settleTxId: string; reversalTxId: string; entries: Entry[]; before: { snapshot: bigint; computed: bigint } }) => ItemRecord;
  },
): Promise<PaidFailedRepairResult> {
  return withTransaction(pool, async (client) => {
    const read = await readPaidFailedFacts(
      client,
      input.redemptionId,
      { id: input.transferId, amountMinor: input.transferAmountMinor, externalReference: input.transferReference },
      true,
    );
    if (read === null) return { kind: 'gone' };
    const { redemption } = read;
    const verdict = paidFailedRepair(read.facts);
    if (!verdict.safe) return { kind: 'unsafe', why: verdict.why };
    const before = await bucketState(client, redemption.issuer_owner_id, 'PROMISED', redemption.currency);
    const failed = moneyModel.redeemFailed({
      issuerId: redemption.issuer_owner_id,
      bearerId: redemption.bearer_owner_id,
      currency: redemption.currency,
      amountMinor: redemption.amount_minor,
    });
    const reversalEntries = failed.entries.map((entry) => ({ ...entry, amountMinor: -entry.amountMinor }));
    const reversal = await postTransaction(client, {
      idempotencyKey: reconcileIdempotencyKey(input.runId, `${input.itemKey}/reversal`),
      txType: 'RECONCILIATION',
      referenceType: 'redemption',
      referenceId: redemption.id,
      description: `gateway-audit run ${input.runId}: reverses REDEEM_FAILED of redemption ${redemption.id}, whose transfer ${input.transferId} the gateway paid out`,
      entries: reversalEntries,
      allowFrozen: true,
    });
    const settled = moneyModel.redeemSettled({
      bearerId: redemption.bearer_owner_id,
      currency: redemption.currency,
      amountMinor: redemption.amount_minor,
      feeMinor: redemption.fee_minor,
    });
    const settlement = await bookFor(
      client,
      { type: 'redemption', id: redemption.id },
      ledgerKeys.redemptionSettle.of(redemption.id),
      settled,
      `settlement of redemption ${redemption.id} booked by gateway-audit run ${input.runId}: the gateway paid transfer ${input.transferId}`,
    );
    await exec(client, {
      name: 'gateway-audit-settle-redemption',
      text: `UPDATE redemptions SET status = 'SETTLED', gateway_status = $2, gateway_transfer_id = coalesce(gateway_transfer_id, $3),
                    settle_tx_id = $4, updated_at = now(), finished_at = now()
              WHERE id = $1`,
      values: [redemption.id, input.transferStatus, input.transferId, settlement.transactionId],
    });
    await exec(client, {
      name: 'gateway-audit-plc-redeemed',
      text: `UPDATE plcs SET status = 'REDEEMED', redemption_id = $2, settlement_tx_id = $3, final_tx_id = $3, status_changed_at = now()
              WHERE token_id = $1`,
      values: [redemption.token_id, redemption.id, settlement.transactionId],
    });
    const entries = [...reversalEntries, ...settled.entries];
    await recordItems(client, input.runId, [
      input.item({ settleTxId: settlement.transactionId, reversalTxId: reversal.transactionId, entries, before: { snapshot: before.snapshot_minor, computed: before.computed_minor } }),
    ]);
    return { kind: 'repaired', settleTxId: settlement.transactionId, reversalTxId: reversal.transactionId, entries };
  });
}
