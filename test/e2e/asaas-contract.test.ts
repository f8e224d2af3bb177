import { inboxOutcome } from '../support/inbox.ts';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bankSlipLine, boletoRedeemBody, feeConsentBody, handedOnPlc, redeemBody, startSettlementHarness, type SettlementHarness } from '../support/settlement.ts';
import { hop, newWallet } from '../support/wallet.ts';
import { waitFor } from '../support/wait.ts';
import { asaasBillEvent } from '../gateway/fixtures/bill-events.ts';
import { asaasPaymentEvent } from '../gateway/fixtures/payment-events.ts';
import { asaasTransferEvent, asaasTransferEventBare } from '../gateway/fixtures/transfer-events.ts';
import { asaasTransferValidationRequest } from '../gateway/fixtures/transfer-validation.ts';

/**
 * The webhook routes act on each of Asaas's documented shapes (test/gateway/fixtures/, each
 * citing its page), with real ids from real redemptions: settle, fail, or ignore with a reason,
 * with the gateway's own header (`asaas-access-token`) and with the interface's
 * (`gateway-access-token`). The simulator sends no webhooks here and leaves payouts at the bank, so
 * only the fixtures can move a redemption (and the workflow does not poll within the test).
 */
let h: SettlementHarness;
const device = { 'x-device-id': 'device-asaas-contract' };
const pixKey = 'payee@example.com';
type Header = 'asaas-access-token' | 'gateway-access-token';

beforeAll(async () => {
  h = await startSettlementHarness({ REDEMPTION_WEBHOOK_WAIT_MS: '600000' }, { webhookUrl: null, autoSettle: false });
});
afterAll(async () => {
  await h?.close();
});

function deliver(payload: object, header: Header, token: string = h.t.config.GATEWAY_WEBHOOK_TOKEN) {
  return h.t.app.inject({ method: 'POST', url: '/api/v1/redemption/webhook/gateway', headers: { [header]: token }, payload });
}

async function inboxRow(eventId: string) {
  await inboxOutcome(h.t, eventId).catch(() => undefined);
  const result = await h.t.db.pool.query<{ status: string; result: { reason?: string } | null }>('SELECT status, result FROM webhook_inbox WHERE event_id = $1', [eventId]);
  return result.rows[0];
}

/** A Pix redemption whose transfer the gateway validated (through the service) and holds at the bank. */
async function pixPayoutAtTheBank(amountMinor: bigint) {
  const { plc, bearer } = await handedOnPlc(h.t, amountMinor, device);
  const response = await h.t.app.inject({ method: 'POST', url: '/api/v1/redeem/', headers: device, payload: redeemBody(plc, bearer, pixKey) });
  expect(response.statusCode, response.body).toBe(200);
  const opened = response.json() as { redemption_id: string; workflow_id: string };
  const transfer = await waitFor(
    () => h.simulator.state.snapshot(2000).transfers.find((t) => t.externalReference === opened.redemption_id && t.status === 'BANK_PROCESSING'),
    { what: 'the payout approved by the validation and at the bank' },
  );
  return { opened, transfer, fixture: { transferId: transfer.id, externalReference: opened.redemption_id, value: transfer.value, pixAddressKey: pixKey } };
}

