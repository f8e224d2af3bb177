import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRedemptionActivities } from '../../activities/redemption.ts';
import { findViolations } from '../../db/ledger.ts';
import { finishRedemption, recordGatewayTransfer } from '../../db/redemptions.ts';
import { businessStatusKey, deviceIdKey, ownerIdKey, referenceIdKey } from '../../workflows/search-attributes.ts';
import { createTestApp, type TestApp } from '../support/app.ts';
import { hop, issue, limitIncreaseBody, newWallet, plcToJson, type TestWallet } from '../support/wallet.ts';
import { openRedemptionInput } from '../support/settlement.ts';

/**
 * Progressive limits and reputation through the API (docs/limits-and-fees.md): a device's limits
 * and owners, PLC create under them (20 concurrent creates past the daily limit), increase
 * requests and their review, and the reputation routes. Ceilings here: 1,000.00 per PLC and
 * 2,000.00 per 24 hours, so a new owner (STANDARD) has 500.00 and 1,000.00.
 */
let t: TestApp;
let admin: Record<string, string>;

beforeAll(async () => {
  t = await createTestApp({ PLC_MAX_AMOUNT_MINOR: '100000', PLC_DAILY_LIMIT_MINOR: '200000', RATE_LIMIT_PLC_PER_MINUTE: '100000' });
  await t.startWorker();
  admin = await t.adminHeaders();
});
afterAll(async () => {
  await t?.close();
});

const deviceOf = () => `device-${randomUUID().slice(0, 8)}`;

function create(wallet: TestWallet, amountMinor: bigint, deviceId: string) {
  return t.app.inject({ method: 'POST', url: '/api/v1/plc/create', headers: { 'x-device-id': deviceId }, payload: { plc: plcToJson(issue(wallet, { amountMinor })) } });
}
const limitsOf = (deviceId: string, query = '') => t.app.inject({ method: 'GET', url: `/api/v1/plc/limits/${deviceId}${query}` });
const postIncrease = (payload: Record<string, unknown>) => t.app.inject({ method: 'POST', url: '/api/v1/plc/limits/increase-request', payload });
type IncreaseFields = Parameters<typeof limitIncreaseBody>[1];
/** An increase request signed by `owner` (or by `options.signer`). */
const requestIncrease = (owner: TestWallet, fields: IncreaseFields, options: Parameters<typeof limitIncreaseBody>[2] = {}) => postIncrease(limitIncreaseBody(owner, fields, options));
const decide = (requestId: string, payload: Record<string, unknown>, headers = admin) =>
  t.app.inject({ method: 'POST', url: `/api/v1/admin/plc-limits/requests/${requestId}/decide`, headers, payload });
const adminGet = (url: string, headers = admin) => t.app.inject({ method: 'GET', url: `/api/v1/admin${url}`, headers });

async function ownerWithDevice(fundAmount = '5000.00'): Promise<{ wallet: TestWallet; deviceId: string }> {
  const wallet = newWallet();
  const deviceId = deviceOf();
  await t.deposit(wallet.pubkey, fundAmount);
  expect((await create(wallet, 100n, deviceId)).statusCode).toBe(200);
  return { wallet, deviceId };
}

