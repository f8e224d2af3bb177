import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../support/app.ts';
import { cancelBody, hop, issue, newWallet, plcToJson } from '../support/wallet.ts';

let t: TestApp;
const device = { 'x-device-id': 'device-dev-endpoints' };

beforeAll(async () => {
  t = await createTestApp();
  await t.startWorker();
});
afterAll(async () => {
  await t?.close();
});

const fund = (ownerId: string, amount: string, headers: Record<string, string> = {}) =>
  t.app.inject({ method: 'POST', url: `/api/v1/dev/owners/${ownerId}/fund`, headers, payload: { amount, currency: 'BRL' } });

describe('developer endpoints', () => {
  it('funds an owner through the deposit workflow; the same Idempotency-Key books once', async () => {
    const owner = newWallet();
    const first = await fund(owner.pubkey, '12.50');
    expect(first.statusCode, first.body).toBe(200);
    expect(first.json()).toMatchObject({ owner_id: owner.pubkey, available: '12.50' });
    const key = { 'idempotency-key': randomUUID() };
    expect((await fund(owner.pubkey, '1.00', key)).json().available).toBe('13.50');
    expect((await fund(owner.pubkey, '1.00', key)).json().available).toBe('13.50');
    expect((await fund(owner.pubkey, '0.001')).statusCode).toBe(422);
  });

  it('makes a PLC expire now: EXPIRED, the promise released to the issuer; a second call changes nothing; 404 and 409', async () => {
    const issuer = newWallet();
    const bearer = newWallet();
    await fund(issuer.pubkey, '10.00');
    const issued = issue(issuer, { amountMinor: 400n });
    const created = await t.app.inject({ method: 'POST', url: '/api/v1/plc/create', headers: device, payload: { plc: plcToJson(issued) } });
    expect(created.statusCode, created.body).toBe(200);
    const held = hop(issued, issuer, bearer);
    expect((await t.app.inject({ method: 'POST', url: '/api/v1/transfer/', headers: device, payload: { plc: plcToJson(held) } })).json().appended).toBe(1);
    const tokenId = issued.commitment.tokenId;
    const expired = await t.app.inject({ method: 'POST', url: `/api/v1/dev/plc/${tokenId}/expire` });
    expect(expired.json()).toEqual({ token_id: tokenId, status: 'EXPIRED', released: true });
    const balance = (await t.app.inject({ method: 'GET', url: `/api/v1/balance/${issuer.pubkey}` })).json();
    expect(balance).toMatchObject({ available: '10.00', promised: '0.00' });
    expect((await t.app.inject({ method: 'POST', url: `/api/v1/dev/plc/${tokenId}/expire` })).json()).toEqual({ token_id: tokenId, status: 'EXPIRED', released: false });
    const transfer = await t.app.inject({ method: 'POST', url: '/api/v1/transfer/', headers: device, payload: { plc: plcToJson(hop(held, bearer, newWallet())) } });
    expect(transfer.statusCode).toBe(409);
    expect((await t.app.inject({ method: 'POST', url: `/api/v1/dev/plc/${randomUUID()}/expire` })).json().code).toBe('PLC_NOT_FOUND');

    const cancelled = issue(issuer, { amountMinor: 100n });
    expect((await t.app.inject({ method: 'POST', url: '/api/v1/plc/create', headers: device, payload: { plc: plcToJson(cancelled) } })).statusCode).toBe(200);
    const cancel = await t.app.inject({ method: 'POST', url: `/api/v1/plc/${cancelled.commitment.tokenId}/cancel`, headers: device, payload: cancelBody(cancelled, issuer) });
    expect(cancel.statusCode, cancel.body).toBe(200);
    const refused = await t.app.inject({ method: 'POST', url: `/api/v1/dev/plc/${cancelled.commitment.tokenId}/expire` });
    expect(refused.statusCode).toBe(409);
    expect(refused.json()).toMatchObject({ code: 'PLC_NOT_TRANSFERABLE', details: { status: 'CANCELLED' } });
  });

  it('replays a stored webhook to the route that received it: a duplicate, not processed again; 404 for an unknown id', async () => {
    const eventId = `evt_${randomUUID().slice(0, 12)}`;
    const body = { id: eventId, event: 'PAYMENT_CREATED', payment: { id: `pay_${randomUUID().slice(0, 12)}`, status: 'PENDING', value: 1, billingType: 'PIX' } };
    const stored = await t.app.inject({ method: 'POST', url: '/api/v1/webhooks/payment/pix', headers: { 'gateway-access-token': t.config.GATEWAY_WEBHOOK_TOKEN }, payload: body });
    expect(stored.json()).toMatchObject({ event_id: eventId, duplicate: false });
    const row = await t.db.pool.query(`SELECT id, duplicates FROM webhook_inbox WHERE event_id = $1`, [eventId]);
    const replay = await t.app.inject({ method: 'POST', url: `/api/v1/dev/webhooks/${row.rows[0].id}/replay` });
    expect(replay.json()).toEqual({ inbox_id: row.rows[0].id, event_id: eventId, endpoint: 'payment/pix', status_code: 200, answer: { received: true, event_id: eventId, duplicate: true } });
    const after = await t.db.pool.query(`SELECT duplicates FROM webhook_inbox WHERE event_id = $1`, [eventId]);
    expect(after.rows[0].duplicates).toBe(row.rows[0].duplicates + 1);
    expect((await t.app.inject({ method: 'POST', url: `/api/v1/dev/webhooks/${randomUUID()}/replay` })).json().code).toBe('NOT_FOUND');
  });

  it('are not registered when DEV_ENDPOINTS_ENABLED is off (as production enforces)', async () => {
    const off = await createTestApp({ DEV_ENDPOINTS_ENABLED: 'false' });
    try {
      for (const url of [`/api/v1/dev/owners/${newWallet().pubkey}/fund`, `/api/v1/dev/plc/${randomUUID()}/expire`, `/api/v1/dev/webhooks/${randomUUID()}/replay`]) {
        const response = await off.app.inject({ method: 'POST', url, payload: { amount: '1.00' } });
        expect(response.statusCode, url).toBe(404);
      }
    } finally {
      await off.close();
    }
  });
});
