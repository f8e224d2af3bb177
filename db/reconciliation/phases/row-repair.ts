import { DomainError } from '../../../src/errors.ts';
import { errorDetail } from '../../../src/reconciliation/items.ts';
import { rowRepairItem, type RowRepairPlan } from '../../../src/reconciliation/ledger-repairs.ts';
import { nextKey, uuidCursor } from '../../../src/reconciliation/phases.ts';
import { postTransaction } from '../../ledger.ts';
import { withTransaction, type PoolClient, type Queryable } from '../../pool.ts';
import { exec } from '../../sql.ts';
import type { ReconcileContext, ReconcilePhase } from '../phase.ts';
import { recordItems } from '../runs.ts';
import { bucketState, foreseenRefusal } from '../shared.ts';

/**
 * Settlement rows (PLC, charge, redemption) whose own booking is missing get that booking under
 * the owning code's own idempotency key (src/reconciliation/ledger-repairs.ts `RowRepairPlan`),
 * so the owner and the repair can never both book it. The instances: ./plcs.ts, ./charges.ts,
 * ./redemptions.ts.
 */

/**
 * A phase over one settlement table (plcs, charges, redemptions) keyed by uuid: `candidates`
 * finds rows whose booking is missing, read-only; a real run then takes each row's lock
 * (`recheck`, with FOR UPDATE), checks again, books the plan, points the row at the booking
 * (`afterPost`) and records the item, all in one database transaction.
 */
export interface RowRepairSpec<R> {
  name: string;
  candidates(db: Queryable, ctx: ReconcileContext, after: string | null, limit: number): Promise<R[]>;
  recheck(client: PoolClient, ctx: ReconcileContext, key: string): Promise<R | null>;
  key(row: R): string;
  plan(row: R): RowRepairPlan;
  afterPost(client: PoolClient, row: R, transactionId: string): Promise<void>;
}

/** An `afterPost` that points the row at its booking: one statement, the row's key as $1 and the booking's id as $2. */
export function pointRowAt<R>(name: string, text: string, key: (row: R) => string): RowRepairSpec<R>['afterPost'] {
  return async (client, row, transactionId) => {
    await exec(client, { name, text, values: [key(row), transactionId] });
  };
}

export function rowRepairPhase<R>(spec: RowRepairSpec<R>): ReconcilePhase {
  return {
    name: spec.name,
    async batch(pool, ctx, after, limit) {
      const rows = await spec.candidates(pool, ctx, uuidCursor(after), limit);
      const next = nextKey(rows, limit, (row) => spec.key(row));
      let found = 0;
      for (const row of rows) {
        const plan = spec.plan(row);
        if (ctx.dryRun) {
          const state = await bucketState(pool, plan.ownerId, plan.bucket, plan.currency);
          const refusal = await foreseenRefusal(pool, plan.entries, 'to take');
          await recordItems(pool, ctx.runId, [rowRepairItem(plan, state, refusal === null ? { status: 'PLANNED' } : { status: 'FAILED', detail: refusal })]);
          found += 1;
          continue;
        }
        try {
          const booked = await withTransaction(pool, async (client) => {
            const current = await spec.recheck(client, ctx, spec.key(row));
            if (current === null) return false;
            const fresh = spec.plan(current);
            const before = await bucketState(client, fresh.ownerId, fresh.bucket, fresh.currency);
            const posted = await postTransaction(client, {
              idempotencyKey: fresh.idempotencyKey,
              txType: fresh.txType,
              referenceType: fresh.referenceType,
              referenceId: fresh.referenceId,
              description: `${fresh.description} (reconcile ${ctx.tool} run ${ctx.runId})`.slice(0, 500),
              entries: fresh.entries,
              // A repair of history: the fact happened, whatever the account's status is now.
              allowFrozen: true,
            });
            await spec.afterPost(client, current, posted.transactionId);
            const afterState = await bucketState(client, fresh.ownerId, fresh.bucket, fresh.currency);
            // Recorded with the posting, in the same transaction: both or neither.
            await recordItems(client, ctx.runId, [
              rowRepairItem(fresh, before, {
                status: 'FIXED',
                transactionId: posted.transactionId,
                created: posted.created,
                afterMinor: afterState.snapshot_minor,
              }),
            ]);
            return true;
          });
          if (booked) found += 1;
        } catch (error) {
          // A refusal (funds, a key already used for another posting) is this row's problem, not
          // the run's: nothing of it was kept, and it is reported for a person to look at.
          if (!(error instanceof DomainError)) throw error;
          const state = await bucketState(pool, plan.ownerId, plan.bucket, plan.currency);
          await recordItems(pool, ctx.runId, [rowRepairItem(plan, state, { status: 'FAILED', detail: errorDetail(error) })]);
          found += 1;
        }
        ctx.progress();
      }
      return { scanned: rows.length, found, next };
    },
  };
}
