import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findViolations } from '../../db/ledger.ts';
import { createTestApp, type TestApp } from '../support/app.ts';
import { temporalCliJson } from '../support/temporal-cli.ts';
import { hop, issue, newWallet, plcToJson } from '../support/wallet.ts';
import { randomUUID } from 'node:crypto';
import { WorkflowNotFoundError } from '@temporalio/client';
import { releasePlc } from '../../db/plcs.ts';
import type { Plc } from '../../src/protocol/index.ts';
import { workflowIds } from '../../workflows/ids.ts';
import type { PlcExpiryBucketResult, plcExpiryBucketWorkflow, plcExpirySweepWorkflow } from '../../workflows/plc-expiry.ts';
import { replayAndRecord } from '../support/histories.ts';

/**
 * A PLC's life against the real dev server (docs/plc.md, "Expiry by time buckets"): the create's
 * one transaction, its expiry bucket's workflow (run here with its end moved to now: a bucket
 * sleeps until its minute ends), the sweep, the races PostgreSQL decides, and the expire-tokens
 * sweep. PLC_EXPIRY_OVERRIDE_MS brings the due time close; the signed TTL stays at least an hour.
 * The PLC workflows of PLCs issued before buckets keep their recorded histories
 * (test/workflows/replay.test.ts).
 */
let t: TestApp;
const device = { 'x-device-id': 'device-wf' };

beforeAll(async () => {
  t = await createTestApp({ PLC_EXPIRY_OVERRIDE_MS: '3600000' });
  await t.startWorker();
});
afterAll(async () => {
  await t?.close();
});

/** The bucket of a PLC: its due time's minute, and the bucket's workflow id on this app's task queue. */
async function bucketOf(tokenId: string): Promise<{ startMs: number; workflowId: string }> {
  const row = await t.db.pool.query<{ due: Date }>('SELECT expiry_due_at AS due FROM plcs WHERE token_id = $1', [tokenId]);
  const due = row.rows[0]?.due;
  if (due === undefined) throw new Error(`no PLC ${tokenId}`);
  const startMs = Math.floor(due.getTime() / t.config.PLC_EXPIRY_BUCKET_MS) * t.config.PLC_EXPIRY_BUCKET_MS;
  return { startMs, workflowId: workflowIds.plcExpiryBucket(startMs, t.taskQueue) };
}

/**
 * Runs the bucket's workflow now, under a test id (the bucket's own sleeps until the minute ends):
 * the same workflow code and activities, with its end moved to now.
 */
async function runBucketNow(startMs: number, batchSize: number): Promise<{ workflowId: string; result: PlcExpiryBucketResult }> {
  const workflowId = `test-plc-expiry-${randomUUID()}`;
  const handle = await t.temporal.workflow.start<typeof plcExpiryBucketWorkflow>('plcExpiryBucketWorkflow', {
    workflowId,
    taskQueue: t.taskQueue,
    args: [{ bucketStartMs: startMs, bucketEndMs: Math.min(startMs + 60_000, Date.now()), batchSize }],
  });
  return { workflowId, result: await handle.result() };
}

const statusOf = async (tokenId: string) => (await t.app.inject({ method: 'GET', url: `/api/v1/plc/${tokenId}/status` })).json().status as string;

