import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { requestBackoffRemoval } from '../../services/webhook-cooldown.ts';
import { workflowIds } from '../../workflows/ids.ts';
import { cooldownQuery, type BackoffRemovalResult } from '../../workflows/webhook-messages.ts';
import { webhookMonitorWorkflow } from '../../workflows/webhook-monitor.ts';
import { ensureWebhookMonitorSchedule } from '../../worker/schedules.ts';
import { failGatewayWebhooksWhile, ownWebhookIds, startSettlementHarness, type SettlementHarness } from '../support/settlement.ts';
import { eventually } from '../support/temporal-cli.ts';
import { replayAndRecord } from '../support/histories.ts';

/**
 * The webhook cooldown (`webhook-cooldown-<id>`) and the webhook monitor (the `webhook-monitor`
 * schedule's runs) against the real dev server, a real database, the gateway simulator and the
 * real activities. Our webhook endpoint is made to fail by a hook the test adds to the service.
 */
const cooldownMs = 1500;
const { suffix: hookSuffix, gatewayHook, transferHook } = ownWebhookIds();
let h: SettlementHarness;
let failing = false;

beforeAll(async () => {
  h = await startSettlementHarness(
    { WEBHOOK_BACKOFF_COOLDOWN_MS: String(cooldownMs) },
    {
      webhookIdSuffix: hookSuffix,
      transferWebhookUrl: 'http://127.0.0.1:9/unreachable',
      // Shorter than ours, so that only our cooldown refuses unless a test says otherwise.
      backoffRemovalCooldownMs: 100,
      webhookInterruptAfterFailures: 3,
      webhookRetryBaseMs: 20,
      webhookRetryMaxMs: 100,
    },
    { beforeListen: failGatewayWebhooksWhile(() => failing) },
  );
});
afterEach(() => {
  vi.restoreAllMocks();
});
afterAll(async () => {
  await h?.close();
});

function request(webhookId: string, requestedBy = 'test'): Promise<BackoffRemovalResult> {
  return requestBackoffRemoval(h.t.temporal, { taskQueue: h.t.taskQueue, cooldownMs, webhookId, requestedBy, source: 'admin' });
}

async function penaltyLog(webhookId: string): Promise<{ action: string; source: string; cooldown_until: Date | null }[]> {
  const rows = await h.t.db.pool.query(`SELECT action, source, cooldown_until FROM webhook_penalty_log WHERE webhook_id = $1 ORDER BY id`, [webhookId]);
  return rows.rows;
}

function publishTo(billingType: 'PIX' | null, event: 'PAYMENT_CREATED' | 'TRANSFER_CREATED'): void {
  const id = `evt_${randomUUID().replaceAll('-', '')}`;
  h.simulator.dispatcher.publish({
    id,
    event,
    resourceId: `pay_${id.slice(4, 20)}`,
    billingType,
    body: JSON.stringify({ id, event, dateCreated: '2026-11-22 10:00:00', payment: { id: `pay_${id.slice(4, 20)}` } }),
  });
}

