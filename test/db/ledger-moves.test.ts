/**
 * The ledger against a real PostgreSQL database.
 *
 * - Scenarios: each a sequence of money-model moves booked with `postTransaction` on a fresh
 *   database, followed by the complete set of snapshot balances (every owner, every bucket,
 *   system accounts included), the stored entries, and `findViolations` empty.
 * - Refusals by the posting function: insufficient funds, frozen accounts, idempotency (replay
 *   and reuse), invalid postings; each leaves nothing written.
 * - Refusals by the database itself, bypassing the function with raw SQL: an unbalanced
 *   transaction cannot be written (entries are the two sides of movements, each balanced by
 *   itself), a negative user snapshot fails its CHECK and a credit of zero or less its type (23514),
 *   and ledger history cannot be rewritten (PL006).
 */
import { randomUUID } from 'node:crypto';
import type { DatabaseError } from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  findViolations,
  getBalances,
  listTransactions,
  postTransaction,
  type PostingRequest,
  type PostingResult,
} from '../../db/ledger.ts';
import { withTransaction, type Pool, type Queryable } from '../../db/pool.ts';
import { DomainError, type ErrorCode } from '../../src/errors.ts';
import { feesOwnerId, moneyModel, worldOwnerId, type Entry, type Posting } from '../../src/ledger/money-model.ts';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';

const W = worldOwnerId;
const F = feesOwnerId;

interface Booking {
  posting: Posting;
  key?: string;
  allowFrozen?: boolean;
  referenceId?: string;
}

function request(booking: Booking): PostingRequest {
  return {
    idempotencyKey: booking.key ?? `test:${randomUUID()}`,
    txType: booking.posting.txType,
    referenceType: 'test',
    referenceId: booking.referenceId,
    entries: booking.posting.entries,
    allowFrozen: booking.allowFrozen ?? false,
  };
}

function book(db: Queryable, posting: Posting, options: Omit<Booking, 'posting'> = {}): Promise<PostingResult> {
  return postTransaction(db, request({ posting, ...options }));
}

async function refusedWith(promise: Promise<unknown>, code: ErrorCode): Promise<DomainError> {
  const outcome = await promise.then(
    () => new Error('expected a refusal, the posting was accepted'),
    (error: unknown) => error,
  );
  expect(outcome).toBeInstanceOf(DomainError);
  expect((outcome as DomainError).code).toBe(code);
  return outcome as DomainError;
}

/** Every non-zero snapshot of the ledger (row plus unfolded credits), as "owner/bucket/currency" -> amount. */
async function snapshot(db: Queryable): Promise<Record<string, bigint>> {
  const result = await db.query<{ key: string; amount_minor: bigint }>(
    `SELECT a.owner_id || '/' || b.bucket || '/' || b.currency AS key, b.amount_minor
       FROM ledger_bucket_balances b JOIN ledger_accounts a ON a.id = b.account_id
      WHERE b.amount_minor <> 0 ORDER BY 1`,
  );
  return Object.fromEntries(result.rows.map((row) => [row.key, row.amount_minor]));
}

/** Row counts of every ledger table: a refusal must leave them all as they were. */
async function counts(db: Queryable): Promise<Record<string, bigint>> {
  const result = await db.query<Record<string, bigint>>(
    `SELECT (SELECT count(*) FROM ledger_accounts) AS accounts, (SELECT count(*) FROM ledger_balances) AS balances,
            (SELECT count(*) FROM ledger_balance_credits) AS credits, (SELECT count(*) FROM ledger_transactions) AS transactions,
            (SELECT count(*) FROM ledger_movements) AS movements`,
  );
  return result.rows[0] ?? {};
}

const legKey = (entry: Pick<Entry, 'ownerId' | 'bucket' | 'currency' | 'amountMinor'>): string =>
  `${entry.ownerId}/${entry.bucket}/${entry.currency}/${entry.amountMinor}`;

// ---------------------------------------------------------------------------------------------
// Scenarios: sequences of moves and the full set of balances they must leave.

interface Scenario {
  name: string;
  steps: Booking[];
  /** Every non-zero balance afterwards, "owner/bucket/currency" -> minor units; all else is 0. */
  expected: Record<string, bigint>;
}

const deposit = (ownerId: string, amountMinor: bigint, currency: 'BRL' | 'USD' | 'EUR' = 'BRL'): Booking => ({
  posting: moneyModel.deposit({ ownerId, currency, amountMinor }),
});