describe('a PLC without a workflow of its own (expiry buckets)', () => {
  it('a create is one transaction: the row, its receipt, its bucket started once; no plc-<token_id> workflow', async () => {
    const issuer = newWallet();
    await t.deposit(issuer.pubkey, '10.00');
    const [first, second] = [issue(issuer, { amountMinor: 100n }), issue(issuer, { amountMinor: 200n })];
    const created = await t.app.inject({ method: 'POST', url: '/api/v1/plc/create', headers: device, payload: { plc: plcToJson(first) } });
    expect(created.statusCode).toBe(200);
    const bucket = await bucketOf(first.commitment.tokenId);
    expect(created.json()).toMatchObject({ created: true, workflow_id: bucket.workflowId, status: 'ISSUED' });
    expect(created.json().issue_receipt).toMatch(/^01[0-9a-f]{272}$/);
    await expect(t.temporal.workflow.getHandle(`plc-${first.commitment.tokenId}`).describe()).rejects.toBeInstanceOf(WorkflowNotFoundError);
    // The bucket's workflow runs (asleep until the minute ends); its row is marked started.
    expect((await t.temporal.workflow.getHandle(bucket.workflowId).describe()).status.name).toBe('RUNNING');
    const rows = await t.db.pool.query('SELECT started_at FROM plc_expiry_buckets WHERE bucket_start = $1', [new Date(bucket.startMs)]);
    expect(rows.rows[0]?.started_at).toBeInstanceOf(Date);
    // A second create in the same minute finds the bucket: same workflow, one run.
    expect((await t.app.inject({ method: 'POST', url: '/api/v1/plc/create', headers: device, payload: { plc: plcToJson(second) } })).statusCode).toBe(200);
    const again = await bucketOf(second.commitment.tokenId);
    if (again.startMs === bucket.startMs) {
      const runs = (await temporalCliJson(['workflow', 'list', '--query', `WorkflowId = '${bucket.workflowId}'`])) as unknown[];
      expect(runs).toHaveLength(1);
    }
    // A retry answers the same PLC and receipt, books nothing.
    const retry = await t.app.inject({ method: 'POST', url: '/api/v1/plc/create', headers: device, payload: { plc: plcToJson(first) } });
    expect(retry.json()).toMatchObject({ created: false, issue_receipt: created.json().issue_receipt, workflow_id: bucket.workflowId });
    const logged = await t.db.pool.query("SELECT count(*)::int AS n FROM operation_log WHERE operation_type = 'PLC_CREATE' AND reference_id = $1", [first.commitment.tokenId]);
    expect(logged.rows[0].n).toBe(1);
    const balance = await t.app.inject({ method: 'GET', url: `/api/v1/balance/${issuer.pubkey}` });
    expect(balance.json()).toMatchObject({ available: '7.00', promised: '3.00' });
    // The console's detail names the bucket.
    const detail = await t.app.inject({ method: 'GET', url: `/api/v1/admin/plcs/${first.commitment.tokenId}/detail`, headers: await t.adminHeaders() });
    expect(detail.json()).toMatchObject({ workflow_id: bucket.workflowId });
    expect(typeof detail.json().expiry_due_at).toBe('string');
  });

  it('a refused create leaves nothing: no row, no receipt, no bucket workflow', async () => {
    const issuer = newWallet();
    await t.deposit(issuer.pubkey, '1.00');
    const plc = issue(issuer, { amountMinor: 500n });
    const refused = await t.app.inject({ method: 'POST', url: '/api/v1/plc/create', headers: device, payload: { plc: plcToJson(plc) } });
    expect(refused.statusCode).toBe(409);
    expect(refused.json()).toMatchObject({ code: 'INSUFFICIENT_FUNDS' });
    const rows = await t.db.pool.query('SELECT (SELECT count(*) FROM plcs WHERE token_id = $1)::int AS plcs, (SELECT count(*) FROM plc_issue_receipts WHERE token_id = $1)::int AS receipts', [
      plc.commitment.tokenId,
    ]);
    expect(rows.rows[0]).toEqual({ plcs: 0, receipts: 0 });
  });

  it("the bucket's workflow expires its due PLCs in batches, releasing PROMISED; cancelled and in-flight ones are left to PostgreSQL's word", async () => {
    const [issuer, bearer] = [newWallet(), newWallet()];
    await t.deposit(issuer.pubkey, '10.00');
    const plcs = [issue(issuer, { amountMinor: 100n }), issue(issuer, { amountMinor: 200n }), issue(issuer, { amountMinor: 300n }), issue(issuer, { amountMinor: 400n })];
    for (const plc of plcs) {
      expect((await t.app.inject({ method: 'POST', url: '/api/v1/plc/create', headers: device, payload: { plc: plcToJson(plc) } })).statusCode).toBe(200);
    }
    const [transferred, cancelled, inFlight, plain] = plcs as [Plc, Plc, Plc, Plc];
    expect((await t.app.inject({ method: 'POST', url: '/api/v1/transfer/', headers: device, payload: { plc: plcToJson(hop(transferred, issuer, bearer)) } })).statusCode).toBe(200);
    const { cancelBody } = await import('../support/wallet.ts');
    const cancel = await t.app.inject({ method: 'POST', url: `/api/v1/plc/${cancelled.commitment.tokenId}/cancel`, headers: device, payload: cancelBody(cancelled, issuer) });
    expect(cancel.statusCode).toBe(200);
    // A redemption in flight (its opening set redemption_id): expiry must not touch it.
    await t.db.pool.query('UPDATE plcs SET redemption_id = $2 WHERE token_id = $1', [inFlight.commitment.tokenId, randomUUID()]);
    // The first hop of a bucketed PLC queues no status signal (it has no workflow to tell).
    const outbox = await t.db.pool.query('SELECT count(*)::int AS n FROM plc_status_outbox WHERE token_id = $1', [transferred.commitment.tokenId]);
    expect(outbox.rows[0].n).toBe(0);
    // Their bucket is an hour away (PLC_EXPIRY_OVERRIDE_MS): moved to a minute that has begun, so
    // that the bucket the API started (asleep for an hour) never meets this test's run.
    await t.db.pool.query("UPDATE plcs SET expiry_due_at = now() - interval '5 seconds' WHERE token_id = ANY($1::uuid[])", [plcs.map((p) => p.commitment.tokenId)]);
    const buckets = await Promise.all(plcs.map((plc) => bucketOf(plc.commitment.tokenId)));
    const starts = [...new Set(buckets.map((b) => b.startMs))];
    let expired = 0;
    let recorded: string | undefined;
    for (const startMs of starts) {
      const run = await runBucketNow(startMs, 1);
      expect(run.result.status).toBe('DONE');
      expired += run.result.expired;
      recorded ??= run.workflowId;
    }
    expect(expired).toBe(2);
    expect(await statusOf(transferred.commitment.tokenId)).toBe('EXPIRED');
    expect(await statusOf(plain.commitment.tokenId)).toBe('EXPIRED');
    expect(await statusOf(cancelled.commitment.tokenId)).toBe('CANCELLED');
    expect(await statusOf(inFlight.commitment.tokenId)).toBe('ISSUED');
    // The redemption reverts (its money back in PROMISED, redemption_id cleared): the sweep,
    // which takes PLCs more than a bucket late, expires it once it is that late.
    await t.db.pool.query("UPDATE plcs SET redemption_id = NULL, expiry_due_at = now() - interval '2 minutes' WHERE token_id = $1", [inFlight.commitment.tokenId]);
    const sweep = await t.temporal.workflow.execute<typeof plcExpirySweepWorkflow>('plcExpirySweepWorkflow', {
      workflowId: `test-plc-expiry-sweep-${randomUUID()}`,
      taskQueue: t.taskQueue,
      args: [{ taskQueue: t.taskQueue }],
    });
    expect(sweep.expiredLate).toBe(1);
    expect(await statusOf(inFlight.commitment.tokenId)).toBe('EXPIRED');
    const balance = await t.app.inject({ method: 'GET', url: `/api/v1/balance/${issuer.pubkey}` });
    expect(balance.json()).toMatchObject({ available: '10.00', promised: '0.00' });
    // A hop after expiry is refused.
    const late = await t.app.inject({ method: 'POST', url: '/api/v1/transfer/', headers: device, payload: { plc: plcToJson(hop(plain, issuer, bearer)) } });
    expect(late.statusCode).toBe(409);
    expect(await findViolations(t.db.pool)).toEqual([]);
    if (recorded !== undefined) await replayAndRecord(t.temporal, recorded, 'plc-expiry-bucket-done');
  });

  it('the sweep starts a bucket whose creator died between its commit and the start', async () => {
    const issuer = newWallet();
    await t.deposit(issuer.pubkey, '10.00');
    // A bucket two hours from now (no create of this file is due then), as a create that died after its commit would leave it: the row, never started.
    const startMs = Math.floor((Date.now() + 7_200_000) / 60_000) * 60_000;
    await t.db.pool.query("INSERT INTO plc_expiry_buckets (bucket_start, bucket_end, created_at) VALUES ($1, $2, now() - interval '1 minute')", [
      new Date(startMs),
      new Date(startMs + 60_000),
    ]);
    const sweep = await t.temporal.workflow.execute<typeof plcExpirySweepWorkflow>('plcExpirySweepWorkflow', {
      workflowId: `test-plc-expiry-sweep-${randomUUID()}`,
      taskQueue: t.taskQueue,
      args: [{ taskQueue: t.taskQueue }],
    });
    expect(sweep.bucketsStarted).toBeGreaterThanOrEqual(1);
    const workflowId = workflowIds.plcExpiryBucket(startMs, t.taskQueue);
    expect((await t.temporal.workflow.getHandle(workflowId).describe()).status.name).toBe('RUNNING');
    const row = await t.db.pool.query('SELECT started_at FROM plc_expiry_buckets WHERE bucket_start = $1', [new Date(startMs)]);
    expect(row.rows[0]?.started_at).toBeInstanceOf(Date);
    await t.temporal.workflow.getHandle(workflowId).terminate('test over');
  });

  it('a cancel racing an expiry: exactly one wins, PROMISED released once', async () => {
    const issuer = newWallet();
    await t.deposit(issuer.pubkey, '10.00');
    const plc = issue(issuer, { amountMinor: 500n });
    expect((await t.app.inject({ method: 'POST', url: '/api/v1/plc/create', headers: device, payload: { plc: plcToJson(plc) } })).statusCode).toBe(200);
    const tokenId = plc.commitment.tokenId;
    const { cancelBody } = await import('../support/wallet.ts');
    const [cancel, ...expiries] = await Promise.all([
      t.app.inject({ method: 'POST', url: `/api/v1/plc/${tokenId}/cancel`, headers: device, payload: cancelBody(plc, issuer) }),
      releasePlc(t.db.pool, tokenId, 'EXPIRED'),
      releasePlc(t.db.pool, tokenId, 'EXPIRED'),
    ]);
    const winners = expiries.filter((outcome) => outcome.released).length + (cancel.statusCode === 200 ? 1 : 0);
    expect(winners).toBe(1);
    if (cancel.statusCode !== 200) expect(cancel.json()).toMatchObject({ code: 'PLC_NOT_CANCELLABLE', details: { status: 'EXPIRED' } });
    const balance = await t.app.inject({ method: 'GET', url: `/api/v1/balance/${issuer.pubkey}` });
    expect(balance.json()).toMatchObject({ available: '10.00', promised: '0.00' });
    expect(await findViolations(t.db.pool)).toEqual([]);
  });
});

