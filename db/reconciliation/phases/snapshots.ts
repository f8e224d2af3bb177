import { z } from 'zod';
import { assert } from '../../../src/errors.ts';
import type { ItemRecord } from '../../../src/reconciliation/items.ts';
import { groupByAccount, snapshotItem } from '../../../src/reconciliation/ledger-repairs.ts';
import { nextKey, uuidCursor } from '../../../src/reconciliation/phases.ts';
import { withTransaction, type Pool, type PoolClient, type Queryable } from '../../pool.ts';
import { exec, many, one } from '../../sql.ts';
import type { ReconcileContext, ReconcilePhase } from '../phase.ts';
import { recordItems } from '../runs.ts';
import { bucketEnum, currencyEnum } from '../shared.ts';

/**
 * Accounts and their snapshots: fix-balance (one owner) and recalculate-snapshots (every
 * account) set each snapshot to the sum of its entries; the accounts' paging, locks and rewrite
 * are shared with fix-negative-balances (./negative-buckets.ts).
 */

const accountKeyRow = z.object({ id: z.string().uuid(), owner_id: z.string(), kind: z.enum(['user', 'system']) });
export type AccountKey = z.infer<typeof accountKeyRow>;

/** The next page of accounts in id order (the order ledger_post locks them in), from a phase's cursor. */
export function pageAccounts(
  db: Queryable,
  filter: { after: string | null; limit: number; ownerId: string | null; userOnly: boolean },
): Promise<AccountKey[]> {
  return many(db, accountKeyRow, {
    name: 'reconcile-accounts-page',
    text: `SELECT id, owner_id, kind FROM ledger_accounts
            WHERE ($1::uuid IS NULL OR id > $1) AND ($2::text IS NULL OR owner_id = $2) AND (NOT $3 OR kind = 'user')
            ORDER BY id LIMIT $4`,
    values: [uuidCursor(filter.after), filter.ownerId, filter.userOnly, filter.limit],
  });
}

const bucketDiffRow = z.object({
  account_id: z.string().uuid(),
  owner_id: z.string(),
  kind: z.enum(['user', 'system']),
  bucket: bucketEnum,
  currency: currencyEnum,
  snapshot_minor: z.bigint(),
  computed_minor: z.bigint(),
});
type BucketDiff = z.infer<typeof bucketDiffRow>;

/**
 * Buckets of these accounts whose snapshot differs from the sum of their entries. One statement,
 * so one consistent view: a posting changes a snapshot and writes its entries in one database
 * transaction, so a difference seen here is real and not a posting half seen.
 */
function findSnapshotDiffs(db: Queryable, accountIds: readonly string[]): Promise<BucketDiff[]> {
  return many(db, bucketDiffRow, {
    name: 'reconcile-snapshot-diffs',
    text: `WITH sums AS (SELECT account_id, bucket, currency, sum(amount_minor) AS total FROM ledger_entries
                          WHERE account_id = ANY ($1::uuid[]) GROUP BY 1, 2, 3),
                snaps AS (SELECT account_id, bucket, currency, amount_minor FROM ledger_bucket_balances
                           WHERE account_id = ANY ($1::uuid[]))
           SELECT account_id, a.owner_id, a.kind, bucket, currency,
                  coalesce(n.amount_minor, 0) AS snapshot_minor, coalesce(s.total, 0)::bigint AS computed_minor
             FROM sums s FULL JOIN snaps n USING (account_id, bucket, currency)
             JOIN ledger_accounts a ON a.id = account_id
            WHERE coalesce(n.amount_minor, 0) <> coalesce(s.total, 0)
            ORDER BY account_id, bucket, currency`,
    values: [accountIds],
  });
}

const lockedRow = z.object({ locked: z.number().int() });

/**
 * Locks the snapshot rows of accounts (and, for compensating postings, system:world's AVAILABLE
 * rows) in ledger_post's order, inside the caller's transaction. A posting that wants one of
 * these rows waits until the caller commits, and the caller waits for any posting already
 * holding one, so the entries summed after this call are exactly the entries behind the rows.
 */
export async function lockSnapshots(client: PoolClient, accountIds: readonly string[], worldAvailable: boolean): Promise<void> {
  // Give up rather than queue for long behind a stuck transaction; the batch is retried.
  await exec(client, { name: 'reconcile-lock-timeout', text: "SET LOCAL lock_timeout = '10s'" });
  await one(client, lockedRow, {
    name: 'reconcile-lock-snapshots',
    text: 'SELECT ledger_lock_snapshots($1::uuid[], $2) AS locked',
    values: [accountIds, worldAvailable],
  });
}

const recomputedRow = z.object({
  bucket: bucketEnum,
  currency: currencyEnum,
  snapshot_minor: z.bigint(),
  computed_minor: z.bigint(),
  corrected: z.boolean(),
});
type Recomputed = z.infer<typeof recomputedRow>;