describe('webhook-cooldown', () => {
  it('lets one of two removals asked at once reach the gateway, refuses the other with the time left, and allows the next after the cooldown', async () => {
    const spy = vi.spyOn(h.simulator.dispatcher, 'removeBackoff');
    const before = spy.mock.calls.length;
    const results = await Promise.all([request(gatewayHook, 'alice'), request(gatewayHook, 'bob')]);
    expect(results.map((r) => r.kind).sort()).toEqual(['refused', 'removed']);
    const refused = results.find((r) => r.kind === 'refused');
    expect(refused).toMatchObject({ reason: 'cooldown' });
    expect((refused as { retryAfterMs: number }).retryAfterMs).toBeGreaterThan(0);
    expect((refused as { retryAfterMs: number }).retryAfterMs).toBeLessThanOrEqual(cooldownMs);
    expect(spy.mock.calls.length - before).toBe(1);

    const handle = h.t.temporal.workflow.getHandle(workflowIds.webhookCooldown(gatewayHook));
    const { cooldownUntilMs } = await handle.query(cooldownQuery);
    const removed = results.find((r) => r.kind === 'removed') as { cooldownUntil: string };
    expect(cooldownUntilMs).toBe(Date.parse(removed.cooldownUntil));
    const log = await penaltyLog(gatewayHook);
    expect(log.filter((row) => row.action === 'REMOVED')).toHaveLength(1);
    const operations = await h.t.db.pool.query(
      `SELECT status, reference_id, attempts FROM operation_log WHERE operation_type = 'PENALTY_REMOVAL' AND workflow_id = $1`,
      [workflowIds.webhookCooldown(gatewayHook)],
    );
    expect(operations.rows).toEqual([{ status: 'SUCCEEDED', reference_id: gatewayHook, attempts: 1 }]);

    // The execution ends once its cooldown has passed.
    expect(await handle.result()).toEqual({ removals: 1, refusals: 1 });
    const { runId } = await handle.describe();
    await replayAndRecord(h.t.temporal, workflowIds.webhookCooldown(gatewayHook), 'webhook-cooldown-removed-refused', runId);
    expect(await request(gatewayHook)).toMatchObject({ kind: 'removed' });
    expect(spy.mock.calls.length - before).toBe(2);
    spy.mockRestore();
  });

  it('fails an unknown webhook with WEBHOOK_NOT_FOUND and starts no cooldown', async () => {
    const id = `wh_unknown_${randomUUID().slice(0, 8)}`;
    await expect(request(id)).rejects.toMatchObject({ cause: expect.objectContaining({ type: 'WEBHOOK_NOT_FOUND' }) });
    await expect(request(id)).rejects.toMatchObject({ cause: expect.objectContaining({ type: 'WEBHOOK_NOT_FOUND' }) });
    const handle = h.t.temporal.workflow.getHandle(workflowIds.webhookCooldown(id));
    expect(await handle.result()).toEqual({ removals: 0, refusals: 0 });
    await replayAndRecord(h.t.temporal, workflowIds.webhookCooldown(id), 'webhook-cooldown-not-found');
    const operations = await h.t.db.pool.query(`SELECT status, error_code FROM operation_log WHERE reference_id = $1`, [id]);
    expect(operations.rows).toEqual([
      { status: 'REFUSED', error_code: 'WEBHOOK_NOT_FOUND' },
      { status: 'REFUSED', error_code: 'WEBHOOK_NOT_FOUND' },
    ]);
  });

  it('releases the cooldown when the gateway fails (GATEWAY_ERROR after its retries), so the next removal goes through', async () => {
    await fetch(`${h.t.config.GATEWAY_BASE_URL}/sim/faults`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ apiErrorRate: 1 }),
    });
    try {
      await expect(request(transferHook)).rejects.toMatchObject({ cause: expect.objectContaining({ type: 'GATEWAY_ERROR' }) });
    } finally {
      await fetch(`${h.t.config.GATEWAY_BASE_URL}/sim/faults`, { method: 'DELETE' });
    }
    expect(await request(transferHook)).toMatchObject({ kind: 'removed' });
    const failed = await h.t.db.pool.query(
      `SELECT status, attempts, error_code FROM operation_log WHERE reference_id = '${transferHook}' AND status <> 'SUCCEEDED'`,
    );
    expect(failed.rows).toEqual([{ status: 'FAILED', attempts: 3, error_code: 'GATEWAY_ERROR' }]);
  });

  it("turns the gateway's own refusal (429) into our cooldown for its Retry-After", async () => {
    await eventually(async () => ((await h.t.temporal.workflow.getHandle(workflowIds.webhookCooldown(transferHook)).describe()).status.name === 'RUNNING' ? undefined : true));
    // Someone removed the backoff at the gateway itself: its cooldown runs for about 3 s more.
    expect(h.simulator.dispatcher.removeBackoff(transferHook, Date.now() + 3000).kind).toBe('removed');
    const refused = await request(transferHook);
    expect(refused).toMatchObject({ kind: 'refused', reason: 'gateway_cooldown' });
    expect((refused as { retryAfterMs: number }).retryAfterMs).toBeGreaterThan(cooldownMs);
    const log = await penaltyLog(transferHook);
    expect(log.at(-1)).toMatchObject({ action: 'REMOVAL_REFUSED' });
    // Ours now holds for the gateway's time: refused without calling the gateway.
    const spy = vi.spyOn(h.simulator.dispatcher, 'removeBackoff');
    expect(await request(transferHook)).toMatchObject({ kind: 'refused', reason: 'cooldown' });
    expect(spy).not.toHaveBeenCalled();
    spy.mockRestore();
  });
});

