import { inboxOutcome } from '../support/inbox.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findViolations } from '../../db/ledger.ts';
import { snapshotOf } from '../support/ledger.ts';
import { bankSlipLine, boletoRedeemBody, feeConsentBody, startSettlementHarness, type SettlementHarness } from '../support/settlement.ts';
import { hop, newWallet, type TestWallet } from '../support/wallet.ts';
import { replayAndRecord } from '../support/histories.ts';

/**
 * Boleto redemptions end to end (docs/settlement.md "Boleto payouts"): API -> redemption workflow
 * -> gateway simulator (a bill payment, its BILL_* webhooks (Asaas's bill events), read back by the webhook's
 * gateway word) -> settlement or reversal, with real Temporal and PostgreSQL.
 */
let h: SettlementHarness;
const device = { 'x-device-id': 'device-e2e-boleto' };

beforeAll(async () => {
  h = await startSettlementHarness();
});
afterAll(async () => {
  await h?.close();
});

const balance = async (wallet: TestWallet) => (await h.t.app.inject({ method: 'GET', url: `/api/v1/balance/${wallet.pubkey}` })).json();
const redeem = (body: object) => h.t.app.inject({ method: 'POST', url: '/api/v1/redeem/', headers: device, payload: body });
const bills = (redemptionId: string) => h.simulator.state.snapshot(500).billPayments.filter((bill) => bill.externalReference === redemptionId);

/** A boleto redemption costs a fee (docs/limits-and-fees.md): the bearer consents to schedule version 1 first. */
async function consent(wallet: TestWallet) {
  const response = await h.t.app.inject({ method: 'POST', url: '/api/v1/fees/consent', payload: feeConsentBody(wallet, 1) });
  expect(response.statusCode, response.body).toBe(200);
}

/** What a boleto redemption of `amount` pays out to this bearer: the amount less its fee, from the fee estimate. */
async function payoutOf(wallet: TestWallet, amount: string): Promise<bigint> {
  const response = await h.t.app.inject({ method: 'POST', url: '/api/v1/fees/estimate', payload: { amount, rail: 'BOLETO', owner_id: wallet.pubkey } });
  expect(response.statusCode, response.body).toBe(200);
  return BigInt((response.json() as { net_amount: string }).net_amount.replace('.', ''));
}