/**
 * Rewrites the account's snapshots that differ from their entries (only `keys`, "BUCKET/CURRENCY",
 * when given), under the locks `lockSnapshots` took: the bucket's row becomes the sum of its
 * entries and its unfolded credits are folded into it. One statement, so the entries, the row and
 * the credits are read in one snapshot: a credit that commits meanwhile (credits take no lock) is
 * in neither the sum nor the fold, and stays beside the row. A user bucket whose entries sum below
 * zero cannot be written (the non-negative CHECK) and comes back uncorrected.
 */
export function recomputeSnapshots(client: PoolClient, account: AccountKey, keys: readonly string[] | null): Promise<Recomputed[]> {
  return many(client, recomputedRow, {
    name: 'reconcile-recompute-snapshots',
    text: `WITH sums AS (SELECT bucket, currency, sum(amount_minor) AS total FROM ledger_entries
                          WHERE account_id = $1 GROUP BY 1, 2),
                snaps AS (SELECT bucket, currency, amount_minor FROM ledger_bucket_balances WHERE account_id = $1),
                diff AS (SELECT bucket, currency, coalesce(n.amount_minor, 0) AS snapshot_minor,
                                coalesce(s.total, 0)::bigint AS computed_minor
                           FROM sums s FULL JOIN snaps n USING (bucket, currency)
                          WHERE coalesce(n.amount_minor, 0) <> coalesce(s.total, 0)
                            AND ($3::text[] IS NULL OR bucket || '/' || currency = ANY ($3::text[]))),
                writable AS (SELECT * FROM diff d WHERE $2::ledger_account_kind = 'system' OR d.computed_minor >= 0),
                folded AS (DELETE FROM ledger_balance_credits c USING writable w
                            WHERE c.account_id = $1 AND c.bucket = w.bucket AND c.currency = w.currency),
                fixed AS (INSERT INTO ledger_balances AS b (account_id, bucket, currency, account_kind, amount_minor, version)
                          SELECT $1, w.bucket, w.currency, $2::ledger_account_kind, w.computed_minor, 1 FROM writable w
                          ON CONFLICT (account_id, bucket, currency) DO UPDATE
                             SET amount_minor = EXCLUDED.amount_minor, version = b.version + 1, updated_at = now()
                          RETURNING b.bucket, b.currency)
           SELECT d.bucket, d.currency, d.snapshot_minor, d.computed_minor, (f.bucket IS NOT NULL) AS corrected
             FROM diff d LEFT JOIN fixed f USING (bucket, currency)
            ORDER BY d.bucket, d.currency`,
    values: [account.id, account.kind, keys],
  });
}

/**
 * A phase over pages of accounts: `find` says which of a page's accounts have something to
 * fix (read-only; a dry run records it as it is), `fix` fixes one of them in a database
 * transaction of its own and returns how many items it recorded.
 */
export function accountsPhase<T extends { account_id: string }>(spec: {
  name: string;
  filter: (ctx: ReconcileContext) => { ownerId: string | null; userOnly: boolean };
  find: (db: Queryable, accountIds: readonly string[]) => Promise<T[]>;
  planned: (rows: readonly T[]) => ItemRecord[];
  fix: (pool: Pool, ctx: ReconcileContext, account: AccountKey, found: T[]) => Promise<number>;
}): ReconcilePhase {
  return {
    name: spec.name,
    async batch(pool, ctx, after, limit) {
      const accounts = await pageAccounts(pool, { after, limit, ...spec.filter(ctx) });
      const next = nextKey(accounts, limit, (account) => account.id);
      if (accounts.length === 0) return { scanned: 0, found: 0, next };
      const rows = await spec.find(
        pool,
        accounts.map((account) => account.id),
      );
      if (ctx.dryRun) {
        await recordItems(pool, ctx.runId, spec.planned(rows));
        return { scanned: accounts.length, found: rows.length, next };
      }
      const byAccount = groupByAccount(rows);
      let found = 0;
      for (const account of accounts) {
        const ofAccount = byAccount.get(account.id);
        if (ofAccount === undefined) continue;
        found += await spec.fix(pool, ctx, account, ofAccount);
        ctx.progress();
      }
      return { scanned: accounts.length, found, next };
    },
  };
}

/** fix-balance (one owner) and recalculate-snapshots (every account): snapshot := sum of entries. */
export const snapshotsPhase: ReconcilePhase = accountsPhase({
  name: 'accounts',
  filter: (ctx) => ({ ownerId: ctx.params.ownerId ?? null, userOnly: false }),
  find: findSnapshotDiffs,
  planned: (diffs) => diffs.map((diff) => snapshotItem(diff.owner_id, diff.kind, diff, 'PLANNED')),
  // Checked again under the lock: the difference seen above may have been a cache that a
  // concurrent fix already corrected, and the lock makes the values exact.
  fix: (pool, ctx, account) =>
    withTransaction(pool, async (client) => {
      await lockSnapshots(client, [account.id], false);
      const rows = await recomputeSnapshots(client, account, null);
      const items = rows.map((row) => {
        const item = snapshotItem(account.owner_id, account.kind, row, 'FIXED');
        assert(row.corrected === (item.status === 'FIXED'), 'a writable snapshot was corrected');
        return item;
      });
      await recordItems(client, ctx.runId, items);
      return items.length;
    }),
});
