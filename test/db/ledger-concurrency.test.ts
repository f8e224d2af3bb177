/**
 * Concurrency of the posting function against a real PostgreSQL database, from a pool of 10
 * connections:
 *
 * - many parallel debits racing for one balance: exactly as many succeed as the balance covers,
 *   the rest are refused with INSUFFICIENT_FUNDS, nothing goes negative, no lost update;
 * - postings that lock the same rows in opposite directions (the classic deadlock shape), and
 *   postings over many accounts with their legs in random order: never a deadlock (40P01);
 * - a credit takes no lock: it completes while another transaction holds the bucket's row;
 * - a control showing that a real deadlock does surface as 40P01 through this harness, so the
 *   "never a deadlock" assertions are not vacuous.
 */
import { randomUUID } from 'node:crypto';
import type { DatabaseError } from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findViolations, getBalances, postTransaction, type PostingResult } from '../../db/ledger.ts';
import type { Pool } from '../../db/pool.ts';
import { DomainError } from '../../src/errors.ts';
import { moneyModel, type Entry, type Posting } from '../../src/ledger/money-model.ts';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';

let db: TestDatabase;
let pool: Pool;
beforeAll(async () => {
  db = await createTestDatabase({ poolMax: 10 });
  pool = db.pool;
});
afterAll(async () => {
  await db?.drop();
});

type Outcome = { ok: PostingResult } | { refused: DomainError } | { failed: unknown };

/** Books a posting and classifies the outcome without throwing, so Promise.all sees every result. */
async function attempt(posting: Posting): Promise<Outcome> {
  try {
    return { ok: await postTransaction(pool, { idempotencyKey: `conc:${randomUUID()}`, txType: posting.txType, entries: posting.entries }) };
  } catch (error) {
    if (error instanceof DomainError) return { refused: error };
    return { failed: error };
  }
}

function tally(outcomes: Outcome[]) {
  return {
    ok: outcomes.filter((outcome) => 'ok' in outcome).length,
    insufficient: outcomes.filter((outcome) => 'refused' in outcome && outcome.refused.code === 'INSUFFICIENT_FUNDS').length,
    otherRefusals: outcomes.flatMap((outcome) => ('refused' in outcome && outcome.refused.code !== 'INSUFFICIENT_FUNDS' ? [outcome.refused.code] : [])),
    failures: outcomes.flatMap((outcome) => ('failed' in outcome ? [`${(outcome.failed as DatabaseError).code ?? ''} ${String(outcome.failed)}`] : [])),
  };
}

async function negativeUserBuckets(): Promise<string[]> {
  const result = await pool.query<{ subject: string }>(
    `SELECT a.owner_id || '/' || b.bucket || '/' || b.currency AS subject
       FROM ledger_bucket_balances b JOIN ledger_accounts a ON a.id = b.account_id WHERE a.kind = 'user' AND b.amount_minor < 0`,
  );
  return result.rows.map((row) => row.subject);
}

const owner = (name: string): string => `${name}-${randomUUID().slice(0, 8)}`;

