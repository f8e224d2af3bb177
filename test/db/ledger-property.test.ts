/**
 * Property test of the ledger against a real PostgreSQL database (fast-check).
 *
 * Each run draws a random sequence of money-model moves over a handful of owners and two
 * currencies, with amounts that often exceed the balance (so refusals happen), plus idempotent
 * replays of earlier postings. The first part runs one posting at a time and must agree, posting by
 * posting, with an in-memory model (accepted or INSUFFICIENT_FUNDS, and the resulting balances);
 * the second part fires its postings all at once from several pool connections, and the final
 * balances must equal the balances before it plus exactly the legs of the postings that were
 * accepted. After every run the invariant checker must find nothing: `findViolations` empty, no
 * user bucket negative, money conserved per currency, every transaction balanced with at least one
 * movement, every snapshot (row plus unfolded credits) equal to the sum of its entries.
 *
 * The checker itself is shown to fail on a deliberately corrupted ledger (the CHECK dropped in a
 * throwaway database, money written with no movement behind it), so a green run means the
 * invariants hold, not that the checker is blind. An unbalanced transaction cannot be written at
 * all (every movement balances by itself); the posting function's refusal of unbalanced legs is
 * tested in ledger-moves.test.ts.
 */
import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findViolations, postTransaction, type PostingResult } from '../../db/ledger.ts';
import type { Pool, Queryable } from '../../db/pool.ts';
import { DomainError } from '../../src/errors.ts';
import { moneyModel, type Entry, type Posting } from '../../src/ledger/money-model.ts';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';

// ---------------------------------------------------------------------------------------------
// The invariant checker: independent SQL over the raw tables, plus the ledger's own verifier.

interface Problem {
  kind:
    | 'violation_reported'
    | 'negative_user_bucket'
    | 'money_not_conserved'
    | 'unbalanced_transaction'
    | 'transaction_without_entries'
    | 'snapshot_mismatch';
  subject: string;
}

// A bucket's snapshot is its row plus its unfolded credits; the entries are the movements' sides.
const snapshotsSql = `SELECT account_id, bucket, currency, sum(amount_minor) AS amount_minor
                        FROM (SELECT account_id, bucket, currency, amount_minor FROM ledger_balances
                              UNION ALL
                              SELECT account_id, bucket, currency, amount_minor FROM ledger_balance_credits) s
                       GROUP BY account_id, bucket, currency`;
const legsSql = `SELECT transaction_id, debit_account AS account_id, debit_bucket AS bucket, currency, -amount_minor AS amount_minor FROM ledger_movements
                 UNION ALL
                 SELECT transaction_id, credit_account, credit_bucket, currency, amount_minor FROM ledger_movements`;

async function checkInvariants(db: Queryable): Promise<Problem[]> {
  const problems: Problem[] = [];
  for (const violation of await findViolations(db, 1000)) {
    problems.push({ kind: 'violation_reported', subject: `${violation.kind} ${violation.subject} ${violation.detail ?? ''}` });
  }
  const rows = async (sql: string) => (await db.query<{ subject: string }>(sql)).rows.map((row) => row.subject);
  for (const subject of await rows(`
      SELECT a.owner_id || '/' || b.bucket || '/' || b.currency || '=' || b.amount_minor AS subject
        FROM (${snapshotsSql}) b JOIN ledger_accounts a ON a.id = b.account_id
       WHERE a.kind = 'user' AND b.amount_minor < 0
      UNION ALL
      SELECT a.owner_id || '/' || b.bucket || '/' || b.currency || ' row=' || b.amount_minor
        FROM ledger_balances b JOIN ledger_accounts a ON a.id = b.account_id
       WHERE a.kind = 'user' AND b.amount_minor < 0`)) {
    problems.push({ kind: 'negative_user_bucket', subject });
  }
  // Every posting moves value between buckets and accounts: per currency, all snapshots together
  // and all entries together sum to zero.
  for (const subject of await rows(`
      SELECT 'snapshots ' || currency || '=' || sum(amount_minor) AS subject FROM (${snapshotsSql}) s
       GROUP BY currency HAVING sum(amount_minor) <> 0
      UNION ALL
      SELECT 'entries ' || currency || '=' || sum(amount_minor) FROM (${legsSql}) l
       GROUP BY currency HAVING sum(amount_minor) <> 0`)) {
    problems.push({ kind: 'money_not_conserved', subject });
  }
  for (const subject of await rows(`
      SELECT transaction_id || '/' || currency || '=' || sum(amount_minor) AS subject FROM (${legsSql}) l
       GROUP BY transaction_id, currency HAVING sum(amount_minor) <> 0`)) {
    problems.push({ kind: 'unbalanced_transaction', subject });
  }
  for (const subject of await rows(`
      SELECT t.id::text AS subject FROM ledger_transactions t
       WHERE NOT EXISTS (SELECT FROM ledger_movements m WHERE m.transaction_id = t.id)`)) {
    problems.push({ kind: 'transaction_without_entries', subject });
  }
  for (const subject of await rows(`
      SELECT coalesce(b.account_id, e.account_id) || '/' || coalesce(b.bucket, e.bucket) || '/' || coalesce(b.currency, e.currency)
             || ' snapshot=' || coalesce(b.amount_minor, 0) || ' entries=' || coalesce(e.total, 0) AS subject
        FROM (${snapshotsSql}) b
        FULL JOIN (SELECT account_id, bucket, currency, sum(amount_minor) AS total FROM (${legsSql}) l
                    GROUP BY account_id, bucket, currency) e
          ON e.account_id = b.account_id AND e.bucket = b.bucket AND e.currency = b.currency
       WHERE coalesce(b.amount_minor, 0) <> coalesce(e.total, 0)`)) {
    problems.push({ kind: 'snapshot_mismatch', subject });
  }
  return problems;
}

