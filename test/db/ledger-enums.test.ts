import { randomUUID } from 'node:crypto';
import type { DatabaseError, PoolClient } from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findViolations, getBalances, postTransaction } from '../../db/ledger.ts';
import { buckets, moneyModel } from '../../src/ledger/money-model.ts';
import { currencies } from '../../src/money/currency.ts';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';

/**
 * Migration 10: buckets, currencies and account kinds as enums and the transaction's length limits
 * as column types. Migration 12 replaced the entries table (and its check at COMMIT of the
 * accounts and transaction an entry names) with movements, which `ledger verify` checks instead.
 */
let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
  await postTransaction(db.pool, { idempotencyKey: `seed:${randomUUID()}`, ...moneyModel.deposit({ ownerId: 'erin', currency: 'BRL', amountMinor: 10_000n }) });
});
afterAll(async () => {
  await db?.drop();
});

async function errorOf(promise: Promise<unknown>): Promise<DatabaseError | null> {
  return promise.then(
    () => null,
    (error: unknown) => error as DatabaseError,
  );
}

const postLegs = (options: { key?: string; referenceId?: string | null; buckets?: string[]; currencies?: string[] }) =>
  db.pool.query(`SELECT * FROM ledger_post_legs($1, 'RECONCILIATION', NULL, $2, NULL, ARRAY['erin', 'frank'], $3::text[], $4::text[], ARRAY[-1, 1]::bigint[], false)`, [
    options.key ?? `test:${randomUUID()}`,
    options.referenceId ?? null,
    options.buckets ?? ['AVAILABLE', 'AVAILABLE'],
    options.currencies ?? ['BRL', 'BRL'],
  ]);

/** Runs `work` in a transaction and returns the error COMMIT (or the work) ended with. */
async function commitError(work: (client: PoolClient) => Promise<void>): Promise<DatabaseError | null> {
  const client = await db.pool.connect();
  try {
    await client.query('BEGIN');
    await work(client);
    return await errorOf(client.query('COMMIT'));
  } catch (error) {
    return error as DatabaseError;
  } finally {
    await client.query('ROLLBACK').catch(() => {});
    client.release();
  }
}

