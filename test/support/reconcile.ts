import { afterAll, beforeAll, beforeEach, expect } from 'vitest';
import { findViolations } from '../../db/ledger.ts';
import type { Pool } from '../../db/pool.ts';
import { toReportResponse } from '../../api/routes/admin-reconcile.ts';
import type { Plc } from '../../src/protocol/index.ts';
import type { ReconcileReport } from '../../src/reconciliation/tools.ts';
import { createTestApp, type TestApp } from './app.ts';
import { hop, issue, newWallet, plcToJson, type TestWallet } from './wallet.ts';

/**
 * What the reconcile tools' tests share (test/api/admin-reconcile*.test.ts,
 * test/workflows/reconciliation.test.ts, test/e2e/reconcile-gateway.test.ts,
 * test/e2e/gateway-audit.test.ts): the report as the API answers it, the request that runs a
 * tool, the ledger's consistency check, and the replay (and recording) of a run's history.
 */

/** A run's report, as the API answers it (`ReconcileReport` in /openapi.json). */
export type Report = ReturnType<typeof toReportResponse>;
/** One item of a report, as the API answers it (`ReconcileItem`). */
export type ReportItem = Report['items'][number];

/**
 * A test file's app with its worker and an admin's bearer headers, handed to `ready` before its
 * first test and closed after its last; the ledger is checked consistent before each test (the
 * reconcile tools are global: a test that leaves damage behind fails, not the next one).
 */
export function reconcileTestApp(ready: (t: TestApp, admin: Record<string, string>) => void): void {
  let app: TestApp | undefined;
  beforeAll(async () => {
    app = await createTestApp();
    await app.startWorker();
    ready(app, await app.adminHeaders());
  });
  afterAll(async () => {
    await app?.close();
  });
  ledgerConsistentBeforeEach(() => {
    if (app === undefined) throw new Error('the test app did not start');
    return app.db.pool;
  });
}

/** POST /api/v1/admin/reconcile/<path><query>: the status and the body as a report. */
export async function reconcileRequest(
  t: Pick<TestApp, 'app'>,
  headers: Record<string, string>,
  path: string,
  query = '',
): Promise<{ statusCode: number; body: Report }> {
  const response = await t.app.inject({ method: 'POST', url: `/api/v1/admin/reconcile/${path}${query}`, headers });
  return { statusCode: response.statusCode, body: response.json() as Report };
}

/** A run that answers its report at once (200, or the test fails with the body). */
export async function reconcileReport(t: Pick<TestApp, 'app'>, headers: Record<string, string>, path: string, query = ''): Promise<Report> {
  const response = await t.app.inject({ method: 'POST', url: `/api/v1/admin/reconcile/${path}${query}`, headers });
  expect(response.statusCode, response.body).toBe(200);
  return response.json() as Report;
}

/**
 * A run's report once it has ended: at once (200), or, when the run outlasts the request (202),
 * after its workflow ends, as the run stored it.
 */
export async function finishedReport(t: Pick<TestApp, 'app' | 'temporal' | 'db'>, headers: Record<string, string>, path: string, query = ''): Promise<Report> {
  const response = await t.app.inject({ method: 'POST', url: `/api/v1/admin/reconcile/${path}${query}`, headers });
  if (response.statusCode !== 202) {
    expect(response.statusCode, response.body).toBe(200);
    return response.json() as Report;
  }
  const { run_id: runId, workflow_id: workflowId } = response.json() as { run_id: string; workflow_id: string };
  await t.temporal.workflow.getHandle(workflowId).result();
  const stored = await t.db.pool.query<{ report: ReconcileReport }>('SELECT report FROM reconciliation_runs WHERE id = $1', [runId]);
  const report = stored.rows[0]?.report;
  if (report === undefined) throw new Error(`run ${runId} stored no report`);
  // In the API's shape, as the route answers a run that ends within the request.
  return toReportResponse(report);
}

/** The ledger's invariants hold (db/ledger.ts `findViolations`: no snapshot apart from its entries, no unbalanced transaction). */
export async function expectLedgerConsistent(pool: Pool): Promise<void> {
  expect(await findViolations(pool)).toEqual([]);
}

/**
 * The reconcile tools are global: every test of a file leaves the ledger consistent, checked
 * before each test so that a test that did not is the one that fails.
 */
export function ledgerConsistentBeforeEach(pool: () => Pool): void {
  beforeEach(async () => {
    await expectLedgerConsistent(pool());
  });
}

/** Ledger transactions booked under an idempotency key. */
export async function transactionsUnder(pool: Pool, key: string): Promise<{ id: string; tx_type: string }[]> {
  const result = await pool.query<{ id: string; tx_type: string }>('SELECT id, tx_type FROM ledger_transactions WHERE idempotency_key = $1', [key]);
  return result.rows;
}

/** GET /api/v1/balance/<owner>: the owner's BRL balance as the API answers it. */
export async function balanceOf(t: Pick<TestApp, 'app'>, ownerId: string): Promise<Record<string, string>> {
  return (await t.app.inject({ method: 'GET', url: `/api/v1/balance/${ownerId}` })).json() as Record<string, string>;
}

/**
 * A PLC ready to redeem: an issuer funded with `deposit` (through the API, booked by its
 * workflow) issues it (POST /api/v1/plc/create from `device`) and hands it to a new bearer.
 */
export async function transferablePlc(
  t: Pick<TestApp, 'app' | 'deposit'>,
  amountMinor: bigint,
  options: { deposit: string; device: Record<string, string> },
): Promise<{ plc: Plc; issuer: TestWallet; bearer: TestWallet }> {
  const [issuer, bearer] = [newWallet(), newWallet()];
  await t.deposit(issuer.pubkey, options.deposit);
  const plc = issue(issuer, { amountMinor });
  const created = await t.app.inject({ method: 'POST', url: '/api/v1/plc/create', headers: options.device, payload: { plc: plcToJson(plc) } });
  expect(created.statusCode, created.body).toBe(200);
  return { plc: hop(plc, issuer, bearer), issuer, bearer };
}