describe('webhook-monitor', () => {
  it('runs on its schedule: finds the interrupted queue, logs and queues it, removes the backoff as the cooldown allows; the events then arrive', async () => {
    const scheduleId = `webhook-monitor-test-${randomUUID()}`;
    // Let the cooldowns of earlier tests end first.
    await new Promise((resolve) => setTimeout(resolve, cooldownMs));
    failing = true;
    publishTo('PIX', 'PAYMENT_CREATED');
    publishTo('PIX', 'PAYMENT_CREATED');
    await eventually(async () => (h.simulator.dispatcher.queues().find((q) => q.webhookId === gatewayHook)?.interrupted === true ? true : undefined));

    const options = { taskQueue: h.t.taskQueue, intervalMs: 1000, autoHeal: true, cooldownMs, scheduleId };
    expect(await ensureWebhookMonitorSchedule(h.t.temporal, options)).toBe('created');
    // A second worker starting with the same configuration finds it as it should be (infra/schedules.ts).
    expect(await ensureWebhookMonitorSchedule(h.t.temporal, options)).toBe('unchanged');
    try {
      const removedRun = await eventually(async () => {
        const rows = await h.t.db.pool.query<{ workflow_id: string; run_id: string }>(
          `SELECT workflow_id, run_id FROM webhook_monitor_runs WHERE workflow_id LIKE $1 || '%' AND removed > 0 ORDER BY checked_at LIMIT 1`,
          [scheduleId],
        );
        return rows.rows[0];
      }, 20_000);
      const log = await penaltyLog(gatewayHook);
      expect(log.some((row) => row.action === 'INTERRUPTED' && row.source === 'monitor')).toBe(true);
      expect(log.some((row) => row.action === 'QUEUED')).toBe(true);
      expect(log.some((row) => row.action === 'REMOVED' && row.source === 'monitor')).toBe(true);

      // The fault is lifted; the next removal the cooldown allows lets the held events through.
      failing = false;
      await eventually(async () => {
        const queue = h.simulator.dispatcher.queues().find((q) => q.webhookId === gatewayHook);
        return queue !== undefined && queue.queued === 0 && !queue.interrupted ? true : undefined;
      }, 20_000);
      await h.t.temporal.workflow.getHandle(removedRun.workflow_id, removedRun.run_id).result();
      await replayAndRecord(h.t.temporal, removedRun.workflow_id, 'webhook-monitor-scheduled-removed', removedRun.run_id);
    } finally {
      failing = false;
      await h.t.temporal.schedule.getHandle(scheduleId).delete();
    }
  });

  it('checks without removing on check-webhooks, and removes on process-queue', async () => {
    await new Promise((resolve) => setTimeout(resolve, cooldownMs));
    failing = true;
    publishTo('PIX', 'PAYMENT_CREATED');
    await eventually(async () => ((h.simulator.dispatcher.queues().find((q) => q.webhookId === gatewayHook)?.penalizedRequestsCount ?? 0) > 0 ? true : undefined));
    const check = await h.t.temporal.workflow.execute(webhookMonitorWorkflow, {
      workflowId: workflowIds.webhookMonitorRun('check', randomUUID()),
      taskQueue: h.t.taskQueue,
      args: [{ mode: 'check', autoHeal: true, cooldownMs }],
    });
    expect(check.removals).toBeNull();
    expect(check.check.webhooks.find((w) => w.id === gatewayHook)).toMatchObject({ queued: true });
    expect(check.check.queued).toBeGreaterThanOrEqual(1);
    // Still failing while the queue is processed, so that the run's own check finds it penalised.
    const processId = workflowIds.webhookMonitorRun('process', randomUUID());
    const processed = await h.t.temporal.workflow.execute(webhookMonitorWorkflow, {
      workflowId: processId,
      taskQueue: h.t.taskQueue,
      args: [{ mode: 'process', autoHeal: false, cooldownMs }],
    });
    failing = false;
    expect(processed.removals).toEqual(expect.arrayContaining([expect.objectContaining({ webhookId: gatewayHook, outcome: 'removed' })]));
    await replayAndRecord(h.t.temporal, processId, 'webhook-monitor-process-removed');
  });
});
