import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { createServiceMetrics, serveMetrics } from '../../infra/metrics.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postTransaction } from '../../db/ledger.ts';
import { withTransaction } from '../../db/pool.ts';
import { apiMetricsServed, loadConfig } from '../../infra/config.ts';
import { moneyModel } from '../../src/ledger/money-model.ts';
import { createTestApp, type TestApp } from '../support/app.ts';
import { cancelBody, hop, issue, newWallet, plcToJson } from '../support/wallet.ts';

/**
 * The Prometheus metrics (infra/metrics.ts, docs/operations.md): GET /metrics in the text format,
 * labels from route templates only, business counters counted once where they commit (a replay, a
 * retried write or a rolled-back transaction counts nothing), and the endpoint's protection.
 */
let t: TestApp;
const device = { 'x-device-id': 'device-metrics' };

beforeAll(async () => {
  t = await createTestApp();
  await t.startWorker();
});
afterAll(async () => {
  await t?.close();
});

async function scrape(app = t.app, headers: Record<string, string> = {}): Promise<string> {
  const response = await app.inject({ method: 'GET', url: '/metrics', headers });
  expect(response.statusCode, response.body).toBe(200);
  expect(response.headers['content-type']).toContain('text/plain');
  return response.body;
}

/** The value of one series (0 when absent): `name{label="value",...}` with the labels in any order. */
function valueOf(text: string, name: string, labels: Record<string, string> = {}): number {
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    const wanted = Object.entries(labels).every(([key, value]) => line.includes(`${key}="${value}"`));
    if (wanted) return Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return 0;
}

describe('GET /metrics', () => {
  it('observes requests by route template, never by the ids in the path', async () => {
    const tokenId = randomUUID();
    expect((await t.app.inject({ method: 'GET', url: `/api/v1/plc/${tokenId}/status` })).statusCode).toBe(404);
    const text = await scrape();
    expect(valueOf(text, 'plc_http_request_duration_seconds_count', { route: '/api/v1/plc/:token_id/status', status_code: '404', method: 'GET' })).toBe(1);
    expect(text).not.toContain(tokenId);
    expect(text).toContain('plc_http_request_duration_seconds_bucket{le="0.005"');
    // The database gauges are read at scrape time.
    expect(valueOf(text, 'plc_metrics_database_up')).toBe(1);
    expect(text).toMatch(/^plc_webhook_inbox_dead\{process="api"\} 0$/m);
  });

  it('counts postings and PLC events once, where they commit: replays and retries count nothing', async () => {
    const before = await scrape();
    const [a, b] = [newWallet(), newWallet()];
    const key = randomUUID();
    const admin = await t.adminHeaders();
    const deposit = () =>
      t.app.inject({
        method: 'POST',
        url: '/api/v1/balance/deposit',
        headers: { ...admin, 'idempotency-key': key },
        payload: { owner_id: a.pubkey, amount: '20.00', currency: 'BRL' },
      });
    expect((await deposit()).statusCode).toBe(200);
    const replay = await deposit();
    expect(replay.statusCode).toBe(200);
    expect(replay.headers['x-idempotency-replayed']).toBe('true');

    const plc = issue(a, { amountMinor: 500n });
    const create = () => t.app.inject({ method: 'POST', url: '/api/v1/plc/create', headers: device, payload: { plc: plcToJson(plc) } });
    expect((await create()).statusCode).toBe(200);
    expect((await create()).statusCode).toBe(200); // the same PLC again: answered, not created again
    const other = issue(a, { amountMinor: 100n });
    expect((await t.app.inject({ method: 'POST', url: '/api/v1/plc/create', headers: device, payload: { plc: plcToJson(other) } })).statusCode).toBe(200);
    const moved = hop(plc, a, b);
    const transfer = () => t.app.inject({ method: 'POST', url: '/api/v1/transfer/', headers: device, payload: { plc: plcToJson(moved) } });
    expect((await transfer()).statusCode).toBe(200);
    expect((await transfer()).statusCode).toBe(200); // the same hop again: already registered
    const cancelled = await t.app.inject({
      method: 'POST',
      url: `/api/v1/plc/${other.commitment.tokenId}/cancel`,
      headers: device,
      payload: cancelBody(other, a),
    });
    expect(cancelled.statusCode, cancelled.body).toBe(200);

    const after = await scrape();
    const delta = (name: string, labels: Record<string, string>) => valueOf(after, name, labels) - valueOf(before, name, labels);
    expect(delta('plc_ledger_postings_total', { tx_type: 'DEPOSIT' })).toBe(1);
    expect(delta('plc_ledger_postings_total', { tx_type: 'PLC_ISSUED' })).toBe(2);
    expect(delta('plc_plc_events_total', { event: 'created' })).toBe(2);
    expect(delta('plc_plc_events_total', { event: 'transferred' })).toBe(1);
    expect(delta('plc_plc_events_total', { event: 'cancelled' })).toBe(1);
    expect(delta('plc_idempotent_replays_total', { route: '/api/v1/balance/deposit' })).toBe(1);
  });

  it('a rolled-back transaction counts nothing; a posting retried after its commit counts once', async () => {
    const owner = newWallet().pubkey;
    const posting = moneyModel.deposit({ ownerId: owner, currency: 'BRL', amountMinor: 100n });
    const request = { idempotencyKey: `metrics-test:${randomUUID()}`, txType: posting.txType, entries: posting.entries };
    const before = valueOf(await scrape(), 'plc_ledger_postings_total', { tx_type: posting.txType });
    await expect(
      withTransaction(t.db.pool, async (client) => {
        await postTransaction(client, request);
        throw new Error('rolled back on purpose');
      }),
    ).rejects.toThrow('rolled back on purpose');
    expect(valueOf(await scrape(), 'plc_ledger_postings_total', { tx_type: posting.txType })).toBe(before);
    await withTransaction(t.db.pool, (client) => postTransaction(client, request));
    await withTransaction(t.db.pool, (client) => postTransaction(client, request)); // a retry: finds it booked
    await postTransaction(t.db.pool, request);
    expect(valueOf(await scrape(), 'plc_ledger_postings_total', { tx_type: posting.txType })).toBe(before + 1);
  });
});