describe('GET /api/v1/plc/limits/{device_id}', () => {
  it("answers the device's owner, tier, effective limits and the last 24 hours' usage", async () => {
    const { wallet, deviceId } = await ownerWithDevice();
    const response = await limitsOf(deviceId);
    expect(response.statusCode).toBe(200);
    expect(response.json()).toEqual({
      device_id: deviceId,
      owner_id: wallet.pubkey,
      registered: true,
      tier: 'STANDARD',
      score: 500,
      settled_volume: '0.00',
      max_amount: '500.00',
      daily_limit: '1000.00',
      source: 'TIER',
      automatic: { max_amount: '500.00', daily_limit: '1000.00' },
      ceiling: { max_amount: '1000.00', daily_limit: '2000.00' },
      override: null,
      usage: [{ currency: 'BRL', issued_last_24h: '1.00', remaining: '999.00' }],
      other_owners: [],
      increase_request: 'POST /api/v1/plc/limits/increase-request',
    });
  });

  it('a device used by two owners answers for the latest one, lists the other, and answers either by owner_id; each keeps its own limits', async () => {
    const { wallet: first, deviceId } = await ownerWithDevice();
    const second = newWallet();
    await t.deposit(second.pubkey, '100.00');
    expect((await create(second, 300n, deviceId)).statusCode).toBe(200);
    const latest = (await limitsOf(deviceId)).json();
    expect(latest).toMatchObject({ owner_id: second.pubkey, usage: [{ issued_last_24h: '3.00' }] });
    expect(latest.other_owners).toEqual([expect.objectContaining({ owner_id: first.pubkey, plcs: 1 })]);
    const earlier = await limitsOf(deviceId, `?owner_id=${first.pubkey}`);
    expect(earlier.json()).toMatchObject({ owner_id: first.pubkey, usage: [{ issued_last_24h: '1.00' }] });
    // An owner that never used this device: the limits its first PLC here would get.
    const stranger = newWallet().pubkey;
    const unused = await limitsOf(deviceId, `?owner_id=${stranger}`);
    expect(unused.statusCode).toBe(200);
    expect(unused.json()).toMatchObject({ owner_id: stranger, registered: false, tier: 'STANDARD', max_amount: '500.00', daily_limit: '1000.00', usage: [], override: null });
    expect(unused.json().other_owners.map((row: { owner_id: string }) => row.owner_id).sort()).toEqual([first.pubkey, second.pubkey].sort());
  });

  it('a device that never registered a PLC answers the default limits its first PLC would get (not 404); 422 for a malformed device id or owner', async () => {
    const deviceId = deviceOf();
    const unknown = await limitsOf(deviceId);
    expect(unknown.statusCode).toBe(200);
    expect(unknown.json()).toEqual({
      device_id: deviceId,
      owner_id: null,
      registered: false,
      tier: 'STANDARD',
      score: 500,
      settled_volume: '0.00',
      max_amount: '500.00',
      daily_limit: '1000.00',
      source: 'TIER',
      automatic: { max_amount: '500.00', daily_limit: '1000.00' },
      ceiling: { max_amount: '1000.00', daily_limit: '2000.00' },
      override: null,
      usage: [],
      other_owners: [],
      increase_request: 'POST /api/v1/plc/limits/increase-request',
    });
    // They are the limits that apply: a new owner's first PLC on that device is held to them.
    const wallet = newWallet();
    await t.deposit(wallet.pubkey, '5000.00');
    // The 422 carries the refusal's details as its item's ctx (docs/errors.md), amounts as decimal strings.
    expect((await create(wallet, 50_001n, deviceId)).json()).toEqual({
      detail: [
        {
          loc: ['body', 'amount'],
          msg: expect.any(String),
          type: 'PLC_AMOUNT_ABOVE_MAXIMUM',
          ctx: { limit: 'max_amount', amount_max_minor: '50000', increase_request: 'POST /api/v1/plc/limits/increase-request' },
        },
      ],
    });
    expect((await create(wallet, 50_000n, deviceId)).statusCode).toBe(200);
    // The admin's view of a device's requests still refuses a device it never saw.
    expect((await adminGet(`/plc-limits/${deviceOf()}`)).json()).toMatchObject({ code: 'DEVICE_NOT_FOUND' });
    expect((await limitsOf('bad%20device')).statusCode).toBe(422);
    expect((await limitsOf('device-1', '?owner_id=XYZ')).statusCode).toBe(422);
  });
});

