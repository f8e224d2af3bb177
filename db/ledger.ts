import type { DatabaseError } from 'pg';
import { z } from 'zod';
import { DomainError } from '../src/errors.ts';
import { buckets, txTypes, type Entry, type Posting, type TxType } from '../src/ledger/money-model.ts';
import { currencies, type Currency } from '../src/money/currency.ts';
import type { Pool, Queryable } from './pool.ts';
import { many, maybeOne, one } from './sql.ts';
import { reportCommitted } from './committed.ts';

/**
 * The ledger's SQL: the one posting primitive every feature books through (`postTransaction`),
 * and the reads. Postings run the `ledger_post` database function, one round trip that locks
 * snapshot rows in a fixed order, checks funds and frozen accounts, and writes the entries; the
 * database itself refuses unbalanced transactions and negative user buckets.
 */

export interface PostingRequest {
  /** Books once: a retry with the same key returns the first transaction. */
  idempotencyKey: string;
  txType: TxType;
  referenceType?: string;
  referenceId?: string;
  description?: string;
  entries: readonly Entry[];
  /** Releases that must succeed even on a frozen account (expiry, compensation). */
  allowFrozen?: boolean;
}

export interface PostingResult {
  transactionId: string;
  /** false when the idempotency key had already booked this posting. */
  created: boolean;
}

/** The row a booking pays for: the owner of the money movement (docs/architecture.md, "Where new code goes"). */
export interface BookingSubject {
  type: 'charge' | 'redemption' | 'plc';
  id: string;
}

/**
 * An owner's booking: `posting` for `subject` under the subject's ledger key (src/ledger/keys.ts),
 * in the caller's transaction, between the lock of the subject's row and its update (the one
 * pattern of charges, redemptions and PLCs: lock, book under the key, update). Allowed on a frozen
 * account: each such booking is money coming in (a charge's opening and settlement), the release
 * or payment of a promise made before any freeze (a PLC's expiry or cancel, a redemption's
 * request, settlement and failure), or the withdrawal of an expectation the owner never had the
 * use of (a charge's failure).
 */
export function bookFor(client: Queryable, subject: BookingSubject, idempotencyKey: string, posting: Posting, description?: string): Promise<PostingResult> {
  return postTransaction(client, { ...posting, idempotencyKey, referenceType: subject.type, referenceId: subject.id, description, allowFrozen: true });
}

// The function's (transaction_id, created) record as its text form "(<uuid>,t|f)": called in the
// select list it skips the tuple store of a FROM-clause call (3% of a posting's server work).
const postedRecord = /^\(([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}),([tf])\)$/;
const postingRow = z.object({ posted: z.string().regex(postedRecord) });

/** Maps the posting function's SQLSTATEs to domain errors; anything else is rethrown as is. */
export function toLedgerError(error: unknown): unknown {
  const pgError = error as Partial<DatabaseError>;
  switch (pgError.code) {
    case 'PL001': {
      let details: Record<string, unknown> = {};
      try {
        details = JSON.parse(pgError.detail ?? '{}') as Record<string, unknown>;
      } catch {
        details = {};
      }
      return new DomainError('INSUFFICIENT_FUNDS', 'insufficient funds', details);
    }
    case 'PL002':
      return new DomainError('ACCOUNT_FROZEN', 'the account is frozen: it can receive but not spend', {
        owner_id: pgError.detail,
      });
    case 'PL003':
      return new DomainError('IDEMPOTENCY_KEY_REUSED', 'this idempotency key was already used for another operation', {
        location: 'header',
        field: 'idempotency-key',
      });
    case 'PL004':
      return new DomainError('LEDGER_UNBALANCED', 'the ledger refused an unbalanced transaction');
    case 'PL005':
      return new DomainError('LEDGER_INVALID_POSTING', `invalid posting: ${pgError.detail ?? ''}`);
    default:
      return error;
  }
}

/**
 * Books one balanced transaction inside the caller's database transaction (`db` is a client in
 * BEGIN) or on its own (a pool: autocommit, the function is atomic). Nothing else writes ledger
 * rows.
 */