describe('boleto redemptions through the gateway', () => {
  it('pays the boleto (a bill payment), settles and redeems the PLC, the ledger balanced', async () => {
    const [a, b] = [newWallet(), newWallet()];
    await h.t.deposit(a.pubkey, '200.00');
    await consent(b);
    const plc0 = await h.t.issuePlc(a, 10_000n, device);
    const plc1 = hop(plc0, a, b);
    // 100.00 less the fee: the bill is for the payout.
    const payout = await payoutOf(b, '100.00');
    expect(payout).toBeLessThan(10_000n);
    const line = bankSlipLine(payout);
    const worldBefore = (await snapshotOf(h.t.db.pool, 'system:world', 'AVAILABLE')) ?? 0n;
    const balanceBefore = h.simulator.state.balanceMinor;
    const response = await redeem(boletoRedeemBody(plc1, b, line));
    expect(response.statusCode, response.body).toBe(200);
    const opened = response.json();
    expect(opened).toMatchObject({ status: 'PENDING_PAYMENT', amount: '100.00', fee: ((10_000 - Number(payout)) / 100).toFixed(2), rail: 'boleto', destination_masked: `************${line.slice(-4)}` });
    const result = await h.t.temporal.workflow.getHandle(opened.workflow_id).result();
    expect(result).toMatchObject({ status: 'SETTLED', state: { status: 'SETTLED' } });
    const paid = bills(opened.redemption_id);
    expect(paid).toHaveLength(1);
    // Asaas's words: PAID, the line written with dots and spaces, our redemption as its reference.
    expect(paid[0]).toMatchObject({ status: 'PAID', value: Number(payout) / 100, externalReference: opened.redemption_id });
    expect(paid[0]?.identificationField.replace(/[. ]/g, '')).toBe(line);
    expect(paid[0]?.identificationField).toMatch(/ /);
    // The gateway validated the bill payment (type BILL) and the service approved it once, claimed for the redemption.
    expect(h.simulator.state.snapshot(500).validations.filter((v) => v.transferId === paid[0]?.id).map((v) => v.outcome)).toEqual(['APPROVED']);
    const claimed = await h.t.db.pool.query('SELECT claimed_payout_id FROM payout_intents WHERE redemption_id = $1', [opened.redemption_id]);
    expect(claimed.rows).toEqual([{ claimed_payout_id: paid[0]?.id }]);
    expect(h.simulator.state.balanceMinor).toBe(balanceBefore - payout);
    const followed = (await h.t.app.inject({ method: 'GET', url: opened.status_url })).json();
    expect(followed).toMatchObject({ status: 'SETTLED', rail: 'boleto', gateway_status: 'DONE', gateway_transfer_id: paid[0]?.id });
    expect((await h.t.app.inject({ method: 'GET', url: `/api/v1/plc/${plc0.commitment.tokenId}/status` })).json()).toMatchObject({ status: 'REDEEMED' });
    // The public payout status reads the bill payment too.
    const payoutStatus = await h.t.app.inject({ method: 'GET', url: `/api/v1/redemption/transfer/${paid[0]?.id}` });
    expect(payoutStatus.json()).toEqual({ transfer_id: paid[0]?.id, status: 'DONE', fail_reason: null });
    expect(await balance(a)).toMatchObject({ available: '100.00', promised: '0.00' });
    expect(await balance(b)).toMatchObject({ available: '0.00', pending: '0.00' });
    expect(await snapshotOf(h.t.db.pool, 'system:world', 'AVAILABLE')).toBe(worldBefore + payout);
    expect(await findViolations(h.t.db.pool)).toEqual([]);
    // The bill's BILL_PAID event went through the inbox and was verified against the gateway.
    const event = await h.t.db.pool.query(`SELECT event_id FROM webhook_inbox WHERE event_type = 'BILL_PAID' AND raw_body::jsonb -> 'bill' ->> 'id' = $1`, [
      paid[0]?.id,
    ]);
    expect(event.rows).toHaveLength(1);
    expect(await inboxOutcome(h.t, event.rows[0].event_id)).toBe('PROCESSED');
    await replayAndRecord(h.t.temporal, opened.workflow_id, 'redemption-lean-boleto-settled');
  });

  it('pays a boleto that leaves its amount open for the PLC amount', async () => {
    const [a, b] = [newWallet(), newWallet()];
    await h.t.deposit(a.pubkey, '20.00');
    await consent(b);
    const plc1 = hop(await h.t.issuePlc(a, 1_000n, device), a, b);
    const response = await redeem(boletoRedeemBody(plc1, b, bankSlipLine(0n, '9999988888777776666655555')));
    expect(response.statusCode, response.body).toBe(200);
    expect(await h.t.temporal.workflow.getHandle(response.json().workflow_id).result()).toMatchObject({ status: 'SETTLED' });
    // An open line is paid the payout: 10.00 less the fee.
    expect(bills(response.json().redemption_id)).toMatchObject([{ status: 'PAID', value: Number(await payoutOf(b, '10.00')) / 100 }]);
  });

  it('a bill payment the bank refuses fails the redemption and reverts the PLC, redeemable again', async () => {
    const [a, b] = [newWallet(), newWallet()];
    await h.t.deposit(a.pubkey, '30.00');
    await consent(b);
    const plc0 = await h.t.issuePlc(a, 2_000n, device);
    const plc1 = hop(plc0, a, b);
    const line = bankSlipLine(await payoutOf(b, '20.00'), '1111122222333334444455555');
    const balanceBefore = h.simulator.state.balanceMinor;
    h.simulator.faults.update({ billPaymentFailRate: 1 });
    let opened;
    try {
      const response = await redeem(boletoRedeemBody(plc1, b, line));
      expect(response.statusCode, response.body).toBe(200);
      opened = response.json();
      const result = await h.t.temporal.workflow.getHandle(opened.workflow_id).result();
      expect(result).toMatchObject({ status: 'FAILED', state: { status: 'FAILED', gatewayStatus: 'FAILED' } });
    } finally {
      h.simulator.faults.update({ billPaymentFailRate: 0 });
    }
    expect(bills(opened.redemption_id)).toMatchObject([{ status: 'FAILED', failReasons: expect.stringContaining('refused') }]);
    // The account got the money back; the ledger reverted the PLC to its issuer's promise.
    expect(h.simulator.state.balanceMinor).toBe(balanceBefore);
    expect((await h.t.app.inject({ method: 'GET', url: opened.status_url })).json()).toMatchObject({ status: 'FAILED', rail: 'boleto' });
    expect((await h.t.app.inject({ method: 'GET', url: `/api/v1/plc/${plc0.commitment.tokenId}/status` })).json()).toMatchObject({
      status: 'TRANSFERRED',
      redemption_in_flight: false,
    });
    expect(await balance(a)).toMatchObject({ available: '10.00', promised: '20.00' });
    expect(await balance(b)).toMatchObject({ pending: '0.00' });
    expect(await findViolations(h.t.db.pool)).toEqual([]);
    await replayAndRecord(h.t.temporal, opened.workflow_id, 'redemption-lean-boleto-failed');
    // Redeemed again, with a newly signed authorisation: paid this time.
    const again = await redeem(boletoRedeemBody(plc1, b, line));
    expect(again.statusCode, again.body).toBe(200);
    expect(await h.t.temporal.workflow.getHandle(again.json().workflow_id).result()).toMatchObject({ status: 'SETTLED' });
    expect(await balance(a)).toMatchObject({ available: '10.00', promised: '0.00' });
    expect(await findViolations(h.t.db.pool)).toEqual([]);
  });
});
