import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { storeInboxEvent } from '../../db/inbox.ts';
import { createTestApp } from '../support/app.ts';
import { deliverGatewayWebhook, failGatewayWebhooksWhile, ownWebhookIds, startSettlementHarness, type SettlementHarness } from '../support/settlement.ts';
import { eventually } from '../support/temporal-cli.ts';
import { transferEvent } from '../support/gateway-events.ts';

/**
 * The seventeen webhook and monitor operations through app.inject, against the gateway simulator,
 * a worker and a database of their own: every operation, filter, bound and refusal, and what
 * each writes (penalty log, operation log, inbox).
 */
const cooldownMs = 4000;
const configuredUrl = 'http://127.0.0.1:9/api/v1/redemption/webhook/gateway';
const { suffix: hookSuffix, gatewayHook, transferHook } = ownWebhookIds();
let h: SettlementHarness;
let failing = false;

beforeAll(async () => {
  h = await startSettlementHarness(
    // The removals' rate limit is tested on its own app below; here it must not interfere.
    { WEBHOOK_BACKOFF_COOLDOWN_MS: String(cooldownMs), GATEWAY_TIMEOUT_MS: '1000', GATEWAY_WEBHOOK_URL: configuredUrl, RATE_LIMIT_WEBHOOK_REMOVAL_PER_MINUTE: '1000' },
    {
      webhookIdSuffix: hookSuffix,
      transferWebhookUrl: 'http://127.0.0.1:9/unreachable',
      backoffRemovalCooldownMs: 100,
      webhookInterruptAfterFailures: 4,
      webhookRetryBaseMs: 20,
      webhookRetryMaxMs: 100,
    },
    { beforeListen: failGatewayWebhooksWhile(() => failing) },
  );
});
afterEach(async () => {
  vi.restoreAllMocks();
  failing = false;
  await fetch(`${h.t.config.GATEWAY_BASE_URL}/sim/faults`, { method: 'DELETE' });
});
afterAll(async () => {
  await h?.close();
});

const get = (url: string) => h.t.app.inject({ method: 'GET', url, headers: h.admin });
const post = (url: string) => h.t.app.inject({ method: 'POST', url, headers: h.admin });
const put = (url: string) => h.t.app.inject({ method: 'PUT', url, headers: h.admin });

async function faults(body: Record<string, unknown>): Promise<void> {
  const response = await fetch(`${h.t.config.GATEWAY_BASE_URL}/sim/faults`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  expect(response.status).toBe(200);
}

async function cooldownOver(webhookId: string): Promise<void> {
  await eventually(async () => {
    const rows = await h.t.db.pool.query(
      `SELECT 1 FROM webhook_penalty_log WHERE webhook_id = $1 AND action IN ('REMOVED', 'REMOVAL_REFUSED') AND cooldown_until > now()`,
      [webhookId],
    );
    const running = await h.t.temporal.workflow
      .getHandle(`webhook-cooldown-${webhookId}`)
      .describe()
      .then((d) => d.status.name === 'RUNNING')
      .catch(() => false);
    return rows.rowCount === 0 && !running ? true : undefined;
  }, 20_000);
}

function gatewayEvent(event = 'TRANSFER_DONE') {
  return transferEvent({ event, id: `evt_${randomUUID().replaceAll('-', '')}` });
}

/** Queues an event on wh_gateway (transfer events go to wh_transfer here: a Pix charge event does not). */
function queueEventOnGatewayWebhook(): void {
  const event = gatewayEvent('TRANSFER_CREATED');
  h.simulator.dispatcher.publish({ id: event.id, event: 'PAYMENT_CREATED', resourceId: event.transfer.id, billingType: 'PIX', body: JSON.stringify(event) });
}

/** Stores dead inbox events, as a routing that gave up leaves them. */
async function deadEvents(count: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < count; i += 1) {
    const body = gatewayEvent();
    const { row } = await storeInboxEvent(h.t.db.pool, { provider: 'gateway', endpoint: 'redemption/gateway', eventId: body.id, eventType: body.event, rawBody: JSON.stringify(body) });
    await h.t.db.pool.query(`UPDATE webhook_inbox SET status = 'DEAD', attempts = 8, last_error = 'routing gave up' WHERE id = $1`, [row.id]);
    ids.push(body.id);
  }
  return ids;
}

