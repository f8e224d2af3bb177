import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodeTransportText, type Plc } from '../../src/protocol/index.ts';
import { activeCustomer, signed, type TestCredential } from '../support/b2b.ts';
import { redeemBody, startSettlementHarness, type SettlementHarness } from '../support/settlement.ts';
import { hop, issue, newWallet, plcToJson, type TestWallet } from '../support/wallet.ts';

let h: SettlementHarness;
let credential: TestCredential;
let customerId: string;
let pixKey: string;
const terminal = newWallet();
const issuer = newWallet();
const device = { 'x-device-id': 'device-pos-test' };

beforeAll(async () => {
  h = await startSettlementHarness({ RATE_LIMIT_B2B_PER_MINUTE: '100000', RATE_LIMIT_B2B_SIGNUP_PER_MINUTE: '1000' });
  const customer = await activeCustomer(h.t.app, h.admin);
  credential = customer.credential;
  customerId = customer.customerId;
  pixKey = customer.taxId;
  await h.t.deposit(issuer.pubkey, '100.00');
});
afterAll(async () => {
  await h?.close();
});

async function created(amountMinor = 100n, by: TestWallet = issuer): Promise<Plc> {
  const plc = issue(by, { amountMinor });
  const response = await h.t.app.inject({ method: 'POST', url: '/api/v1/plc/create', headers: device, payload: { plc: plcToJson(plc) } });
  expect(response.statusCode, response.body).toBe(200);
  return plc;
}

const sync = (body: unknown, as: TestCredential = credential) => signed(h.t.app, as, { method: 'POST', url: '/api/v1/pos/sync', body });

