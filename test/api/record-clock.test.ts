/**
 * Record timestamps against the server's clock (docs/protocol.md section 7.4): every route that
 * receives a chain refuses a record timestamped later than the server's clock plus the clock
 * tolerance, and accepts one exactly at that bound.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../support/app.ts';
import { redeemBody, settlementBody } from '../support/settlement.ts';
import { hop, issue, newWallet, plcToJson, type TestWallet } from '../support/wallet.ts';
import type { Plc } from '../../src/protocol/index.ts';

let t: TestApp;
const device = { 'x-device-id': 'device-clock-1' };
const toleranceMs = 5 * 60_000;
const dayMs = 24 * 3_600_000;
const pixKey = '123e4567-e89b-42d3-a456-556642440000';

beforeAll(async () => {
  t = await createTestApp({ RATE_LIMIT_PLC_PER_MINUTE: '100000', RATE_LIMIT_TRANSFER_PER_MINUTE: '100000', RATE_LIMIT_REDEEM_PER_MINUTE: '100000' });
  await t.startWorker();
});
afterAll(async () => {
  await t?.close();
});

async function created(issuer: TestWallet): Promise<Plc> {
  await t.deposit(issuer.pubkey, '10.00');
  const plc = issue(issuer, { amountMinor: 100n, ttlHours: 168 });
  const response = await t.app.inject({ method: 'POST', url: '/api/v1/plc/create', headers: device, payload: { plc: plcToJson(plc) } });
  expect(response.statusCode).toBe(200);
  return plc;
}

const post = (url: string, payload: object) => t.app.inject({ method: 'POST', url, headers: device, payload });

function expectFuture(response: Awaited<ReturnType<typeof post>>, index: number): void {
  expect(response.statusCode, response.body).toBe(422);
  const [issue] = response.json().detail;
  expect(issue.type).toBe('PLC_INVALID.timestamp_in_future');
  expect(issue.msg).toContain(`record ${index}`);
}

async function statusOf(plc: Plc) {
  return (await t.app.inject({ method: 'GET', url: `/api/v1/plc/${plc.commitment.tokenId}/status` })).json();
}

describe('a record timestamped in the server future', () => {
  it('is refused at /transfer/ (24 hours ahead, and just past the tolerance), registering nothing', async () => {
    const [a, b, c] = [newWallet(), newWallet(), newWallet()];
    const plc = await created(a);
    expectFuture(await post('/api/v1/transfer/', { plc: plcToJson(hop(plc, a, b, Date.now() + dayMs)) }), 0);
    // A good first hop, then one a day ahead: the whole registration is refused.
    const first = hop(plc, a, b);
    expectFuture(await post('/api/v1/transfer/', { plc: plcToJson(hop(first, b, c, Date.now() + dayMs)) }), 1);
    expect(await statusOf(plc)).toMatchObject({ status: 'ISSUED', chain_length: 0 });
    expectFuture(await post('/api/v1/transfer/', { plc: plcToJson(hop(plc, a, b, Date.now() + toleranceMs + 2_000)) }), 0);
  });

  it('is accepted at the bound (the tolerance ahead of the server clock)', async () => {
    const [a, b] = [newWallet(), newWallet()];
    const plc = await created(a);
    // A little under the bound, so the few milliseconds until the server reads its clock do not matter.
    const response = await post('/api/v1/transfer/', { plc: plcToJson(hop(plc, a, b, Date.now() + toleranceMs - 1_000)) });
    expect(response.statusCode, response.body).toBe(200);
    expect(response.json()).toMatchObject({ appended: 1 });
  });

  it('is refused at /redeem/ and /settlements, opening no redemption', async () => {
    const [a, b, c] = [newWallet(), newWallet(), newWallet()];
    const plc = await created(a);
    const registered = hop(plc, a, b);
    expect((await post('/api/v1/transfer/', { plc: plcToJson(registered) })).statusCode).toBe(200);
    const ahead = hop(registered, b, c, Date.now() + dayMs);
    expectFuture(await post('/api/v1/redeem/', redeemBody(ahead, c, pixKey)), 1);
    expectFuture(await post('/api/v1/settlements', settlementBody(ahead, c, pixKey)), 1);
    expect(await statusOf(plc)).toMatchObject({ status: 'TRANSFERRED', chain_length: 1, bearer_pubkey: b.pubkey, redemption_in_flight: false });
  });
});