describe('ledger concurrency: parallel debits racing for one balance', () => {
  it('60 parallel PLC issues of 1.00 against 10.00 AVAILABLE: exactly 10 succeed, 50 INSUFFICIENT_FUNDS, AVAILABLE ends at 0.00', async () => {
    const issuer = owner('issuer');
    await postTransaction(pool, { idempotencyKey: `conc:${randomUUID()}`, ...moneyModel.deposit({ ownerId: issuer, currency: 'BRL', amountMinor: 1000n }) });

    const outcomes = await Promise.all(
      Array.from({ length: 60 }, () => attempt(moneyModel.plcIssued({ issuerId: issuer, currency: 'BRL', amountMinor: 100n }))),
    );

    expect(tally(outcomes)).toEqual({ ok: 10, insufficient: 50, otherRefusals: [], failures: [] });
    expect(await getBalances(pool, issuer, 'BRL')).toEqual({ available: 0n, held: 0n, pending: 0n, promised: 1000n });
    expect(await negativeUserBuckets()).toEqual([]);
    expect(await findViolations(pool)).toEqual([]);
  });

  it('60 parallel redeems of 1.00 to 60 different bearers against 10.00 PROMISED: exactly 10 bearers are credited', async () => {
    const issuer = owner('issuer');
    await postTransaction(pool, { idempotencyKey: `conc:${randomUUID()}`, ...moneyModel.deposit({ ownerId: issuer, currency: 'USD', amountMinor: 1000n }) });
    await postTransaction(pool, { idempotencyKey: `conc:${randomUUID()}`, ...moneyModel.plcIssued({ issuerId: issuer, currency: 'USD', amountMinor: 1000n }) });
    const bearers = Array.from({ length: 60 }, () => owner('bearer'));

    const outcomes = await Promise.all(
      bearers.map((bearerId) => attempt(moneyModel.redeemRequested({ issuerId: issuer, bearerId, currency: 'USD', amountMinor: 100n }))),
    );

    expect(tally(outcomes)).toEqual({ ok: 10, insufficient: 50, otherRefusals: [], failures: [] });
    expect(await getBalances(pool, issuer, 'USD')).toEqual({ available: 0n, held: 0n, pending: 0n, promised: 0n });
    const credited = await Promise.all(bearers.map((bearerId) => getBalances(pool, bearerId, 'USD')));
    expect(credited.filter((balances) => balances.pending === 100n)).toHaveLength(10);
    expect(credited.reduce((sum, balances) => sum + balances.pending, 0n)).toBe(1000n);
    // A refused redeem leaves no trace: no account for a bearer that was never credited.
    const accounts = await pool.query<{ count: bigint }>(`SELECT count(*) AS count FROM ledger_accounts WHERE owner_id = ANY($1)`, [bearers]);
    expect(accounts.rows[0]?.count).toBe(10n);
    expect(await negativeUserBuckets()).toEqual([]);
    expect(await findViolations(pool)).toEqual([]);
  });

  it('parallel debits of mixed sizes never overdraw: the accepted ones sum to at most the balance, and the balance is what is left', async () => {
    const issuer = owner('issuer');
    await postTransaction(pool, { idempotencyKey: `conc:${randomUUID()}`, ...moneyModel.deposit({ ownerId: issuer, currency: 'EUR', amountMinor: 5000n }) });
    const amounts = Array.from({ length: 80 }, (_, i) => BigInt(50 + ((i * 37) % 200)));

    const outcomes = await Promise.all(amounts.map((amountMinor) => attempt(moneyModel.riskHold({ ownerId: issuer, currency: 'EUR', amountMinor }))));

    const t = tally(outcomes);
    expect(t.failures).toEqual([]);
    expect(t.otherRefusals).toEqual([]);
    expect(t.ok + t.insufficient).toBe(amounts.length);
    const held = amounts.filter((_, i) => 'ok' in (outcomes[i] ?? {})).reduce((sum, amount) => sum + amount, 0n);
    expect(held).toBeLessThanOrEqual(5000n);
    expect(await getBalances(pool, issuer, 'EUR')).toEqual({ available: 5000n - held, held, pending: 0n, promised: 0n });
    // AVAILABLE only ever shrank, so a refused hold was larger than what is left even now.
    const refusedAmounts = amounts.filter((_, i) => 'refused' in (outcomes[i] ?? {}));
    expect(refusedAmounts.length).toBeGreaterThan(0);
    for (const amount of refusedAmounts) expect(amount).toBeGreaterThan(5000n - held);
    expect(await findViolations(pool)).toEqual([]);
  });
});