const scenarios: Scenario[] = [
  {
    name: 'admin deposit: the world AVAILABLE goes negative by what the owner AVAILABLE gains',
    steps: [deposit('alice', 1000n), deposit('alice', 234n)],
    expected: { 'alice/AVAILABLE/BRL': 1234n, [`${W}/AVAILABLE/BRL`]: -1234n },
  },
  {
    name: 'charge created: both PENDING sides move, nothing is AVAILABLE yet',
    steps: [{ posting: moneyModel.chargeCreated({ ownerId: 'alice', currency: 'BRL', amountMinor: 5000n }) }],
    expected: { 'alice/PENDING/BRL': 5000n, [`${W}/PENDING/BRL`]: -5000n },
  },
  {
    name: 'charge created then settled: the owner PENDING becomes AVAILABLE, the world pays from AVAILABLE',
    steps: [
      { posting: moneyModel.chargeCreated({ ownerId: 'alice', currency: 'BRL', amountMinor: 5000n }) },
      { posting: moneyModel.chargeSettled({ ownerId: 'alice', currency: 'BRL', amountMinor: 5000n }) },
    ],
    expected: { 'alice/AVAILABLE/BRL': 5000n, [`${W}/AVAILABLE/BRL`]: -5000n },
  },
  {
    name: 'charge created then failed: the expectation is withdrawn, every balance back to zero',
    steps: [
      { posting: moneyModel.chargeCreated({ ownerId: 'alice', currency: 'BRL', amountMinor: 5000n }) },
      { posting: moneyModel.chargeFailed({ ownerId: 'alice', currency: 'BRL', amountMinor: 5000n }) },
    ],
    expected: {},
  },
  {
    name: 'two charges, one settled and one failed: only the settled one reaches AVAILABLE',
    steps: [
      { posting: moneyModel.chargeCreated({ ownerId: 'alice', currency: 'BRL', amountMinor: 3000n }) },
      { posting: moneyModel.chargeCreated({ ownerId: 'alice', currency: 'BRL', amountMinor: 700n }) },
      { posting: moneyModel.chargeFailed({ ownerId: 'alice', currency: 'BRL', amountMinor: 700n }) },
      { posting: moneyModel.chargeSettled({ ownerId: 'alice', currency: 'BRL', amountMinor: 3000n }) },
    ],
    expected: { 'alice/AVAILABLE/BRL': 3000n, [`${W}/AVAILABLE/BRL`]: -3000n },
  },
  {
    name: 'PLC issued: AVAILABLE moves to PROMISED on the issuer only',
    steps: [deposit('alice', 1000n), { posting: moneyModel.plcIssued({ issuerId: 'alice', currency: 'BRL', amountMinor: 400n }) }],
    expected: { 'alice/AVAILABLE/BRL': 600n, 'alice/PROMISED/BRL': 400n, [`${W}/AVAILABLE/BRL`]: -1000n },
  },
  {
    name: 'PLC issued then cancelled: PROMISED returns to AVAILABLE',
    steps: [
      deposit('alice', 1000n),
      { posting: moneyModel.plcIssued({ issuerId: 'alice', currency: 'BRL', amountMinor: 400n }) },
      { posting: moneyModel.plcCancelled({ issuerId: 'alice', currency: 'BRL', amountMinor: 400n }) },
    ],
    expected: { 'alice/AVAILABLE/BRL': 1000n, [`${W}/AVAILABLE/BRL`]: -1000n },
  },
  {
    name: 'PLC issued then expired: PROMISED returns to AVAILABLE',
    steps: [
      deposit('alice', 1000n),
      { posting: moneyModel.plcIssued({ issuerId: 'alice', currency: 'BRL', amountMinor: 1000n }) },
      { posting: moneyModel.plcExpired({ issuerId: 'alice', currency: 'BRL', amountMinor: 1000n }) },
    ],
    expected: { 'alice/AVAILABLE/BRL': 1000n, [`${W}/AVAILABLE/BRL`]: -1000n },
  },
  {
    name: 'redeem requested: the issuer PROMISED becomes the bearer PENDING',
    steps: [
      deposit('alice', 1000n),
      { posting: moneyModel.plcIssued({ issuerId: 'alice', currency: 'BRL', amountMinor: 400n }) },
      { posting: moneyModel.redeemRequested({ issuerId: 'alice', bearerId: 'bob', currency: 'BRL', amountMinor: 400n }) },
    ],
    expected: { 'alice/AVAILABLE/BRL': 600n, 'bob/PENDING/BRL': 400n, [`${W}/AVAILABLE/BRL`]: -1000n },
  },
  {
    name: 'redeem settled with a fee: the bearer PENDING leaves, the world gets amount - fee, fees gets the fee',
    steps: [
      deposit('alice', 1000n),
      { posting: moneyModel.plcIssued({ issuerId: 'alice', currency: 'BRL', amountMinor: 400n }) },
      { posting: moneyModel.redeemRequested({ issuerId: 'alice', bearerId: 'bob', currency: 'BRL', amountMinor: 400n }) },
      { posting: moneyModel.redeemSettled({ bearerId: 'bob', currency: 'BRL', amountMinor: 400n, feeMinor: 10n }) },
    ],
    expected: { 'alice/AVAILABLE/BRL': 600n, [`${W}/AVAILABLE/BRL`]: -1000n + 390n, [`${F}/AVAILABLE/BRL`]: 10n },
  },
  {
    name: 'redeem settled with no fee and with the whole amount as fee: fees gets exactly the fees',
    steps: [
      deposit('alice', 1000n),
      { posting: moneyModel.plcIssued({ issuerId: 'alice', currency: 'BRL', amountMinor: 300n }) },
      { posting: moneyModel.plcIssued({ issuerId: 'alice', currency: 'BRL', amountMinor: 5n }) },
      { posting: moneyModel.redeemRequested({ issuerId: 'alice', bearerId: 'bob', currency: 'BRL', amountMinor: 300n }) },
      { posting: moneyModel.redeemRequested({ issuerId: 'alice', bearerId: 'carol', currency: 'BRL', amountMinor: 5n }) },
      { posting: moneyModel.redeemSettled({ bearerId: 'bob', currency: 'BRL', amountMinor: 300n, feeMinor: 0n }) },
      { posting: moneyModel.redeemSettled({ bearerId: 'carol', currency: 'BRL', amountMinor: 5n, feeMinor: 5n }) },
    ],
    expected: { 'alice/AVAILABLE/BRL': 695n, [`${W}/AVAILABLE/BRL`]: -1000n + 300n, [`${F}/AVAILABLE/BRL`]: 5n },
  },
  {
    name: 'redeem failed: the bearer PENDING goes back to the issuer PROMISED, then the PLC expires',
    steps: [
      deposit('alice', 1000n),
      { posting: moneyModel.plcIssued({ issuerId: 'alice', currency: 'BRL', amountMinor: 400n }) },
      { posting: moneyModel.redeemRequested({ issuerId: 'alice', bearerId: 'bob', currency: 'BRL', amountMinor: 400n }) },
      { posting: moneyModel.redeemFailed({ issuerId: 'alice', bearerId: 'bob', currency: 'BRL', amountMinor: 400n }) },
      { posting: moneyModel.plcExpired({ issuerId: 'alice', currency: 'BRL', amountMinor: 400n }) },
    ],
    expected: { 'alice/AVAILABLE/BRL': 1000n, [`${W}/AVAILABLE/BRL`]: -1000n },
  },
  {
    name: 'risk hold then partial release: HELD keeps what is not released',
    steps: [
      deposit('dave', 1000n),
      { posting: moneyModel.riskHold({ ownerId: 'dave', currency: 'BRL', amountMinor: 300n }) },
      { posting: moneyModel.riskRelease({ ownerId: 'dave', currency: 'BRL', amountMinor: 100n }) },
    ],
    expected: { 'dave/AVAILABLE/BRL': 800n, 'dave/HELD/BRL': 200n, [`${W}/AVAILABLE/BRL`]: -1000n },
  },
  {
    name: 'currencies are separate books: moves in USD and EUR leave BRL untouched',
    steps: [
      deposit('alice', 1000n, 'BRL'),
      deposit('alice', 500n, 'USD'),
      { posting: moneyModel.chargeCreated({ ownerId: 'alice', currency: 'EUR', amountMinor: 70n }) },
      { posting: moneyModel.plcIssued({ issuerId: 'alice', currency: 'USD', amountMinor: 500n }) },
      { posting: moneyModel.redeemRequested({ issuerId: 'alice', bearerId: 'bob', currency: 'USD', amountMinor: 200n }) },
    ],
    expected: {
      'alice/AVAILABLE/BRL': 1000n,
      'alice/PROMISED/USD': 300n,
      'alice/PENDING/EUR': 70n,
      'bob/PENDING/USD': 200n,
      [`${W}/AVAILABLE/BRL`]: -1000n,
      [`${W}/AVAILABLE/USD`]: -500n,
      [`${W}/PENDING/EUR`]: -70n,
    },
  },
  {
    name: 'a full life: cash-in by charge, two PLCs (one redeemed with a fee, one expired), a hold and its release',
    steps: [
      { posting: moneyModel.chargeCreated({ ownerId: 'alice', currency: 'BRL', amountMinor: 10_000n }) },
      { posting: moneyModel.chargeSettled({ ownerId: 'alice', currency: 'BRL', amountMinor: 10_000n }) },
      { posting: moneyModel.plcIssued({ issuerId: 'alice', currency: 'BRL', amountMinor: 2_500n }) },
      { posting: moneyModel.plcIssued({ issuerId: 'alice', currency: 'BRL', amountMinor: 1_000n }) },
      { posting: moneyModel.redeemRequested({ issuerId: 'alice', bearerId: 'bob', currency: 'BRL', amountMinor: 2_500n }) },
      { posting: moneyModel.riskHold({ ownerId: 'alice', currency: 'BRL', amountMinor: 6_000n }) },
      { posting: moneyModel.redeemSettled({ bearerId: 'bob', currency: 'BRL', amountMinor: 2_500n, feeMinor: 25n }) },
      { posting: moneyModel.plcExpired({ issuerId: 'alice', currency: 'BRL', amountMinor: 1_000n }) },
      { posting: moneyModel.riskRelease({ ownerId: 'alice', currency: 'BRL', amountMinor: 6_000n }) },
    ],
    expected: {
      'alice/AVAILABLE/BRL': 7_500n,
      [`${W}/AVAILABLE/BRL`]: -10_000n + 2_475n,
      [`${F}/AVAILABLE/BRL`]: 25n,
    },
  },
];

