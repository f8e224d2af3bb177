import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findViolations, postTransaction } from '../../db/ledger.ts';
import { moneyModel, type Bucket, type Posting } from '../../src/ledger/money-model.ts';
import type { Currency } from '../../src/money/currency.ts';
import { referenceIdKey } from '../../workflows/search-attributes.ts';
import { createTestApp, type TestApp } from '../support/app.ts';
import { expectLedgerConsistent, reconcileRequest, reconcileTestApp, type ReportItem } from '../support/reconcile.ts';
import { foldCredits, insertRawTransaction, ledgerTablesJson, setSnapshot as setSnapshotRow, snapshotOf as snapshotOfBucket } from '../support/ledger.ts';

/**
 * The reconcile tools end to end: API -> (dry run in the request | workflow on the worker) ->
 * PostgreSQL. Each test breaks the ledger's cache or history on purpose with raw SQL, then checks
 * that a dry run reports exactly the damage and changes nothing, that a real run repairs it with
 * ordinary ledger transactions and recorded items, and that a second real run finds nothing.
 * The tools are global, so every test leaves the ledger consistent (checked in beforeEach).
 */
let t: TestApp;
let admin: Record<string, string>;
reconcileTestApp((app, headers) => {
  [t, admin] = [app, headers];
});

let keySeq = 0;
async function book(posting: Posting, referenceId?: string): Promise<string> {
  keySeq += 1;
  const result = await postTransaction(t.db.pool, {
    idempotencyKey: `test-${keySeq}-${randomUUID()}`,
    txType: posting.txType,
    referenceType: referenceId === undefined ? undefined : 'test',
    referenceId,
    entries: posting.entries,
  });
  return result.transactionId;
}

function deposit(ownerId: string, amountMinor: bigint, currency: Currency = 'BRL'): Promise<string> {
  return book(moneyModel.deposit({ ownerId, currency, amountMinor }));
}

async function setSnapshot(ownerId: string, bucket: Bucket, currency: Currency, amountMinor: bigint): Promise<void> {
  await setSnapshotRow(t.db.pool, ownerId, bucket, currency, amountMinor);
}

async function snapshotOf(ownerId: string, bucket: Bucket, currency: Currency = 'BRL'): Promise<bigint | null> {
  return snapshotOfBucket(t.db.pool, ownerId, bucket, currency);
}

/** Everything the ledger holds, to compare before and after a dry run. */
async function ledgerState(): Promise<unknown> {
  const result = await t.db.pool.query<{ state: unknown }>(`SELECT json_build_object(${ledgerTablesJson}) AS state`);
  return result.rows[0]?.state;
}

const reconcile = (path: string, query = '') => reconcileRequest(t, admin, path, query);

async function runRow(runId: string) {
  const result = await t.db.pool.query(
    `SELECT tool, dry_run, status, requested_by, workflow_id, items_found, items_planned, items_fixed, items_skipped,
            items_failed, finished_at IS NOT NULL AS finished, report IS NOT NULL AS has_report
       FROM reconciliation_runs WHERE id = $1`,
    [runId],
  );
  return result.rows[0] as Record<string, unknown> | undefined;
}

function byKey(items: ReportItem[]): ReportItem[] {
  return [...items].sort((a, b) => a.key.localeCompare(b.key));
}

