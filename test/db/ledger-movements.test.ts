/**
 * Migration 12: movements instead of entries, and credits that take no lock.
 *
 * - The conversion of a ledger written by the previous posting function: every transaction keeps
 *   its legs, every bucket its balance, every idempotency key its transaction.
 * - What a posting writes: one movement per debit-credit pair, a credit appended beside the row,
 *   a debit on the row; a debit funded only by unfolded credits folds them first.
 * - Folding: one credit in 32 folds its bucket, and a fold keeps every snapshot as it was.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { copyFile, mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { migrate } from 'postgres-migrations';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { findViolations, getBalances, postTransaction, type PostingResult } from '../../db/ledger.ts';
import { applyMigrations, migrationsDir } from '../../db/migrate.ts';
import { createPool, type Pool, type Queryable } from '../../db/pool.ts';
import { moneyModel, type Posting } from '../../src/ledger/money-model.ts';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';
import { foldCredits } from '../support/ledger.ts';

const book = (db: Queryable, posting: Posting, key = `test:${randomUUID()}`): Promise<PostingResult> =>
  postTransaction(db, { idempotencyKey: key, txType: posting.txType, entries: posting.entries });

/** Per transaction, its legs as "owner/bucket/currency=amount", sorted; read through the entries view or table. */
async function legsByTransaction(db: Queryable): Promise<Record<string, string[]>> {
  const result = await db.query<{ id: string; legs: string[] }>(
    `SELECT e.transaction_id AS id, array_agg(a.owner_id || '/' || e.bucket || '/' || e.currency || '=' || e.amount_minor
                                               ORDER BY a.owner_id, e.bucket, e.currency) AS legs
       FROM ledger_entries e JOIN ledger_accounts a ON a.id = e.account_id GROUP BY e.transaction_id`,
  );
  return Object.fromEntries(result.rows.map((row) => [row.id, row.legs]));
}

/** Every non-zero bucket balance as "owner/bucket/currency" -> amount, from `source` (a table or view with amount_minor). */
async function balances(db: Queryable, source: string): Promise<Record<string, string>> {
  const result = await db.query<{ key: string; amount: string }>(
    `SELECT a.owner_id || '/' || b.bucket || '/' || b.currency AS key, b.amount_minor::text AS amount
       FROM ${source} b JOIN ledger_accounts a ON a.id = b.account_id WHERE b.amount_minor <> 0 ORDER BY 1`,
  );
  return Object.fromEntries(result.rows.map((row) => [row.key, row.amount]));
}