describe('ledger moves: scenarios booked with postTransaction on a fresh database', () => {
  it.each(scenarios)('$name', async ({ steps, expected }) => {
    const db = await createTestDatabase({ poolMax: 2 });
    try {
      const results: PostingResult[] = [];
      for (const step of steps) results.push(await book(db.pool, step.posting));
      expect(results.every((result) => result.created)).toBe(true);

      // Every balance of every account, system accounts included.
      expect(await snapshot(db.pool)).toEqual(expected);
      // The read API agrees for each user owner, all four buckets.
      const owners = new Set(steps.flatMap((step) => step.posting.entries.map((entry) => entry.ownerId)));
      for (const ownerId of owners) {
        for (const currency of ['BRL', 'USD', 'EUR'] as const) {
          const balances = await getBalances(db.pool, ownerId, currency);
          expect(balances).toEqual({
            available: expected[`${ownerId}/AVAILABLE/${currency}`] ?? 0n,
            held: expected[`${ownerId}/HELD/${currency}`] ?? 0n,
            pending: expected[`${ownerId}/PENDING/${currency}`] ?? 0n,
            promised: expected[`${ownerId}/PROMISED/${currency}`] ?? 0n,
          });
        }
      }
      // The stored transactions are exactly the postings, in order, each with exactly its legs.
      const stored = (await listTransactions(db.pool, {}, { limit: 100, offset: 0 })).reverse();
      expect(stored.map((transaction) => transaction.id)).toEqual(results.map((result) => result.transactionId));
      stored.forEach((transaction, index) => {
        const step = steps[index];
        expect(transaction.tx_type).toBe(step?.posting.txType);
        const storedLegs = transaction.entries.map((entry) => legKey({ ownerId: entry.owner_id, ...entry, amountMinor: entry.amount_minor }));
        expect(storedLegs.sort()).toEqual(step?.posting.entries.map(legKey).sort());
      });
      expect(await findViolations(db.pool)).toEqual([]);
    } finally {
      await db.drop();
    }
  });
});