describe('POST /api/v1/admin/reconcile/*: access and parameters', () => {
  it.each(['fix-balance/someone', 'recalculate-snapshots', 'fix-negative-balances', 'fix-failed-pending'])(
    '%s answers 401 without a bearer token',
    async (path) => {
      const response = await t.app.inject({ method: 'POST', url: `/api/v1/admin/reconcile/${path}?dry_run=true` });
      expect(response.statusCode).toBe(401);
    },
  );

  it('answers 422 for a dry_run that is not a strict boolean', async () => {
    for (const value of ['yes', '', 'TRUE', '2']) {
      const response = await reconcile('recalculate-snapshots', `?dry_run=${value}`);
      expect(response.statusCode).toBe(422);
      expect((response.body as unknown as { detail: { loc: string[] }[] }).detail[0]?.loc).toEqual(['query', 'dry_run']);
    }
  });

  it('answers 422 for an invalid owner id and 404 for an owner without an account', async () => {
    expect((await reconcile('fix-balance/bad%20owner!')).statusCode).toBe(422);
    const missing = await reconcile('fix-balance/nobody-here');
    expect(missing.statusCode).toBe(404);
    expect(missing.body).toMatchObject({ code: 'ACCOUNT_NOT_FOUND' });
  });

  it('lists every tool in the OpenAPI document with its dry_run parameter', async () => {
    const document = (await t.app.inject({ method: 'GET', url: '/openapi.json' })).json() as { paths: Record<string, unknown> };
    for (const path of ['fix-balance/{owner_id}', 'recalculate-snapshots', 'fix-negative-balances', 'fix-failed-pending']) {
      expect(JSON.stringify(document.paths[`/api/v1/admin/reconcile/${path}`])).toContain('dry_run');
    }
  });
});

describe('fix-balance', () => {
  it('reports a wrong snapshot in a dry run, fixes it in a real run, then finds nothing', async () => {
    await deposit('fb-alice', 1000n);
    await deposit('fb-bob', 500n);
    await setSnapshot('fb-alice', 'AVAILABLE', 'BRL', 700n);
    await setSnapshot('fb-bob', 'AVAILABLE', 'BRL', 1n); // another owner's damage: not fix-balance/fb-alice's business

    const before = await ledgerState();
    const dry = await reconcile('fix-balance/fb-alice', '?dry_run=true');
    expect(dry.statusCode).toBe(200);
    expect(dry.body).toMatchObject({ tool: 'fix-balance', dry_run: true, status: 'COMPLETED', complete: true, workflow_id: null });
    expect(dry.body.counts).toMatchObject({ scanned: 1, items: 1, planned: 1, fixed: 0 });
    expect(dry.body.items).toEqual([
      {
        key: 'fb-alice/AVAILABLE/BRL',
        action: 'SNAPSHOT_CORRECTION',
        status: 'PLANNED',
        owner_id: 'fb-alice',
        bucket: 'AVAILABLE',
        currency: 'BRL',
        snapshot: '7.00',
        computed: '10.00',
        amount: null,
        snapshot_after: '10.00',
        transaction_id: null,
        reference_transaction_id: null,
        entries: null,
        detail: null,
        finding: null,
        evidence: null,
      },
    ]);
    expect(await ledgerState()).toEqual(before);
    expect(await runRow(dry.body.run_id)).toMatchObject({ dry_run: true, status: 'COMPLETED', items_planned: 1, items_fixed: 0 });

    const transactionsBefore = (await t.db.pool.query('SELECT count(*)::int AS n FROM ledger_transactions')).rows[0] as { n: number };
    const real = await reconcile('fix-balance/fb-alice');
    expect(real.statusCode).toBe(200);
    expect(real.body).toMatchObject({
      tool: 'fix-balance',
      dry_run: false,
      status: 'COMPLETED',
      workflow_id: `reconcile-fix-balance-${real.body.run_id}`,
    });
    expect(real.body.items).toMatchObject([
      { key: 'fb-alice/AVAILABLE/BRL', status: 'FIXED', snapshot: '7.00', computed: '10.00', snapshot_after: '10.00' },
    ]);
    expect(await snapshotOf('fb-alice', 'AVAILABLE')).toBe(1000n);
    expect(await snapshotOf('fb-bob', 'AVAILABLE')).toBe(1n);
    // A snapshot correction is no ledger transaction: the cache is rebuilt, history untouched.
    expect((await t.db.pool.query('SELECT count(*)::int AS n FROM ledger_transactions')).rows[0]).toEqual(transactionsBefore);
    expect(await runRow(real.body.run_id)).toMatchObject({
      tool: 'fix-balance',
      dry_run: false,
      status: 'COMPLETED',
      workflow_id: `reconcile-fix-balance-${real.body.run_id}`,
      items_found: 1,
      items_fixed: 1,
      finished: true,
      has_report: true,
    });
    const items = await t.db.pool.query(
      'SELECT item_key, snapshot_minor, computed_minor, snapshot_after_minor FROM reconciliation_items WHERE run_id = $1',
      [real.body.run_id],
    );
    expect(items.rows).toEqual([
      { item_key: 'fb-alice/AVAILABLE/BRL', snapshot_minor: 700n, computed_minor: 1000n, snapshot_after_minor: 1000n },
    ]);

    const description = await t.temporal.workflow.getHandle(real.body.workflow_id ?? '').describe();
    expect(description.status.name).toBe('COMPLETED');
    expect(description.typedSearchAttributes.get(referenceIdKey)).toBe(real.body.run_id);

    const again = await reconcile('fix-balance/fb-alice');
    expect(again.statusCode).toBe(200);
    expect(again.body.counts).toMatchObject({ items: 0, fixed: 0 });

    await setSnapshot('fb-bob', 'AVAILABLE', 'BRL', 500n);
  });
});

