import { randomUUID } from 'node:crypto';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../api/app.ts';
import { foldCounterDeltas } from '../../db/ops-stats.ts';
import { recordLedgerCheck } from '../../db/ledger-checks.ts';
import { upsertFlag } from '../../db/feature-flags.ts';
import { createGatewayClient } from '../../gateway/index.ts';
import { loggerOptions } from '../../infra/logger.ts';
import { rolloutBucket, truncateIdentifier } from '../../src/ops/canary.ts';
import { utcDay } from '../../src/ops/days.ts';
import { redeemBody, startSettlementHarness, type SettlementHarness } from '../support/settlement.ts';
import { hop, issue, newWallet, plcToJson } from '../support/wallet.ts';

/**
 * The spec's three dashboards: who may read them, what they count (through the simulator, a real
 * redemption), their parameters, and the canary's truncation rule in the answer and the logs.
 */
let h: SettlementHarness;
let superAdmin: Record<string, string>;
const device = { 'x-device-id': `dash-device-${randomUUID().slice(0, 8)}` };
const pixKey = '123e4567-e89b-42d3-a456-556642440000';

beforeAll(async () => {
  h = await startSettlementHarness();
  superAdmin = await h.t.adminHeaders('super_admin');
});
afterAll(async () => {
  await h?.close();
});

const get = (url: string, headers: Record<string, string> = h.admin) => h.t.app.inject({ method: 'GET', url, headers });

type StatusTotal = { status: string; currency: string; count: number; amount: string };
const countOf = (rows: StatusTotal[], status: string) => rows.find((row) => row.status === status && row.currency === 'BRL')?.count ?? 0;

describe('roles', () => {
  it('every admin reads stats and canary; acquisition answers 403 to an admin and 200 to a super_admin; no token is 401', async () => {
    expect((await get('/api/v1/admin/stats')).statusCode).toBe(200);
    expect((await get('/api/v1/admin/stats', superAdmin)).statusCode).toBe(200);
    expect((await get('/api/v1/admin/canary/status')).statusCode).toBe(200);
    const refused = await get('/api/v1/admin/acquisition');
    expect(refused.statusCode).toBe(403);
    expect(refused.json()).toMatchObject({ code: 'FORBIDDEN' });
    expect((await get('/api/v1/admin/acquisition', superAdmin)).statusCode).toBe(200);
    for (const url of ['/api/v1/admin/stats', '/api/v1/admin/canary/status', '/api/v1/admin/acquisition']) {
      expect((await get(url, {})).statusCode).toBe(401);
    }
  });
});

