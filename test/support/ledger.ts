import type { Pool, Queryable } from '../../db/pool.ts';
import type { Bucket } from '../../src/ledger/money-model.ts';
import type { Currency } from '../../src/money/currency.ts';

/**
 * Ledger state for tests that look under the posting function (migration 12): a bucket's snapshot
 * is its row in ledger_balances plus its unfolded credits, and history is ledger_movements.
 */

/**
 * Folds the unfolded credits of these owners' buckets (every owner when omitted) into their rows,
 * as the reconciliation tools do before they rewrite a row; snapshots are unchanged.
 */
export async function foldCredits(db: Queryable, ownerIds?: readonly string[]): Promise<void> {
  await db.query(`SELECT ledger_lock_snapshots(array_agg(id), false) FROM ledger_accounts WHERE $1::text[] IS NULL OR owner_id = ANY ($1::text[])`, [
    ownerIds ?? null,
  ]);
}

/**
 * Overwrites one bucket's snapshot (a damaged cache): its credits are folded into its row, which
 * must exist, and the row is set to `amountMinor`.
 */
export async function setSnapshot(db: Queryable, ownerId: string, bucket: Bucket, currency: Currency, amountMinor: bigint): Promise<void> {
  await foldCredits(db, [ownerId]);
  const result = await db.query(
    `UPDATE ledger_balances SET amount_minor = $4
      WHERE account_id = (SELECT id FROM ledger_accounts WHERE owner_id = $1) AND bucket = $2 AND currency = $3`,
    [ownerId, bucket, currency, amountMinor.toString()],
  );
  if (result.rowCount !== 1) throw new Error(`no snapshot row for ${ownerId}/${bucket}/${currency}`);
}

/** One bucket's snapshot (row plus unfolded credits); null when it has neither. */
export async function snapshotOf(db: Queryable, ownerId: string, bucket: Bucket, currency: Currency = 'BRL'): Promise<bigint | null> {
  const result = await db.query<{ amount_minor: bigint }>(
    `SELECT b.amount_minor FROM ledger_bucket_balances b JOIN ledger_accounts a ON a.id = b.account_id
      WHERE a.owner_id = $1 AND b.bucket = $2 AND b.currency = $3`,
    [ownerId, bucket, currency],
  );
  return result.rows[0]?.amount_minor ?? null;
}

export interface RawMove {
  from: { ownerId: string; bucket: Bucket };
  to: { ownerId: string; bucket: Bucket };
  currency: Currency;
  amountMinor: bigint;
}

/**
 * Writes one ledger transaction behind the posting function's back: its movements, and no
 * snapshot update (history damage for the reconciliation tools to find). The accounts must exist.
 */
export async function insertRawTransaction(pool: Pool, moves: readonly RawMove[], key: string): Promise<void> {
  await pool.query(
    `WITH t AS (INSERT INTO ledger_transactions (idempotency_key, request_hash, tx_type, description)
                VALUES ($1, 'raw', 'DEPOSIT', 'damage made by a test') RETURNING id)
     INSERT INTO ledger_movements (transaction_id, currency, amount_minor, debit_account, debit_bucket, credit_account, credit_bucket)
     SELECT t.id, x.currency, x.amount_minor, d.id, x.from_bucket, c.id, x.to_bucket
       FROM t, jsonb_to_recordset($2::jsonb) AS x(from_owner text, from_bucket ledger_bucket, to_owner text, to_bucket ledger_bucket,
                                                  currency ledger_currency, amount_minor bigint)
       JOIN ledger_accounts d ON d.owner_id = x.from_owner
       JOIN ledger_accounts c ON c.owner_id = x.to_owner`,
    [
      key,
      JSON.stringify(
        moves.map((move) => ({
          from_owner: move.from.ownerId,
          from_bucket: move.from.bucket,
          to_owner: move.to.ownerId,
          to_bucket: move.to.bucket,
          currency: move.currency,
          amount_minor: move.amountMinor.toString(),
        })),
      ),
    ],
  );
}

/** Every row of the ledger's tables, to compare before and after something that must change nothing. */
export const ledgerTablesJson = `'accounts', (SELECT json_agg(a ORDER BY a.id) FROM ledger_accounts a),
       'balances', (SELECT json_agg(b ORDER BY b.account_id, b.bucket, b.currency) FROM ledger_balances b),
       'credits', (SELECT json_agg(c ORDER BY c.id) FROM ledger_balance_credits c),
       'transactions', (SELECT json_agg(x ORDER BY x.seq) FROM ledger_transactions x),
       'movements', (SELECT json_agg(m ORDER BY m.id) FROM ledger_movements m)`;
