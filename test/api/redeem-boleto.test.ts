/**
 * The redeem routes' refusals of a boleto destination (docs/protocol.md 9.2, docs/errors.md):
 * a line that fails its check digits, one in the printed form, one written for another amount
 * than the PLC's. Each refused before anything is booked; the PLC stays redeemable.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../support/app.ts';
import { bankSlipLine, boletoRedeemBody, feeConsentBody, redeemBody, settlementBody } from '../support/settlement.ts';
import { hop, issue, newWallet, plcToJson, type TestWallet } from '../support/wallet.ts';
import type { Plc } from '../../src/protocol/index.ts';

let t: TestApp;
const device = { 'x-device-id': 'device-boleto-1' };

beforeAll(async () => {
  t = await createTestApp({ RATE_LIMIT_PLC_PER_MINUTE: '100000', RATE_LIMIT_TRANSFER_PER_MINUTE: '100000', RATE_LIMIT_REDEEM_PER_MINUTE: '100000' });
  await t.startWorker();
});
afterAll(async () => {
  await t?.close();
});

async function created(issuer: TestWallet, amountMinor: bigint): Promise<Plc> {
  await t.deposit(issuer.pubkey, '10.00');
  const plc = issue(issuer, { amountMinor });
  const response = await t.app.inject({ method: 'POST', url: '/api/v1/plc/create', headers: device, payload: { plc: plcToJson(plc) } });
  expect(response.statusCode).toBe(200);
  return plc;
}

const post = (url: string, payload: object) => t.app.inject({ method: 'POST', url, headers: device, payload });

function expectRefused(response: Awaited<ReturnType<typeof post>>, type: string, loc: string[] = ['body', 'authorization', 'destination']) {
  expect(response.statusCode, response.body).toBe(422);
  const [issue] = response.json().detail;
  expect(issue).toMatchObject({ type, loc });
  return issue as { msg: string };
}

describe('a boleto destination at the redeem routes', () => {
  it('refuses a mistyped line, the printed form and a line of another length, booking nothing', async () => {
    const [a, b] = [newWallet(), newWallet()];
    const plc = hop(await created(a, 500n), a, b);
    const line = bankSlipLine(500n);
    const mistyped = `${line.slice(0, 3)}${(Number(line[3]) + 1) % 10}${line.slice(4)}`;
    expectRefused(await post('/api/v1/redeem/', boletoRedeemBody(plc, b, mistyped)), 'BOLETO_INVALID.bad_check_digit');
    const printed = `${line.slice(0, 5)}.${line.slice(5, 10)} ${line.slice(10)}`;
    expectRefused(await post('/api/v1/redeem/', boletoRedeemBody(plc, b, printed)), 'BOLETO_INVALID.not_digits');
    expectRefused(await post('/api/v1/redeem/', boletoRedeemBody(plc, b, line.slice(0, 46))), 'BOLETO_INVALID.wrong_length');
    const status = (await t.app.inject({ method: 'GET', url: `/api/v1/plc/${plc.commitment.tokenId}/status` })).json();
    // Refused before the redemption opened: not even the presented hop was registered.
    expect(status).toMatchObject({ status: 'ISSUED', chain_length: 0, redemption_in_flight: false });
    expect((await t.app.inject({ method: 'GET', url: `/api/v1/balance/${b.pubkey}` })).json()).toMatchObject({ pending: '0.00' });
  });

  it('refuses a line written for another amount than the payout (the PLC less the fee), at both routes', async () => {
    const [a, b] = [newWallet(), newWallet()];
    const plc = hop(await created(a, 1_000n), a, b);
    const consent = await t.app.inject({ method: 'POST', url: '/api/v1/fees/consent', payload: feeConsentBody(b, 1) });
    expect(consent.statusCode, consent.body).toBe(200);
    const estimate = await t.app.inject({ method: 'POST', url: '/api/v1/fees/estimate', payload: { amount: '10.00', rail: 'BOLETO', owner_id: b.pubkey } });
    const payout = BigInt((estimate.json() as { net_amount: string }).net_amount.replace('.', ''));
    expect(payout).toBeLessThan(1_000n);
    // A line for the PLC's own amount is refused: the payout is the amount less the fee.
    const issue = expectRefused(await post('/api/v1/redeem/', boletoRedeemBody(plc, b, bankSlipLine(1_000n))), 'BOLETO_AMOUNT_MISMATCH');
    expect(issue.msg).toContain(`pays out ${payout}`);
    const settlement = settlementBody(plc, b, bankSlipLine(payout + 1n));
    const { authorization } = boletoRedeemBody(plc, b, bankSlipLine(payout + 1n), settlement.timestamp_ms);
    const refused = await post('/api/v1/settlements', {
      ...settlement,
      settlement_rail: 'boleto',
      destination: { boleto_line: bankSlipLine(payout + 1n) },
      bearer_signature: authorization.signature,
    });
    expectRefused(refused, 'BOLETO_AMOUNT_MISMATCH');
    expect((await t.app.inject({ method: 'GET', url: `/api/v1/plc/${plc.commitment.tokenId}/status` })).json()).toMatchObject({ redemption_in_flight: false });
  });

  it('refuses a Pix key signed for the boleto rail, and a destination that does not fit the rail', async () => {
    const [a, b] = [newWallet(), newWallet()];
    const plc = hop(await created(a, 500n), a, b);
    expectRefused(await post('/api/v1/redeem/', boletoRedeemBody(plc, b, 'someone@example.com')), 'BOLETO_INVALID.not_digits');
    expectRefused(await post('/api/v1/redeem/', redeemBody(plc, b, bankSlipLine(500n))), 'UNSUPPORTED_RAIL');
    const mixed = await post('/api/v1/settlements', { ...settlementBody(plc, b, 'someone@example.com'), settlement_rail: 'boleto' });
    expectRefused(mixed, 'UNSUPPORTED_RAIL', ['body', 'destination']);
  });

  it('one rail vocabulary: an unknown rail is 422 UNSUPPORTED_RAIL at both routes; /settlements reads BOLETO as boleto (the signed rail)', async () => {
    const [a, b] = [newWallet(), newWallet()];
    const plc = hop(await created(a, 1_000n), a, b);
    const signedTed = { ...redeemBody(plc, b, 'someone@example.com'), authorization: { ...redeemBody(plc, b, 'someone@example.com').authorization, settlement_rail: 'ted' } };
    expectRefused(await post('/api/v1/redeem/', signedTed), 'UNSUPPORTED_RAIL', ['body', 'authorization', 'settlement_rail']);
    // In a signed authorisation the rail is signed text: PIX is not pix there.
    const upper = { ...signedTed, authorization: { ...signedTed.authorization, settlement_rail: 'PIX' } };
    expectRefused(await post('/api/v1/redeem/', upper), 'UNSUPPORTED_RAIL', ['body', 'authorization', 'settlement_rail']);
    expectRefused(await post('/api/v1/settlements', { ...settlementBody(plc, b, 'someone@example.com'), settlement_rail: 'ted' }), 'UNSUPPORTED_RAIL', ['body', 'settlement_rail']);
    // BOLETO is read as boleto: the signature over "boleto" verifies and the line's amount is what is judged.
    const consent = await t.app.inject({ method: 'POST', url: '/api/v1/fees/consent', payload: feeConsentBody(b, 1) });
    expect(consent.statusCode, consent.body).toBe(200);
    const settlement = settlementBody(plc, b, bankSlipLine(1_000n));
    const { authorization } = boletoRedeemBody(plc, b, bankSlipLine(1_000n), settlement.timestamp_ms);
    const upperBoleto = await post('/api/v1/settlements', {
      ...settlement,
      settlement_rail: 'BOLETO',
      destination: { boleto_line: bankSlipLine(1_000n) },
      bearer_signature: authorization.signature,
    });
    expectRefused(upperBoleto, 'BOLETO_AMOUNT_MISMATCH');
  });

  it('refuses a Pix key that is not in the form DICT stores (422 UNSUPPORTED_RAIL), booking nothing', async () => {
    const [a, b] = [newWallet(), newWallet()];
    const plc = hop(await created(a, 500n), a, b);
    for (const key of ['"<svg/onload=x>"@example.com', '123E4567-E89B-42D3-A456-556642440000', '12345678901', `${'a'.repeat(64)}@exampless.com`]) {
      expectRefused(await post('/api/v1/redeem/', redeemBody(plc, b, key)), 'UNSUPPORTED_RAIL');
      expectRefused(await post('/api/v1/settlements', settlementBody(plc, b, key)), 'UNSUPPORTED_RAIL');
    }
    expect((await t.app.inject({ method: 'GET', url: `/api/v1/plc/${plc.commitment.tokenId}/status` })).json()).toMatchObject({ redemption_in_flight: false });
  });
});