describe('ledger concurrency: no deadlock whatever the order of the legs', () => {
  const transfer = (from: string, to: string, amountMinor: bigint): Posting => ({
    txType: 'RECONCILIATION',
    entries: [
      { ownerId: from, bucket: 'AVAILABLE', currency: 'BRL', amountMinor: -amountMinor },
      { ownerId: to, bucket: 'AVAILABLE', currency: 'BRL', amountMinor },
    ],
  });

  it('two owners transferring to each other in opposite directions, 5 rounds of 200 concurrent postings: never 40P01, balances unchanged', async () => {
    const a = owner('a');
    const b = owner('b');
    for (const ownerId of [a, b]) {
      await postTransaction(pool, { idempotencyKey: `conc:${randomUUID()}`, ...moneyModel.deposit({ ownerId, currency: 'BRL', amountMinor: 10_000n }) });
    }
    for (let round = 0; round < 5; round += 1) {
      const postings = Array.from({ length: 200 }, (_, i) => (i % 2 === 0 ? transfer(a, b, 1n + BigInt(round)) : transfer(b, a, 1n + BigInt(round))));
      const outcomes = await Promise.all(postings.map(attempt));
      expect(tally(outcomes), `round ${round}`).toEqual({ ok: 200, insufficient: 0, otherRefusals: [], failures: [] });
    }
    expect(await getBalances(pool, a, 'BRL')).toMatchObject({ available: 10_000n });
    expect(await getBalances(pool, b, 'BRL')).toMatchObject({ available: 10_000n });
    expect(await findViolations(pool)).toEqual([]);
  });

  it('redeem requested and redeem failed between the same issuer and bearer (same two rows, opposite directions), 400 at once: never 40P01', async () => {
    const issuer = owner('issuer');
    const bearer = owner('bearer');
    await postTransaction(pool, { idempotencyKey: `conc:${randomUUID()}`, ...moneyModel.deposit({ ownerId: issuer, currency: 'BRL', amountMinor: 1_000n }) });
    await postTransaction(pool, { idempotencyKey: `conc:${randomUUID()}`, ...moneyModel.plcIssued({ issuerId: issuer, currency: 'BRL', amountMinor: 1_000n }) });
    await postTransaction(pool, { idempotencyKey: `conc:${randomUUID()}`, ...moneyModel.redeemRequested({ issuerId: issuer, bearerId: bearer, currency: 'BRL', amountMinor: 500n }) });

    const postings = Array.from({ length: 400 }, (_, i) =>
      i % 2 === 0
        ? moneyModel.redeemRequested({ issuerId: issuer, bearerId: bearer, currency: 'BRL', amountMinor: 1n })
        : moneyModel.redeemFailed({ issuerId: issuer, bearerId: bearer, currency: 'BRL', amountMinor: 1n }),
    );
    const outcomes = await Promise.all(postings.map(attempt));

    expect(tally(outcomes)).toEqual({ ok: 400, insufficient: 0, otherRefusals: [], failures: [] });
    expect(await getBalances(pool, issuer, 'BRL')).toMatchObject({ promised: 500n });
    expect(await getBalances(pool, bearer, 'BRL')).toMatchObject({ pending: 500n });
    expect(await findViolations(pool)).toEqual([]);
  });

  it('postings of 8 legs over 8 accounts with the legs in random order, 300 at once: never 40P01, money conserved', async () => {
    const ring = Array.from({ length: 8 }, (_, i) => owner(`ring${i}`));
    for (const ownerId of ring) {
      await postTransaction(pool, { idempotencyKey: `conc:${randomUUID()}`, ...moneyModel.deposit({ ownerId, currency: 'BRL', amountMinor: 10_000n }) });
    }
    // Deterministic pseudo-random shuffles, so a failure is reproducible.
    let seed = 42;
    const next = () => {
      seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
      return seed;
    };
    const shuffled = <T>(items: T[]): T[] => {
      const copy = [...items];
      for (let i = copy.length - 1; i > 0; i -= 1) {
        const j = next() % (i + 1);
        [copy[i], copy[j]] = [copy[j] as T, copy[i] as T];
      }
      return copy;
    };
    const postings = Array.from({ length: 300 }, (): Posting => {
      const order = shuffled(ring);
      // Half the accounts pay 1 (their rows locked by the posting, in lock order), the other half
      // receive 1 (credits, no lock; one in 32 folds, and then locks too).
      const entries: Entry[] = order.map((ownerId, i) => ({ ownerId, bucket: 'AVAILABLE', currency: 'BRL', amountMinor: i < 4 ? -1n : 1n }));
      return { txType: 'RECONCILIATION', entries: shuffled(entries) };
    });

    const outcomes = await Promise.all(postings.map(attempt));

    expect(tally(outcomes)).toEqual({ ok: 300, insufficient: 0, otherRefusals: [], failures: [] });
    const balances = await Promise.all(ring.map((ownerId) => getBalances(pool, ownerId, 'BRL')));
    expect(balances.reduce((sum, balance) => sum + balance.available, 0n)).toBe(80_000n);
    expect(await findViolations(pool)).toEqual([]);
  });

  it('control: two raw transactions locking the same two snapshot rows in opposite order do deadlock, and the harness sees 40P01', async () => {
    const a = owner('lock-a');
    const b = owner('lock-b');
    for (const ownerId of [a, b]) {
      await postTransaction(pool, { idempotencyKey: `conc:${randomUUID()}`, ...moneyModel.deposit({ ownerId, currency: 'BRL', amountMinor: 100n }) });
    }
    // The deposits are unfolded credits: fold them, so both AVAILABLE rows exist.
    await pool.query(`SELECT ledger_lock_snapshots(array_agg(id), false) FROM ledger_accounts WHERE owner_id = ANY ($1)`, [[a, b]]);
    const lockRow = `UPDATE ledger_balances SET version = version
                      WHERE bucket = 'AVAILABLE' AND currency = 'BRL' AND account_id = (SELECT id FROM ledger_accounts WHERE owner_id = $1)`;
    const first = await pool.connect();
    const second = await pool.connect();
    try {
      await first.query('BEGIN');
      await second.query('BEGIN');
      await first.query(lockRow, [a]);
      await second.query(lockRow, [b]);
      const results = await Promise.allSettled([first.query(lockRow, [b]), second.query(lockRow, [a])]);
      const codes = results.map((result) => (result.status === 'rejected' ? (result.reason as DatabaseError).code : 'ok'));
      expect(codes.sort()).toEqual(['40P01', 'ok']);
    } finally {
      await first.query('ROLLBACK').catch(() => {});
      await second.query('ROLLBACK').catch(() => {});
      first.release();
      second.release();
    }
  });

  it('a credit takes no lock: credits to a bucket complete while another transaction holds its row, and then both count', async () => {
    const holder = owner('holder');
    const payers = Array.from({ length: 40 }, () => owner('payer'));
    for (const ownerId of [holder, ...payers]) {
      await postTransaction(pool, { idempotencyKey: `conc:${randomUUID()}`, ...moneyModel.deposit({ ownerId, currency: 'BRL', amountMinor: 1_000n }) });
    }
    // The holder's AVAILABLE row exists (its first row is the one thing two transactions would
    // wait on each other for: the migration's header says so).
    await pool.query(`SELECT ledger_lock_snapshots(array_agg(id), false) FROM ledger_accounts WHERE owner_id = $1`, [holder]);
    const blocker = await pool.connect();
    try {
      await blocker.query('BEGIN');
      // A debit of the holder's AVAILABLE, not committed: its row stays locked.
      await postTransaction(blocker, { idempotencyKey: `conc:${randomUUID()}`, ...transfer(holder, payers[0] as string, 100n) });
      // Meanwhile 39 credits to that bucket, each paid by another owner, from other connections:
      // all complete (those whose id says fold find the row locked and leave the fold for later).
      const credits = Promise.all(payers.slice(1).map((payer) => attempt(transfer(payer, holder, 1n))));
      const waited = new Promise<'waited'>((resolve) => setTimeout(() => resolve('waited'), 10_000).unref());
      const outcomes = await Promise.race([credits, waited]);
      expect(outcomes, 'the credits waited for the locked row').not.toBe('waited');
      expect(tally(outcomes as Outcome[])).toEqual({ ok: 39, insufficient: 0, otherRefusals: [], failures: [] });
      await blocker.query('COMMIT');
    } catch (error) {
      await blocker.query('ROLLBACK').catch(() => {});
      throw error;
    } finally {
      blocker.release();
    }
    expect(await getBalances(pool, holder, 'BRL')).toMatchObject({ available: 1_000n - 100n + 39n });
    expect(await findViolations(pool)).toEqual([]);
  });

  it('folding races postings: 300 transfers among 6 owners while their credits are folded over and over, every cent accounted for', async () => {
    const ring = Array.from({ length: 6 }, (_, i) => owner(`fold${i}`));
    for (const ownerId of ring) {
      await postTransaction(pool, { idempotencyKey: `conc:${randomUUID()}`, ...moneyModel.deposit({ ownerId, currency: 'BRL', amountMinor: 5_000n }) });
    }
    let folding = true;
    const folder = (async () => {
      let folds = 0;
      while (folding) {
        // What the reconcile tools do before they rewrite rows: lock in order, fold every credit.
        await pool.query(`SELECT ledger_lock_snapshots(array_agg(id), false) FROM ledger_accounts WHERE owner_id = ANY ($1)`, [ring]);
        folds += 1;
      }
      return folds;
    })();
    const postings = Array.from({ length: 300 }, (_, i) => transfer(ring[i % 6] as string, ring[(i * 5 + 1) % 6] as string, BigInt(1 + (i % 7))));
    const outcomes = await Promise.all(postings.map(attempt));
    folding = false;
    expect(await folder).toBeGreaterThan(0);
    expect(tally(outcomes)).toEqual({ ok: 300, insufficient: 0, otherRefusals: [], failures: [] });
    const expected = new Map(ring.map((ownerId) => [ownerId, 5_000n]));
    for (const posting of postings) {
      for (const entry of posting.entries) expected.set(entry.ownerId, (expected.get(entry.ownerId) ?? 0n) + entry.amountMinor);
    }
    for (const ownerId of ring) expect((await getBalances(pool, ownerId, 'BRL')).available).toBe(expected.get(ownerId));
    expect(await findViolations(pool)).toEqual([]);
  });
});
