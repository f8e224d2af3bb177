import { z } from 'zod';
import { assert, DomainError } from '../../../src/errors.ts';
import type { TxType } from '../../../src/ledger/money-model.ts';
import { errorDetail, type ItemRecord } from '../../../src/reconciliation/items.ts';
import { planReversal, reversalItem, reversalLeg, reversalReferenceType, type PlannedReversal } from '../../../src/reconciliation/ledger-repairs.ts';
import { nextKey, seqCursor } from '../../../src/reconciliation/phases.ts';
import { reconcileIdempotencyKey } from '../../../src/reconciliation/tools.ts';
import { postTransaction } from '../../ledger.ts';
import { withTransaction, type Pool, type Queryable } from '../../pool.ts';
import { exec, many, maybeOne } from '../../sql.ts';
import type { ReconcileContext, ReconcilePhase } from '../phase.ts';
import { recordItems } from '../runs.ts';
import { bucketEnum, bucketState, currencyEnum, foreseenRefusal } from '../shared.ts';

/** Failures booked without their request (fix-failed-pending, ledger side). */

const failureRow = z.object({
  id: z.string().uuid(),
  seq: z.bigint(),
  reference_id: z.string().nullable(),
  has_request: z.boolean(),
  compensated: z.boolean(),
  entries: z.array(
    z.object({
      owner_id: z.string(),
      kind: z.enum(['user', 'system']),
      bucket: bucketEnum,
      currency: currencyEnum,
      amount_minor: z.string(),
    }),
  ),
});

const failureColumns = `t.id, t.seq, t.reference_id,
       EXISTS (SELECT 1 FROM ledger_transactions r WHERE r.reference_id = t.reference_id AND r.tx_type = $2) AS has_request,
       EXISTS (SELECT 1 FROM ledger_transactions c WHERE c.reference_type = '${reversalReferenceType}'
                  AND c.reference_id = t.id::text AND c.tx_type = 'RECONCILIATION') AS compensated,
       (SELECT json_agg(json_build_object('owner_id', a.owner_id, 'kind', a.kind, 'bucket', e.bucket, 'currency', e.currency,
                                          'amount_minor', e.amount_minor::text) ORDER BY e.id)
          FROM ledger_entries e JOIN ledger_accounts a ON a.id = e.account_id WHERE e.transaction_id = t.id) AS entries`;

/**
 * fix-failed-pending, ledger side: a failure transaction (REDEEM_FAILED: bearer PENDING ->
 * issuer PROMISED; CHARGE_FAILED: owner PENDING -> world PENDING) whose reference has no request
 * transaction (REDEEM_REQUESTED, CHARGE_CREATED) took PENDING that was never credited. It is
 * reversed by a RECONCILIATION transaction with every leg negated, which credits the PENDING
 * back; the reversal names the failure (reference ledger_transaction/<id>), so a later run sees
 * it compensated.
 */
export function ledgerFailuresPhase(name: string, failureType: TxType, requestType: TxType): ReconcilePhase {
  return {
    name,
    async batch(pool, ctx, after, limit) {
      const failures = await many(pool, failureRow, {
        name: 'reconcile-failures-page',
        text: `SELECT ${failureColumns} FROM ledger_transactions t
                WHERE t.tx_type = $1 AND t.seq > $3 ORDER BY t.seq LIMIT $4`,
        values: [failureType, requestType, seqCursor(after), limit],
      });
      const next = nextKey(failures, limit, (failure) => failure.seq.toString());
      const unmatched = failures.filter((failure) => !failure.has_request && !failure.compensated).map(planReversal);
      let found = 0;
      for (const plan of unmatched) {
        if (ctx.dryRun || plan.skipReason !== null) {
          await recordItems(pool, ctx.runId, [await describeReversal(pool, plan, plan.skipReason === null ? 'PLANNED' : 'SKIPPED', plan.skipReason)]);
          found += 1;
          continue;
        }
        const outcome = await reverse(pool, ctx, plan, failureType, requestType);
        if (outcome.kind === 'nothing-to-do') continue;
        // A booked reversal was recorded with its posting; a refused one is recorded here.
        if (outcome.kind === 'refused') await recordItems(pool, ctx.runId, [outcome.item]);
        found += 1;
        ctx.progress();
      }
      return { scanned: failures.length, found, next };
    },
  };
}

/**
 * The item of a reversal that is not booked: PLANNED (dry run; FAILED when the ledger would
 * refuse it now), SKIPPED or FAILED.
 */
async function describeReversal(
  db: Queryable,
  plan: PlannedReversal,
  requested: 'PLANNED' | 'SKIPPED' | 'FAILED',
  detail: string | null,
): Promise<ItemRecord> {
  const leg = reversalLeg(plan);
  const state = await bucketState(db, leg.ownerId, leg.bucket, leg.currency);
  const refusal = requested === 'PLANNED' ? await foreseenRefusal(db, plan.entries, 'to take back') : null;
  return reversalItem(plan, state, refusal === null ? { status: requested, detail } : { status: 'FAILED', detail: refusal });
}

/**
 * Books one reversal. Serialised per failure with a transaction-scoped advisory lock and checked
 * again under it, so two runs never both reverse the same failure.
 */
async function reverse(
  pool: Pool,
  ctx: ReconcileContext,
  plan: PlannedReversal,
  failureType: TxType,
  requestType: TxType,
): Promise<{ kind: 'booked'; item: ItemRecord } | { kind: 'refused'; item: ItemRecord } | { kind: 'nothing-to-do' }> {
  const credited = plan.credited;
  assert(credited !== null, 'only well-formed failures are reversed');
  try {
    return await withTransaction(pool, async (client) => {
      await exec(client, {
        name: 'reconcile-reversal-lock',
        text: 'SELECT pg_advisory_xact_lock(hashtextextended($1, 0))',
        values: [`reconcile:${plan.key}`],
      });
      const current = await maybeOne(client, failureRow, {
        name: 'reconcile-failure-recheck',
        text: `SELECT ${failureColumns} FROM ledger_transactions t WHERE t.id = $1 AND t.tx_type = $3`,
        values: [plan.failure.id, requestType, failureType],
      });
      if (current === null || current.has_request || current.compensated) return { kind: 'nothing-to-do' as const };
      const before = await bucketState(client, credited.ownerId, credited.bucket, credited.currency);
      const posted = await postTransaction(client, {
        idempotencyKey: reconcileIdempotencyKey(ctx.runId, plan.key),
        txType: 'RECONCILIATION',
        referenceType: reversalReferenceType,
        referenceId: plan.failure.id,
        description: `fix-failed-pending: reverses ${failureType} without ${requestType} (run ${ctx.runId})`,
        entries: plan.entries,
        allowFrozen: true,
      });
      const after = await bucketState(client, credited.ownerId, credited.bucket, credited.currency);
      const item = reversalItem(plan, before, { status: 'FIXED', transactionId: posted.transactionId, afterMinor: after.snapshot_minor });
      // Recorded with the posting, in the same transaction: both or neither.
      await recordItems(client, ctx.runId, [item]);
      return { kind: 'booked' as const, item };
    });
  } catch (error) {
    // A refusal (e.g. the issuer's PROMISED no longer holds the amount) is this item's problem,
    // not the run's: nothing of it was kept, and it is reported for a person to look at.
    if (!(error instanceof DomainError)) throw error;
    return { kind: 'refused', item: await describeReversal(pool, plan, 'FAILED', errorDetail(error)) };
  }
}