describe('authentication', () => {
  it('refuses every webhook and monitor operation without an admin token', async () => {
    const operations: [string, string][] = [
      ['GET', '/api/v1/redemption/webhook/list'],
      ['POST', `/api/v1/redemption/webhook/remove-backoff/${gatewayHook}`],
      ['POST', '/api/v1/redemption/webhook/reactivate-all'],
      ['GET', '/api/v1/redemption/webhook/health'],
      ['PUT', `/api/v1/redemption/webhook/configure/${gatewayHook}`],
      ['GET', '/api/v1/admin/webhooks'],
      ['GET', '/api/v1/admin/webhooks/diagnostics'],
      ['GET', '/api/v1/admin/monitor/penalty-logs'],
      ['GET', '/api/v1/admin/monitor/operations'],
      ['GET', '/api/v1/admin/monitor/dashboard'],
      ['POST', `/api/v1/admin/monitor/remove-penalty/${gatewayHook}`],
      ['POST', '/api/v1/admin/monitor/check-webhooks'],
      ['POST', '/api/v1/admin/monitor/process-queue'],
      ['GET', '/api/v1/admin/monitor/inbox/stats'],
      ['GET', '/api/v1/admin/monitor/inbox/events'],
      ['POST', '/api/v1/admin/monitor/inbox/reprocess-dead'],
      ['POST', '/api/v1/admin/monitor/inbox/process-now'],
    ];
    expect(operations).toHaveLength(17);
    for (const [method, url] of operations) {
      const response = await h.t.app.inject({ method: method as 'GET', url });
      expect(response.statusCode, `${method} ${url}`).toBe(401);
    }
  });
});

describe("the backoff removals' rate limit", () => {
  it('counts remove-backoff and remove-penalty together per client address, before the admin guard: past it 429 RATE_LIMITED with Retry-After, token or not, and nothing runs', async () => {
    const t = await createTestApp({ RATE_LIMIT_WEBHOOK_REMOVAL_PER_MINUTE: '2' });
    try {
      const admin = await t.adminHeaders();
      const removeBackoff = { method: 'POST' as const, url: '/api/v1/redemption/webhook/remove-backoff/wh_limited' };
      const removePenalty = { method: 'POST' as const, url: '/api/v1/admin/monitor/remove-penalty/wh_limited' };
      // Without a token: refused by the guard, but counted first.
      expect((await t.app.inject(removeBackoff)).statusCode).toBe(401);
      expect((await t.app.inject(removePenalty)).statusCode).toBe(401);
      for (const request of [removeBackoff, { ...removePenalty, headers: admin }, removePenalty]) {
        const limited = await t.app.inject(request);
        expect(limited.statusCode, limited.body).toBe(429);
        expect(limited.json()).toMatchObject({ code: 'RATE_LIMITED' });
        expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0);
      }
      // Another address has its own count; the other operations none.
      expect((await t.app.inject({ ...removeBackoff, remoteAddress: '192.0.2.7' })).statusCode).toBe(401);
      const log = await t.app.inject({ method: 'GET', url: '/api/v1/admin/monitor/penalty-logs', headers: admin });
      expect(log.statusCode).toBe(200);
      // Nothing reached the cooldown workflow or the gateway.
      expect(log.json()).toEqual([]);
      const { rowCount } = await t.db.pool.query('SELECT 1 FROM operation_log');
      expect(rowCount).toBe(0);
    } finally {
      await t.close();
    }
  });
});