describe('stats', () => {
  it('counts PLCs, redemptions and their time to settle as a real redemption goes through', async () => {
    const before = (await get('/api/v1/admin/stats')).json();
    const [a, b] = [newWallet(), newWallet()];
    await h.t.deposit(a.pubkey, '50.00');
    const plc = await h.t.issuePlc(a, 1234n, device);
    await h.t.issuePlc(a, 100n, device);
    const moved = hop(plc, a, b);
    const opened = await h.t.app.inject({ method: 'POST', url: '/api/v1/redeem/', headers: device, payload: redeemBody(moved, b, pixKey) });
    expect(opened.statusCode).toBe(200);
    await h.t.temporal.workflow.getHandle(opened.json().workflow_id).result();

    const after = (await get('/api/v1/admin/stats')).json();
    expect(countOf(after.plcs.by_status, 'REDEEMED') - countOf(before.plcs.by_status, 'REDEEMED')).toBe(1);
    expect(countOf(after.plcs.by_status, 'ISSUED') - countOf(before.plcs.by_status, 'ISSUED')).toBe(1);
    expect(countOf(after.redemptions.by_status, 'SETTLED') - countOf(before.redemptions.by_status, 'SETTLED')).toBe(1);
    expect(countOf(after.redemptions.by_status, 'PENDING_PAYMENT')).toBe(countOf(before.redemptions.by_status, 'PENDING_PAYMENT'));
    expect(after.redemptions.time_to_settle.settled).toBe(before.redemptions.time_to_settle.settled + 1);
    expect(after.redemptions.time_to_settle.p50_ms).toBeGreaterThan(0);
    expect(after.redemptions.time_to_settle.p95_ms).toBeGreaterThanOrEqual(after.redemptions.time_to_settle.p50_ms);
    // The bucket holding p50 is what the histogram knows; the estimate lies inside it.
    const p50Bucket = after.redemptions.time_to_settle.p50_bucket as { above_ms: number; at_most_ms: number | null };
    expect(p50Bucket.above_ms).toBeLessThanOrEqual(after.redemptions.time_to_settle.p50_ms);
    if (p50Bucket.at_most_ms !== null) expect(after.redemptions.time_to_settle.p50_ms).toBeLessThanOrEqual(p50Bucket.at_most_ms);
    const today = after.series[after.series.length - 1];
    expect(today.date).toBe(utcDay(Date.now()));
    expect(today.plcs_issued).toBeGreaterThanOrEqual(2);
    expect(today.plcs_redeemed).toBeGreaterThanOrEqual(1);
    expect(today.settle_p50_bucket).toMatchObject({ above_ms: expect.any(Number) });
    expect(today.webhooks_received).toBeGreaterThanOrEqual(1);
    expect(after.series).toHaveLength(14);
    // Promised value: the PLC left ISSUED (still promised); the redeemed one is in redeemed.
    const redeemed = after.plcs.redeemed.find((row: { currency: string }) => row.currency === 'BRL');
    expect(redeemed.count).toBeGreaterThanOrEqual(1);

    // The counters equal a count of the tables, folded or not.
    await foldCounterDeltas(h.t.db.pool);
    const folded = (await get('/api/v1/admin/stats')).json();
    expect(folded.plcs.by_status).toEqual(after.plcs.by_status);
    const truth = await h.t.db.pool.query(
      `SELECT status, currency, count(*)::int AS count, sum(amount_minor)::text AS amount_minor FROM plcs GROUP BY 1, 2 ORDER BY 1, 2`,
    );
    expect(
      folded.plcs.by_status
        .map((row: StatusTotal) => ({ status: row.status, currency: row.currency, count: row.count }))
        .sort((x: StatusTotal, y: StatusTotal) => x.status.localeCompare(y.status)),
    ).toEqual(truth.rows.map((row) => ({ status: row.status, currency: row.currency, count: row.count })));
  });

  it('reports the latest ledger check: stale without one, then its totals and invariants', async () => {
    const first = (await get('/api/v1/admin/stats')).json();
    if (first.ledger.last_check === null) expect(first.ledger.stale).toBe(true);
    await recordLedgerCheck(h.t.db.pool, 'test');
    const stats = (await get('/api/v1/admin/stats')).json();
    expect(stats.ledger.stale).toBe(false);
    expect(stats.ledger.last_check).toMatchObject({ source: 'test', ok: true, violations_count: 0, violations: [] });
    expect(stats.ledger.last_check.totals.some((row: { bucket: string }) => row.bucket === 'AVAILABLE')).toBe(true);
    expect(stats.webhooks).toMatchObject({ dead: 0, ok: true });
    expect(stats.queues.ok).toBe(true);
  });
});

describe('acquisition', () => {
  it('counts new owners and devices, first PLC and first redemption per day, and the funnel', async () => {
    const url = (period?: string) => `/api/v1/admin/acquisition${period === undefined ? '' : `?period=${period}`}`;
    const before = (await get(url(), superAdmin)).json();
    expect(before.period).toBe('7d');
    expect(before.days).toHaveLength(7);
    const newDevice = { 'x-device-id': `acq-${randomUUID()}` };
    const [a, b] = [newWallet(), newWallet()];
    await h.t.deposit(a.pubkey, '10.00');
    const plc = issue(a, { amountMinor: 500n });
    expect((await h.t.app.inject({ method: 'POST', url: '/api/v1/plc/create', headers: newDevice, payload: { plc: plcToJson(plc) } })).statusCode).toBe(200);
    const moved = hop(plc, a, b);
    const opened = await h.t.app.inject({ method: 'POST', url: '/api/v1/redeem/', headers: newDevice, payload: redeemBody(moved, b, pixKey) });
    expect(opened.statusCode).toBe(200);
    const after = (await get(url('today'), superAdmin)).json();
    expect(after.days).toHaveLength(1);
    const beforeToday = before.days[before.days.length - 1];
    const today = after.days[0];
    expect(today.date).toBe(utcDay(Date.now()));
    // a (deposit) and b (redemption) are new owners; the device is new and made a first PLC and redemption.
    expect(today.new_owners - beforeToday.new_owners).toBe(2);
    expect(today.new_devices - beforeToday.new_devices).toBe(1);
    expect(today.owners_first_plc - beforeToday.owners_first_plc).toBe(1);
    expect(today.owners_first_redemption - beforeToday.owners_first_redemption).toBe(1);
    expect(today.devices_first_plc - beforeToday.devices_first_plc).toBe(1);
    expect(today.devices_first_redemption - beforeToday.devices_first_redemption).toBe(1);
    expect(after.funnel.steps.map((step: { step: string }) => step.step)).toEqual(['opened_account', 'issued_first_plc', 'first_redemption']);
    expect(after.funnel.steps[0].owners).toBeGreaterThanOrEqual(after.funnel.steps[1].owners);
    expect((await get(url('30d'), superAdmin)).json().days).toHaveLength(30);
    const bad = await get(url('1y'), superAdmin);
    expect(bad.statusCode).toBe(422);
    expect(bad.json().detail[0].loc).toEqual(['query', 'period']);
    await h.t.temporal.workflow.getHandle(opened.json().workflow_id).result();
  });
});