describe('recalculate-snapshots', () => {
  it('rebuilds every damaged snapshot (user, system, missing row) and leaves no violation', async () => {
    await deposit('rs-carol', 300n, 'USD');
    await deposit('rs-dan', 400n, 'EUR');
    await book(moneyModel.riskHold({ ownerId: 'rs-dan', currency: 'EUR', amountMinor: 100n }));
    const worldUsd = (await snapshotOf('system:world', 'AVAILABLE', 'USD')) ?? 0n;
    await setSnapshot('rs-carol', 'AVAILABLE', 'USD', 999n);
    await setSnapshot('system:world', 'AVAILABLE', 'USD', worldUsd + 50n);
    await foldCredits(t.db.pool, ['rs-dan']);
    await t.db.pool.query(
      `DELETE FROM ledger_balances WHERE bucket = 'HELD' AND currency = 'EUR'
          AND account_id = (SELECT id FROM ledger_accounts WHERE owner_id = 'rs-dan')`,
    );

    const before = await ledgerState();
    const dry = await reconcile('recalculate-snapshots', '?dry_run=true');
    expect(dry.statusCode).toBe(200);
    expect(await ledgerState()).toEqual(before);
    expect(dry.body.counts).toMatchObject({ items: 3, planned: 3 });
    expect(byKey(dry.body.items).map((item) => [item.key, item.status, item.snapshot, item.computed, item.snapshot_after])).toEqual([
      ['rs-carol/AVAILABLE/USD', 'PLANNED', '9.99', '3.00', '3.00'],
      ['rs-dan/HELD/EUR', 'PLANNED', '0.00', '1.00', '1.00'],
      [
        'system:world/AVAILABLE/USD',
        'PLANNED',
        (Number(worldUsd + 50n) / 100).toFixed(2),
        (Number(worldUsd) / 100).toFixed(2),
        (Number(worldUsd) / 100).toFixed(2),
      ],
    ]);
    expect((await findViolations(t.db.pool)).map((violation) => violation.subject).sort()).toEqual([
      'rs-carol/AVAILABLE/USD',
      'rs-dan/HELD/EUR',
      'system:world/AVAILABLE/USD',
    ]);

    const real = await reconcile('recalculate-snapshots');
    expect(real.statusCode).toBe(200);
    expect(real.body.counts).toMatchObject({ items: 3, fixed: 3, skipped: 0, failed: 0 });
    expect(real.body.workflow_id).toBe(`reconcile-recalculate-snapshots-${real.body.run_id}`);
    await expectLedgerConsistent(t.db.pool);
    expect(await snapshotOf('rs-dan', 'HELD', 'EUR')).toBe(100n);

    const again = await reconcile('recalculate-snapshots');
    expect(again.statusCode).toBe(200);
    expect(again.body.counts).toMatchObject({ items: 0 });
    expect(again.body.counts.scanned).toBeGreaterThanOrEqual(4);
  });
});