describe('gateway webhooks', () => {
  it('lists the webhooks with their events, penalties, cooldown and the newest events received through each', async () => {
    const event = gatewayEvent();
    const delivered = await deliverGatewayWebhook(h.t, event);
    expect(delivered.statusCode).toBe(200);
    const response = await get('/api/v1/redemption/webhook/list');
    expect(response.statusCode).toBe(200);
    const hooks = response.json() as Record<string, unknown>[];
    const gateway = hooks.find((w) => w.id === gatewayHook);
    expect(gateway).toMatchObject({
      endpoint: 'redemption/gateway',
      enabled: true,
      interrupted: false,
      penalized_requests_count: 0,
      subscribed_to_all: true,
      missing_events: [],
      has_auth_token: true,
      cooldown_remaining_ms: 0,
      queued_for_removal: false,
    });
    expect((gateway?.recent_events as { event_id: string }[]).map((e) => e.event_id)).toContain(event.id);
    expect(hooks.find((w) => w.id === transferHook)).toMatchObject({ endpoint: null, recent_events: [] });
    expect(response.body).not.toContain(h.t.config.GATEWAY_WEBHOOK_TOKEN);
  });

  it('answers 502 when the gateway fails and 504 when it does not answer in time, for the reads too', async () => {
    await faults({ apiErrorRate: 1 });
    const failed = await get('/api/v1/redemption/webhook/list');
    expect(failed.statusCode).toBe(502);
    expect(failed.json()).toMatchObject({ code: 'GATEWAY_ERROR' });
    await faults({ apiErrorRate: 0, apiTimeoutRate: 1, apiHangMs: 3000 });
    const slow = await get('/api/v1/redemption/webhook/health');
    expect(slow.statusCode).toBe(504);
    expect(slow.json()).toMatchObject({ code: 'GATEWAY_TIMEOUT' });
    // The dashboard still answers, saying the gateway is not available.
    const dashboard = await get('/api/v1/admin/monitor/dashboard');
    expect(dashboard.statusCode).toBe(200);
    expect(dashboard.json().webhooks).toEqual({ available: false, error_code: 'GATEWAY_TIMEOUT' });
  });

  it('configures a webhook for every PAYMENT and TRANSFER event with our URL and token, records it, and refuses unknown ids and bad ones', async () => {
    await h.t.app.inject({ method: 'GET', url: '/healthz' });
    // A webhook subscribed to payments only: transfer events would never come.
    const { createGatewayClient } = await import('../../gateway/index.ts');
    const client = createGatewayClient({ baseUrl: h.t.config.GATEWAY_BASE_URL, apiKey: h.t.config.GATEWAY_API_KEY, timeoutMs: 2000 });
    await client.updateWebhook(transferHook, { events: ['PAYMENT_CREATED'], enabled: false });
    const degraded = await get('/api/v1/redemption/webhook/health');
    expect(degraded.json()).toMatchObject({ status: 'degraded', misconfigured: 1 });
    expect(degraded.json().webhooks.find((w: { id: string }) => w.id === transferHook).missing_events).toContain('TRANSFER_DONE');

    const response = await put(`/api/v1/redemption/webhook/configure/${transferHook}`);
    expect(response.statusCode).toBe(200);
    expect(response.json()).toMatchObject({
      id: transferHook,
      url: configuredUrl,
      endpoint: 'redemption/gateway',
      enabled: true,
      interrupted: false,
      subscribed_to_all: true,
      missing_events: [],
      has_auth_token: true,
    });
    expect(response.body).not.toContain(h.t.config.GATEWAY_WEBHOOK_TOKEN);
    expect((await get('/api/v1/redemption/webhook/health')).json()).toMatchObject({ status: 'ok', misconfigured: 0 });
    const configured = await get(`/api/v1/admin/monitor/penalty-logs?webhook_id=${transferHook}&action=CONFIGURED`);
    expect(configured.json()).toEqual([expect.objectContaining({ webhook_id: transferHook, action: 'CONFIGURED', source: 'admin' })]);

    const unknown = await put('/api/v1/redemption/webhook/configure/wh_nothing');
    expect(unknown.statusCode).toBe(404);
    expect(unknown.json()).toMatchObject({ code: 'WEBHOOK_NOT_FOUND' });
    expect((await put('/api/v1/redemption/webhook/configure/not%20an%20id')).statusCode).toBe(422);
    await faults({ apiErrorRate: 1 });
    const failed = await put(`/api/v1/redemption/webhook/configure/${transferHook}`);
    expect(failed.statusCode).toBe(502);
    expect(failed.json()).toMatchObject({ code: 'GATEWAY_ERROR' });
    const logged = await get('/api/v1/admin/monitor/operations?operation_type=WEBHOOK_CONFIGURE');
    expect(logged.json().map((op: { status: string; reference_id: string }) => [op.status, op.reference_id])).toEqual([
      ['FAILED', transferHook],
      ['REFUSED', 'wh_nothing'],
      ['SUCCEEDED', transferHook],
    ]);
  });

  it('removes a backoff once per cooldown: a second removal is 429 with Retry-After and the gateway is not called; two at once call it once', async () => {
    await cooldownOver(gatewayHook);
    const spy = vi.spyOn(h.simulator.dispatcher, 'removeBackoff');
    const first = await post(`/api/v1/redemption/webhook/remove-backoff/${gatewayHook}`);
    expect(first.statusCode).toBe(200);
    expect(first.json()).toMatchObject({ webhook_id: gatewayHook, status: 'removed', webhook: { interrupted: false, penalized_requests_count: 0 } });
    const second = await post(`/api/v1/admin/monitor/remove-penalty/${gatewayHook}`);
    expect(second.statusCode).toBe(429);
    expect(second.json()).toMatchObject({ code: 'WEBHOOK_COOLDOWN', details: { reason: 'cooldown' } });
    expect(Number(second.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(Number(second.headers['retry-after'])).toBeLessThanOrEqual(cooldownMs / 1000);
    expect(spy).toHaveBeenCalledTimes(1);
    const listed = (await get('/api/v1/redemption/webhook/list')).json().find((w: { id: string }) => w.id === gatewayHook);
    expect(listed.cooldown_remaining_ms).toBeGreaterThan(0);

    await cooldownOver(transferHook);
    spy.mockClear();
    const together = await Promise.all([
      post(`/api/v1/redemption/webhook/remove-backoff/${transferHook}`),
      post(`/api/v1/admin/monitor/remove-penalty/${transferHook}`),
    ]);
    expect(together.map((r) => r.statusCode).sort()).toEqual([200, 429]);
    expect(spy).toHaveBeenCalledTimes(1);
    spy.mockRestore();

    const unknown = await post('/api/v1/admin/monitor/remove-penalty/wh_nothing');
    expect(unknown.statusCode).toBe(404);
    expect(unknown.json()).toMatchObject({ code: 'WEBHOOK_NOT_FOUND' });
    expect((await post('/api/v1/redemption/webhook/remove-backoff/bad%2Fid')).statusCode).toBe(422);
    const removals = await get('/api/v1/admin/monitor/operations?operation_type=PENALTY_REMOVAL&status=SUCCEEDED');
    expect(removals.json().length).toBeGreaterThanOrEqual(2);
  });

  it('reactivates every penalised or interrupted webhook, answering per webhook: removed, then refused with the time left', async () => {
    await cooldownOver(gatewayHook);
    failing = true;
    queueEventOnGatewayWebhook();
    await eventually(async () => ((h.simulator.dispatcher.queues().find((q) => q.webhookId === gatewayHook)?.penalizedRequestsCount ?? 0) > 0 ? true : undefined));
    const health = (await get('/api/v1/redemption/webhook/health')).json();
    expect(['degraded', 'down']).toContain(health.status);

    const first = await post('/api/v1/redemption/webhook/reactivate-all');
    expect(first.statusCode).toBe(200);
    expect(first.json().results).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ webhook_id: gatewayHook, outcome: 'removed' }),
        expect.objectContaining({ webhook_id: transferHook, outcome: 'not_needed' }),
      ]),
    );
    // Still failing: penalised again at once, and its cooldown refuses the next removal.
    await eventually(async () => ((h.simulator.dispatcher.queues().find((q) => q.webhookId === gatewayHook)?.penalizedRequestsCount ?? 0) > 0 ? true : undefined));
    const again = await post('/api/v1/redemption/webhook/reactivate-all');
    const refused = again.json().results.find((r: { webhook_id: string }) => r.webhook_id === gatewayHook);
    expect(refused).toMatchObject({ outcome: 'refused', reason: 'cooldown' });
    expect(refused.retry_after_ms).toBeGreaterThan(0);
    expect(again.json()).toMatchObject({ removed: 0, refused: 1, failed: 0 });
    failing = false;
    await cooldownOver(gatewayHook);
    await post(`/api/v1/redemption/webhook/remove-backoff/${gatewayHook}`);
    await eventually(async () => (h.simulator.dispatcher.queues().find((q) => q.webhookId === gatewayHook)?.queued === 0 ? true : undefined));
  });
});