// ---------------------------------------------------------------------------------------------
// Refusals by the posting function. One database for the block; every test uses owners of its own.

describe('ledger refusals by the posting function', () => {
  let db: TestDatabase;
  let pool: Pool;
  beforeAll(async () => {
    db = await createTestDatabase({ poolMax: 10 });
    pool = db.pool;
  });
  afterAll(async () => {
    // Whatever the refusals above did, the ledger they leave behind is consistent.
    if (db !== undefined) expect(await findViolations(pool)).toEqual([]);
    await db?.drop();
  });

  const owner = (name: string): string => `${name}-${randomUUID().slice(0, 8)}`;

  describe('insufficient funds', () => {
    it('refuses a debit one minor unit above the balance with INSUFFICIENT_FUNDS naming the bucket, and writes nothing', async () => {
      const alice = owner('alice');
      await book(pool, moneyModel.deposit({ ownerId: alice, currency: 'BRL', amountMinor: 1000n }));
      const before = { counts: await counts(pool), snapshot: await snapshot(pool) };

      const error = await refusedWith(book(pool, moneyModel.plcIssued({ issuerId: alice, currency: 'BRL', amountMinor: 1001n })), 'INSUFFICIENT_FUNDS');
      expect(error.details).toEqual({ owner_id: alice, bucket: 'AVAILABLE', currency: 'BRL', requested_minor: '1001' });

      expect(await counts(pool)).toEqual(before.counts);
      expect(await snapshot(pool)).toEqual(before.snapshot);
    });

    it('accepts a debit of exactly the balance, leaving zero', async () => {
      const alice = owner('alice');
      await book(pool, moneyModel.deposit({ ownerId: alice, currency: 'BRL', amountMinor: 1000n }));
      await book(pool, moneyModel.plcIssued({ issuerId: alice, currency: 'BRL', amountMinor: 1000n }));
      expect(await getBalances(pool, alice, 'BRL')).toEqual({ available: 0n, held: 0n, pending: 0n, promised: 1000n });
    });

    it('refuses a first-ever debit of an unknown owner and does not even create the account', async () => {
      const before = await counts(pool);
      await refusedWith(book(pool, moneyModel.plcIssued({ issuerId: owner('ghost'), currency: 'BRL', amountMinor: 1n })), 'INSUFFICIENT_FUNDS');
      expect(await counts(pool)).toEqual(before);
    });

    it('refuses a debit in a currency the owner has no funds in, whatever they hold in another', async () => {
      const alice = owner('alice');
      await book(pool, moneyModel.deposit({ ownerId: alice, currency: 'BRL', amountMinor: 1000n }));
      const error = await refusedWith(book(pool, moneyModel.plcIssued({ issuerId: alice, currency: 'USD', amountMinor: 1n })), 'INSUFFICIENT_FUNDS');
      expect(error.details).toMatchObject({ currency: 'USD', bucket: 'AVAILABLE' });
    });

    it('refuses a redeem above what the issuer PROMISED, naming the PROMISED bucket, and credits no bearer', async () => {
      const alice = owner('alice');
      const bob = owner('bob');
      await book(pool, moneyModel.deposit({ ownerId: alice, currency: 'BRL', amountMinor: 1000n }));
      await book(pool, moneyModel.plcIssued({ issuerId: alice, currency: 'BRL', amountMinor: 300n }));
      const before = await counts(pool);
      const error = await refusedWith(
        book(pool, moneyModel.redeemRequested({ issuerId: alice, bearerId: bob, currency: 'BRL', amountMinor: 301n })),
        'INSUFFICIENT_FUNDS',
      );
      expect(error.details).toMatchObject({ owner_id: alice, bucket: 'PROMISED' });
      expect(await counts(pool)).toEqual(before);
      expect(await getBalances(pool, bob, 'BRL')).toEqual({ available: 0n, held: 0n, pending: 0n, promised: 0n });
    });

    it('rolls back the legs already applied when a later leg of the same posting is refused (charge settled without PENDING)', async () => {
      const alice = owner('alice');
      await book(pool, moneyModel.chargeCreated({ ownerId: alice, currency: 'EUR', amountMinor: 100n }));
      const before = { counts: await counts(pool), snapshot: await snapshot(pool) };
      // Four legs: the world's two (system, never refused) and alice's PENDING debit, refused.
      await refusedWith(book(pool, moneyModel.chargeSettled({ ownerId: alice, currency: 'EUR', amountMinor: 101n })), 'INSUFFICIENT_FUNDS');
      expect(await counts(pool)).toEqual(before.counts);
      expect(await snapshot(pool)).toEqual(before.snapshot);
    });

    it('does not consume the idempotency key of a refused posting: the same key books once funds arrive', async () => {
      const alice = owner('alice');
      const key = `test:${randomUUID()}`;
      const issue = moneyModel.plcIssued({ issuerId: alice, currency: 'BRL', amountMinor: 500n });
      await refusedWith(book(pool, issue, { key }), 'INSUFFICIENT_FUNDS');
      await book(pool, moneyModel.deposit({ ownerId: alice, currency: 'BRL', amountMinor: 500n }));
      expect((await book(pool, issue, { key })).created).toBe(true);
      expect(await getBalances(pool, alice, 'BRL')).toMatchObject({ available: 0n, promised: 500n });
    });
  });

  describe('frozen accounts', () => {
    async function frozenOwnerWith(availableMinor: bigint, promisedMinor: bigint): Promise<string> {
      const id = owner('frozen');
      await book(pool, moneyModel.deposit({ ownerId: id, currency: 'BRL', amountMinor: availableMinor + promisedMinor }));
      if (promisedMinor > 0n) await book(pool, moneyModel.plcIssued({ issuerId: id, currency: 'BRL', amountMinor: promisedMinor }));
      const updated = await pool.query(`UPDATE ledger_accounts SET status = 'FROZEN' WHERE owner_id = $1`, [id]);
      expect(updated.rowCount).toBe(1);
      return id;
    }

    it('refuses any debit of a frozen account AVAILABLE with ACCOUNT_FROZEN, even when the posting credits it elsewhere, and writes nothing', async () => {
      const frozen = await frozenOwnerWith(1000n, 400n);
      const before = { counts: await counts(pool), snapshot: await snapshot(pool) };
      const issue = await refusedWith(book(pool, moneyModel.plcIssued({ issuerId: frozen, currency: 'BRL', amountMinor: 100n })), 'ACCOUNT_FROZEN');
      expect(issue.details).toEqual({ owner_id: frozen });
      // Net zero for the frozen owner (world credits its HELD), yet AVAILABLE money would leave.
      const disguised = {
        txType: 'RECONCILIATION' as const,
        entries: [
          { ownerId: frozen, bucket: 'AVAILABLE' as const, currency: 'BRL' as const, amountMinor: -100n },
          { ownerId: owner('bob'), bucket: 'AVAILABLE' as const, currency: 'BRL' as const, amountMinor: 100n },
          { ownerId: W, bucket: 'AVAILABLE' as const, currency: 'BRL' as const, amountMinor: -100n },
          { ownerId: frozen, bucket: 'HELD' as const, currency: 'BRL' as const, amountMinor: 100n },
        ],
      };
      await refusedWith(book(pool, disguised), 'ACCOUNT_FROZEN');
      expect(await counts(pool)).toEqual(before.counts);
      expect(await snapshot(pool)).toEqual(before.snapshot);
    });

    it('lets promises made before the freeze resolve: redeem requested and redeem failed move PROMISED and PENDING', async () => {
      const issuer = owner('issuer');
      const bearer = owner('bearer');
      await book(pool, moneyModel.deposit({ ownerId: issuer, currency: 'BRL', amountMinor: 300n }));
      await book(pool, moneyModel.plcIssued({ issuerId: issuer, currency: 'BRL', amountMinor: 300n }));
      await pool.query(`UPDATE ledger_accounts SET status = 'FROZEN' WHERE owner_id = ANY($1)`, [[issuer, bearer]]);
      await book(pool, moneyModel.redeemRequested({ issuerId: issuer, bearerId: bearer, currency: 'BRL', amountMinor: 300n }));
      const compensation = moneyModel.redeemFailed({ issuerId: issuer, bearerId: bearer, currency: 'BRL', amountMinor: 300n });
      expect((await book(pool, compensation)).created).toBe(true);
      expect(await getBalances(pool, bearer, 'BRL')).toMatchObject({ pending: 0n });
      expect(await getBalances(pool, issuer, 'BRL')).toMatchObject({ promised: 300n });
    });

    it('accepts credits to a frozen account: a deposit and a redeem where it is the bearer', async () => {
      const frozen = await frozenOwnerWith(100n, 0n);
      const issuer = owner('issuer');
      await book(pool, moneyModel.deposit({ ownerId: issuer, currency: 'BRL', amountMinor: 50n }));
      await book(pool, moneyModel.plcIssued({ issuerId: issuer, currency: 'BRL', amountMinor: 50n }));

      expect((await book(pool, moneyModel.deposit({ ownerId: frozen, currency: 'BRL', amountMinor: 25n }))).created).toBe(true);
      expect((await book(pool, moneyModel.redeemRequested({ issuerId: issuer, bearerId: frozen, currency: 'BRL', amountMinor: 50n }))).created).toBe(true);
      expect(await getBalances(pool, frozen, 'BRL')).toEqual({ available: 125n, held: 0n, pending: 50n, promised: 0n });
    });

    it('accepts internal moves of a frozen account with allowFrozen (PLC expiry, risk hold), still checking funds', async () => {
      const frozen = await frozenOwnerWith(1000n, 400n);
      await book(pool, moneyModel.plcExpired({ issuerId: frozen, currency: 'BRL', amountMinor: 400n }), { allowFrozen: true });
      await book(pool, moneyModel.riskHold({ ownerId: frozen, currency: 'BRL', amountMinor: 1400n }), { allowFrozen: true });
      expect(await getBalances(pool, frozen, 'BRL')).toEqual({ available: 0n, held: 1400n, pending: 0n, promised: 0n });
      await refusedWith(
        book(pool, moneyModel.riskHold({ ownerId: frozen, currency: 'BRL', amountMinor: 1n }), { allowFrozen: true }),
        'INSUFFICIENT_FUNDS',
      );
    });

    it('spends again once the account is active again', async () => {
      const frozen = await frozenOwnerWith(1000n, 400n);
      const spend = moneyModel.plcIssued({ issuerId: frozen, currency: 'BRL', amountMinor: 400n });
      await refusedWith(book(pool, spend), 'ACCOUNT_FROZEN');
      await pool.query(`UPDATE ledger_accounts SET status = 'ACTIVE' WHERE owner_id = $1`, [frozen]);
      expect((await book(pool, spend)).created).toBe(true);
    });
  });

  describe('idempotency', () => {
    it('replays the same key with the same content: created=false, the same transaction id, nothing booked twice', async () => {
      const alice = owner('alice');
      const key = `test:${randomUUID()}`;
      const posting = moneyModel.deposit({ ownerId: alice, currency: 'BRL', amountMinor: 700n });
      const first = await book(pool, posting, { key, referenceId: 'ref-1' });
      expect(first.created).toBe(true);
      const before = { counts: await counts(pool), snapshot: await snapshot(pool) };

      const replay = await book(pool, posting, { key, referenceId: 'ref-1' });
      expect(replay).toEqual({ transactionId: first.transactionId, created: false });
      // The same legs in another order are the same content.
      const reordered = await book(pool, { ...posting, entries: [...posting.entries].reverse() }, { key, referenceId: 'ref-1' });
      expect(reordered).toEqual({ transactionId: first.transactionId, created: false });

      expect(await counts(pool)).toEqual(before.counts);
      expect(await snapshot(pool)).toEqual(before.snapshot);
      expect(await getBalances(pool, alice, 'BRL')).toMatchObject({ available: 700n });
    });

    it('books once when the same posting is sent 8 times concurrently with one key', async () => {
      const alice = owner('alice');
      const key = `test:${randomUUID()}`;
      const posting = moneyModel.deposit({ ownerId: alice, currency: 'BRL', amountMinor: 100n });
      const results = await Promise.all(Array.from({ length: 8 }, () => book(pool, posting, { key })));
      expect(results.filter((result) => result.created)).toHaveLength(1);
      expect(new Set(results.map((result) => result.transactionId)).size).toBe(1);
      expect(await getBalances(pool, alice, 'BRL')).toMatchObject({ available: 100n });
    });

    it.each([
      { what: 'another amount', other: (o: string) => moneyModel.deposit({ ownerId: o, currency: 'BRL', amountMinor: 701n }) },
      { what: 'another currency', other: (o: string) => moneyModel.deposit({ ownerId: o, currency: 'USD', amountMinor: 700n }) },
      { what: 'another owner', other: (o: string) => moneyModel.deposit({ ownerId: `${o}x`, currency: 'BRL', amountMinor: 700n }) },
      {
        what: 'another transaction type with the same legs',
        other: (o: string) => ({ ...moneyModel.deposit({ ownerId: o, currency: 'BRL', amountMinor: 700n }), txType: 'RECONCILIATION' as const }),
      },
      {
        what: 'another bucket',
        other: (o: string) => ({
          txType: 'DEPOSIT' as const,
          entries: moneyModel.deposit({ ownerId: o, currency: 'BRL', amountMinor: 700n }).entries.map((entry) => ({ ...entry, bucket: 'PENDING' as const })),
        }),
      },
    ])('refuses the same key with $what: IDEMPOTENCY_KEY_REUSED, nothing written', async ({ other }) => {
      const alice = owner('alice');
      const key = `test:${randomUUID()}`;
      await book(pool, moneyModel.deposit({ ownerId: alice, currency: 'BRL', amountMinor: 700n }), { key, referenceId: 'ref-1' });
      const before = { counts: await counts(pool), snapshot: await snapshot(pool) };
      await refusedWith(book(pool, other(alice), { key, referenceId: 'ref-1' }), 'IDEMPOTENCY_KEY_REUSED');
      expect(await counts(pool)).toEqual(before.counts);
      expect(await snapshot(pool)).toEqual(before.snapshot);
    });

    it('refuses the same key with another reference id: IDEMPOTENCY_KEY_REUSED', async () => {
      const alice = owner('alice');
      const key = `test:${randomUUID()}`;
      const posting = moneyModel.deposit({ ownerId: alice, currency: 'BRL', amountMinor: 700n });
      await book(pool, posting, { key, referenceId: 'ref-1' });
      await refusedWith(book(pool, posting, { key, referenceId: 'ref-2' }), 'IDEMPOTENCY_KEY_REUSED');
    });

    it('refuses PLC cancelled replayed under the key of PLC expired (identical legs, other meaning)', async () => {
      const alice = owner('alice');
      await book(pool, moneyModel.deposit({ ownerId: alice, currency: 'BRL', amountMinor: 100n }));
      await book(pool, moneyModel.plcIssued({ issuerId: alice, currency: 'BRL', amountMinor: 100n }));
      const key = `test:${randomUUID()}`;
      await book(pool, moneyModel.plcExpired({ issuerId: alice, currency: 'BRL', amountMinor: 100n }), { key });
      await refusedWith(book(pool, moneyModel.plcCancelled({ issuerId: alice, currency: 'BRL', amountMinor: 100n }), { key }), 'IDEMPOTENCY_KEY_REUSED');
      expect(await getBalances(pool, alice, 'BRL')).toMatchObject({ available: 100n, promised: 0n });
    });
  });

  describe('invalid postings', () => {
    const entry = (ownerId: string, amountMinor: bigint, currency: 'BRL' | 'USD' = 'BRL'): Entry => ({
      ownerId,
      bucket: 'AVAILABLE',
      currency,
      amountMinor,
    });

    it.each([
      { why: 'a single entry', code: 'LEDGER_INVALID_POSTING', entries: () => [entry(W, -1n)] },
      { why: 'no entries', code: 'LEDGER_INVALID_POSTING', entries: () => [] },
      { why: 'more than 16 entries', code: 'LEDGER_INVALID_POSTING', entries: () => Array.from({ length: 17 }, (_, i) => entry(i === 0 ? W : owner('many'), i === 0 ? -16n : 1n)) },
      { why: 'an unknown system account', code: 'LEDGER_INVALID_POSTING', entries: () => [entry('system:bank', -1n), entry(owner('alice'), 1n)] },
      { why: 'an entry of zero', code: 'LEDGER_INVALID_POSTING', entries: () => [entry(W, -1n), entry(owner('alice'), 1n), entry(owner('bob'), 0n)] },
      { why: 'legs that do not sum to zero', code: 'LEDGER_UNBALANCED', entries: () => [entry(W, -100n), entry(owner('alice'), 99n)] },
      { why: 'legs that sum to zero only across currencies', code: 'LEDGER_UNBALANCED', entries: () => [entry(W, -100n, 'BRL'), entry(owner('alice'), 100n, 'USD')] },
    ] as const)('refuses $why with $code and writes nothing', async ({ entries, code }) => {
      const before = { counts: await counts(pool), snapshot: await snapshot(pool) };
      await refusedWith(postTransaction(pool, { idempotencyKey: `test:${randomUUID()}`, txType: 'RECONCILIATION', entries: entries() }), code);
      expect(await counts(pool)).toEqual(before.counts);
      expect(await snapshot(pool)).toEqual(before.snapshot);
    });

    it('inside a caller transaction, an unbalanced posting is refused (LEDGER_UNBALANCED) and the whole transaction rolls back', async () => {
      const alice = owner('alice');
      const before = { counts: await counts(pool), snapshot: await snapshot(pool) };
      await refusedWith(
        withTransaction(pool, async (client) => {
          await book(client, moneyModel.deposit({ ownerId: alice, currency: 'BRL', amountMinor: 10n }));
          await postTransaction(client, { idempotencyKey: `test:${randomUUID()}`, txType: 'RECONCILIATION', entries: [entry(W, -100n), entry(alice, 99n)] });
        }),
        'LEDGER_UNBALANCED',
      );
      expect(await counts(pool)).toEqual(before.counts);
      expect(await snapshot(pool)).toEqual(before.snapshot);
    });
  });
});