describe('fix-negative-balances', () => {
  it('compensates a user bucket whose entries sum below zero with one RECONCILIATION transaction', async () => {
    await deposit('neg-erin', 200n);
    // History damage: 5.00 left erin's AVAILABLE with only 2.00 in it, and the snapshots never saw it
    // (system:world's snapshot is moved by hand so that only erin's bucket is wrong).
    await insertRawTransaction(
      t.db.pool,
      [{ from: { ownerId: 'neg-erin', bucket: 'AVAILABLE' }, to: { ownerId: 'system:world', bucket: 'AVAILABLE' }, currency: 'BRL', amountMinor: 500n }],
      `raw-${randomUUID()}`,
    );
    const worldBrl = (await snapshotOf('system:world', 'AVAILABLE')) ?? 0n;
    await setSnapshot('system:world', 'AVAILABLE', 'BRL', worldBrl + 500n);

    // recalculate-snapshots cannot hold a negative user bucket: it reports it as SKIPPED.
    const recalculated = await reconcile('recalculate-snapshots', '?dry_run=true');
    expect(recalculated.body.items).toMatchObject([
      { key: 'neg-erin/AVAILABLE/BRL', status: 'SKIPPED', snapshot: '2.00', computed: '-3.00', snapshot_after: '2.00' },
    ]);
    expect(recalculated.body.items[0]?.detail).toContain('fix-negative-balances');

    const before = await ledgerState();
    const dry = await reconcile('fix-negative-balances', '?dry_run=true');
    expect(dry.statusCode).toBe(200);
    expect(await ledgerState()).toEqual(before);
    expect(dry.body.items).toEqual([
      {
        key: 'neg-erin/AVAILABLE/BRL',
        action: 'COMPENSATING_POSTING',
        status: 'PLANNED',
        owner_id: 'neg-erin',
        bucket: 'AVAILABLE',
        currency: 'BRL',
        snapshot: '2.00',
        computed: '-3.00',
        amount: '3.00',
        snapshot_after: '0.00',
        transaction_id: null,
        reference_transaction_id: null,
        entries: [
          { owner_id: 'system:world', bucket: 'AVAILABLE', currency: 'BRL', amount: '-3.00' },
          { owner_id: 'neg-erin', bucket: 'AVAILABLE', currency: 'BRL', amount: '3.00' },
        ],
        detail: null,
        finding: null,
        evidence: null,
      },
    ]);

    const real = await reconcile('fix-negative-balances');
    expect(real.statusCode).toBe(200);
    expect(real.body.counts).toMatchObject({ items: 1, fixed: 1 });
    const [item] = real.body.items;
    expect(item).toMatchObject({ status: 'FIXED', amount: '3.00', snapshot_after: '0.00' });
    const posted = await t.db.pool.query(
      `SELECT t.id, t.tx_type, t.idempotency_key, t.reference_type, t.reference_id FROM ledger_transactions t
        WHERE t.idempotency_key LIKE $1`,
      [`reconcile:${real.body.run_id}:%`],
    );
    expect(posted.rows).toEqual([
      {
        id: item?.transaction_id,
        tx_type: 'RECONCILIATION',
        idempotency_key: `reconcile:${real.body.run_id}:neg-erin/AVAILABLE/BRL`,
        reference_type: 'reconciliation_run',
        reference_id: real.body.run_id,
      },
    ]);
    expect(await snapshotOf('neg-erin', 'AVAILABLE')).toBe(0n);
    await expectLedgerConsistent(t.db.pool);

    const again = await reconcile('fix-negative-balances');
    expect(again.body.counts).toMatchObject({ items: 0 });
  });
});