describe('protection of GET /metrics', () => {
  it('the separate bind serves GET /metrics alone, without a token', async () => {
    const metrics = createServiceMetrics({ process: 'worker', defaultMetrics: false });
    const server = await serveMetrics(metrics, { host: '127.0.0.1', port: 0 });
    try {
      const { port } = server.address() as AddressInfo;
      metrics.observeGatewayCall({ operation: 'createTransfer', seconds: 0.2 });
      metrics.observeGatewayCall({ operation: 'createTransfer', seconds: 0.1, error: { status: 503, code: 'x' } });
      const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
      expect(valueOf(text, 'plc_gateway_call_duration_seconds_count', { operation: 'createTransfer', outcome: 'ok' })).toBe(1);
      expect(valueOf(text, 'plc_gateway_call_duration_seconds_count', { operation: 'createTransfer', outcome: 'http_5xx' })).toBe(1);
      expect((await fetch(`http://127.0.0.1:${port}/api/v1/balance/x`)).status).toBe(404);
      // No probes without a health source (the API serves its own on its main port).
      expect((await fetch(`http://127.0.0.1:${port}/livez`)).status).toBe(404);
    } finally {
      server.close();
      metrics.close();
    }
  });

  it("the worker's bind answers Kubernetes' probes: /livez always, /readyz while its workers poll", async () => {
    const metrics = createServiceMetrics({ process: 'worker', defaultMetrics: false });
    let ready = false;
    const server = await serveMetrics(metrics, { host: '127.0.0.1', port: 0 }, { ready: () => ready });
    try {
      const { port } = server.address() as AddressInfo;
      expect((await fetch(`http://127.0.0.1:${port}/livez`)).status).toBe(200);
      expect((await fetch(`http://127.0.0.1:${port}/readyz`)).status).toBe(503);
      ready = true;
      const answer = await fetch(`http://127.0.0.1:${port}/readyz`);
      expect(answer.status).toBe(200);
      expect(await answer.json()).toEqual({ status: 'ok' });
      expect((await fetch(`http://127.0.0.1:${port}/metrics`)).status).toBe(200);
      expect((await fetch(`http://127.0.0.1:${port}/readyz`, { method: 'POST' })).status).toBe(404);
    } finally {
      server.close();
      metrics.close();
    }
  });

  it('asks for the bearer token when METRICS_TOKEN is set; counts the rate limiter\'s refusals by route', async () => {
    const token = `metrics-${randomUUID()}`;
    const guarded = await createTestApp({ METRICS_TOKEN: token, RATE_LIMIT_TRANSFER_PER_MINUTE: '1' });
    try {
      const transfer = () => guarded.app.inject({ method: 'POST', url: '/api/v1/transfer/', headers: device, payload: { plc: {} } });
      expect((await transfer()).statusCode).toBe(422);
      expect((await transfer()).statusCode).toBe(429);
      const counted = await scrape(guarded.app, { authorization: `Bearer ${token}` });
      expect(valueOf(counted, 'plc_rate_limit_refusals_total', { route: '/api/v1/transfer/' })).toBe(1);
      expect((await guarded.app.inject({ method: 'GET', url: '/metrics' })).statusCode).toBe(401);
      expect((await guarded.app.inject({ method: 'GET', url: '/metrics', headers: { authorization: 'Bearer wrong-token-of-some-length' } })).statusCode).toBe(401);
      expect(await scrape(guarded.app, { authorization: `Bearer ${token}` })).toContain('plc_http_request_duration_seconds');
    } finally {
      await guarded.close();
    }
  });

  it('is not served in production without a token, nor anywhere when METRICS_ENABLED=false', async () => {
    const production = {
      APP_ENV: 'production',
      DATABASE_URL: 'postgres://u@db/x',
      TEMPORAL_ADDRESS: 'temporal:7233',
      JWT_SECRET: 'x'.repeat(32),
      PIN_PEPPER: 'p'.repeat(32),
      GATEWAY_API_KEY: 'live-key',
      GATEWAY_WEBHOOK_TOKEN: 'live-webhook-token',
      BLOCKLIST_SIGNING_SEED: '5a'.repeat(32),
    };
    expect(apiMetricsServed(loadConfig(production))).toBe(false);
    expect(apiMetricsServed(loadConfig({ ...production, METRICS_TOKEN: 't'.repeat(16) }))).toBe(true);
    expect(apiMetricsServed(loadConfig({}))).toBe(true);
    const off = await createTestApp({ METRICS_ENABLED: 'false' });
    try {
      expect((await off.app.inject({ method: 'GET', url: '/metrics' })).statusCode).toBe(404);
    } finally {
      await off.close();
    }
  });
});