/** Every snapshot (row plus unfolded credits) as "owner/bucket/currency" -> amount, zeros left out. */
async function snapshot(db: Queryable): Promise<Map<string, bigint>> {
  const result = await db.query<{ key: string; amount_minor: bigint }>(
    `SELECT a.owner_id || '/' || b.bucket || '/' || b.currency AS key, b.amount_minor::bigint AS amount_minor
       FROM (${snapshotsSql}) b JOIN ledger_accounts a ON a.id = b.account_id WHERE b.amount_minor <> 0`,
  );
  return new Map(result.rows.map((row) => [row.key, row.amount_minor]));
}

// ---------------------------------------------------------------------------------------------
// The model: balances in memory, and which postings the ledger must refuse.

type Balances = Map<string, bigint>;
const keyOf = (entry: Entry): string => `${entry.ownerId}/${entry.bucket}/${entry.currency}`;

/** The user buckets this posting would take below zero (empty: the ledger must accept it). */
function shortfalls(balances: Balances, entries: readonly Entry[]): string[] {
  const deltas = new Map<string, bigint>();
  for (const entry of entries) deltas.set(keyOf(entry), (deltas.get(keyOf(entry)) ?? 0n) + entry.amountMinor);
  return [...deltas]
    .filter(([key, delta]) => !key.startsWith('system:') && (balances.get(key) ?? 0n) + delta < 0n)
    .map(([key]) => key);
}

function apply(balances: Balances, entries: readonly Entry[]): void {
  for (const entry of entries) {
    const next = (balances.get(keyOf(entry)) ?? 0n) + entry.amountMinor;
    if (next === 0n) balances.delete(keyOf(entry));
    else balances.set(keyOf(entry), next);
  }
}

// ---------------------------------------------------------------------------------------------
// Commands.

const owners = ['pa', 'pb', 'pc', 'pd', 'pe'] as const;
const moveKinds = [
  'deposit',
  'chargeCreated',
  'chargeSettled',
  'chargeFailed',
  'plcIssued',
  'plcCancelled',
  'plcExpired',
  'redeemRequested',
  'redeemSettled',
  'redeemFailed',
  'riskHold',
  'riskRelease',
] as const;

type Command =
  | { kind: (typeof moveKinds)[number]; a: number; b: number; currency: 'BRL' | 'USD'; amountMinor: bigint; feePercent: number }
  | { kind: 'replay'; pick: number };

const moveArb: fc.Arbitrary<Command> = fc.record({
  kind: fc.constantFrom(...moveKinds),
  a: fc.nat({ max: owners.length - 1 }),
  b: fc.nat({ max: owners.length - 1 }),
  currency: fc.constantFrom('BRL' as const, 'USD' as const),
  // Mostly small amounts, sometimes large ones: both accepted and refused postings.
  amountMinor: fc.oneof({ weight: 4, arbitrary: fc.bigInt({ min: 1n, max: 2_000n }) }, { weight: 1, arbitrary: fc.bigInt({ min: 1n, max: 1_000_000n }) }),
  feePercent: fc.nat({ max: 100 }),
});
const depositArb: fc.Arbitrary<Command> = fc.record({
  kind: fc.constant('deposit' as const),
  a: fc.nat({ max: owners.length - 1 }),
  b: fc.constant(0),
  currency: fc.constantFrom('BRL' as const, 'USD' as const),
  amountMinor: fc.bigInt({ min: 1n, max: 10_000n }),
  feePercent: fc.constant(0),
});
const commandArb: fc.Arbitrary<Command> = fc.oneof(
  { weight: 6, arbitrary: moveArb },
  { weight: 2, arbitrary: depositArb },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('replay' as const), pick: fc.nat() }) },
);

