import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { plcToJson, type Plc } from '../../src/protocol/index.ts';
import { redeemBody, settlementBody, startSettlementHarness, type SettlementHarness } from '../support/settlement.ts';
import { eventually } from '../support/temporal-cli.ts';
import { hop, issue, newWallet, type TestWallet } from '../support/wallet.ts';

/**
 * One bad request never fails another (issue 17, item 3). An X-Device-ID of 8,000 characters
 * used to reach the rate limiter's key unchecked and break the counters' CHECK, failing its
 * whole group-committed statement: the bad request and the honest ones batched with it answered
 * 500. Now the header is refused with a 422 naming it before anything is counted, and the honest
 * requests sent at the same moment, through the same batches, all succeed.
 */
let h: SettlementHarness;
const device = { 'x-device-id': 'device-good-1' };
const longDevice = { 'x-device-id': 'd'.repeat(8000) };

beforeAll(async () => {
  h = await startSettlementHarness();
});
afterAll(async () => {
  await h?.close();
});

async function funded(amount: string): Promise<TestWallet> {
  const wallet = newWallet();
  await h.t.deposit(wallet.pubkey, amount);
  return wallet;
}

function created(issuer: TestWallet, amountMinor = 100n): Promise<Plc> {
  return h.t.issuePlc(issuer, amountMinor, device);
}

function expectHeaderRefused(response: { statusCode: number; json(): unknown }): void {
  expect(response.statusCode).toBe(422);
  expect(response.json()).toEqual({ detail: [{ loc: ['header', 'x-device-id'], msg: expect.stringContaining('X-Device-ID'), type: 'INVALID_HEADER' }] });
}

describe('a malformed X-Device-ID in a batch of honest requests', () => {
  it('is refused with a 422 naming the header on create, transfer, redeem and settlements; every honest request of the same batches succeeds', async () => {
    const issuer = await funded('100.00');
    const bearer = newWallet();
    // PLCs to hop (transfer), and PLCs already hopped to the bearer (redeem, settlements).
    const toTransfer = await Promise.all(Array.from({ length: 8 }, () => created(issuer)));
    const toRedeem = await Promise.all(Array.from({ length: 4 }, async () => {
      const hopped = hop(await created(issuer), issuer, bearer);
      const response = await h.t.app.inject({ method: 'POST', url: '/api/v1/transfer/', headers: device, payload: { plc: plcToJson(hopped) } });
      expect(response.statusCode).toBe(200);
      return hopped;
    }));
    const toCreate = Array.from({ length: 6 }, () => issue(issuer, { amountMinor: 100n }));

    const good = [
      ...toTransfer.map((plc) => ({ method: 'POST' as const, url: '/api/v1/transfer/', headers: device, payload: { plc: plcToJson(hop(plc, issuer, newWallet())) } })),
      ...toCreate.map((plc) => ({ method: 'POST' as const, url: '/api/v1/plc/create', headers: device, payload: { plc: plcToJson(plc) } })),
      ...toRedeem.slice(0, 2).map((plc) => ({ method: 'POST' as const, url: '/api/v1/redeem/', headers: device, payload: redeemBody(plc, bearer, 'bearer@example.com') })),
      ...toRedeem.slice(2).map((plc) => ({ method: 'POST' as const, url: '/api/v1/settlements', headers: device, payload: settlementBody(plc, bearer, 'bearer@example.com') })),
    ];
    // The same requests with a bad header (they must not touch anything), and a few more.
    const bad = [
      ...good.map((request) => ({ ...request, headers: longDevice })),
      { method: 'POST' as const, url: '/api/v1/plcs', headers: longDevice, payload: plcToJson(issue(issuer)) },
      { method: 'GET' as const, url: `/api/v1/plc/${toTransfer[0]!.commitment.tokenId}/status`, headers: longDevice },
      { method: 'POST' as const, url: '/api/v1/transfer/', headers: { 'x-device-id': 'has spaces and é' }, payload: { plc: plcToJson(toTransfer[1]!) } },
    ];
    // Interleaved and sent at once: the rate limiter and the transfer appender batch them together.
    const all = good.flatMap((request, i) => [request, bad[i]!]).concat(bad.slice(good.length));
    const responses = await Promise.all(all.map((request) => h.t.app.inject(request)));
    const goodResponses = responses.filter((_, i) => all[i]!.headers === device);
    const badResponses = responses.filter((_, i) => all[i]!.headers !== device);
    expect(goodResponses).toHaveLength(good.length);
    expect(badResponses).toHaveLength(bad.length);
    for (const response of goodResponses) expect({ status: response.statusCode, body: response.json() }).toMatchObject({ status: 200 });
    for (const response of badResponses) expectHeaderRefused(response);

    // What the honest requests did is all there; the bad ones counted nothing and stored nothing.
    const { rows: counters } = await h.t.db.pool.query<{ longest: number }>('SELECT coalesce(max(char_length(key)), 0)::int AS longest FROM rate_limit_counters');
    expect(counters[0]!.longest).toBeLessThan(200);
    const { rows: plcs } = await h.t.db.pool.query<{ status: string; n: number }>(
      `SELECT status, count(*)::int AS n FROM plcs WHERE token_id = ANY($1::uuid[]) GROUP BY status ORDER BY status`,
      [[...toTransfer, ...toCreate].map((plc) => plc.commitment.tokenId)],
    );
    expect(plcs).toEqual([
      { status: 'ISSUED', n: toCreate.length },
      { status: 'TRANSFERRED', n: toTransfer.length },
    ]);
    // The honest redemptions are paid out and settle (and nothing is left in flight at the end).
    await eventually(async () => {
      const { rows } = await h.t.db.pool.query<{ status: string }>('SELECT status FROM redemptions WHERE token_id = ANY($1::uuid[])', [
        toRedeem.map((plc) => plc.commitment.tokenId),
      ]);
      return rows.length === toRedeem.length && rows.every((row) => row.status === 'SETTLED') ? true : undefined;
    }, 20_000);
  });

  it('refuses the header sent twice, and takes a well-formed one at its longest', async () => {
    const issuer = await funded('10.00');
    const twice = await h.t.app.inject({
      method: 'POST',
      url: '/api/v1/plc/create',
      headers: { 'x-device-id': ['device-a', 'device-b'] },
      payload: { plc: plcToJson(issue(issuer)) },
    });
    expectHeaderRefused(twice);
    const longest = await h.t.app.inject({
      method: 'POST',
      url: '/api/v1/plc/create',
      headers: { 'x-device-id': 'd'.repeat(128) },
      payload: { plc: plcToJson(issue(issuer)) },
    });
    expect(longest.statusCode).toBe(200);
    const tooLong = await h.t.app.inject({
      method: 'POST',
      url: '/api/v1/plc/create',
      headers: { 'x-device-id': 'd'.repeat(129) },
      payload: { plc: plcToJson(issue(issuer)) },
    });
    expectHeaderRefused(tooLong);
  });
});
