import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { ensureWebhookMonitorSchedule } from '../../worker/schedules.ts';
import type { PublishedEvent } from '../../simulator/webhook-queue.ts';
import type { Plc } from '../../src/protocol/index.ts';
import { redeemBody, startSettlementHarness, type SettlementHarness } from '../support/settlement.ts';
import { eventually } from '../support/temporal-cli.ts';
import { hop, issue, newWallet, plcToJson, type TestWallet } from '../support/wallet.ts';

/**
 * The end-to-end proof of the webhook monitor. Our webhook endpoint fails (a fault the test
 * injects into the service) while redemptions are in flight; the gateway simulator penalises and
 * then interrupts the queue, holding the transfer events; the scheduled monitor finds it and
 * logs it; the fault is lifted; the monitor removes the backoff as its cooldown allows; the held
 * events arrive in order and every redemption settles exactly once; `ledger verify` is clean. A
 * second removal within the cooldown is refused without calling the gateway. Durations are
 * inputs: seconds here.
 */
const cooldownMs = 3000;
const scheduleId = `webhook-monitor-e2e-${randomUUID()}`;
const device = { 'x-device-id': 'device-webhook-outage' };
const pixKey = 'payee@example.com';
// Webhook ids of this file's own simulator: the cooldown workflows are named by them, on a dev server other files share.
const hookSuffix = `_${randomUUID().slice(0, 8)}`;
const gatewayHook = `wh_gateway${hookSuffix}`;
let h: SettlementHarness;
let failing = false;
let refusedByFault = 0;

beforeAll(async () => {
  h = await startSettlementHarness(
    {
      // Redemptions wait for their webhook (they would ask the gateway only after 2 minutes).
      REDEMPTION_WEBHOOK_WAIT_MS: '120000',
      WEBHOOK_BACKOFF_COOLDOWN_MS: String(cooldownMs),
    },
    { webhookIdSuffix: hookSuffix, webhookInterruptAfterFailures: 6, webhookRetryBaseMs: 50, webhookRetryMaxMs: 300, backoffRemovalCooldownMs: 500 },
    {
      beforeListen: (app) => {
        // The fault: our webhook endpoint answers 503 while `failing` is set.
        app.addHook('onRequest', async (request, reply) => {
          if (failing && request.method === 'POST' && request.url.startsWith('/api/v1/redemption/webhook/gateway')) {
            refusedByFault += 1;
            return reply.code(503).send({ code: 'SERVICE_UNAVAILABLE', message: 'fault injected by the test' });
          }
          return undefined;
        });
      },
    },
  );
});
afterEach(() => {
  vi.restoreAllMocks();
});
afterAll(async () => {
  failing = false;
  await h?.t.temporal.schedule.getHandle(scheduleId).delete().catch(() => {});
  await h?.close();
});

async function transferable(amountMinor: bigint): Promise<{ plc: Plc; bearer: TestWallet }> {
  const [issuer, bearer] = [newWallet(), newWallet()];
  await h.t.deposit(issuer.pubkey, '50.00');
  const plc = issue(issuer, { amountMinor });
  const created = await h.t.app.inject({ method: 'POST', url: '/api/v1/plc/create', headers: device, payload: { plc: plcToJson(plc) } });
  expect(created.statusCode).toBe(200);
  return { plc: hop(plc, issuer, bearer), bearer };
}

function ledgerVerify(databaseUrl: string): Promise<{ code: number; stdout: string }> {
  const script = fileURLToPath(new URL('../../scripts/ledger.ts', import.meta.url));
  return new Promise((resolve) => {
    execFile(process.execPath, [script, 'verify'], { env: { PATH: process.env.PATH, DATABASE_URL: databaseUrl }, timeout: 30_000 }, (error, stdout) => {
      resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : -1, stdout });
    });
  });
}