function postingOf(command: Exclude<Command, { kind: 'replay' }>): Posting {
  const a = owners[command.a] ?? 'pa';
  const b = owners[command.b] ?? 'pa';
  const { currency, amountMinor } = command;
  switch (command.kind) {
    case 'deposit':
      return moneyModel.deposit({ ownerId: a, currency, amountMinor });
    case 'chargeCreated':
      return moneyModel.chargeCreated({ ownerId: a, currency, amountMinor });
    case 'chargeSettled':
      return moneyModel.chargeSettled({ ownerId: a, currency, amountMinor });
    case 'chargeFailed':
      return moneyModel.chargeFailed({ ownerId: a, currency, amountMinor });
    case 'plcIssued':
      return moneyModel.plcIssued({ issuerId: a, currency, amountMinor });
    case 'plcCancelled':
      return moneyModel.plcCancelled({ issuerId: a, currency, amountMinor });
    case 'plcExpired':
      return moneyModel.plcExpired({ issuerId: a, currency, amountMinor });
    case 'redeemRequested':
      return moneyModel.redeemRequested({ issuerId: a, bearerId: b, currency, amountMinor });
    case 'redeemSettled':
      return moneyModel.redeemSettled({ bearerId: a, currency, amountMinor, feeMinor: (amountMinor * BigInt(command.feePercent)) / 100n });
    case 'redeemFailed':
      return moneyModel.redeemFailed({ issuerId: a, bearerId: b, currency, amountMinor });
    case 'riskHold':
      return moneyModel.riskHold({ ownerId: a, currency, amountMinor });
    case 'riskRelease':
      return moneyModel.riskRelease({ ownerId: a, currency, amountMinor });
  }
}

interface Booked {
  key: string;
  posting: Posting;
  result: PostingResult;
}

type Outcome = { accepted: Booked } | { replayed: Booked } | { refused: DomainError; posting: Posting };

/** Books one command; INSUFFICIENT_FUNDS is an outcome, any other error fails the run. */
async function execute(db: Queryable, command: Command, history: readonly Booked[]): Promise<Outcome | null> {
  if (command.kind === 'replay') {
    const original = history[command.pick % Math.max(history.length, 1)];
    if (original === undefined) return null;
    const result = await postTransaction(db, { idempotencyKey: original.key, txType: original.posting.txType, entries: original.posting.entries });
    return { replayed: { ...original, result } };
  }
  const posting = postingOf(command);
  const key = `prop:${randomUUID()}`;
  try {
    const result = await postTransaction(db, { idempotencyKey: key, txType: posting.txType, entries: posting.entries });
    return { accepted: { key, posting, result } };
  } catch (error) {
    if (error instanceof DomainError && error.code === 'INSUFFICIENT_FUNDS') return { refused: error, posting };
    throw error;
  }
}

// ---------------------------------------------------------------------------------------------

describe('ledger property: random sequential and concurrent postings keep every invariant', () => {
  let db: TestDatabase;
  let pool: Pool;
  beforeAll(async () => {
    db = await createTestDatabase({ poolMax: 6 });
    pool = db.pool;
  });
  afterAll(async () => {
    await db?.drop();
  });

  it('agrees with the model posting by posting, books exactly the accepted legs under concurrency, and never breaks an invariant', async () => {
    let accepted = 0;
    let refused = 0;
    let replayed = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.array(commandArb, { minLength: 1, maxLength: 40 }),
        fc.array(commandArb, { minLength: 2, maxLength: 40 }),
        async (sequential, concurrent) => {
          const history: Booked[] = [];

          // Sequential: every outcome is exactly what the model predicts.
          const model = await snapshot(pool);
          for (const command of sequential) {
            const predictedShort = command.kind === 'replay' ? [] : shortfalls(model, postingOf(command).entries);
            const outcome = await execute(pool, command, history);
            if (outcome === null) continue;
            if ('accepted' in outcome) {
              expect(predictedShort, 'the model says this posting overdraws').toEqual([]);
              expect(outcome.accepted.result.created).toBe(true);
              apply(model, outcome.accepted.posting.entries);
              history.push(outcome.accepted);
              accepted += 1;
            } else if ('replayed' in outcome) {
              const original = history[command.kind === 'replay' ? command.pick % history.length : 0];
              expect(outcome.replayed.result).toEqual({ transactionId: original?.result.transactionId, created: false });
              replayed += 1;
            } else {
              expect(predictedShort.length, 'the ledger refused a posting the model accepts').toBeGreaterThan(0);
              const details = outcome.refused.details as { owner_id: string; bucket: string; currency: string };
              expect(predictedShort).toContain(`${details.owner_id}/${details.bucket}/${details.currency}`);
              refused += 1;
            }
          }
          expect(await snapshot(pool)).toEqual(model);

          // Concurrent: all at once from the pool; whatever interleaving happened, the balances are
          // the starting balances plus exactly the legs of the accepted postings.
          const before = await snapshot(pool);
          const outcomes = await Promise.all(concurrent.map((command) => execute(pool, command, history)));
          const expected = new Map(before);
          for (const outcome of outcomes) {
            if (outcome === null) continue;
            if ('accepted' in outcome) {
              apply(expected, outcome.accepted.posting.entries);
              accepted += 1;
            } else if ('replayed' in outcome) {
              expect(outcome.replayed.result.created).toBe(false);
              replayed += 1;
            } else {
              refused += 1;
            }
          }
          expect(await snapshot(pool)).toEqual(expected);

          expect(await checkInvariants(pool)).toEqual([]);
        },
      ),
      { numRuns: 25 },
    );
    // The generators must really exercise both paths, or the property proves little.
    expect(accepted).toBeGreaterThan(100);
    expect(refused).toBeGreaterThan(20);
    expect(replayed).toBeGreaterThan(5);
  });
});