describe('canary status', () => {
  it('answers each flag with its state and whether the device is in, by a stable hash, and names pending rules', async () => {
    await upsertFlag(h.t.db.pool, { name: 'half_rollout', description: 'test flag at 50%', enabled: true, rolloutPercent: '50', updatedBy: 'test' });
    await upsertFlag(h.t.db.pool, {
      name: 'trusted_only',
      description: 'test flag for a reputation tier',
      enabled: true,
      rolloutPercent: '100',
      minReputationTier: 'gold',
      excludeBlockedKeys: true,
      updatedBy: 'test',
    });
    const deviceId = 'device-canary-0123456789';
    const response = await get(`/api/v1/admin/canary/status?device_id=${deviceId}&mesh_id=mesh-abcdefghij`);
    expect(response.statusCode).toBe(200);
    const body = response.json();
    expect(body.device_id).toBe(truncateIdentifier(deviceId));
    expect(body.mesh_id).toBe(truncateIdentifier('mesh-abcdefghij'));
    const half = body.flags.find((flag: { name: string }) => flag.name === 'half_rollout');
    const bucket = rolloutBucket('half_rollout', 'device', deviceId);
    expect(half).toMatchObject({ status: 'partial', rollout_percent: '50.00', bucket, eligible: bucket < 5000 });
    const live = body.flags.find((flag: { name: string }) => flag.name === 'plc_live_events');
    expect(live).toMatchObject({ status: 'full', eligible: true });
    const trusted = body.flags.find((flag: { name: string }) => flag.name === 'trusted_only');
    expect(trusted.eligible).toBe(false);
    expect(trusted.rules.filter((rule: { state: string }) => rule.state === 'pending').map((rule: { rule: string }) => rule.rule)).toEqual([
      'min_reputation_tier',
      'exclude_blocked_keys',
    ]);
    // The same answer every time (and on every replica): the bucket is a hash of the id.
    expect((await get(`/api/v1/admin/canary/status?device_id=${deviceId}`)).json().flags.find((f: { name: string }) => f.name === 'half_rollout').bucket).toBe(bucket);
    // Without ids: states, no eligibility.
    const bare = (await get('/api/v1/admin/canary/status')).json();
    expect(bare.flags.every((flag: { eligible: unknown }) => flag.eligible === null)).toBe(true);
    expect((await get('/api/v1/admin/canary/status?device_id=has%20space')).statusCode).toBe(422);
  });

  it('never shows or logs a full identifier, a Pix key, a token or a list', async () => {
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk, _encoding, done) {
        lines.push(...String(chunk).split('\n').filter((line) => line !== ''));
        done();
      },
    });
    const app = await buildApp({
      deps: {
        config: h.t.config,
        pool: h.t.db.pool,
        temporal: h.t.temporal,
        gateway: createGatewayClient({ baseUrl: h.t.config.GATEWAY_BASE_URL, apiKey: h.t.config.GATEWAY_API_KEY, timeoutMs: 1000 }),
      },
      logger: pino(loggerOptions('info', 'api'), sink),
    });
    try {
      const deviceId = `device-secret-${randomUUID()}`;
      const meshId = `mesh-secret-${randomUUID()}`;
      const response = await app.inject({ method: 'GET', url: `/api/v1/admin/canary/status?device_id=${deviceId}&mesh_id=${meshId}`, headers: h.admin });
      expect(response.statusCode).toBe(200);
      const token = h.admin.authorization!.slice('Bearer '.length);
      for (const text of [response.body, ...lines]) {
        expect(text).not.toContain(deviceId);
        expect(text).not.toContain(meshId);
        expect(text).not.toContain(token);
        expect(text).not.toContain(pixKey);
      }
      expect(lines.some((line) => line.includes(truncateIdentifier(deviceId)) && line.includes('canary status'))).toBe(true);
      expect(lines.some((line) => line.includes('incoming request') && line.includes(encodeURIComponent(truncateIdentifier(meshId))))).toBe(true);
      // The answer is about flags: no list of devices, keys or owners.
      expect(Object.keys(response.json()).sort()).toEqual(['device_id', 'evaluated_at', 'flags', 'mesh_id']);
    } finally {
      await app.close();
    }
  });
});