describe('a paused webhook queue', () => {
  it('is found by the monitor, healed once the endpoint works again, and every redemption settles exactly once', async () => {
    // Calls through; records every event the gateway queues, in order.
    const publish = vi.spyOn(h.simulator.dispatcher, 'publish');
    const startedAt = Date.now();
    failing = true;

    const redemptions: { redemptionId: string; workflowId: string; tokenId: string }[] = [];
    for (const amountMinor of [700n, 800n, 900n]) {
      const { plc, bearer } = await transferable(amountMinor);
      const response = await h.t.app.inject({ method: 'POST', url: '/api/v1/redeem/', headers: device, payload: redeemBody(plc, bearer, pixKey) });
      expect(response.statusCode).toBe(200);
      expect(response.json()).toMatchObject({ status: 'PENDING_PAYMENT' });
      redemptions.push({ redemptionId: response.json().redemption_id, workflowId: response.json().workflow_id, tokenId: plc.commitment.tokenId });
    }

    // The gateway pays out, but cannot tell us: it penalises the queue, then interrupts it.
    await eventually(async () => (h.simulator.dispatcher.queues().find((q) => q.webhookId === gatewayHook)?.interrupted === true ? true : undefined), 20_000);
    // The monitor, every second, healing by itself. (Scheduled only now: started earlier, its
    // removals could keep a slow machine's queue from ever reaching the interruption.)
    await ensureWebhookMonitorSchedule(h.t.temporal, { taskQueue: h.t.taskQueue, intervalMs: 1000, autoHeal: true, cooldownMs, scheduleId });
    // The monitor finds it and logs it.
    await eventually(async () => {
      const rows = await h.t.db.pool.query(`SELECT 1 FROM webhook_penalty_log WHERE webhook_id = '${gatewayHook}' AND action = 'INTERRUPTED' AND source = 'monitor'`);
      return rows.rowCount !== null && rows.rowCount > 0 ? true : undefined;
    }, 20_000);
    const pending = await h.t.db.pool.query(`SELECT status FROM redemptions WHERE id = ANY($1::uuid[])`, [redemptions.map((r) => r.redemptionId)]);
    expect(pending.rows.map((row) => row.status)).toEqual(['PENDING_PAYMENT', 'PENDING_PAYMENT', 'PENDING_PAYMENT']);
    expect(refusedByFault).toBeGreaterThanOrEqual(6);

    // The fault is lifted; the monitor removes the backoff when the cooldown allows, and the held events arrive.
    failing = false;
    for (const redemption of redemptions) {
      expect(await h.t.temporal.workflow.getHandle(redemption.workflowId).result()).toMatchObject({ status: 'SETTLED' });
    }
    expect(Date.now() - startedAt).toBeLessThan(60_000);

    // Every redemption settled exactly once, with one payout each.
    const settled = await h.t.db.pool.query<{ reference_id: string; n: number }>(
      `SELECT reference_id, count(*)::int AS n FROM ledger_transactions WHERE tx_type = 'REDEEM_SETTLED' AND reference_id = ANY($1::text[]) GROUP BY reference_id`,
      [redemptions.map((r) => r.redemptionId)],
    );
    expect(settled.rows.map((row) => row.n)).toEqual([1, 1, 1]);
    for (const redemption of redemptions) {
      expect(h.simulator.state.snapshot(1000).transfers.filter((t) => t.description === `PLC ${redemption.tokenId}`)).toHaveLength(1);
    }

    // The events arrived in the order the gateway queued them: the queue's deliveries, first
    // delivery of each event, in publish order.
    await eventually(async () => {
      const queue = h.simulator.dispatcher.queues().find((q) => q.webhookId === gatewayHook);
      return queue?.queued === 0 ? true : undefined;
    }, 20_000);
    const delivered: string[] = [];
    for (const entry of h.simulator.dispatcher.log(2000)) {
      if (entry.webhookId === gatewayHook && entry.outcome === 'DELIVERED' && !delivered.includes(entry.eventId)) delivered.push(entry.eventId);
    }
    const published: PublishedEvent[] = publish.mock.calls.map(([event]) => event);
    const ours = published.map((event) => event.id);
    expect(delivered.filter((id) => ours.includes(id))).toEqual(ours);
    const transferEvents = published.filter((event) => event.event.startsWith('TRANSFER_'));
    expect(transferEvents.length).toBeGreaterThanOrEqual(9);

    // What the operators see: the penalty found and its removal by the monitor, the removal in the operation log.
    const log = await h.t.db.pool.query<{ action: string; source: string }>(
      `SELECT action, source FROM webhook_penalty_log WHERE webhook_id = '${gatewayHook}' ORDER BY id`,
    );
    expect(log.rows).toEqual(expect.arrayContaining([{ action: 'QUEUED', source: 'monitor' }, { action: 'REMOVED', source: 'monitor' }]));
    const removals = await h.t.db.pool.query(`SELECT status FROM operation_log WHERE operation_type = 'PENALTY_REMOVAL' AND reference_id = '${gatewayHook}'`);
    expect(removals.rows.length).toBeGreaterThanOrEqual(1);
    expect(removals.rows.every((row) => row.status === 'SUCCEEDED')).toBe(true);
    const routed = await h.t.db.pool.query(`SELECT count(*)::int AS n FROM operation_log WHERE operation_type = 'WEBHOOK_ROUTING' AND status = 'SUCCEEDED'`);
    expect(routed.rows[0].n).toBeGreaterThanOrEqual(3);

    // `ledger verify`, as an operator runs it.
    const verify = await ledgerVerify(h.t.db.url);
    expect(verify.code).toBe(0);
    publish.mockRestore();
  });

  it('refuses a second removal within the cooldown with 429 and Retry-After, without calling the gateway', async () => {
    failing = false;
    // Wait for the monitor's last removal's cooldown to end.
    await eventually(async () => {
      const list = await h.t.app.inject({ method: 'GET', url: '/api/v1/redemption/webhook/list', headers: h.admin });
      const hook = (list.json() as { id: string; cooldown_remaining_ms: number }[]).find((w) => w.id === gatewayHook);
      return hook?.cooldown_remaining_ms === 0 ? true : undefined;
    }, 20_000);
    const spy = vi.spyOn(h.simulator.dispatcher, 'removeBackoff');
    const first = await h.t.app.inject({ method: 'POST', url: `/api/v1/admin/monitor/remove-penalty/${gatewayHook}`, headers: h.admin });
    expect(first.statusCode).toBe(200);
    expect(first.json()).toMatchObject({ webhook_id: gatewayHook, status: 'removed' });
    const second = await h.t.app.inject({ method: 'POST', url: `/api/v1/redemption/webhook/remove-backoff/${gatewayHook}`, headers: h.admin });
    expect(second.statusCode).toBe(429);
    expect(second.json()).toMatchObject({ code: 'WEBHOOK_COOLDOWN' });
    const retryAfter = Number(second.headers['retry-after']);
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(Math.ceil(cooldownMs / 1000));
    expect(spy).toHaveBeenCalledTimes(1);
    spy.mockRestore();
  });
});