describe('ledger invariant checker', () => {
  it('reports nothing on a fresh ledger with a few valid postings', async () => {
    const db = await createTestDatabase({ poolMax: 2 });
    try {
      await postTransaction(db.pool, { idempotencyKey: 'ok-1', ...moneyModel.deposit({ ownerId: 'alice', currency: 'BRL', amountMinor: 100n }) });
      await postTransaction(db.pool, { idempotencyKey: 'ok-2', ...moneyModel.plcIssued({ issuerId: 'alice', currency: 'BRL', amountMinor: 40n }) });
      expect(await checkInvariants(db.pool)).toEqual([]);
    } finally {
      await db.drop();
    }
  });

  it('catches a deliberately corrupted ledger: money with no movement behind it, a transaction with none, and a negative user snapshot', async () => {
    const db = await createTestDatabase({ poolMax: 2 });
    try {
      await postTransaction(db.pool, { idempotencyKey: 'ok-1', ...moneyModel.deposit({ ownerId: 'alice', currency: 'BRL', amountMinor: 100n }) });
      await postTransaction(db.pool, { idempotencyKey: 'ok-2', ...moneyModel.deposit({ ownerId: 'bob', currency: 'BRL', amountMinor: 100n }) });
      // Both deposits folded into their rows (bob's row is corrupted below).
      await db.pool.query(`SELECT ledger_lock_snapshots(array_agg(id), false) FROM ledger_accounts`);
      expect(await checkInvariants(db.pool)).toEqual([]);

      // Corrupt a throwaway database: the non-negative CHECK dropped, which no session setting can
      // bypass, and rows written around the posting function.
      const client = await db.pool.connect();
      try {
        await client.query('ALTER TABLE ledger_balances DROP CONSTRAINT ledger_balances_user_non_negative');
        await client.query('BEGIN');
        // A transaction with no movement, and money from nowhere: alice +500 as a credit with no
        // movement behind it.
        await client.query(`INSERT INTO ledger_transactions (idempotency_key, request_hash, tx_type) VALUES ('corrupt-1', 'x', 'RECONCILIATION')`);
        await client.query(
          `INSERT INTO ledger_balance_credits (account_id, bucket, currency, amount_minor)
           SELECT id, 'AVAILABLE', 'BRL', 500 FROM ledger_accounts WHERE owner_id = 'alice'`,
        );
        // A user snapshot below zero.
        await client.query(
          `UPDATE ledger_balances SET amount_minor = -300
            WHERE bucket = 'AVAILABLE' AND currency = 'BRL' AND account_id = (SELECT id FROM ledger_accounts WHERE owner_id = 'bob')`,
        );
        await client.query('COMMIT');
      } finally {
        client.release();
      }

      const problems = await checkInvariants(db.pool);
      const kinds = new Set(problems.map((problem) => problem.kind));
      expect(kinds).toEqual(new Set(['violation_reported', 'negative_user_bucket', 'money_not_conserved', 'transaction_without_entries', 'snapshot_mismatch']));
      expect(problems).toContainEqual({ kind: 'negative_user_bucket', subject: 'bob/AVAILABLE/BRL=-300' });
      // The ledger's own verifier sees them too.
      const reported = (await findViolations(db.pool)).map((violation) => violation.kind);
      expect(reported).toContain('transaction_without_entries');
      expect(reported).toContain('negative_user_bucket');
      expect(reported).toContain('snapshot_mismatch');
    } finally {
      await db.drop();
    }
  });
});