describe('the monitor', () => {
  it('checks the queues on check-webhooks (logging and queueing a penalised one) and removes it on process-queue', async () => {
    await cooldownOver(gatewayHook);
    failing = true;
    queueEventOnGatewayWebhook();
    await eventually(async () => ((h.simulator.dispatcher.queues().find((q) => q.webhookId === gatewayHook)?.penalizedRequestsCount ?? 0) > 0 ? true : undefined));
    const check = await post('/api/v1/admin/monitor/check-webhooks');
    expect(check.statusCode).toBe(200);
    expect(check.json()).toMatchObject({ status: 'COMPLETED', report: { mode: 'check', removals: null } });
    expect(check.json().report.check.webhooks).toEqual(expect.arrayContaining([expect.objectContaining({ id: gatewayHook, queued: true })]));
    const listed = (await get('/api/v1/redemption/webhook/list')).json().find((w: { id: string }) => w.id === gatewayHook);
    expect(listed.queued_for_removal).toBe(true);
    const seen = await get(`/api/v1/admin/monitor/penalty-logs?webhook_id=${gatewayHook}&limit=5`);
    expect(seen.json().map((e: { action: string }) => e.action)).toEqual(expect.arrayContaining(['QUEUED']));

    // Still failing while the queue is processed: a delivery that succeeded first would make the
    // process run's own check find the queue healthy and take it off the queue instead.
    const processed = await post('/api/v1/admin/monitor/process-queue');
    expect(processed.statusCode).toBe(200);
    expect(processed.json().report.removals).toEqual(expect.arrayContaining([expect.objectContaining({ webhookId: gatewayHook, outcome: 'removed' })]));
    failing = false;
    await eventually(async () => (h.simulator.dispatcher.queues().find((q) => q.webhookId === gatewayHook)?.queued === 0 ? true : undefined));
    const after = (await get('/api/v1/redemption/webhook/list')).json().find((w: { id: string }) => w.id === gatewayHook);
    expect(after.queued_for_removal).toBe(false);

    const dashboard = await get('/api/v1/admin/monitor/dashboard');
    expect(dashboard.statusCode).toBe(200);
    expect(dashboard.json()).toMatchObject({
      webhooks: { available: true, total: 2 },
      monitor: { last_run: { mode: 'process', removed: 1 } },
      penalties: { queued_for_removal: 0 },
    });
    expect(dashboard.json().penalties.by_action.REMOVED).toBeGreaterThanOrEqual(1);
    expect(dashboard.json().operations.by_type).toEqual(expect.arrayContaining([expect.objectContaining({ operation_type: 'WEBHOOK_CHECK', status: 'SUCCEEDED' })]));

    await faults({ apiErrorRate: 1 });
    const down = await post('/api/v1/admin/monitor/check-webhooks');
    expect(down.statusCode).toBe(502);
    expect(down.json()).toMatchObject({ code: 'GATEWAY_ERROR' });
  });

  it('lists the penalty log and the operation log with their filters and bounds', async () => {
    const owner = `owner-${randomUUID()}`;
    await h.t.deposit(owner, '12.34');
    const deposits = await get(`/api/v1/admin/monitor/operations?owner_id=${owner}`);
    expect(deposits.statusCode).toBe(200);
    expect(deposits.json()).toEqual([
      expect.objectContaining({ operation_type: 'DEPOSIT', step: 'bookDeposit', status: 'SUCCEEDED', owner_id: owner, attempts: 1, error: null }),
    ]);
    expect(deposits.json()[0].duration_ms).toBeGreaterThanOrEqual(0);
    const all = await get('/api/v1/admin/monitor/operations');
    expect(all.json().length).toBeLessThanOrEqual(100);
    expect((await get('/api/v1/admin/monitor/operations?limit=500')).statusCode).toBe(200);
    for (const query of ['limit=501', 'limit=0', 'offset=-1', 'status=DONE', 'operation_type=deposit', 'owner_id=']) {
      const response = await get(`/api/v1/admin/monitor/operations?${query}`);
      expect(response.statusCode, query).toBe(422);
    }
    const removed = await get('/api/v1/admin/monitor/penalty-logs?action=REMOVED&limit=2');
    expect(removed.json().length).toBe(2);
    expect(removed.json().every((e: { action: string; cooldown_until: string | null }) => e.action === 'REMOVED' && e.cooldown_until !== null)).toBe(true);
    const page2 = await get('/api/v1/admin/monitor/penalty-logs?action=REMOVED&limit=1&offset=1');
    expect(page2.json()[0].id).toBe(removed.json()[1].id);
    for (const query of ['limit=501', 'action=GONE', 'webhook_id=a%20b']) {
      expect((await get(`/api/v1/admin/monitor/penalty-logs?${query}`)).statusCode, query).toBe(422);
    }
  });
});