describe('PLC create under the progressive limits', () => {
  it('20 concurrent creates that together pass the daily limit: exactly as many as fit go through, the rest are refused naming the limit and what is left', async () => {
    const wallet = newWallet();
    const deviceId = deviceOf();
    await t.deposit(wallet.pubkey, '5000.00');
    // STANDARD: 1,000.00 per 24 hours; 20 x 70.00 = 1,400.00, of which 14 fit (980.00).
    const responses = await Promise.all(Array.from({ length: 20 }, () => create(wallet, 7_000n, deviceId)));
    const statuses = responses.map((response) => response.statusCode);
    expect(statuses.filter((status) => status === 200)).toHaveLength(14);
    expect(statuses.filter((status) => status === 409)).toHaveLength(6);
    const refusal = responses.find((response) => response.statusCode === 409)?.json();
    expect(refusal).toMatchObject({
      code: 'PLC_DAILY_LIMIT_EXCEEDED',
      details: { limit: 'daily_limit', daily_limit_minor: '100000', issued_last_24h_minor: '98000', remaining_minor: '2000', increase_request: 'POST /api/v1/plc/limits/increase-request' },
    });
    expect(refusal.message).toContain('2000 left');
    const { rows } = await t.db.pool.query<{ sum: string; count: string }>('SELECT sum(amount_minor)::text AS sum, count(*)::text AS count FROM plcs WHERE issuer_owner_id = $1', [wallet.pubkey]);
    expect(rows[0]).toEqual({ sum: '98000', count: '14' });
    expect(await findViolations(t.db.pool)).toEqual([]);
    // What is left still fits.
    expect((await create(wallet, 2_000n, deviceId)).statusCode).toBe(200);
  });

  it('refuses a PLC above the tier\'s per-PLC limit (422 naming the limit and the route), below the ceiling', async () => {
    const { wallet, deviceId } = await ownerWithDevice();
    const response = await create(wallet, 50_001n, deviceId);
    expect(response.statusCode).toBe(422);
    expect(response.json().detail[0]).toMatchObject({ type: 'PLC_AMOUNT_ABOVE_MAXIMUM' });
    expect(response.json().detail[0].msg).toContain('50000');
    expect(response.json().detail[0].msg).toContain('POST /api/v1/plc/limits/increase-request');
    expect((await create(wallet, 50_000n, deviceId)).statusCode).toBe(200);
  });
});