describe('fix-failed-pending', () => {
  it('defaults to a dry run, then reverses failures booked without their request, once', async () => {
    // frank issues a PLC; a matched redemption request and failure are no item.
    await deposit('ffp-frank', 1000n);
    await book(moneyModel.plcIssued({ issuerId: 'ffp-frank', currency: 'BRL', amountMinor: 600n }));
    await book(moneyModel.redeemRequested({ issuerId: 'ffp-frank', bearerId: 'ffp-gina', currency: 'BRL', amountMinor: 100n }), 'red-ok');
    await book(moneyModel.redeemFailed({ issuerId: 'ffp-frank', bearerId: 'ffp-gina', currency: 'BRL', amountMinor: 100n }), 'red-ok');
    // gina has PENDING from a charge; two failures were booked against it without a request.
    await book(moneyModel.chargeCreated({ ownerId: 'ffp-gina', currency: 'BRL', amountMinor: 500n }), 'charge-ok');
    const redeemFailed = await book(
      moneyModel.redeemFailed({ issuerId: 'ffp-frank', bearerId: 'ffp-gina', currency: 'BRL', amountMinor: 200n }),
      'red-orphan',
    );
    const chargeFailed = await book(moneyModel.chargeFailed({ ownerId: 'ffp-gina', currency: 'BRL', amountMinor: 100n }), 'charge-orphan');
    expect(await snapshotOf('ffp-gina', 'PENDING')).toBe(200n);

    const before = await ledgerState();
    const dry = await reconcile('fix-failed-pending');
    expect(dry.statusCode).toBe(200);
    expect(dry.body.dry_run).toBe(true);
    expect(await ledgerState()).toEqual(before);
    expect(dry.body.counts).toMatchObject({ scanned: 3, items: 2, planned: 2 });
    expect(dry.body.items).toEqual([
      {
        key: `reversal/${redeemFailed}`,
        action: 'COMPENSATING_POSTING',
        status: 'PLANNED',
        owner_id: 'ffp-gina',
        bucket: 'PENDING',
        currency: 'BRL',
        snapshot: '2.00',
        computed: '2.00',
        amount: '2.00',
        snapshot_after: '4.00',
        transaction_id: null,
        reference_transaction_id: redeemFailed,
        entries: [
          { owner_id: 'ffp-frank', bucket: 'PROMISED', currency: 'BRL', amount: '-2.00' },
          { owner_id: 'ffp-gina', bucket: 'PENDING', currency: 'BRL', amount: '2.00' },
        ],
        detail: null,
        finding: null,
        evidence: null,
      },
      {
        key: `reversal/${chargeFailed}`,
        action: 'COMPENSATING_POSTING',
        status: 'PLANNED',
        owner_id: 'ffp-gina',
        bucket: 'PENDING',
        currency: 'BRL',
        snapshot: '2.00',
        computed: '2.00',
        amount: '1.00',
        snapshot_after: '3.00',
        transaction_id: null,
        reference_transaction_id: chargeFailed,
        entries: [
          { owner_id: 'system:world', bucket: 'PENDING', currency: 'BRL', amount: '-1.00' },
          { owner_id: 'ffp-gina', bucket: 'PENDING', currency: 'BRL', amount: '1.00' },
        ],
        detail: null,
        finding: null,
        evidence: null,
      },
    ]);

    const real = await reconcile('fix-failed-pending', '?dry_run=false');
    expect(real.statusCode).toBe(200);
    expect(real.body).toMatchObject({
      dry_run: false,
      status: 'COMPLETED',
      workflow_id: `reconcile-fix-failed-pending-${real.body.run_id}`,
    });
    expect(real.body.counts).toMatchObject({ items: 2, fixed: 2 });
    const reversals = await t.db.pool.query(
      `SELECT tx_type, idempotency_key, reference_type, reference_id FROM ledger_transactions
        WHERE tx_type = 'RECONCILIATION' AND reference_type = 'ledger_transaction' ORDER BY seq`,
    );
    expect(reversals.rows).toEqual([
      {
        tx_type: 'RECONCILIATION',
        idempotency_key: `reconcile:${real.body.run_id}:reversal/${redeemFailed}`,
        reference_type: 'ledger_transaction',
        reference_id: redeemFailed,
      },
      {
        tx_type: 'RECONCILIATION',
        idempotency_key: `reconcile:${real.body.run_id}:reversal/${chargeFailed}`,
        reference_type: 'ledger_transaction',
        reference_id: chargeFailed,
      },
    ]);
    expect(await snapshotOf('ffp-gina', 'PENDING')).toBe(500n);
    expect(await snapshotOf('ffp-frank', 'PROMISED')).toBe(600n);
    await expectLedgerConsistent(t.db.pool);

    const again = await reconcile('fix-failed-pending', '?dry_run=false');
    expect(again.statusCode).toBe(200);
    expect(again.body.counts).toMatchObject({ scanned: 3, items: 0 });
  });
});

