import { randomUUID } from 'node:crypto';
import { NativeConnection } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { postTransaction } from '../../db/ledger.ts';
import { createGatewayClient } from '../../gateway/index.ts';
import { moneyModel } from '../../src/ledger/money-model.ts';
import { reconcileWorkflowId } from '../../src/reconciliation/tools.ts';
import { createWorker } from '../../worker/create-worker.ts';
import { reconciliationWorkflow } from '../../workflows/reconciliation.ts';
import { businessStatusKey, referenceIdKey } from '../../workflows/search-attributes.ts';
import { createTestApp, type TestApp } from '../support/app.ts';
import { insertRawTransaction, setSnapshot, snapshotOf } from '../support/ledger.ts';
import { replayAndRecord } from '../support/histories.ts';
import { expectLedgerConsistent } from '../support/reconcile.ts';
import { eventually } from '../support/temporal-cli.ts';

/**
 * The reconciliation workflow against the real dev server: a run whose worker stops mid-way
 * resumes on another worker from its last finished batch and books every item exactly once;
 * a long run continues as new with its cursor and still ends with one report.
 */
let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(async () => {
  await t?.close();
});

/**
 * Owners whose AVAILABLE entries sum to -2.00 while their snapshot says 1.00: a deposit of 1.00
 * and 3.00 taken behind the ledger's back (system:world's snapshot is moved to match, so only
 * the user buckets are wrong).
 */
async function breakOwners(prefix: string, count: number): Promise<string[]> {
  const owners = Array.from({ length: count }, (_, index) => `${prefix}-${index}-${randomUUID().slice(0, 6)}`);
  for (const ownerId of owners) {
    const posting = moneyModel.deposit({ ownerId, currency: 'BRL', amountMinor: 100n });
    await postTransaction(t.db.pool, { idempotencyKey: `wf-deposit-${ownerId}`, txType: posting.txType, entries: posting.entries });
  }
  // 3.00 from each owner's AVAILABLE to the world's, behind the ledger's back; the world's
  // snapshot is moved to match (so only the user buckets are wrong).
  for (const ownerId of owners) {
    await insertRawTransaction(
      t.db.pool,
      [{ from: { ownerId, bucket: 'AVAILABLE' }, to: { ownerId: 'system:world', bucket: 'AVAILABLE' }, currency: 'BRL', amountMinor: 300n }],
      `raw-${ownerId}`,
    );
  }
  const world = (await snapshotOf(t.db.pool, 'system:world', 'AVAILABLE')) ?? 0n;
  await setSnapshot(t.db.pool, 'system:world', 'AVAILABLE', 'BRL', world + BigInt(300 * count));
  return owners;
}

async function countItems(runId: string): Promise<number> {
  const result = await t.db.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM reconciliation_items WHERE run_id = $1', [runId]);
  return result.rows[0]?.n ?? 0;
}

async function postingsPerKey(runId: string): Promise<Record<string, number>> {
  const result = await t.db.pool.query<{ idempotency_key: string; n: number }>(
    `SELECT idempotency_key, count(*)::int AS n FROM ledger_transactions WHERE idempotency_key LIKE $1 GROUP BY 1`,
    [`reconcile:${runId}:%`],
  );
  return Object.fromEntries(result.rows.map((row) => [row.idempotency_key, row.n]));
}