describe('migration 12 converts a ledger written by the previous posting function', () => {
  let pool: Pool | undefined;
  let dropDatabase: (() => Promise<void>) | undefined;
  afterAll(async () => {
    await pool?.end();
    await dropDatabase?.();
  });

  it('keeps every transaction\'s legs, every balance and every idempotency key, and books on', async () => {
    const adminUrl = inject('adminDatabaseUrl');
    const name = `${inject('templateDatabase').replace('_tpl_', '_m12_')}_${randomBytes(4).toString('hex')}`;
    const admin = new pg.Client({ connectionString: adminUrl });
    await admin.connect();
    await admin.query(`CREATE DATABASE ${pg.escapeIdentifier(name)}`);
    await admin.end();
    dropDatabase = async () => {
      const dropper = new pg.Client({ connectionString: adminUrl });
      await dropper.connect();
      await dropper.query(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(name)} WITH (FORCE)`);
      await dropper.end();
    };
    const url = new URL(adminUrl);
    url.pathname = `/${name}`;
    pool = createPool({ connectionString: url.toString(), max: 2, applicationName: 'test' });

    // Migrations 1 to 11 only, from a folder of copies (postgres-migrations checks each file's hash).
    const before12 = await mkdtemp(path.join(tmpdir(), 'plc-m12-'));
    try {
      for (const file of await readdir(migrationsDir)) {
        const number = Number(file.split('_')[0]);
        if (Number.isInteger(number) && number <= 11) await copyFile(path.join(migrationsDir, file), path.join(before12, file));
      }
      const client = await pool.connect();
      try {
        await migrate({ client }, before12);
      } finally {
        client.release();
      }
    } finally {
      await rm(before12, { recursive: true, force: true });
    }

    // A ledger with two-, three- and four-leg transactions, booked by ledger_post_legs version 3.
    const keys = {
      deposit: 'old:deposit',
      chargeSettled: 'old:charge-settled',
      redeemSettled: 'old:redeem-settled',
    };
    await book(pool, moneyModel.deposit({ ownerId: 'ann', currency: 'BRL', amountMinor: 10_000n }), keys.deposit);
    await book(pool, moneyModel.chargeCreated({ ownerId: 'ann', currency: 'USD', amountMinor: 700n }));
    await book(pool, moneyModel.chargeSettled({ ownerId: 'ann', currency: 'USD', amountMinor: 700n }), keys.chargeSettled);
    await book(pool, moneyModel.plcIssued({ issuerId: 'ann', currency: 'BRL', amountMinor: 4_000n }));
    await book(pool, moneyModel.redeemRequested({ issuerId: 'ann', bearerId: 'ben', currency: 'BRL', amountMinor: 2_500n }));
    await book(pool, moneyModel.redeemSettled({ bearerId: 'ben', currency: 'BRL', amountMinor: 2_500n, feeMinor: 25n }), keys.redeemSettled);
    await book(pool, moneyModel.riskHold({ ownerId: 'ann', currency: 'BRL', amountMinor: 1_000n }));
    const legsBefore = await legsByTransaction(pool);
    const balancesBefore = await balances(pool, 'ledger_balances');
    expect(Object.keys(legsBefore)).toHaveLength(7);

    expect(await applyMigrations(pool)).toContain('12_ledger_movements.sql');

    expect(await legsByTransaction(pool)).toEqual(legsBefore);
    expect(await balances(pool, 'ledger_bucket_balances')).toEqual(balancesBefore);
    expect(await findViolations(pool)).toEqual([]);
    // The four-leg transaction became two movements, the three-leg one two, the others one each.
    const movements = await pool.query<{ key: string; n: number }>(
      `SELECT t.idempotency_key AS key, count(*)::int AS n FROM ledger_movements m JOIN ledger_transactions t ON t.id = m.transaction_id
        GROUP BY 1 ORDER BY 1`,
    );
    expect(Object.fromEntries(movements.rows.map((row) => [row.key, row.n]))).toMatchObject({
      [keys.deposit]: 1,
      [keys.chargeSettled]: 2,
      [keys.redeemSettled]: 2,
    });
    // Keys booked before the migration still replay (the request hash did not change) ...
    const replay = await book(pool, moneyModel.redeemSettled({ bearerId: 'ben', currency: 'BRL', amountMinor: 2_500n, feeMinor: 25n }), keys.redeemSettled);
    expect(replay.created).toBe(false);
    await expect(book(pool, moneyModel.deposit({ ownerId: 'ann', currency: 'BRL', amountMinor: 1n }), keys.deposit)).rejects.toMatchObject({
      code: 'IDEMPOTENCY_KEY_REUSED',
    });
    // ... and the ledger books on from the converted rows.
    await book(pool, moneyModel.riskRelease({ ownerId: 'ann', currency: 'BRL', amountMinor: 1_000n }));
    await book(pool, moneyModel.plcCancelled({ issuerId: 'ann', currency: 'BRL', amountMinor: 1_500n }));
    expect(await getBalances(pool, 'ann', 'BRL')).toEqual({ available: 7_500n, held: 0n, pending: 0n, promised: 0n });
    expect(await findViolations(pool)).toEqual([]);
  });
});

describe('what a posting writes (migration 12)', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase({ poolMax: 4 });
  });
  afterAll(async () => {
    await db?.drop();
  });

  const owner = (name: string): string => `${name}-${randomUUID().slice(0, 8)}`;

  async function movementsOf(transactionId: string) {
    const result = await db.pool.query<{ debit: string; credit: string; amount: string }>(
      `SELECT d.owner_id || '/' || m.debit_bucket AS debit, c.owner_id || '/' || m.credit_bucket AS credit, m.amount_minor::text AS amount
         FROM ledger_movements m JOIN ledger_accounts d ON d.id = m.debit_account JOIN ledger_accounts c ON c.id = m.credit_account
        WHERE m.transaction_id = $1 ORDER BY m.id`,
      [transactionId],
    );
    return result.rows;
  }

  it('a two-leg posting is one movement; a charge paid two; a settlement with a fee pairs the bearer\'s debit with both credits', async () => {
    const ann = owner('ann');
    const deposit = await book(db.pool, moneyModel.deposit({ ownerId: ann, currency: 'BRL', amountMinor: 900n }));
    expect(await movementsOf(deposit.transactionId)).toEqual([{ debit: 'system:world/AVAILABLE', credit: `${ann}/AVAILABLE`, amount: '900' }]);

    await book(db.pool, moneyModel.chargeCreated({ ownerId: ann, currency: 'BRL', amountMinor: 300n }));
    const paid = await book(db.pool, moneyModel.chargeSettled({ ownerId: ann, currency: 'BRL', amountMinor: 300n }));
    expect(await movementsOf(paid.transactionId)).toEqual([
      { debit: `${ann}/PENDING`, credit: `${ann}/AVAILABLE`, amount: '300' },
      { debit: 'system:world/AVAILABLE', credit: 'system:world/PENDING', amount: '300' },
    ]);

    await book(db.pool, moneyModel.plcIssued({ issuerId: ann, currency: 'BRL', amountMinor: 200n }));
    const ben = owner('ben');
    await book(db.pool, moneyModel.redeemRequested({ issuerId: ann, bearerId: ben, currency: 'BRL', amountMinor: 200n }));
    const settled = await book(db.pool, moneyModel.redeemSettled({ bearerId: ben, currency: 'BRL', amountMinor: 200n, feeMinor: 3n }));
    expect(await movementsOf(settled.transactionId)).toEqual([
      { debit: `${ben}/PENDING`, credit: 'system:fees/AVAILABLE', amount: '3' },
      { debit: `${ben}/PENDING`, credit: 'system:world/AVAILABLE', amount: '197' },
    ]);
    // The entries view shows the legs the posting asked for: the bearer's debit once, whole.
    const entries = await db.pool.query<{ owner_id: string; amount: string }>(
      `SELECT a.owner_id, e.amount_minor::text AS amount FROM ledger_entries e JOIN ledger_accounts a ON a.id = e.account_id
        WHERE e.transaction_id = $1 ORDER BY e.amount_minor`,
      [settled.transactionId],
    );
    expect(entries.rows).toEqual([
      { owner_id: ben, amount: '-200' },
      { owner_id: 'system:fees', amount: '3' },
      { owner_id: 'system:world', amount: '197' },
    ]);
    expect(await findViolations(db.pool)).toEqual([]);
  });

  it('a credit is appended beside the row; a debit the row cannot cover folds the bucket\'s credits first', async () => {
    const cid = owner('cid');
    for (let i = 0; i < 3; i += 1) await book(db.pool, moneyModel.deposit({ ownerId: cid, currency: 'EUR', amountMinor: 100n }));
    const state = async () =>
      (
        await db.pool.query<{ row: string | null; credits: string }>(
          `SELECT (SELECT b.amount_minor::text FROM ledger_balances b WHERE b.account_id = a.id AND b.bucket = 'AVAILABLE' AND b.currency = 'EUR') AS row,
                  (SELECT count(*)::text FROM ledger_balance_credits c WHERE c.account_id = a.id AND c.bucket = 'AVAILABLE' AND c.currency = 'EUR') AS credits
             FROM ledger_accounts a WHERE a.owner_id = $1`,
          [cid],
        )
      ).rows[0];
    const before = await state();
    // Three credits of 1.00, unless one of them happened to fold (one credit in 32 does).
    expect(Number(before?.credits) + (before?.row === null || before?.row === undefined ? 0 : Number(before.row) / 100)).toBe(3);
    expect(await getBalances(db.pool, cid, 'EUR')).toMatchObject({ available: 300n });

    await book(db.pool, moneyModel.riskHold({ ownerId: cid, currency: 'EUR', amountMinor: 250n }));
    expect(await state()).toEqual({ row: '50', credits: '0' });
    expect(await getBalances(db.pool, cid, 'EUR')).toEqual({ available: 50n, held: 250n, pending: 0n, promised: 0n });
    expect(await findViolations(db.pool)).toEqual([]);
  });

  it('one credit in 32 folds its bucket, and folding never changes a snapshot', async () => {
    const dee = owner('dee');
    await book(db.pool, moneyModel.deposit({ ownerId: dee, currency: 'USD', amountMinor: 64_000n }));
    await foldCredits(db.pool, [dee]);
    const payees = Array.from({ length: 4 }, () => owner('payee'));
    // 4 x 48 credits: whatever the ids, each bucket's unfolded credits stay short of all 48.
    for (let i = 0; i < 48; i += 1) {
      await Promise.all(payees.map((payee) => book(db.pool, { txType: 'RECONCILIATION', entries: transfer(dee, payee, 10n) })));
    }
    const unfolded = await db.pool.query<{ owner_id: string; n: number }>(
      `SELECT a.owner_id, count(c.id)::int AS n FROM ledger_accounts a LEFT JOIN ledger_balance_credits c ON c.account_id = a.id
        WHERE a.owner_id = ANY ($1) GROUP BY a.owner_id`,
      [payees],
    );
    const total = unfolded.rows.reduce((sum, row) => sum + row.n, 0);
    expect(total).toBeLessThan(4 * 48);
    for (const payee of payees) expect(await getBalances(db.pool, payee, 'USD')).toMatchObject({ available: 480n });

    const snapshotsBefore = await balances(db.pool, 'ledger_bucket_balances');
    await foldCredits(db.pool);
    expect(await db.pool.query('SELECT count(*)::int AS n FROM ledger_balance_credits')).toMatchObject({ rows: [{ n: 0 }] });
    expect(await balances(db.pool, 'ledger_bucket_balances')).toEqual(snapshotsBefore);
    expect(await findViolations(db.pool)).toEqual([]);
  });
});

function transfer(from: string, to: string, amountMinor: bigint) {
  return [
    { ownerId: from, bucket: 'AVAILABLE' as const, currency: 'USD' as const, amountMinor: -amountMinor },
    { ownerId: to, bucket: 'AVAILABLE' as const, currency: 'USD' as const, amountMinor },
  ];
}