describe("Asaas's documented shapes at the webhook routes", () => {
  it('refuses both headers with a wrong token (401) and accepts either with the right one', async () => {
    const body = asaasTransferEventBare('TRANSFER_CREATED', { transferId: randomUUID(), externalReference: null, value: 1, pixAddressKey: pixKey, status: 'PENDING' });
    expect((await deliver(body, 'asaas-access-token', 'not-the-token')).statusCode).toBe(401);
    expect((await deliver(body, 'gateway-access-token', 'not-the-token')).statusCode).toBe(401);
    expect((await h.t.app.inject({ method: 'POST', url: '/api/v1/redemption/webhook/gateway', payload: body })).statusCode).toBe(401);
    const validate = (header: Header, token: string) =>
      h.t.app.inject({ method: 'POST', url: '/api/v1/webhooks/transfer/validate', headers: { [header]: token }, payload: asaasTransferValidationRequest({ transferId: randomUUID(), externalReference: randomUUID(), value: 1, pixAddressKey: pixKey, status: 'PENDING' }) });
    expect((await validate('asaas-access-token', 'not-the-token')).statusCode).toBe(401);
    for (const header of ['asaas-access-token', 'gateway-access-token'] as const) {
      const answer = await validate(header, h.t.config.GATEWAY_WEBHOOK_TOKEN);
      expect(answer.statusCode).toBe(200);
      // A transfer that is not one of our open payout intents: refused, the gateway not read.
      expect(answer.json()).toMatchObject({ status: 'REFUSED', refuseReason: expect.stringMatching(/not one of our open payout intents/) });
    }
  });

  it('TRANSFER_DONE (with envelope id, gateway header) settles; IN_BANK_PROCESSING and BLOCKED without an id (interface header) are ignored with a reason', async () => {
    const { opened, transfer, fixture } = await pixPayoutAtTheBank(1_200n);
    for (const event of ['TRANSFER_IN_BANK_PROCESSING', 'TRANSFER_BLOCKED'] as const) {
      const status = event === 'TRANSFER_BLOCKED' ? 'BLOCKED' : 'BANK_PROCESSING';
      const ack = await deliver(asaasTransferEventBare(event, { ...fixture, status }), 'gateway-access-token');
      expect(ack.statusCode, ack.body).toBe(200);
      // No id in the body: keyed by the hash of the body (docs/gateway-wire-api.md, "Event ids").
      expect(ack.json().event_id).toMatch(/^sha256:[0-9a-f]{64}$/);
      expect(await inboxRow(ack.json().event_id)).toMatchObject({ status: 'IGNORED', result: { reason: expect.stringMatching(/only a final status acts/) } });
    }
    h.simulator.state.completeTransfer(transfer.id);
    const eventId = `evt_05b708f961d739ea7eba7e4db318f621&${Date.now()}`;
    const ack = await deliver(asaasTransferEvent('TRANSFER_DONE', { ...fixture, status: 'DONE' }, eventId), 'asaas-access-token');
    expect(ack.statusCode, ack.body).toBe(200);
    expect(await h.t.temporal.workflow.getHandle(opened.workflow_id).result()).toMatchObject({ status: 'SETTLED' });
    const row = await h.t.db.pool.query('SELECT status, gateway_transfer_id FROM redemptions WHERE id = $1', [opened.redemption_id]);
    expect(row.rows[0]).toEqual({ status: 'SETTLED', gateway_transfer_id: transfer.id });
    expect(await inboxRow(eventId)).toMatchObject({ status: 'PROCESSED' });
  });

  it('TRANSFER_FAILED without an envelope id (interface header) fails the redemption once the gateway confirms it', async () => {
    const { opened, transfer, fixture } = await pixPayoutAtTheBank(1_300n);
    h.simulator.state.failTransfer(transfer.id, 'Chave Pix inválida');
    const ack = await deliver(asaasTransferEventBare('TRANSFER_FAILED', { ...fixture, status: 'FAILED', failReason: 'Chave Pix inválida' }), 'gateway-access-token');
    expect(ack.statusCode, ack.body).toBe(200);
    expect(await h.t.temporal.workflow.getHandle(opened.workflow_id).result()).toMatchObject({ status: 'FAILED', state: { failureReason: 'Chave Pix inválida' } });
  });

  it('a TRANSFER_DONE the gateway does not confirm moves nothing', async () => {
    const { opened, fixture } = await pixPayoutAtTheBank(1_400n);
    const eventId = `evt_${randomUUID()}`;
    const ack = await deliver(asaasTransferEvent('TRANSFER_DONE', { ...fixture, status: 'DONE' }, eventId), 'asaas-access-token');
    expect(ack.statusCode).toBe(200);
    expect(await inboxRow(eventId)).toMatchObject({ status: 'CONTRADICTED' });
    const row = await h.t.db.pool.query('SELECT status FROM redemptions WHERE id = $1', [opened.redemption_id]);
    expect(row.rows[0]).toEqual({ status: 'PENDING_PAYMENT' });
  });

  it('BILL_PAID (status PAID, dotted line, gateway header) settles a boleto redemption; BILL_BANK_PROCESSING is ignored', async () => {
    const [a, b] = [newWallet(), newWallet()];
    await h.t.deposit(a.pubkey, '50.00');
    expect((await h.t.app.inject({ method: 'POST', url: '/api/v1/fees/consent', payload: feeConsentBody(b, 1) })).statusCode).toBe(200);
    const plc = hop(await h.t.issuePlc(a, 2_000n, device), a, b);
    const line = bankSlipLine(0n, '4444455555666667777788888');
    const response = await h.t.app.inject({ method: 'POST', url: '/api/v1/redeem/', headers: device, payload: boletoRedeemBody(plc, b, line) });
    expect(response.statusCode, response.body).toBe(200);
    const opened = response.json() as { redemption_id: string; workflow_id: string };
    const bill = await waitFor(
      () => h.simulator.state.snapshot(2000).billPayments.find((x) => x.externalReference === opened.redemption_id && x.status === 'BANK_PROCESSING'),
      { what: 'the bill payment at the bank' },
    );
    const fixture = { billId: bill.id, externalReference: opened.redemption_id, value: bill.value, line };
    const processing = await deliver(asaasBillEvent('BILL_BANK_PROCESSING', { ...fixture, status: 'BANK_PROCESSING' }), 'asaas-access-token');
    expect(await inboxRow(processing.json().event_id)).toMatchObject({ status: 'IGNORED', result: { reason: expect.stringMatching(/only a final status acts/) } });
    h.simulator.state.completeBillPayment(bill.id);
    const paid = await deliver(asaasBillEvent('BILL_PAID', { ...fixture, status: 'PAID' }), 'asaas-access-token');
    expect(paid.statusCode, paid.body).toBe(200);
    expect(await h.t.temporal.workflow.getHandle(opened.workflow_id).result()).toMatchObject({ status: 'SETTLED', state: { gatewayStatus: 'DONE', gatewayTransferId: bill.id } });
  });

  it('a payment event of every kind for a charge nobody has is stored and ignored with its reason', async () => {
    for (const [event, status, header] of [
      ['PAYMENT_RECEIVED', 'RECEIVED', 'asaas-access-token'],
      ['PAYMENT_BANK_SLIP_VIEWED', 'PENDING', 'gateway-access-token'],
    ] as const) {
      const eventId = `evt_${randomUUID()}&1`;
      const body = asaasPaymentEvent(event, { paymentId: `pay_${randomUUID().slice(0, 12)}`, customerId: 'cus_000006350698', externalReference: randomUUID(), billingType: 'BOLETO', value: 42.23, netValue: 41.24, status }, eventId);
      const ack = await deliver(body, header);
      expect(ack.statusCode, ack.body).toBe(200);
      expect(await inboxRow(eventId)).toMatchObject({ status: 'IGNORED', result: { reason: expect.stringMatching(/no charge for payment/) } });
    }
  });
});