describe('POST /api/v1/pos/sync', () => {
  it('registers, redeems and refuses item by item; the same batch again is answered from storage', async () => {
    const paid = hop(await created(), issuer, terminal);
    const kept = hop(await created(), issuer, terminal);
    const asText = hop(await created(), issuer, terminal);
    // A fork: its issuer gave this PLC to someone else first, and that hop is registered. An issuer
    // of its own: the fork blocks its key, and every later hop it signed is refused (docs/protocol.md
    // section 18), which would refuse the other items too.
    const forger = newWallet();
    await h.t.deposit(forger.pubkey, '10.00');
    const forkedBase = await created(100n, forger);
    const other: TestWallet = newWallet();
    const registered = await h.t.app.inject({ method: 'POST', url: '/api/v1/transfer/', headers: device, payload: { plc: plcToJson(hop(forkedBase, forger, other)) } });
    expect(registered.json().appended).toBe(1);
    const forked = hop(forkedBase, forger, terminal);
    const wrongPix = hop(await created(), issuer, terminal);

    const batch = {
      batch_id: `batch-${randomUUID()}`,
      items: [
        { plc: plcToJson(kept) },
        { redeem: { authorization: redeemBody(paid, terminal, pixKey).authorization }, plc: plcToJson(paid) },
        { transport: encodeTransportText(asText) },
        { plc: plcToJson(forked) },
        { plc: { version: '2.0', token_id: 'not a plc' } },
        { plc: plcToJson(wrongPix), redeem: { authorization: redeemBody(wrongPix, terminal, 'someone@example.com').authorization } },
        'garbage',
      ],
    };
    const response = await sync(batch);
    expect(response.statusCode, response.body).toBe(200);
    const answer = response.json();
    expect(answer).toMatchObject({ batch_id: batch.batch_id, customer_id: customerId, stored: true, replayed: false, counts: { registered: 2, redeemed: 1, refused: 4 } });
    const items = answer.items;
    expect(items[0]).toMatchObject({ index: 0, token_id: kept.commitment.tokenId, status: 'registered', registration: { plc_status: 'TRANSFERRED', chain_length: 1, bearer_pubkey: terminal.pubkey, appended: 1 }, error: null });
    expect(items[1]).toMatchObject({ index: 1, status: 'redeemed', redemption: { status: 'PENDING_PAYMENT' } });
    expect(items[2]).toMatchObject({ status: 'registered', token_id: asText.commitment.tokenId });
    expect(items[3]).toMatchObject({ status: 'refused', token_id: forkedBase.commitment.tokenId, error: { stage: 'register', code: 'DOUBLE_SPEND_DETECTED', retryable: false } });
    expect(items[3].error.details).toMatchObject({ signer_pubkey: forger.pubkey });
    expect(items[4]).toMatchObject({ status: 'refused', token_id: null, error: { stage: 'parse', code: 'PLC_INVALID' } });
    expect(items[5]).toMatchObject({ status: 'refused', registration: { appended: 1 }, error: { stage: 'redeem', code: 'POS_DESTINATION_MISMATCH' } });
    expect(items[6]).toMatchObject({ status: 'refused', error: { stage: 'parse', code: 'PLC_INVALID' } });

    // The redemption is the redeem route's: the same status URL, the customer's Pix key.
    const redemption = (await h.t.app.inject({ method: 'GET', url: items[1].redemption.status_url })).json();
    expect(redemption).toMatchObject({ token_id: paid.commitment.tokenId, bearer_pubkey: terminal.pubkey, destination_masked: expect.stringMatching(new RegExp(`${pixKey.slice(-4)}$`)) });

    const again = await sync(batch);
    expect(again.statusCode).toBe(200);
    expect(again.json()).toEqual({ ...answer, replayed: true });
    const redemptions = await h.t.db.pool.query('SELECT count(*)::int AS n FROM redemptions WHERE token_id = $1', [paid.commitment.tokenId]);
    expect(redemptions.rows[0].n).toBe(1);

    const conflict = await sync({ ...batch, items: batch.items.slice(0, 1) });
    expect(conflict.statusCode).toBe(409);
    expect(conflict.json().code).toBe('POS_BATCH_CONFLICT');
  });

  it('a batch whose answer was lost after its items committed (never stored) answers, sent again, the same redemptions, opening none twice', async () => {
    const paid = hop(await created(), issuer, terminal);
    const kept = hop(await created(), issuer, terminal);
    const ted = hop(await created(), issuer, terminal);
    const tedAuthorization = { ...redeemBody(ted, terminal, pixKey).authorization, settlement_rail: 'ted' };
    const batch = {
      batch_id: `batch-${randomUUID()}`,
      items: [
        { plc: plcToJson(paid), redeem: { authorization: redeemBody(paid, terminal, pixKey).authorization } },
        { plc: plcToJson(kept) },
        { plc: plcToJson(ted), redeem: { authorization: tedAuthorization } },
      ],
    };
    const first = await sync(batch);
    expect(first.statusCode, first.body).toBe(200);
    const answer = first.json();
    expect(answer).toMatchObject({ stored: true, counts: { registered: 1, redeemed: 1, refused: 1 } });
    expect(answer.items[2]).toMatchObject({ status: 'refused', error: { stage: 'redeem', code: 'UNSUPPORTED_RAIL', details: { field: 'items.2.redeem.authorization.settlement_rail' } } });
    // The process died before the batch's answer was stored: its row is gone, its items are not.
    await h.t.db.pool.query('DELETE FROM pos_batches WHERE customer_id = $1 AND batch_id = $2', [customerId, batch.batch_id]);
    const again = await sync(batch);
    expect(again.statusCode, again.body).toBe(200);
    expect(again.json()).toMatchObject({ replayed: false, stored: true, counts: { registered: 1, redeemed: 1, refused: 1 } });
    expect(again.json().items[0].redemption.redemption_id).toBe(answer.items[0].redemption.redemption_id);
    expect(again.json().items[1].registration).toMatchObject({ appended: 0, chain_length: 1 });
    const redemptions = await h.t.db.pool.query('SELECT count(*)::int AS n FROM redemptions WHERE token_id = $1', [paid.commitment.tokenId]);
    expect(redemptions.rows[0].n).toBe(1);
  });

  it("refuses a batch over the plan's size, a credential without pos:sync, an unsigned call, and a suspended customer", async () => {
    const starter = await activeCustomer(h.t.app, h.admin, { plan: 'STARTER' });
    const tooLarge = await sync({ batch_id: 'big', items: Array.from({ length: 101 }, () => ({})) }, starter.credential);
    expect(tooLarge.statusCode).toBe(422);
    expect(tooLarge.json().detail).toEqual([{ loc: ['body', 'items'], msg: expect.any(String), type: 'POS_BATCH_TOO_LARGE', ctx: { max: 100 } }]);
    expect((await sync({ batch_id: 'big', items: Array.from({ length: 501 }, () => ({})) })).statusCode).toBe(422);

    const issued = await h.t.app.inject({ method: 'POST', url: `/api/v1/admin/b2b/customers/${starter.customerId}/credentials`, headers: h.admin, payload: { scopes: ['plc:read'] } });
    const reader = { keyId: issued.json().key_id, secret: issued.json().secret };
    const noScope = await sync({ batch_id: 'x', items: [{}] }, reader);
    expect(noScope.statusCode).toBe(403);
    expect(noScope.json()).toMatchObject({ code: 'API_SCOPE_MISSING', details: { scope: 'pos:sync' } });

    const unsigned = await h.t.app.inject({ method: 'POST', url: '/api/v1/pos/sync', payload: { batch_id: 'x', items: [{}] } });
    expect(unsigned.statusCode).toBe(401);

    await h.t.app.inject({ method: 'POST', url: `/api/v1/admin/b2b/customers/${starter.customerId}/suspend`, headers: h.admin, payload: { reason: 'unpaid invoice' } });
    const suspended = await sync({ batch_id: 'x', items: [{}] }, starter.credential);
    expect(suspended.statusCode).toBe(403);
    expect(suspended.json().code).toBe('B2B_CUSTOMER_NOT_ACTIVE');
  });
});