describe('expire-tokens (admin)', () => {
  it('the expire-tokens sweep expires overdue PLCs once, with a risk flag each', async () => {
    const slow = await createTestApp({ PLC_EXPIRY_OVERRIDE_MS: String(3600_000) });
    try {
      await slow.startWorker();
      const headers = await slow.adminHeaders();
      const issuer = newWallet();
      await slow.deposit(issuer.pubkey, '10.00');
      const plcs = [issue(issuer, { amountMinor: 100n }), issue(issuer, { amountMinor: 200n }), issue(issuer, { amountMinor: 300n })];
      for (const plc of plcs) {
        await slow.app.inject({ method: 'POST', url: '/api/v1/plc/create', headers: device, payload: { plc: plcToJson(plc) } });
      }
      // Two of them are long overdue (their workflows' timers are an hour away).
      const overdue = plcs.slice(0, 2).map((plc) => plc.commitment.tokenId);
      await slow.db.pool.query(
        `UPDATE plcs SET created_at = created_at - interval '2 days', expires_at = expires_at - interval '2 days',
                         created_at_ms = created_at_ms - 172800000, expires_at_ms = expires_at_ms - 172800000
          WHERE token_id = ANY($1::uuid[])`,
        [overdue],
      );
      const sweep = await slow.app.inject({ method: 'POST', url: '/api/v1/admin/expire-tokens', headers });
      expect(sweep.statusCode).toBe(200);
      expect(sweep.json()).toMatchObject({ status: 'COMPLETED', expired: 2 });
      expect([...sweep.json().token_ids].sort()).toEqual([...overdue].sort());
      const again = await slow.app.inject({ method: 'POST', url: '/api/v1/admin/expire-tokens', headers });
      expect(again.json()).toMatchObject({ expired: 0 });
      const balance = await slow.app.inject({ method: 'GET', url: `/api/v1/balance/${issuer.pubkey}` });
      expect(balance.json()).toMatchObject({ available: '7.00', promised: '3.00' });
      const flags = await slow.app.inject({ method: 'GET', url: '/api/v1/admin/risk-flags?severity=low', headers });
      expect(flags.json().filter((flag: { flag_type: string }) => flag.flag_type === 'OVERDUE_EXPIRY')).toHaveLength(2);
      expect(await findViolations(slow.db.pool)).toEqual([]);
    } finally {
      await slow.close();
    }
  });
});
