import { z } from 'zod';
import { assert, DomainError } from '../../../src/errors.ts';
import { errorDetail, type ItemRecord } from '../../../src/reconciliation/items.ts';
import { negativeBucketItem, negativeBucketPosting } from '../../../src/reconciliation/ledger-repairs.ts';
import { bucketItemKey, reconcileIdempotencyKey } from '../../../src/reconciliation/tools.ts';
import { postTransaction } from '../../ledger.ts';
import { withTransaction, type Queryable } from '../../pool.ts';
import { many } from '../../sql.ts';
import type { ReconcilePhase } from '../phase.ts';
import { recordItems } from '../runs.ts';
import { bucketEnum, currencyEnum } from '../shared.ts';
import { accountsPhase, lockSnapshots, recomputeSnapshots } from './snapshots.ts';

const negativeRow = z.object({
  account_id: z.string().uuid(),
  owner_id: z.string(),
  bucket: bucketEnum,
  currency: currencyEnum,
  snapshot_minor: z.bigint(),
  computed_minor: z.bigint(),
});

/** User buckets of these accounts whose entries sum below zero, with their snapshots. */
function findNegativeUserBuckets(db: Queryable, accountIds: readonly string[]) {
  return many(db, negativeRow, {
    name: 'reconcile-negative-user-buckets',
    text: `WITH sums AS (SELECT account_id, bucket, currency, sum(amount_minor) AS total FROM ledger_entries
                          WHERE account_id = ANY ($1::uuid[]) GROUP BY 1, 2, 3 HAVING sum(amount_minor) < 0)
           SELECT s.account_id, a.owner_id, s.bucket, s.currency, coalesce(b.amount_minor, 0) AS snapshot_minor,
                  s.total::bigint AS computed_minor
             FROM sums s JOIN ledger_accounts a ON a.id = s.account_id AND a.kind = 'user'
             LEFT JOIN (SELECT * FROM ledger_bucket_balances WHERE account_id = ANY ($1::uuid[])) b USING (account_id, bucket, currency)
            ORDER BY s.account_id, s.bucket, s.currency`,
    values: [accountIds],
  });
}

/**
 * fix-negative-balances: a user bucket whose entries sum to -X gets a RECONCILIATION transaction
 * system:world AVAILABLE -X -> bucket +X, and its snapshot is set to the entries' new sum (zero)
 * in the same database transaction.
 */
export const negativeBucketsPhase: ReconcilePhase = accountsPhase({
  name: 'user-accounts',
  filter: () => ({ ownerId: null, userOnly: true }),
  find: findNegativeUserBuckets,
  planned: (rows) => rows.map((row) => negativeBucketItem(row, { status: 'PLANNED' })),
  async fix(pool, ctx, account, found) {
    try {
      return await withTransaction(pool, async (client) => {
        await lockSnapshots(client, [account.id], true);
        const rows = await findNegativeUserBuckets(client, [account.id]);
        const items: ItemRecord[] = [];
        for (const row of rows) {
          const key = bucketItemKey(row.owner_id, row.bucket, row.currency);
          const posted = await postTransaction(client, {
            idempotencyKey: reconcileIdempotencyKey(ctx.runId, key),
            txType: 'RECONCILIATION',
            referenceType: 'reconciliation_run',
            referenceId: ctx.runId,
            description: `fix-negative-balances: ${key} entries summed to ${row.computed_minor.toString()}`,
            entries: negativeBucketPosting(row),
            allowFrozen: true,
          });
          const [realigned] = await recomputeSnapshots(client, account, [`${row.bucket}/${row.currency}`]);
          assert(realigned === undefined || (realigned.corrected && realigned.computed_minor === 0n), 'the bucket is now zero');
          items.push(negativeBucketItem(row, { status: 'FIXED', transactionId: posted.transactionId, created: posted.created }));
        }
        await recordItems(client, ctx.runId, items);
        return items.length;
      });
    } catch (error) {
      if (!(error instanceof DomainError)) throw error;
      // A refusal (not a lost connection) is this account's problem, not the run's: record it
      // and go on. Nothing of this account's transaction was kept.
      await recordItems(
        pool,
        ctx.runId,
        found.map((row) => negativeBucketItem(row, { status: 'FAILED', detail: errorDetail(error) })),
      );
      return found.length;
    }
  },
});