describe('ledger enums (migration 10)', () => {
  it('the enums hold exactly the money model\'s buckets and currencies, in code-point order', async () => {
    const range = async (type: string) =>
      (await db.pool.query<{ value: string }>(`SELECT unnest(enum_range(NULL::${type}))::text AS value`)).rows.map((row) => row.value);
    const codePointOrder = (values: readonly string[]) => [...values].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    expect(await range('ledger_bucket')).toEqual(codePointOrder(buckets));
    expect(await range('ledger_currency')).toEqual(codePointOrder(currencies));
    expect(await range('ledger_account_kind')).toEqual(['system', 'user']);
  });

  it('ledger_post_legs accepts every bucket and currency of the enums (its own lists match them)', async () => {
    for (const bucket of buckets) {
      for (const currency of currencies) {
        await postTransaction(db.pool, {
          idempotencyKey: `test:${randomUUID()}`,
          ...moneyModel.deposit({ ownerId: 'erin', currency, amountMinor: 1n }),
        });
        const moved = await postLegs({ buckets: ['AVAILABLE', bucket], currencies: [currency, currency] }).catch((error: unknown) => error as DatabaseError);
        expect(moved).not.toHaveProperty('code');
      }
    }
    expect(await findViolations(db.pool)).toEqual([]);
  });

  it.each([
    { why: 'an unknown bucket', options: { buckets: ['AVAILABLE', 'SPARE'] } },
    { why: 'a lower-case bucket', options: { buckets: ['AVAILABLE', 'available'] } },
    { why: 'an unknown currency', options: { currencies: ['BRL', 'GBP'] } },
    { why: 'an empty idempotency key', options: { key: '' } },
    { why: 'an idempotency key over 300 characters', options: { key: 'k'.repeat(301) } },
    { why: 'a reference id over 200 characters', options: { referenceId: 'r'.repeat(201) } },
  ])('refuses $why with PL005 LEDGER_INVALID_POSTING and books nothing', async ({ options }) => {
    const before = await getBalances(db.pool, 'erin', 'BRL');
    const error = await errorOf(postLegs(options));
    expect(error?.code).toBe('PL005');
    expect(error?.message).toBe('LEDGER_INVALID_POSTING');
    expect(await getBalances(db.pool, 'erin', 'BRL')).toEqual(before);
  });

  it('the column types refuse what the function would refuse, for a writer that goes around it', async () => {
    const tooLong = await commitError(async (client) => {
      await client.query(`INSERT INTO ledger_transactions (idempotency_key, request_hash, tx_type, reference_id) VALUES ($1, 'raw', 'DEPOSIT', $2)`, [
        `raw:${randomUUID()}`,
        'r'.repeat(201),
      ]);
    });
    expect(tooLong?.code).toBe('22001');
    const empty = await commitError(async (client) => {
      await client.query(`INSERT INTO ledger_transactions (idempotency_key, request_hash, tx_type) VALUES ('', 'raw', 'DEPOSIT')`);
    });
    expect(empty?.code).toBe('23514');
    const badBucket = await commitError(async (client) => {
      await client.query(
        `INSERT INTO ledger_movements (transaction_id, currency, amount_minor, debit_account, debit_bucket, credit_account, credit_bucket)
         VALUES ($1, 'BRL', 1, $2, 'SPARE', $2, 'AVAILABLE')`,
        [randomUUID(), randomUUID()],
      );
    });
    expect(badBucket?.code).toBe('22P02');
    const badCurrency = await commitError(async (client) => {
      await client.query(`INSERT INTO ledger_balance_credits (account_id, bucket, currency, amount_minor) VALUES ($1, 'AVAILABLE', 'GBP', 1)`, [randomUUID()]);
    });
    expect(badCurrency?.code).toBe('22P02');
  });

  it('an account can be neither deleted nor truncated (entries name it without a foreign key)', async () => {
    const deleted = await errorOf(db.pool.query(`DELETE FROM ledger_accounts WHERE owner_id = 'erin'`));
    expect(deleted?.code).toBe('PL006');
    const truncated = await errorOf(db.pool.query(`TRUNCATE ledger_accounts CASCADE`));
    expect(truncated?.code).toBe('PL006');
    expect((await db.pool.query(`SELECT count(*)::int AS n FROM ledger_accounts WHERE owner_id = 'erin'`)).rows[0]).toEqual({ n: 1 });
  });

  it('ledger verify reports movements and credits whose account or transaction does not exist (written around the function)', async () => {
    const client = await db.pool.connect();
    try {
      await client.query('BEGIN');
      const erin = await client.query<{ id: string }>(`SELECT id FROM ledger_accounts WHERE owner_id = 'erin'`);
      const tx = await client.query<{ id: string }>(`INSERT INTO ledger_transactions (idempotency_key, request_hash, tx_type) VALUES ($1, 'raw', 'DEPOSIT') RETURNING id`, [
        `raw:${randomUUID()}`,
      ]);
      await client.query(
        `INSERT INTO ledger_movements (transaction_id, currency, amount_minor, debit_account, debit_bucket, credit_account, credit_bucket)
         VALUES ($1, 'EUR', 3, $3, 'HELD', $2, 'HELD'), ($4, 'EUR', 5, $2, 'HELD', $2, 'AVAILABLE')`,
        [tx.rows[0]?.id, erin.rows[0]?.id, randomUUID(), randomUUID()],
      );
      await client.query(`INSERT INTO ledger_balance_credits (account_id, bucket, currency, amount_minor) VALUES ($1, 'HELD', 'EUR', 2)`, [randomUUID()]);
      const kinds = (await findViolations(client, 1000)).map((violation) => violation.kind);
      expect(kinds).toContain('entry_without_account');
      expect(kinds).toContain('entry_without_transaction');
      expect(kinds).toContain('credit_without_account');
    } finally {
      await client.query('ROLLBACK');
      client.release();
    }
    expect(await findViolations(db.pool)).toEqual([]);
  });
});
