import { z } from 'zod';
import { buckets, isSystemOwner, type Bucket, type Entry } from '../../src/ledger/money-model.ts';
import { currencies, type Currency } from '../../src/money/currency.ts';
import type { BucketState } from '../../src/reconciliation/items.ts';
import type { Queryable } from '../pool.ts';
import { one } from '../sql.ts';

/** What the reconcile tools' SQL shares: the column types, a bucket's state, the ledger lookups. */

// Built once (zod compiles a schema's parser on its first use).
export const bucketEnum = z.enum(buckets);
export const currencyEnum = z.enum(currencies as [Currency, ...Currency[]]);

const bucketStateRow = z.object({ snapshot_minor: z.bigint(), computed_minor: z.bigint() });

/** One bucket's snapshot and the sum of its entries, in one consistent view. */
export function bucketState(db: Queryable, ownerId: string, bucket: Bucket, currency: Currency): Promise<BucketState> {
  // Zero for an owner the ledger has not seen yet (a settlement row can name one).
  return one(db, bucketStateRow, {
    name: 'reconcile-bucket-state',
    // The account id as a value (not a join), so the filters reach the views' index scans.
    text: `WITH account AS (SELECT a.id FROM ledger_accounts a WHERE a.owner_id = $1)
           SELECT coalesce((SELECT b.amount_minor FROM ledger_bucket_balances b
                             WHERE b.account_id = (SELECT id FROM account) AND b.bucket = $2 AND b.currency = $3), 0) AS snapshot_minor,
                  coalesce((SELECT sum(e.amount_minor) FROM ledger_entries e
                             WHERE e.account_id = (SELECT id FROM account) AND e.bucket = $2 AND e.currency = $3), 0)::bigint AS computed_minor`,
    values: [ownerId, bucket, currency],
  });
}

/**
 * Why the ledger would refuse a posting now, or null: a user bucket it takes from holds less
 * than the amount (ledger_post checks the snapshot). A dry run reports such an item as FAILED,
 * as the real run would. `what`: how the detail names the amount ("to take", "to take back").
 */
export async function foreseenRefusal(db: Queryable, entries: readonly Entry[], what: string): Promise<string | null> {
  for (const entry of entries) {
    if (entry.amountMinor >= 0n || isSystemOwner(entry.ownerId)) continue;
    const state = await bucketState(db, entry.ownerId, entry.bucket, entry.currency);
    if (state.snapshot_minor < -entry.amountMinor) {
      return (
        `would be refused: INSUFFICIENT_FUNDS: ${entry.ownerId} ${entry.bucket} ${entry.currency} holds ` +
        `${state.snapshot_minor.toString()} of the ${(-entry.amountMinor).toString()} minor units ${what}`
      );
    }
  }
  return null;
}

/** `reference_tx_id`: a row's booking pointer when the ledger holds that transaction (a damaged row may point nowhere). */
export const existingTx = (column: string) => `(SELECT lt.id FROM ledger_transactions lt WHERE lt.id = ${column}) AS reference_tx_id`;

/** Whether the ledger holds a transaction under this idempotency key (an SQL expression). */
export const hasTx = (key: string) => `EXISTS (SELECT 1 FROM ledger_transactions lt WHERE lt.idempotency_key = ${key})`;