describe('increase requests and their review', () => {
  it('refuses bad requests with a stable code, changing nothing', async () => {
    const { wallet, deviceId } = await ownerWithDevice();
    const base = { device_id: deviceId, owner_id: wallet.pubkey, requested_max_amount: '800.00', requested_daily_limit: '1500.00', reason: 'growing shop' };
    const cases: [Record<string, unknown>, number, string][] = [
      [{ ...base, requested_max_amount: '400.00', requested_daily_limit: '900.00' }, 422, 'LIMIT_INCREASE_NOT_NEEDED'],
      [{ ...base, requested_max_amount: '1000.01' }, 422, 'LIMIT_ABOVE_CEILING'],
      [{ ...base, requested_daily_limit: '999999999.00' }, 422, 'LIMIT_ABOVE_CEILING'],
      [{ ...base, requested_max_amount: '800.001' }, 422, 'INVALID_AMOUNT'],
      [{ ...base, requested_max_amount: '-5.00' }, 422, 'INVALID_AMOUNT'],
      [{ ...base, requested_max_amount: '0' }, 422, 'INVALID_AMOUNT'],
      [{ ...base, reason: '' }, 422, 'too_small'],
      [{ ...base, extra: 1 }, 422, 'unrecognized_keys'],
      [{ ...base, device_id: deviceOf() }, 404, 'DEVICE_NOT_FOUND'],
      [{ ...base, owner_id: newWallet().pubkey }, 404, 'DEVICE_NOT_FOUND'],
    ];
    for (const [payload, status, code] of cases) {
      const response = await requestIncrease(wallet, payload as IncreaseFields);
      expect(response.statusCode, JSON.stringify(payload)).toBe(status);
      expect(status === 422 ? response.json().detail[0].type : response.json().code).toBe(code);
    }
    const { rows } = await t.db.pool.query('SELECT 1 FROM plc_limit_requests WHERE device_id = $1', [deviceId]);
    expect(rows).toEqual([]);
  });

  it('must be signed by the owner: unsigned, signed by a stranger, stale or replayed requests are refused and store nothing', async () => {
    const { wallet, deviceId } = await ownerWithDevice();
    const stranger = newWallet();
    const fields = { device_id: deviceId, requested_max_amount: '800.00', requested_daily_limit: '1500.00', reason: 'growing shop' };
    const unsigned = await postIncrease(fields);
    expect(unsigned.statusCode).toBe(422);
    expect(unsigned.json().detail.map((item: { loc: string[] }) => item.loc.at(-1)).sort()).toEqual(['device_signature', 'operation_timestamp']);
    // A stranger signs for the device's owner (owner_id left out, or named): refused.
    for (const named of [{}, { owner_id: wallet.pubkey }]) {
      const forged = await requestIncrease(wallet, { ...fields, ...named }, { signer: stranger });
      expect(forged.statusCode).toBe(422);
      expect(forged.json().detail[0]).toMatchObject({ type: 'SIGNATURE_INVALID' });
    }
    // The owner's signature over other amounts or another device does not carry over.
    const signed = limitIncreaseBody(wallet, fields);
    expect((await postIncrease({ ...signed, requested_max_amount: '900.00' })).json().detail[0]).toMatchObject({ type: 'SIGNATURE_INVALID' });
    const stale = await requestIncrease(wallet, fields, { operationTimestampMs: Date.now() - t.config.CLOCK_TOLERANCE_MS - 60_000 });
    expect(stale.json().detail[0]).toMatchObject({ type: 'AUTHORIZATION_STALE' });
    const { rows } = await t.db.pool.query('SELECT 1 FROM plc_limit_requests WHERE device_id = $1', [deviceId]);
    expect(rows).toEqual([]);
    // The owner's own request goes through; the same signed request again is a replay.
    const opened = await postIncrease(signed);
    expect(opened.statusCode).toBe(200);
    expect(opened.json()).toMatchObject({ owner_id: wallet.pubkey, status: 'PENDING' });
    const replayed = await postIncrease(signed);
    expect(replayed.statusCode).toBe(409);
    expect(replayed.json()).toMatchObject({ code: 'AUTHORIZATION_REPLAYED' });
  });

  it("another owner's pending request on a shared device never locks the owner out", async () => {
    const { wallet: owner, deviceId } = await ownerWithDevice();
    // Someone else registers a PLC from the same device (a shared phone, or a stranger's X-Device-ID) and asks first.
    const other = newWallet();
    await t.deposit(other.pubkey, '100.00');
    expect((await create(other, 100n, deviceId)).statusCode).toBe(200);
    const fields = { device_id: deviceId, requested_max_amount: '800.00', requested_daily_limit: '1500.00', reason: 'mine' };
    const first = await requestIncrease(other, fields);
    expect(first.statusCode).toBe(200);
    expect(first.json()).toMatchObject({ owner_id: other.pubkey, status: 'PENDING' });
    // The owner's own request is still taken, and is the owner's.
    const own = await requestIncrease(owner, { ...fields, owner_id: owner.pubkey, reason: 'my shop' });
    expect(own.statusCode).toBe(200);
    expect(own.json()).toMatchObject({ owner_id: owner.pubkey, status: 'PENDING' });
    const { rows } = await t.db.pool.query<{ owner_id: string }>(`SELECT owner_id FROM plc_limit_requests WHERE device_id = $1 AND status = 'PENDING' ORDER BY owner_id`, [deviceId]);
    expect(rows.map((row) => row.owner_id)).toEqual([owner.pubkey, other.pubkey].sort());
    // Only the owner's own open request stands in its way; a refused request gives its signature back.
    const againBody = limitIncreaseBody(owner, { ...fields, owner_id: owner.pubkey, reason: 'again' });
    for (let attempt = 0; attempt < 2; attempt += 1) {
      const again = await postIncrease(againBody);
      expect(again.json()).toMatchObject({ code: 'LIMIT_REQUEST_ALREADY_OPEN', details: { open_request_id: own.json().request_id, owner_id: owner.pubkey } });
    }
  });

  it('opens one PENDING request per device and owner, findable by device and owner; an approval sets the override, used by create; a second decision is 409', async () => {
    const { wallet, deviceId } = await ownerWithDevice();
    const opened = await requestIncrease(wallet, { device_id: deviceId, requested_max_amount: '800.00', requested_daily_limit: '1500.00', reason: 'growing shop' });
    expect(opened.statusCode).toBe(200);
    const request = opened.json();
    expect(request).toMatchObject({
      device_id: deviceId,
      owner_id: wallet.pubkey,
      status: 'PENDING',
      requested: { max_amount: '800.00', daily_limit: '1500.00' },
      current: { max_amount: '500.00', daily_limit: '1000.00' },
      tier: 'STANDARD',
      workflow_id: `limit-review-${request.request_id}`,
      granted: null,
    });
    const description = await t.temporal.workflow.getHandle(request.workflow_id).describe();
    expect(description.status.name).toBe('RUNNING');
    expect(description.typedSearchAttributes.get(deviceIdKey)).toBe(deviceId);
    expect(description.typedSearchAttributes.get(ownerIdKey)).toBe(wallet.pubkey);
    expect(description.typedSearchAttributes.get(referenceIdKey)).toBe(request.request_id);
    expect(description.typedSearchAttributes.get(businessStatusKey)).toBe('PENDING');

    const second = await requestIncrease(wallet, { device_id: deviceId, requested_max_amount: '900.00', requested_daily_limit: '1500.00', reason: 'again' });
    expect(second.statusCode).toBe(409);
    expect(second.json()).toMatchObject({ code: 'LIMIT_REQUEST_ALREADY_OPEN', details: { open_request_id: request.request_id } });

    const pending = await adminGet('/plc-limits/pending?limit=200');
    expect(pending.statusCode).toBe(200);
    expect(pending.json().map((row: { request_id: string }) => row.request_id)).toContain(request.request_id);
    expect((await adminGet('/plc-limits/pending?limit=0')).statusCode).toBe(422);
    expect((await adminGet('/plc-limits/pending?limit=201')).statusCode).toBe(422);

    expect((await decide(request.request_id, { decision: 'APPROVE', granted_max_amount: '1000.01' })).json().detail[0].type).toBe('LIMIT_ABOVE_CEILING');
    expect((await decide(request.request_id, { decision: 'MAYBE' })).statusCode).toBe(422);
    expect((await decide(request.request_id, { decision: 'APPROVE', valid_days: 0 })).statusCode).toBe(422);
    expect((await decide(randomUUID(), { decision: 'REJECT' })).json()).toMatchObject({ code: 'LIMIT_REQUEST_NOT_FOUND' });
    expect((await decide(request.request_id, { decision: 'REJECT' }, {})).statusCode).toBe(401);

    const approved = await decide(request.request_id, { decision: 'APPROVE', granted_max_amount: '700.00', valid_days: 10, note: 'invoices checked' });
    expect(approved.statusCode).toBe(200);
    expect(approved.json()).toMatchObject({ status: 'APPROVED', granted: { max_amount: '700.00', daily_limit: '1500.00' }, decision_note: 'invoices checked' });
    const endsAt = Date.parse(approved.json().override_ends_at);
    expect(Math.abs(endsAt - Date.now() - 10 * 86_400_000)).toBeLessThan(60_000);
    expect(await t.temporal.workflow.getHandle(request.workflow_id).result()).toMatchObject({ status: 'APPROVED' });

    const twice = await decide(request.request_id, { decision: 'REJECT' });
    expect(twice.statusCode).toBe(409);
    expect(twice.json()).toMatchObject({ code: 'LIMIT_REQUEST_NOT_PENDING', details: { status: 'APPROVED' } });
    // Each decision the route took up, refusals too, is an operation-log entry with the admin, newest first.
    const logged = (await adminGet(`/monitor/operations?operation_type=LIMIT_DECISION&reference_id=${request.request_id}`)).json();
    expect(logged.map((entry: { step: string; status: string; error_code: string | null; owner_id: string }) => [entry.step, entry.status, entry.error_code, entry.owner_id])).toEqual([
      ['reject', 'REFUSED', 'LIMIT_REQUEST_NOT_PENDING', wallet.pubkey],
      ['approve', 'SUCCEEDED', null, wallet.pubkey],
      ['approve', 'REFUSED', 'LIMIT_ABOVE_CEILING', wallet.pubkey],
    ]);
    expect(logged[1].actor).toBe(approved.json().decided_by);

    const view = await adminGet(`/plc-limits/${deviceId}`);
    expect(view.statusCode).toBe(200);
    expect(view.json()).toMatchObject({ source: 'OVERRIDE', max_amount: '700.00', daily_limit: '1500.00', automatic: { max_amount: '500.00' } });
    expect(view.json().override).toMatchObject({ request_id: request.request_id, max_amount: '700.00', daily_limit: '1500.00' });
    expect(view.json().requests).toEqual([expect.objectContaining({ request_id: request.request_id, status: 'APPROVED' })]);
    // The override is the device's and this owner's: a create from it may now carry 700.00.
    expect((await create(wallet, 70_000n, deviceId)).statusCode).toBe(200);
    expect((await create(wallet, 70_001n, deviceId)).statusCode).toBe(422);
    // The same owner from another device has its tier's limits.
    expect((await create(wallet, 60_000n, deviceOf())).statusCode).toBe(422);
    // Decided: a new request may be opened.
    expect((await requestIncrease(wallet, { device_id: deviceId, requested_max_amount: '900.00', requested_daily_limit: '1500.00', reason: 'more' })).statusCode).toBe(200);
  });

  it('a rejection changes no limit; of two decisions sent at once, one is recorded and the other is a 409', async () => {
    const { wallet, deviceId } = await ownerWithDevice();
    const request = (await requestIncrease(wallet, { device_id: deviceId, requested_max_amount: '600.00', requested_daily_limit: '1000.00', reason: 'why not' })).json();
    const both = await Promise.all([
      decide(request.request_id, { decision: 'REJECT', note: 'no history yet' }),
      decide(request.request_id, { decision: 'REJECT', note: 'no history yet' }),
    ]);
    expect(both.map((response) => response.statusCode).sort()).toEqual([200, 409]);
    const rejected = both.find((response) => response.statusCode === 200)!;
    expect(both.find((response) => response.statusCode === 409)!.json()).toMatchObject({ code: 'LIMIT_REQUEST_NOT_PENDING' });
    expect(rejected.json()).toMatchObject({ status: 'REJECTED', granted: null, override_ends_at: null });
    expect((await limitsOf(deviceId)).json()).toMatchObject({ source: 'TIER', max_amount: '500.00', override: null });
    expect((await decide(request.request_id, { decision: 'APPROVE' })).statusCode).toBe(409);
  });

  it('admin GET /plc-limits/{device_id}: 404 for an unknown device, 401 without a token', async () => {
    expect((await adminGet(`/plc-limits/${deviceOf()}`)).json()).toMatchObject({ code: 'DEVICE_NOT_FOUND' });
    expect((await adminGet(`/plc-limits/${deviceOf()}`, {})).statusCode).toBe(401);
  });
});