describe('reconciliation workflow', () => {
  it('resumes on a new worker from the last finished batch when its worker stops mid-run, booking every item once', async () => {
    const owners = await breakOwners('wf-resume', 6);
    const runId = randomUUID();
    const workflowId = reconcileWorkflowId('fix-negative-balances', runId);

    // The first worker has a connection of its own so that the test can stop it alone.
    const connection = await NativeConnection.connect({ address: inject('temporalAddress') });
    const first = await createWorker({
      connection,
      namespace: t.config.TEMPORAL_NAMESPACE,
      taskQueue: t.taskQueue,
      pool: t.db.pool,
      gateway: createGatewayClient({
        baseUrl: t.config.GATEWAY_BASE_URL,
        apiKey: t.config.GATEWAY_API_KEY,
        timeoutMs: t.config.GATEWAY_TIMEOUT_MS,
      }),
      workflowBundlePath: inject('workflowBundlePath'),
      shutdownGraceTimeMs: 2000,
      // A small sticky cache (TEMPORAL_MAX_CACHED_WORKFLOWS): what the run does must not depend on it.
      maxCachedWorkflows: 2,
    });
    expect(first.options.maxCachedWorkflows).toBe(2);
    const firstRunning = first.run();
    const handle = await t.temporal.workflow.start(reconciliationWorkflow, {
      workflowId,
      taskQueue: t.taskQueue,
      args: [{ runId, tool: 'fix-negative-balances', params: {}, requestedBy: 'workflow-test', batchSize: 1, batchPauseMs: 500 }],
    });
    await eventually(async () => ((await countItems(runId)) >= 2 ? true : undefined), 30_000);
    first.shutdown();
    await firstRunning;
    await connection.close();
    const midway = await countItems(runId);
    expect(midway).toBeGreaterThanOrEqual(2);
    expect(midway).toBeLessThan(owners.length);

    await t.startWorker();
    const report = await handle.result();
    expect(report).toMatchObject({ runId, tool: 'fix-negative-balances', dryRun: false, status: 'COMPLETED', workflowId });
    expect(report.counts).toMatchObject({
      scanned: owners.length,
      batches: owners.length + 1,
      items: owners.length,
      fixed: owners.length,
      failed: 0,
    });

    // Every item booked exactly once, under its run-scoped key.
    expect(await postingsPerKey(runId)).toEqual(
      Object.fromEntries(owners.map((ownerId) => [`reconcile:${runId}:${ownerId}/AVAILABLE/BRL`, 1])),
    );
    expect(await countItems(runId)).toBe(owners.length);
    await expectLedgerConsistent(t.db.pool);

    // Resumed, not restarted: each batch was scheduled once, each from the cursor after the last.
    const history = await handle.fetchHistory();
    const cursors = (history.events ?? [])
      .filter((event) => event.activityTaskScheduledEventAttributes?.activityType?.name === 'reconcileBatch')
      .map((event) => {
        const data = event.activityTaskScheduledEventAttributes?.input?.payloads?.[0]?.data;
        return (JSON.parse(Buffer.from(data ?? new Uint8Array()).toString('utf8')) as { cursor: string | null }).cursor;
      });
    expect(cursors).toHaveLength(owners.length + 1);
    expect(cursors[0]).toBeNull();
    expect(new Set(cursors).size).toBe(cursors.length);

    const description = await handle.describe();
    expect(description.typedSearchAttributes.get(referenceIdKey)).toBe(runId);
    expect(description.typedSearchAttributes.get(businessStatusKey)).toBe('COMPLETED');

    await replayAndRecord(t.temporal, workflowId, 'reconcile-fix-negative-balances-resumed');
  }, 120_000);

  it('continues as new with its cursor when a run outgrows one execution, and reports once at the end', async () => {
    const owners = await breakOwners('wf-can', 3);
    const runId = randomUUID();
    const workflowId = reconcileWorkflowId('fix-negative-balances', runId);
    const handle = await t.temporal.workflow.start(reconciliationWorkflow, {
      workflowId,
      taskQueue: t.taskQueue,
      args: [{ runId, tool: 'fix-negative-balances', params: {}, requestedBy: 'workflow-test', batchSize: 1, batchesPerExecution: 2 }],
    });
    const report = await handle.result();
    // Every user account is looked at (the earlier test's, fixed by now, too); only these are items.
    const userCount = await t.db.pool.query<{ n: number }>("SELECT count(*)::int AS n FROM ledger_accounts WHERE kind = 'user'");
    const users = userCount.rows[0]?.n ?? 0;
    expect(report.counts).toMatchObject({ scanned: users, batches: users + 1, items: owners.length, fixed: owners.length });
    const first = await t.temporal.workflow.getHandle(workflowId, handle.firstExecutionRunId).describe();
    expect(first.status.name).toBe('CONTINUED_AS_NEW');
    expect(Object.values(await postingsPerKey(runId))).toEqual(owners.map(() => 1));
    const row = await t.db.pool.query('SELECT status, scanned, batches, items_fixed FROM reconciliation_runs WHERE id = $1', [runId]);
    expect(row.rows).toEqual([{ status: 'COMPLETED', scanned: BigInt(users), batches: users + 1, items_fixed: owners.length }]);
    await expectLedgerConsistent(t.db.pool);
  });
});