// ---------------------------------------------------------------------------------------------
// The database's own refusals, bypassing ledger_post with raw SQL.

describe('ledger refusals by the database itself (raw SQL, bypassing ledger_post)', () => {
  let db: TestDatabase;
  let alice: string;
  let aliceAccountId: string;
  let worldAccountId: string;
  let depositId: string;
  beforeAll(async () => {
    db = await createTestDatabase({ poolMax: 3 });
    alice = 'alice';
    depositId = (await book(db.pool, moneyModel.deposit({ ownerId: alice, currency: 'BRL', amountMinor: 1000n }))).transactionId;
    // Alice's credit folded into her AVAILABLE row (the CHECK tests need the row); bob's stays an
    // unfolded credit (the append-only tests need one).
    await db.pool.query(`SELECT ledger_lock_snapshots(array_agg(id), false) FROM ledger_accounts`);
    await book(db.pool, moneyModel.deposit({ ownerId: 'bob', currency: 'BRL', amountMinor: 10n }));
    const accounts = await db.pool.query<{ owner_id: string; id: string }>(`SELECT owner_id, id FROM ledger_accounts`);
    const idOf = (ownerId: string) => accounts.rows.find((row) => row.owner_id === ownerId)?.id ?? '';
    aliceAccountId = idOf(alice);
    worldAccountId = idOf(W);
  });
  afterAll(async () => {
    await db?.drop();
  });

  /** Runs statements in one transaction and returns the error of the first statement or COMMIT that fails. */
  async function inTransaction(statements: ((client: Queryable) => Promise<unknown>)[]): Promise<{ failedAt: number | 'COMMIT' | null; error: DatabaseError | null }> {
    const client = await db.pool.connect();
    let index = 0;
    try {
      await client.query('BEGIN');
      for (const statement of statements) {
        await statement(client);
        index += 1;
      }
      await client.query('COMMIT');
      return { failedAt: null, error: null };
    } catch (error) {
      await client.query('ROLLBACK').catch(() => {});
      return { failedAt: index === statements.length ? 'COMMIT' : index, error: error as DatabaseError };
    } finally {
      client.release();
    }
  }

  const insertTransaction = (client: Queryable, id: string) =>
    client.query(`INSERT INTO ledger_transactions (id, idempotency_key, request_hash, tx_type) VALUES ($1, $2, 'raw', 'RECONCILIATION')`, [id, `raw:${id}`]);
  const insertMovement = (client: Queryable, transactionId: string, amountMinor: bigint) =>
    client.query(
      `INSERT INTO ledger_movements (transaction_id, currency, amount_minor, debit_account, debit_bucket, credit_account, credit_bucket)
       VALUES ($1, 'BRL', $2, $3, 'AVAILABLE', $4, 'AVAILABLE')`,
      [transactionId, amountMinor.toString(), aliceAccountId, worldAccountId],
    );

  it('refuses an entry written directly: entries are a view of the movements (55000)', async () => {
    const before = await counts(db.pool);
    const id = randomUUID();
    const outcome = await inTransaction([
      (client) => insertTransaction(client, id),
      (client) =>
        client.query(`INSERT INTO ledger_entries (transaction_id, account_id, bucket, currency, amount_minor) VALUES ($1, $2, 'AVAILABLE', 'BRL', 100)`, [
          id,
          aliceAccountId,
        ]),
    ]);
    expect(outcome.failedAt).toBe(1);
    expect(outcome.error?.code).toBe('55000');
    expect(await counts(db.pool)).toEqual(before);
  });

  it('balances whatever is written around the function: movements written directly leave every transaction balanced', async () => {
    // Seen inside the writing transaction, then rolled back: the snapshots did not follow, and
    // ledger verify says so, but no transaction is unbalanced, with one movement or three.
    const id = randomUUID();
    const client = await db.pool.connect();
    try {
      await client.query('BEGIN');
      await insertTransaction(client, id);
      await insertMovement(client, id, 100n);
      await insertMovement(client, depositId, 7n);
      await insertMovement(client, depositId, 3n);
      const sums = await client.query<{ transaction_id: string; total: string }>(
        `SELECT transaction_id, sum(amount_minor)::text AS total FROM ledger_entries WHERE transaction_id = ANY ($1::uuid[]) GROUP BY 1`,
        [[id, depositId]],
      );
      expect(sums.rows.map((row) => row.total)).toEqual(['0', '0']);
      const kinds = new Set((await findViolations(client, 1000)).map((violation) => violation.kind));
      expect(kinds.has('unbalanced_transaction')).toBe(false);
      expect(kinds.has('snapshot_mismatch')).toBe(true);
    } finally {
      await client.query('ROLLBACK');
      client.release();
    }
    expect(await findViolations(db.pool)).toEqual([]);
  });

  it.each([
    { why: 'of zero', amount: 0n },
    { why: 'below zero', amount: -5n },
  ])('refuses an unfolded credit $why by its type (23514)', async ({ amount }) => {
    const outcome = await inTransaction([
      (client) =>
        client.query(`INSERT INTO ledger_balance_credits (account_id, bucket, currency, amount_minor) VALUES ($1, 'AVAILABLE', 'BRL', $2)`, [
          aliceAccountId,
          amount.toString(),
        ]),
    ]);
    expect(outcome.failedAt).toBe(0);
    expect(outcome.error?.code).toBe('23514');
    expect(await getBalances(db.pool, alice, 'BRL')).toMatchObject({ available: 1000n });
  });

  it('refuses a user snapshot set negative with the CHECK ledger_balances_user_non_negative (23514)', async () => {
    const outcome = await inTransaction([
      (client) => client.query(`UPDATE ledger_balances SET amount_minor = -1 WHERE account_id = $1 AND bucket = 'AVAILABLE'`, [aliceAccountId]),
    ]);
    expect(outcome.failedAt).toBe(0);
    expect(outcome.error?.code).toBe('23514');
    expect(outcome.error?.constraint).toBe('ledger_balances_user_non_negative');
    expect(await getBalances(db.pool, alice, 'BRL')).toMatchObject({ available: 1000n });
  });

  it('refuses a new user snapshot row inserted negative (23514), but lets a system snapshot be negative', async () => {
    const outcome = await inTransaction([
      (client) =>
        client.query(`INSERT INTO ledger_balances (account_id, bucket, currency, account_kind, amount_minor) VALUES ($1, 'HELD', 'EUR', 'user', -5)`, [aliceAccountId]),
    ]);
    expect(outcome.error?.code).toBe('23514');

    // The same statement on a system account passes (rolled back: only the CHECK is under test).
    const client = await db.pool.connect();
    try {
      await client.query('BEGIN');
      await expect(
        client.query(`INSERT INTO ledger_balances (account_id, bucket, currency, account_kind, amount_minor) VALUES ($1, 'HELD', 'EUR', 'system', -5)`, [worldAccountId]),
      ).resolves.toMatchObject({ rowCount: 1 });
    } finally {
      await client.query('ROLLBACK');
      client.release();
    }
  });

  it.each([
    { what: 'UPDATE of a movement amount', sql: `UPDATE ledger_movements SET amount_minor = amount_minor * 2 WHERE transaction_id = $1` },
    { what: 'UPDATE of a movement bucket', sql: `UPDATE ledger_movements SET credit_bucket = 'HELD' WHERE transaction_id = $1` },
    { what: 'DELETE of movements', sql: `DELETE FROM ledger_movements WHERE transaction_id = $1` },
    { what: 'UPDATE of a transaction', sql: `UPDATE ledger_transactions SET tx_type = 'RECONCILIATION' WHERE id = $1` },
    { what: 'DELETE of a transaction', sql: `DELETE FROM ledger_transactions WHERE id = $1` },
    { what: 'TRUNCATE of movements', sql: `TRUNCATE ledger_movements` },
    { what: 'TRUNCATE of transactions', sql: `TRUNCATE ledger_transactions CASCADE` },
    { what: 'UPDATE of an unfolded credit', sql: `UPDATE ledger_balance_credits SET amount_minor = amount_minor + 1` },
    { what: 'TRUNCATE of the unfolded credits', sql: `TRUNCATE ledger_balance_credits` },
  ])('refuses $what with PL006 LEDGER_APPEND_ONLY', async ({ sql }) => {
    const before = await counts(db.pool);
    const outcome = await inTransaction([(client) => client.query(sql, sql.includes('$1') ? [depositId] : [])]);
    expect(outcome.failedAt).toBe(0);
    expect(outcome.error?.code).toBe('PL006');
    expect(outcome.error?.message).toBe('LEDGER_APPEND_ONLY');
    expect(await counts(db.pool)).toEqual(before);
    expect(await findViolations(db.pool)).toEqual([]);
  });
});