describe('reputation settings', () => {
  it('the API writes REPUTATION_* into reputation_settings at start, where the SQL rules read them', async () => {
    const configured = await createTestApp({ REPUTATION_DUST_MINOR: '500', REPUTATION_GAIN_WINDOW_SECONDS: '60', REPUTATION_TRUSTED_MIN_AGE_SECONDS: '2', REPUTATION_PREMIUM_MIN_COUNTERPARTIES: '7' });
    try {
      await configured.app.ready();
      const { rows } = await configured.db.pool.query(
        'SELECT dust_minor::text, gain_window_ms::text, gain_per_window_max, trusted_age_min_ms::text, premium_counterparties_min FROM reputation_settings',
      );
      expect(rows).toEqual([{ dust_minor: '500', gain_window_ms: '60000', gain_per_window_max: 50, trusted_age_min_ms: '2000', premium_counterparties_min: 7 }]);
    } finally {
      await configured.close();
    }
  });
});

describe('reputation routes', () => {
  it('stats, list, detail and history of owners moved by real events (creates, a settled and a failed redemption)', async () => {
    const [issuer, bearer, first] = [newWallet(), newWallet(), newWallet()];
    await t.deposit(issuer.pubkey, '500.00');
    const deviceId = deviceOf();
    const activities = createRedemptionActivities({ pool: t.db.pool, gateway: {} as never, temporal: {} as never });
    const redeem = async (to: TestWallet, amountMinor: bigint, outcome: 'SETTLED' | 'FAILED') => {
      const plc = await t.issuePlc(issuer, amountMinor, { 'x-device-id': deviceId });
      // The bearer redeems from a phone of its own: a payer and a bearer on one device are one owner.
      const input = openRedemptionInput(hop(plc, issuer, to), to, `phone-${to.pubkey.slice(0, 8)}`);
      await activities.openRedemption(input);
      // A redemption settles only with the payout that paid it recorded (docs/settlement.md, "One payout per redemption").
      if (outcome === 'SETTLED') await recordGatewayTransfer(t.db.pool, input.redemptionId, `tra_${input.redemptionId.slice(0, 8)}`, 'DONE');
      await finishRedemption(t.db.pool, input.redemptionId, outcome === 'SETTLED' ? { status: 'SETTLED', gatewayStatus: 'DONE' } : { status: 'FAILED', gatewayStatus: 'FAILED', reason: 'test' });
      return input.redemptionId;
    };
    // The issuer's first payee: a pair that has only paid each other then, so no points.
    const firstSettled = await redeem(first, 2_000n, 'SETTLED');
    const settled = await redeem(bearer, 25_000n, 'SETTLED');
    const failed = await redeem(bearer, 1_000n, 'FAILED');

    // The bearer: +25 (250.00 from an independent payer: +5 and 1 per 10.00, at most +20), -10 (a failed redemption).
    const detail = await adminGet(`/reputation/${bearer.pubkey}`);
    expect(detail.statusCode).toBe(200);
    expect(detail.json()).toMatchObject({
      owner_id: bearer.pubkey,
      score: 515,
      tier: 'STANDARD',
      current_score: 515,
      current_tier: 'STANDARD',
      counterparties: 1,
      sanctioned: false,
      settled_volume: '250.00',
      events: 2,
      tier_bounds: { score_min: 400, score_max: 599 },
      next_tier: { tier: 'TRUSTED', points_needed: 85 },
      limits: { max_amount: '500.00', daily_limit: '1025.00', tier_max_amount_bp: 5000, tier_daily_limit_bp: 5000 },
    });
    const history = await adminGet(`/reputation/${bearer.pubkey}/history?limit=10`);
    expect(history.json().map((event: Record<string, unknown>) => [event.kind, event.delta, event.reference, event.score_after, event.tier_after, event.counterparty, event.credit_eligible])).toEqual([
      ['REDEMPTION_FAILED', -10, failed, 515, 'STANDARD', null, null],
      ['REDEMPTION_SETTLED', 25, settled, 525, 'STANDARD', issuer.pubkey, true],
    ]);
    expect((await adminGet(`/reputation/${bearer.pubkey}/history?limit=1`)).json()).toHaveLength(1);
    // Issuing earns nothing; the first payee's settlement was not independent.
    expect((await adminGet(`/reputation/${issuer.pubkey}`)).json()).toMatchObject({ score: 500 });
    expect((await adminGet(`/reputation/${first.pubkey}/history`)).json()).toEqual([
      expect.objectContaining({ kind: 'REDEMPTION_SETTLED', delta: 0, reference: firstSettled, counterparty: issuer.pubkey, credit_eligible: false }),
    ]);

    const stats = await adminGet('/reputation/stats');
    expect(stats.statusCode).toBe(200);
    expect(stats.json().owners).toBeGreaterThanOrEqual(2);
    expect(stats.json().tiers.map((row: { tier: string }) => row.tier)).toEqual(['RESTRICTED', 'BASIC', 'STANDARD', 'TRUSTED', 'PREMIUM']);
    expect(stats.json().tiers[4]).toMatchObject({ max_amount: '1000.00', daily_limit: '2000.00' });

    const byScoreAsc = (await adminGet('/reputation/list?sort_by=score&sort_dir=asc&limit=200')).json();
    const scores = byScoreAsc.map((row: { score: number }) => row.score);
    expect(scores).toEqual([...scores].sort((a, b) => a - b));
    expect(byScoreAsc.map((row: { owner_id: string }) => row.owner_id)).toContain(bearer.pubkey);
    const byDefault = (await adminGet('/reputation/list')).json();
    expect(byDefault.map((row: { score: number }) => row.score)).toEqual([...byDefault.map((row: { score: number }) => row.score)].sort((a, b) => b - a));
    expect((await adminGet('/reputation/list?tier=PREMIUM')).json()).toEqual([]);
    expect((await adminGet('/reputation/list?limit=1&offset=1')).json()).toHaveLength(1);
    for (const query of ['tier=GOLD', 'sort_by=name', 'sort_dir=up', 'limit=0', 'limit=201', 'offset=-1']) {
      expect((await adminGet(`/reputation/list?${query}`)).statusCode, query).toBe(422);
    }
    expect((await adminGet(`/reputation/${newWallet().pubkey}`)).json()).toMatchObject({ code: 'REPUTATION_NOT_FOUND' });
    expect((await adminGet(`/reputation/${newWallet().pubkey}/history`)).statusCode).toBe(404);
    expect((await adminGet('/reputation/stats', {})).statusCode).toBe(401);
    expect(await findViolations(t.db.pool)).toEqual([]);
  });
});