describe('fix-failed-pending, a reversal the ledger refuses', () => {
  it('reports it as FAILED in the dry run and the real run, books nothing for it, and keeps reporting it', async () => {
    await deposit('ffr-hank', 500n);
    await book(moneyModel.plcIssued({ issuerId: 'ffr-hank', currency: 'BRL', amountMinor: 100n }));
    await book(moneyModel.chargeCreated({ ownerId: 'ffr-ivy', currency: 'BRL', amountMinor: 300n }), 'charge-ivy');
    const orphan = await book(
      moneyModel.redeemFailed({ issuerId: 'ffr-hank', bearerId: 'ffr-ivy', currency: 'BRL', amountMinor: 300n }),
      'red-hank-orphan',
    );
    // hank's PROMISED (now 4.00) is released, so the reversal cannot take 3.00 back from it.
    await book(moneyModel.plcCancelled({ issuerId: 'ffr-hank', currency: 'BRL', amountMinor: 400n }));

    const before = await ledgerState();
    const dry = await reconcile('fix-failed-pending');
    expect(await ledgerState()).toEqual(before);
    expect(dry.body.counts).toMatchObject({ items: 1, planned: 0, failed: 1 });
    expect(dry.body.items[0]).toMatchObject({ key: `reversal/${orphan}`, status: 'FAILED', amount: '3.00', snapshot_after: '0.00' });
    expect(dry.body.items[0]?.detail).toContain('INSUFFICIENT_FUNDS');

    const real = await reconcile('fix-failed-pending', '?dry_run=false');
    expect(real.statusCode).toBe(200);
    expect(real.body).toMatchObject({ status: 'COMPLETED' });
    expect(real.body.counts).toMatchObject({ items: 1, fixed: 0, failed: 1 });
    expect(real.body.items[0]).toMatchObject({ status: 'FAILED', transaction_id: null });
    expect(real.body.items[0]?.detail).toContain('INSUFFICIENT_FUNDS');
    const reversals = await t.db.pool.query(`SELECT 1 FROM ledger_transactions WHERE reference_id = $1 AND tx_type = 'RECONCILIATION'`, [
      orphan,
    ]);
    expect(reversals.rowCount).toBe(0);
    await expectLedgerConsistent(t.db.pool);

    // Nothing was fixed, so the next run finds it again: it waits for a person.
    const again = await reconcile('fix-failed-pending', '?dry_run=false');
    expect(again.body.counts).toMatchObject({ items: 1, failed: 1 });
  });
});

describe('a real run that outlasts the request', () => {
  let slow: TestApp;
  let slowAdmin: Record<string, string>;
  beforeAll(async () => {
    // No worker yet: the workflow cannot progress, so the request's bounded wait runs out.
    slow = await createTestApp();
    slowAdmin = await slow.adminHeaders();
  });
  afterAll(async () => {
    await slow?.close();
  });

  it('answers 202 with the run, answers the same run while it goes on, and the run completes later', async () => {
    const first = await slow.app.inject({ method: 'POST', url: '/api/v1/admin/reconcile/recalculate-snapshots', headers: slowAdmin });
    expect(first.statusCode).toBe(202);
    const accepted = first.json() as { run_id: string; workflow_id: string; status: string; tool: string };
    expect(accepted).toEqual({
      run_id: accepted.run_id,
      workflow_id: `reconcile-recalculate-snapshots-${accepted.run_id}`,
      tool: 'recalculate-snapshots',
      status: 'RUNNING',
    });
    const running = await slow.db.pool.query('SELECT status FROM reconciliation_runs WHERE id = $1', [accepted.run_id]);
    expect(running.rows).toEqual([{ status: 'RUNNING' }]);

    const second = await slow.app.inject({ method: 'POST', url: '/api/v1/admin/reconcile/recalculate-snapshots', headers: slowAdmin });
    expect(second.statusCode).toBe(202);
    expect(second.json()).toEqual(accepted);

    await slow.startWorker();
    const report = await slow.temporal.workflow.getHandle(accepted.workflow_id).result();
    expect(report).toMatchObject({ runId: accepted.run_id, status: 'COMPLETED' });
    const done = await slow.db.pool.query('SELECT status FROM reconciliation_runs WHERE id = $1', [accepted.run_id]);
    expect(done.rows).toEqual([{ status: 'COMPLETED' }]);
  }, 60_000);
});