export async function postTransaction(db: Queryable, request: PostingRequest): Promise<PostingResult> {
  const legs = postingLegs(request.entries);
  try {
    const row = await one(db, postingRow, {
      name: 'ledger-post-legs',
      prepare: true,
      text: 'SELECT ledger_post_legs($1, $2, $3, $4, $5, $6::text[], $7::text[], $8::text[], $9::bigint[], $10)::text AS posted',
      values: [
        request.idempotencyKey,
        request.txType,
        request.referenceType ?? null,
        request.referenceId ?? null,
        request.description ?? null,
        legs.owners,
        legs.buckets,
        legs.currencies,
        legs.amounts,
        request.allowFrozen ?? false,
      ],
    });
    const [, transactionId, created] = postedRecord.exec(row.posted) as RegExpExecArray;
    if (created === 't') reportCommitted(db, { kind: 'ledger_posting', txType: request.txType });
    return { transactionId: transactionId as string, created: created === 't' };
  } catch (error) {
    throw toLedgerError(error);
  }
}

/** The legs of a posting as the parallel arrays `ledger_post_legs` takes (amounts as decimal text). */
export interface PostingLegs {
  owners: string[];
  buckets: string[];
  currencies: string[];
  amounts: string[];
}

/**
 * The legs in one canonical order (owner, bucket, currency, amount; code-point order, like the
 * ledger_post wrapper's COLLATE "C"), so a retry that lists the same legs differently hashes the
 * same. For the SQL functions that post through `ledger_post_legs` themselves (`plc_issue`).
 */
export function postingLegs(entries: readonly Entry[]): PostingLegs {
  const legs = [...entries].sort(compareLegs);
  return {
    owners: legs.map((leg) => leg.ownerId),
    buckets: legs.map((leg) => leg.bucket),
    currencies: legs.map((leg) => leg.currency),
    amounts: legs.map((leg) => leg.amountMinor.toString()),
  };
}