describe('the inbox', () => {
  it('reprocesses dead events, each once, when two operators press at once', async () => {
    const ids = await deadEvents(5);
    const [a, b] = await Promise.all([post('/api/v1/admin/monitor/inbox/reprocess-dead?limit=10'), post('/api/v1/admin/monitor/inbox/reprocess-dead?limit=10')]);
    expect(a.statusCode).toBe(200);
    expect(b.statusCode).toBe(200);
    const taken = [...a.json().events, ...b.json().events].map((e: { event_id: string }) => e.event_id);
    expect(taken.sort()).toEqual([...ids].sort());
    for (const id of ids) {
      expect(await h.t.temporal.workflow.getHandle(`webhook-gateway-${id}`).result()).toBe('IGNORED');
    }
    const rows = await h.t.db.pool.query(`SELECT status, reprocessed FROM webhook_inbox WHERE event_id = ANY($1::text[])`, [ids]);
    expect(rows.rows.every((row) => row.status === 'IGNORED' && row.reprocessed === 1)).toBe(true);
    const none = await post('/api/v1/admin/monitor/inbox/reprocess-dead');
    expect(none.json()).toEqual({ events: [], started: 0, more: false });
    for (const limit of ['0', '51', 'x']) {
      expect((await post(`/api/v1/admin/monitor/inbox/reprocess-dead?limit=${limit}`)).statusCode).toBe(422);
    }
    const few = await deadEvents(3);
    const limited = await post('/api/v1/admin/monitor/inbox/reprocess-dead?limit=2');
    expect(limited.json().events.map((e: { event_id: string }) => e.event_id).sort()).toEqual(few.slice(0, 2).sort());
  });

  it('processes events stored but never started now, and shows the inbox by status and event type', async () => {
    const body = gatewayEvent();
    // What a process that died between storing an event and starting its workflow leaves behind.
    await storeInboxEvent(h.t.db.pool, { provider: 'gateway', endpoint: 'redemption/gateway', eventId: body.id, eventType: body.event, rawBody: JSON.stringify(body) });
    const stats = await get('/api/v1/admin/monitor/inbox/stats');
    expect(stats.statusCode).toBe(200);
    expect(stats.json().waiting).toBeGreaterThanOrEqual(1);
    expect(stats.json().oldest_waiting_ms).toBeGreaterThanOrEqual(0);
    expect(stats.json().by_event_type).toEqual(expect.arrayContaining([expect.objectContaining({ event_type: 'TRANSFER_DONE' })]));
    const now = await post('/api/v1/admin/monitor/inbox/process-now');
    expect(now.statusCode).toBe(200);
    expect(now.json().events).toEqual(expect.arrayContaining([expect.objectContaining({ event_id: body.id, outcome: 'started' })]));
    expect(await h.t.temporal.workflow.getHandle(`webhook-gateway-${body.id}`).result()).toBe('IGNORED');

    const dead = await get('/api/v1/admin/monitor/inbox/events?status=DEAD');
    expect(dead.statusCode).toBe(200);
    expect(dead.json().every((e: { status: string }) => e.status === 'DEAD')).toBe(true);
    const byType = await get('/api/v1/admin/monitor/inbox/events?event_type=TRANSFER_DONE&limit=3');
    expect(byType.json().length).toBeLessThanOrEqual(3);
    expect(byType.json().every((e: { event_type: string }) => e.event_type === 'TRANSFER_DONE')).toBe(true);
    expect(byType.json()[0]).not.toHaveProperty('raw_body');
    const times = byType.json().map((e: { received_at: string }) => e.received_at);
    expect([...times].sort().reverse()).toEqual(times);
    for (const query of ['status=LOST', 'limit=501', 'event_type=a%20b']) {
      expect((await get(`/api/v1/admin/monitor/inbox/events?${query}`)).statusCode, query).toBe(422);
    }
  });

  it('lists received webhooks by provider and diagnoses each provider without showing its token', async () => {
    await deadEvents(1);
    const refused = await h.t.app.inject({ method: 'POST', url: '/api/v1/redemption/webhook/gateway', headers: { 'gateway-access-token': 'wrong-token' }, payload: gatewayEvent() });
    expect(refused.statusCode).toBe(401);
    const diagnostics = await get('/api/v1/admin/webhooks/diagnostics');
    expect(diagnostics.statusCode).toBe(200);
    const gateway = diagnostics.json().providers.find((p: { provider: string }) => p.provider === 'gateway');
    expect(gateway).toMatchObject({ token_configured: true });
    expect(gateway.refused_bad_token).toBeGreaterThanOrEqual(1);
    expect(gateway.last_delivered_at).not.toBeNull();
    expect(gateway.dead_in_window).toBeGreaterThanOrEqual(1);
    expect(gateway.dead_rate).toBeGreaterThan(0);
    expect(gateway.dead_rate).toBeLessThanOrEqual(1);
    expect(diagnostics.json().providers.find((p: { provider: string }) => p.provider === 'supabase')).toMatchObject({ token_configured: false, events_total: 0 });
    expect(diagnostics.body).not.toContain(h.t.config.GATEWAY_WEBHOOK_TOKEN);

    const listed = await get('/api/v1/admin/webhooks?provider=gateway&limit=5');
    expect(listed.statusCode).toBe(200);
    expect(listed.json().length).toBe(5);
    expect(listed.json().every((e: { provider: string }) => e.provider === 'gateway')).toBe(true);
    expect((await get('/api/v1/admin/webhooks?provider=supabase')).json()).toEqual([]);
    expect((await get('/api/v1/admin/webhooks?limit=200')).statusCode).toBe(200);
    for (const query of ['provider=stripe', 'limit=201', 'limit=0']) {
      expect((await get(`/api/v1/admin/webhooks?${query}`)).statusCode, query).toBe(422);
    }
  });
});
