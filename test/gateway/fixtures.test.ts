import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { createGatewayClient } from '../../gateway/client.ts';
import { billPaymentEvents, paymentEvents, transferEvents } from '../../gateway/types.ts';
import { billPaymentStatusByEvent, payoutOutcome, transferStatusByEvent } from '../../gateway/status.ts';
import { classifyGatewayWebhook } from '../../gateway/webhooks.ts';
import { asaasBillEvent, billStatusOfEvent } from './fixtures/bill-events.ts';
import { asaasPaymentEvent } from './fixtures/payment-events.ts';
import { asaasTransferGetAnswer, asaasTransferListAnswer } from './fixtures/transfer-api.ts';
import { asaasTransferEvent, asaasTransferEventBare, transferStatusOfEvent } from './fixtures/transfer-events.ts';
import { asaasBillValidationRequest, asaasTransferValidationRequest } from './fixtures/transfer-validation.ts';

/**
 * Contract fixtures (test/gateway/fixtures/, each citing the Asaas page it is shaped after): the
 * adapter reads every one into its normalised form. The routes' handling of each is
 * test/e2e/asaas-contract.test.ts.
 */
const redemptionId = randomUUID();
const transfer = (status: string) => ({ transferId: randomUUID(), externalReference: redemptionId, value: 29.9, pixAddressKey: 'payee@example.com', status });
const line = '03399777792990000000004751101017181510000002990'.slice(0, 47);

describe('Asaas contract fixtures, read by the adapter', () => {
  it.each(transferEvents)('%s (both envelope forms) reads as a transfer event with its normalised status', (event) => {
    const input = transfer(transferStatusOfEvent[event]);
    for (const body of [asaasTransferEventBare(event, input), asaasTransferEvent(event, input, `evt_${randomUUID()}&1`)]) {
      const read = classifyGatewayWebhook(body);
      expect(read).toMatchObject({
        kind: 'transfer_event',
        event,
        transfer: { id: input.transferId, status: transferStatusByEvent[event], gatewayStatus: input.status, amountMinor: 2_990n, pixAddressKey: 'payee@example.com', externalReference: redemptionId },
      });
      expect(read.kind === 'transfer_event' && read.eventId).toBe('id' in body ? body.id : null);
    }
  });

  it('a TRANSFER_DONE carries effectiveDate as a datetime', () => {
    const read = classifyGatewayWebhook(asaasTransferEventBare('TRANSFER_DONE', transfer('DONE')));
    expect(read).toMatchObject({ kind: 'transfer_event', transfer: { effectiveDate: '2026-12-07 10:15:42', status: 'DONE' } });
  });

  it('a transfer status Asaas adds tomorrow is UNKNOWN (open), never a parse failure', () => {
    const read = classifyGatewayWebhook(asaasTransferEventBare('TRANSFER_PENDING', transfer('AWAITING_SOMETHING_NEW')));
    expect(read).toMatchObject({ kind: 'transfer_event', transfer: { status: 'UNKNOWN', gatewayStatus: 'AWAITING_SOMETHING_NEW' } });
    expect(payoutOutcome('UNKNOWN')).toBe('open');
  });

  it.each(billPaymentEvents)('%s reads as a bill payment event: PAID is our DONE, the dotted line read as digits', (event) => {
    const billId = randomUUID();
    const read = classifyGatewayWebhook(asaasBillEvent(event, { billId, externalReference: redemptionId, value: 29.9, line, status: billStatusOfEvent[event] }));
    expect(read).toMatchObject({
      kind: 'bill_payment_event',
      eventId: null,
      event,
      billPayment: { id: billId, status: billPaymentStatusByEvent[event], gatewayStatus: billStatusOfEvent[event], identificationField: line, amountMinor: 2_990n, dateCreated: null },
    });
  });

  it.each([
    ['PAYMENT_CREATED', 'PENDING', 'PIX'],
    ['PAYMENT_RECEIVED', 'RECEIVED', 'PIX'],
    ['PAYMENT_CONFIRMED', 'CONFIRMED', 'BOLETO'],
    ['PAYMENT_RECEIVED', 'RECEIVED', 'BOLETO'],
    ['PAYMENT_OVERDUE', 'OVERDUE', 'BOLETO'],
    ['PAYMENT_BANK_SLIP_VIEWED', 'PENDING', 'BOLETO'],
    ['PAYMENT_UPDATED', 'PENDING', 'PIX'],
  ] as const)('%s (%s, %s) reads as a payment event', (event, status, billingType) => {
    const paymentId = `pay_${randomUUID().slice(0, 12)}`;
    const read = classifyGatewayWebhook(asaasPaymentEvent(event, { paymentId, customerId: 'cus_000006350698', externalReference: redemptionId, billingType, value: 42.23, netValue: 41.24, status }, 'evt_05b708f961d739ea7eba7e4db318f621&7761645'));
    expect(read).toMatchObject({ kind: 'payment_event', event, eventId: 'evt_05b708f961d739ea7eba7e4db318f621&7761645', payment: { id: paymentId, status, billingType, amountMinor: 4_223n, netAmountMinor: 4_124n } });
  });

  it('every documented payment event is recognised', () => {
    for (const event of paymentEvents) {
      const body = asaasPaymentEvent(event, { paymentId: 'pay_1', customerId: 'cus_1', externalReference: null, billingType: 'PIX', value: 1, netValue: 1, status: 'PENDING' }, 'evt_1');
      expect(classifyGatewayWebhook(body).kind).toBe('payment_event');
    }
  });

  it('the validation requests read as a transfer and a bill payment to authorize', () => {
    const input = transfer('PENDING');
    expect(classifyGatewayWebhook(asaasTransferValidationRequest(input))).toMatchObject({ kind: 'transfer_validation', transfer: { id: input.transferId, pixAddressKey: 'payee@example.com', externalReference: redemptionId, status: 'PENDING' } });
    const billId = randomUUID();
    expect(classifyGatewayWebhook(asaasBillValidationRequest({ billId, externalReference: redemptionId, value: 29.9, line, status: 'PENDING' }))).toMatchObject({
      kind: 'bill_validation',
      billPayment: { id: billId, identificationField: line, status: 'PENDING' },
    });
  });

  it('the get and list answers parse through the client, filtered by externalReference', async () => {
    const items = [transfer('DONE'), transfer('CANCELLED')];
    const asked: string[] = [];
    const client = createGatewayClient({
      baseUrl: 'https://api-sandbox.asaas.com',
      apiKey: 'test',
      timeoutMs: 1000,
      fetch: async (url) => {
        asked.push(String(url));
        const path = new URL(String(url)).pathname;
        const body = path === '/v3/transfers' ? asaasTransferListAnswer(items) : asaasTransferGetAnswer(items[0]!);
        return new Response(JSON.stringify(body), { status: 200, headers: { 'content-type': 'application/json' } });
      },
    });
    const listed = await client.listTransfers({ externalReference: redemptionId, limit: 100 });
    expect(asked[0]).toContain(`externalReference=${redemptionId}`);
    expect(listed.items.map((t) => [t.id, t.status, t.pixAddressKey])).toEqual(items.map((t) => [t.transferId, t.status, 'payee@example.com']));
    expect(await client.getTransfer(items[0]!.transferId)).toMatchObject({ id: items[0]!.transferId, status: 'DONE', externalReference: redemptionId });
  });
});