function compareText(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function compareLegs(a: Entry, b: Entry): number {
  return (
    compareText(a.ownerId, b.ownerId) ||
    compareText(a.bucket, b.bucket) ||
    compareText(a.currency, b.currency) ||
    (a.amountMinor < b.amountMinor ? -1 : a.amountMinor > b.amountMinor ? 1 : 0)
  );
}

const bucketEnum = z.enum(buckets);
const currencyEnum = z.enum(currencies as [Currency, ...Currency[]]);
const accountStatus = z.enum(['ACTIVE', 'FROZEN']);

export const accountRow = z.object({
  id: z.string().uuid(),
  owner_id: z.string(),
  kind: z.enum(['user', 'system']),
  status: accountStatus,
  created_at: z.date(),
});
export type AccountRow = z.infer<typeof accountRow>;

export interface BucketBalances {
  available: bigint;
  held: bigint;
  pending: bigint;
  promised: bigint;
}

const balanceRow = z.object({ bucket: bucketEnum, amount_minor: z.bigint() });

export function findAccount(db: Queryable, ownerId: string): Promise<AccountRow | null> {
  return maybeOne(db, accountRow, {
    name: 'ledger-account-by-owner',
    text: 'SELECT id, owner_id, kind, status, created_at FROM ledger_accounts WHERE owner_id = $1',
    values: [ownerId],
  });
}

export function findAccountById(db: Queryable, accountId: string): Promise<AccountRow | null> {
  return maybeOne(db, accountRow, {
    name: 'ledger-account-by-id',
    text: 'SELECT id, owner_id, kind, status, created_at FROM ledger_accounts WHERE id = $1',
    values: [accountId],
  });
}

/** Balances of one owner in one currency; an owner never seen has all buckets at zero. */
export async function getBalances(db: Queryable, ownerId: string, currency: Currency): Promise<BucketBalances> {
  const rows = await many(db, balanceRow, {
    name: 'ledger-balances-of-owner',
    // The account id as a value (not a join), so the filter reaches the view's index scans.
    text: `SELECT b.bucket, b.amount_minor FROM ledger_bucket_balances b
            WHERE b.account_id = (SELECT a.id FROM ledger_accounts a WHERE a.owner_id = $1) AND b.currency = $2`,
    values: [ownerId, currency],
  });
  const result: BucketBalances = { available: 0n, held: 0n, pending: 0n, promised: 0n };
  for (const row of rows) {
    const key = row.bucket.toLowerCase() as keyof BucketBalances;
    result[key] = row.amount_minor;
  }
  return result;
}

export async function setAccountStatus(
  db: Queryable,
  accountId: string,
  status: 'ACTIVE' | 'FROZEN',
): Promise<AccountRow | null> {
  return maybeOne(db, accountRow, {
    name: 'ledger-account-set-status',
    text: `UPDATE ledger_accounts SET status = $2, updated_at = now() WHERE id = $1 AND kind = 'user'
           RETURNING id, owner_id, kind, status, created_at`,
    values: [accountId, status],
  });
}

export const transactionItemRow = z.object({
  id: z.string().uuid(),
  seq: z.bigint(),
  tx_type: z.enum(txTypes),
  reference_type: z.string().nullable(),
  reference_id: z.string().nullable(),
  description: z.string().nullable(),
  created_at: z.date(),
  entries: z.array(
    z.object({
      owner_id: z.string(),
      bucket: bucketEnum,
      currency: currencyEnum,
      amount_minor: z.union([z.string(), z.number()]).transform((value) => BigInt(value)),
    }),
  ),
});
export type TransactionItemRow = z.infer<typeof transactionItemRow>;

const entriesJson = `(SELECT json_agg(json_build_object('owner_id', a2.owner_id, 'bucket', e2.bucket, 'currency', e2.currency,
                      'amount_minor', e2.amount_minor::text) ORDER BY e2.id)
                      FROM ledger_entries e2 JOIN ledger_accounts a2 ON a2.id = e2.account_id
                     WHERE e2.transaction_id = t.id) AS entries`;
/** What `transactionItemRow` parses, selected from `ledger_transactions t`. */
const transactionItemColumns = `t.id, t.seq, t.tx_type, t.reference_type, t.reference_id, t.description, t.created_at, ${entriesJson}`;

/** The transaction booked under a ledger idempotency key, with its entries; null when there is none. */
export function findTransactionByIdempotencyKey(db: Queryable, idempotencyKey: string): Promise<TransactionItemRow | null> {
  return maybeOne(db, transactionItemRow, {
    name: 'ledger-transaction-by-key',
    text: `SELECT ${transactionItemColumns}
             FROM ledger_transactions t
            WHERE t.idempotency_key = $1`,
    values: [idempotencyKey],
  });
}

/** Transactions touching one owner, newest first, bounded by the page. */
export function listOwnerTransactions(
  db: Queryable,
  ownerId: string,
  page: { limit: number; offset: number },
): Promise<TransactionItemRow[]> {
  return many(db, transactionItemRow, {
    name: 'ledger-owner-transactions',
    text: `SELECT ${transactionItemColumns}
             FROM ledger_transactions t
            WHERE t.id IN (SELECT DISTINCT e.transaction_id FROM ledger_entries e
                            WHERE e.account_id = (SELECT a.id FROM ledger_accounts a WHERE a.owner_id = $1))
            ORDER BY t.seq DESC LIMIT $2 OFFSET $3`,
    values: [ownerId, page.limit, page.offset],
  });
}

export function listTransactions(
  db: Queryable,
  filter: { txType?: TxType | undefined; referenceType?: string | undefined },
  page: { limit: number; offset: number },
): Promise<TransactionItemRow[]> {
  return many(db, transactionItemRow, {
    name: 'ledger-transactions',
    text: `SELECT ${transactionItemColumns}
             FROM ledger_transactions t
            WHERE ($1::text IS NULL OR t.tx_type = $1::ledger_tx_type) AND ($2::text IS NULL OR t.reference_type = $2)
            ORDER BY t.seq DESC LIMIT $3 OFFSET $4`,
    values: [filter.txType ?? null, filter.referenceType ?? null, page.limit, page.offset],
  });
}

const accountWithBalancesRow = accountRow.extend({
  balances: z.array(
    z.object({
      bucket: bucketEnum,
      currency: currencyEnum,
      amount_minor: z.union([z.string(), z.number()]).transform((value) => BigInt(value)),
    }),
  ),
});
export type AccountWithBalancesRow = z.infer<typeof accountWithBalancesRow>;

export function listAccountsWithBalances(
  db: Queryable,
  filter: { kind?: 'user' | 'system' | undefined },
  page: { limit: number; offset: number },
): Promise<AccountWithBalancesRow[]> {
  return many(db, accountWithBalancesRow, {
    name: 'ledger-accounts-with-balances',
    text: `SELECT a.id, a.owner_id, a.kind, a.status, a.created_at,
                  coalesce((SELECT json_agg(json_build_object('bucket', b.bucket, 'currency', b.currency,
                            'amount_minor', b.amount_minor::text) ORDER BY b.currency, b.bucket)
                              FROM ledger_bucket_balances b WHERE b.account_id = a.id), '[]') AS balances
             FROM ledger_accounts a
            WHERE ($1::ledger_account_kind IS NULL OR a.kind = $1)
            ORDER BY a.created_at, a.id LIMIT $2 OFFSET $3`,
    values: [filter.kind ?? null, page.limit, page.offset],
  });
}

export const violationRow = z.object({ kind: z.string(), subject: z.string(), detail: z.string().nullable() });
export type Violation = z.infer<typeof violationRow>;

/** Every ledger invariant over the whole ledger; an empty list means all hold. */
export function findViolations(db: Queryable, limit = 100): Promise<Violation[]> {
  return many(db, violationRow, {
    name: 'ledger-violations',
    text: 'SELECT kind, subject, detail FROM ledger_violations($1)',
    values: [limit],
  });
}

const statsRow = z.object({
  currency: currencyEnum,
  bucket: bucketEnum,
  user_total_minor: z.string(),
  system_total_minor: z.string(),
});

// Built once (zod compiles a schema's parser on its first use).
const txTypeCountRow = z.object({ tx_type: z.enum(txTypes), count: z.bigint() });
const accountCountsRow = z.object({ users: z.bigint(), frozen: z.bigint() });
const countRow = z.object({ count: z.bigint() });

export async function ledgerStats(db: Queryable) {
  const [totals, counts, accounts] = await Promise.all([
    many(db, statsRow, {
      name: 'ledger-stats-totals',
      text: `SELECT currency, bucket,
                    coalesce(sum(amount_minor) FILTER (WHERE account_kind = 'user'), 0)::text AS user_total_minor,
                    coalesce(sum(amount_minor) FILTER (WHERE account_kind = 'system'), 0)::text AS system_total_minor
               FROM ledger_bucket_balances GROUP BY currency, bucket ORDER BY currency, bucket`,
    }),
    many(db, txTypeCountRow, {
      name: 'ledger-stats-counts',
      text: 'SELECT tx_type, count(*)::bigint AS count FROM ledger_transactions GROUP BY tx_type ORDER BY tx_type::text',
    }),
    one(db, accountCountsRow, {
      name: 'ledger-stats-accounts',
      text: `SELECT count(*) FILTER (WHERE kind = 'user')::bigint AS users,
                    count(*) FILTER (WHERE status = 'FROZEN')::bigint AS frozen FROM ledger_accounts`,
    }),
  ]);
  return { totals, counts, accounts };
}

/** How many ledger transactions exist (tests and tooling). */
export async function countTransactions(db: Pool): Promise<bigint> {
  const row = await one(db, countRow, {
    name: 'ledger-count',
    text: 'SELECT count(*)::bigint AS count FROM ledger_transactions',
  });
  return row.count;
}

