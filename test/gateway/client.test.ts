import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createGatewayClient, gatewayIdempotencyKey, type GatewayClient } from '../../gateway/client.ts';
import { GatewayError } from '../../gateway/errors.ts';
import { classifyGatewayWebhookText } from '../../gateway/webhooks.ts';
import { createSimulator, type Simulator } from '../../simulator/app.ts';
import { buildBoleto, completeCpf, isValidPixPayload } from '../../simulator/documents.ts';
import { control, dueInDays, startReceiver, type Receiver } from './receiver.ts';

/**
 * The gateway client against the simulator running in this process on an ephemeral port, with a
 * local HTTP receiver standing in for the service's webhook and validation endpoints.
 */

const webhookToken = 'test-webhook-token';
const apiKey = 'test-api-key';
let receiver: Receiver;
let simulator: Simulator;
let baseUrl: string;
let client: GatewayClient;
/** Raw request bodies the client sent, to check the exact JSON text of amounts. */
const sentBodies: string[] = [];
let customerId: string;
let seq = 0;
const unique = (prefix: string): string => `${prefix}-${Date.now().toString(36)}-${(seq += 1)}`;

/** A charge to this file's customer under a new idempotency key and reference. */
function newCharge(billingType: 'PIX' | 'BOLETO', amountMinor: bigint, dueDate: string = dueInDays(1)) {
  return client.createPayment({ idempotencyKey: unique('charge'), customerId, billingType, amountMinor, dueDate, externalReference: unique('redemption') });
}

/**
 * A payout of 1.00 whose validation (test/gateway/receiver.ts answers by the reference's prefix)
 * cancels it: the transfer, once its TRANSFER_CANCELLED event has arrived.
 */
async function cancelledPayout(referencePrefix: 'refuse' | 'fail', pixAddressKey: string, pixAddressKeyType: 'PHONE' | 'EVP') {
  const transfer = await client.createTransfer({ amountMinor: 100n, pixAddressKey, pixAddressKeyType, externalReference: unique(referencePrefix) });
  await receiver.waitFor(() => receiver.events().some((e) => e.event === 'TRANSFER_CANCELLED' && e.transfer?.id === transfer.id), 3_000, 'TRANSFER_CANCELLED');
  return transfer;
}

async function expectGatewayError(promise: Promise<unknown>): Promise<GatewayError> {
  const error = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(GatewayError);
  return error as GatewayError;
}

beforeAll(async () => {
  receiver = await startReceiver();
  simulator = await createSimulator({
    host: '127.0.0.1',
    port: 0,
    apiKey,
    webhookUrl: `${receiver.url}/webhook`,
    validationUrl: `${receiver.url}/validate`,
    webhookToken,
    validationDelayMs: 50,
    webhookRetryBaseMs: 10,
    webhookRetryMaxMs: 50,
    seed: 1234,
  });
  baseUrl = await simulator.listen();
  client = createGatewayClient({
    baseUrl,
    apiKey,
    timeoutMs: 2_000,
    fetch: async (input, init) => {
      if (typeof init?.body === 'string') sentBodies.push(init.body);
      return fetch(input, init);
    },
  });
  const customer = await client.createCustomer({
    idempotencyKey: gatewayIdempotencyKey('customer', 'owner-1'),
    name: 'Maria Silva',
    cpfCnpj: completeCpf('529982247'),
    externalReference: 'owner-1',
  });
  customerId = customer.id;
});

afterAll(async () => {
  await simulator?.close();
  await receiver?.close();
});

beforeEach(async () => {
  await control(baseUrl, 'DELETE', '/sim/faults');
});

describe('gateway client: customers and charges', () => {
  it('creates a customer and reads it back', async () => {
    const read = await client.getCustomer(customerId);
    expect(read).toMatchObject({ id: customerId, name: 'Maria Silva', cpfCnpj: '52998224725', externalReference: 'owner-1', deleted: false });
    expect(customerId).toMatch(/^cus_\d{12}$/);
  });

  it('creates a PIX charge and returns a valid copy-and-paste payload and a PNG', async () => {
    const payment = await client.createPayment({
      idempotencyKey: unique('pix'),
      customerId,
      billingType: 'PIX',
      amountMinor: 1234n,
      dueDate: dueInDays(1),
      description: 'redemption',
      externalReference: unique('redemption'),
    });
    expect(payment).toMatchObject({ status: 'PENDING', billingType: 'PIX', amountMinor: 1234n, netAmountMinor: 1234n - 99n, customerId });
    expect(payment.id).toMatch(/^pay_[a-z0-9]{16}$/);
    const qr = await client.getPixQrCode(payment.id);
    expect(qr.payload.startsWith('000201')).toBe(true);
    expect(qr.payload).toContain('540512.34');
    expect(qr.payload).toContain('5303986');
    expect(isValidPixPayload(qr.payload)).toBe(true);
    expect(Buffer.from(qr.encodedImage, 'base64').subarray(0, 8)).toEqual(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]));
    const boletoLine = await expectGatewayError(client.getBoletoIdentificationField(payment.id));
    expect(boletoLine).toMatchObject({ status: 400, code: 'invalid_billingType', retryable: false });
  });

  it('creates a BOLETO charge and returns its 47-digit digitable line', async () => {
    const payment = await newCharge('BOLETO', 1234567890n, dueInDays(3));
    expect(payment).toMatchObject({ status: 'PENDING', billingType: 'BOLETO', amountMinor: 1234567890n });
    const line = await client.getBoletoIdentificationField(payment.id);
    expect(line.identificationField).toMatch(/^\d{47}$/);
    expect(line.barCode).toMatch(/^\d{44}$/);
    // The last 10 digits of both carry the amount in centavos.
    expect(line.identificationField.slice(-10)).toBe('1234567890');
    expect(line.barCode.slice(9, 19)).toBe('1234567890');
    expect(line.nossoNumero).toBe(payment.nossoNumero);
  });

  it('returns the same charge for the same idempotency key, and the simulator holds one', async () => {
    const externalReference = unique('redemption');
    const input = {
      idempotencyKey: gatewayIdempotencyKey('charge', externalReference),
      customerId,
      billingType: 'PIX' as const,
      amountMinor: 5000n,
      dueDate: dueInDays(1),
      externalReference,
    };
    const first = await client.createPayment(input);
    const second = await client.createPayment(input);
    expect(second.id).toBe(first.id);
    const page = await client.listPayments({ externalReference });
    expect(page.totalCount).toBe(1);
    expect(page.items.map((p) => p.id)).toEqual([first.id]);

    const reused = await expectGatewayError(client.createPayment({ ...input, amountMinor: 5001n }));
    expect(reused).toMatchObject({ status: 409, code: 'idempotency_key_reused', retryable: false });
  });

  it('recovers the charge whose create answer was lost by retrying with the same key', async () => {
    const externalReference = unique('redemption');
    const input = {
      idempotencyKey: gatewayIdempotencyKey('charge', externalReference),
      customerId,
      billingType: 'BOLETO' as const,
      amountMinor: 777n,
      dueDate: dueInDays(2),
      externalReference,
    };
    await control(baseUrl, 'POST', '/sim/faults', { apiLostResponseRate: 1 });
    const lost = await expectGatewayError(client.createPayment(input));
    expect(lost).toMatchObject({ status: 500, retryable: true });
    await control(baseUrl, 'DELETE', '/sim/faults');
    const retried = await client.createPayment(input);
    const page = await client.listPayments({ externalReference });
    expect(page.totalCount).toBe(1);
    expect(page.items[0]?.id).toBe(retried.id);
  });

  it('cancels a pending charge (idempotently) and refuses to cancel a paid one', async () => {
    const payment = await newCharge('PIX', 100n);
    expect(await client.cancelPayment(payment.id)).toEqual({ id: payment.id, deleted: true });
    expect(await client.cancelPayment(payment.id)).toEqual({ id: payment.id, deleted: true });
    expect(await client.getPayment(payment.id)).toMatchObject({ status: 'DELETED', deleted: true });

    const paid = await newCharge('PIX', 100n);
    await control(baseUrl, 'POST', `/sim/payments/${paid.id}/pay`);
    const refused = await expectGatewayError(client.cancelPayment(paid.id));
    expect(refused).toMatchObject({ status: 400, code: 'invalid_action', retryable: false });
    const refunded = await client.refundPayment(paid.id);
    expect(refunded.status).toBe('REFUNDED');
    expect((await client.refundPayment(paid.id)).status).toBe('REFUNDED');
  });

  it('lists charges by status in bounded pages', async () => {
    const overdue = await newCharge('BOLETO', 2500n, dueInDays(0));
    await control(baseUrl, 'POST', `/sim/payments/${overdue.id}/overdue`);
    const page = await client.listPayments({ status: 'OVERDUE', limit: 100 });
    expect(page.items.map((p) => p.id)).toContain(overdue.id);
    expect(page.items.every((p) => p.status === 'OVERDUE')).toBe(true);
    const small = await client.listPayments({ limit: 1 });
    expect(small.items).toHaveLength(1);
    expect(small.hasMore).toBe(true);
    const tooBig = await expectGatewayError(client.listPayments({ limit: 101 }));
    expect(tooBig).toMatchObject({ code: 'INVALID_REQUEST', status: null, retryable: false });
  });
});

describe('gateway client: money on the wire', () => {
  it('sends and reads 0.10 + 0.20 as exactly 0.30', async () => {
    const amountMinor = 10n + 20n;
    sentBodies.length = 0;
    const payment = await newCharge('PIX', amountMinor);
    expect(sentBodies.at(-1)).toContain('"value":0.3,');
    expect(sentBodies.at(-1)).not.toContain('0.30000000000000004');
    expect(payment.amountMinor).toBe(30n);
    expect((await client.getPayment(payment.id)).amountMinor).toBe(30n);
  });

  it('carries 12345678.90 and the largest amounts exactly', async () => {
    await control(baseUrl, 'POST', '/sim/balance', { value: 10_000_000_000_000 });
    for (const amountMinor of [1_234_567_890n, 1n, 99n, 100n, 9_999_999_999_999n]) {
      sentBodies.length = 0;
      const transfer = await client.createTransfer({
        amountMinor,
        pixAddressKey: 'payee@example.com',
        pixAddressKeyType: 'EMAIL',
        externalReference: unique('no-validation'),
      });
      expect(transfer.amountMinor).toBe(amountMinor);
      expect(transfer.netAmountMinor).toBe(amountMinor);
      const value = /"value":([^,}]+)/.exec(sentBodies.at(-1) ?? '')?.[1];
      expect(value).toBe(String(Number(`${amountMinor / 100n}.${(amountMinor % 100n).toString().padStart(2, '0')}`)));
    }
    await control(baseUrl, 'POST', '/sim/balance', { value: 10_000_000 });
  });

  it('refuses an answer whose amount has more than two decimals', async () => {
    const stub = createGatewayClient({
      baseUrl: 'http://gateway.invalid',
      apiKey,
      timeoutMs: 1_000,
      fetch: async () =>
        new Response(
          '{"id":"pay_x","dateCreated":"2026-01-01","customer":"cus_1","value":0.30000000000000004,"netValue":0.3,"billingType":"PIX","status":"PENDING","dueDate":"2026-01-02","deleted":false}',
          { status: 200, headers: { 'content-type': 'application/json' } },
        ),
    });
    const error = await expectGatewayError(stub.getPayment('pay_x'));
    expect(error).toMatchObject({ code: 'INVALID_RESPONSE', retryable: false, status: 200 });
  });
});

describe('gateway client: errors', () => {
  it('maps a wrong API key to a non-retryable 401', async () => {
    const wrong = createGatewayClient({ baseUrl, apiKey: 'wrong', timeoutMs: 1_000 });
    const error = await expectGatewayError(wrong.getCustomer(customerId));
    expect(error).toMatchObject({ status: 401, code: 'invalid_access_token', retryable: false, operation: 'getCustomer' });
    expect(error.message).not.toContain('wrong');
    const health = await wrong.health();
    expect(health).toMatchObject({ ok: false, status: 401, retryable: false });
  });

  it('maps gateway validation errors to non-retryable errors', async () => {
    const pastDue = await expectGatewayError(newCharge('PIX', 100n, '2020-01-01'));
    expect(pastDue).toMatchObject({ status: 400, code: 'invalid_dueDate', retryable: false });
    expect(pastDue.errors[0]?.description).toMatch(/past/);

    const badKey = await expectGatewayError(
      client.createTransfer({
        amountMinor: 100n,
        pixAddressKey: '11111111111',
        pixAddressKeyType: 'CPF',
        externalReference: unique('transfer'),
      }),
    );
    expect(badKey).toMatchObject({ status: 400, code: 'invalid_pixAddressKey', retryable: false });

    const missing = await expectGatewayError(client.getPayment('pay_doesnotexist00'));
    expect(missing).toMatchObject({ status: 404, code: 'not_found', retryable: false });
  });

  it('refuses bad input before sending anything', async () => {
    sentBodies.length = 0;
    const zero = await expectGatewayError(
      client.createPayment({
        idempotencyKey: unique('zero'),
        customerId,
        billingType: 'PIX',
        amountMinor: 0n,
        dueDate: dueInDays(1),
        externalReference: 'x',
      }),
    );
    expect(zero).toMatchObject({ code: 'INVALID_REQUEST', retryable: false, status: null });
    const noKey = await expectGatewayError(
      client.createTransfer({ amountMinor: 1n, pixAddressKey: '', pixAddressKeyType: 'EMAIL', externalReference: 'x' }),
    );
    expect(noKey.code).toBe('INVALID_REQUEST');
    const pathEscape = await expectGatewayError(client.getPayment('../customers/x'));
    expect(pathEscape.code).toBe('INVALID_REQUEST');
    expect(sentBodies).toEqual([]);
  });

  it('maps an injected 5xx to a retryable error', async () => {
    await control(baseUrl, 'POST', '/sim/faults', { apiErrorRate: 1 });
    const error = await expectGatewayError(client.getCustomer(customerId));
    expect(error).toMatchObject({ status: 500, code: 'internal_error', retryable: true });
    const health = await client.health();
    expect(health).toMatchObject({ ok: false, status: 500, retryable: true });
  });

  it('turns an injected hang into a retryable timeout within timeoutMs', async () => {
    const timeoutMs = 300;
    const impatient = createGatewayClient({ baseUrl, apiKey, timeoutMs });
    await control(baseUrl, 'POST', '/sim/faults', { apiTimeoutRate: 1, apiHangMs: 20_000 });
    const startedAt = performance.now();
    const error = await expectGatewayError(impatient.getCustomer(customerId));
    const elapsedMs = performance.now() - startedAt;
    expect(error).toMatchObject({ code: 'TIMEOUT', status: null, retryable: true });
    expect(elapsedMs).toBeGreaterThanOrEqual(timeoutMs - 20);
    // The client gave up, long before the gateway's hang (20 s) ended: the margin holds on a busy machine.
    expect(elapsedMs).toBeLessThan(10_000);
  });

  it('maps a refused connection to a retryable network error, and a caller abort to ABORTED', async () => {
    const nowhere = createGatewayClient({ baseUrl: 'http://127.0.0.1:9', apiKey, timeoutMs: 1_000 });
    expect(await expectGatewayError(nowhere.getPayment('pay_1'))).toMatchObject({ code: 'NETWORK_ERROR', retryable: true, status: null });
    const controller = new AbortController();
    controller.abort();
    expect(await expectGatewayError(client.getPayment('pay_1', { signal: controller.signal }))).toMatchObject({ code: 'ABORTED' });
  });

  it('reports health', async () => {
    const health = await client.health();
    expect(health.ok).toBe(true);
  });
});

describe('gateway client: transfers and validation', () => {
  it('APPROVED: the transfer goes DONE and TRANSFER_DONE arrives with the token header', async () => {
    const transfer = await client.createTransfer({
      amountMinor: 4_321n,
      pixAddressKey: completeCpf('123456789'),
      pixAddressKeyType: 'CPF',
      description: 'redemption payout',
      externalReference: unique('approve'),
    });
    expect(transfer).toMatchObject({ status: 'PENDING', amountMinor: 4_321n, feeMinor: 0n, failReason: null });
    expect(transfer.id).toMatch(/^[0-9a-f-]{36}$/);
    await receiver.waitFor(
      () => receiver.events().some((e) => e.event === 'TRANSFER_DONE' && e.transfer?.id === transfer.id),
      3_000,
      'TRANSFER_DONE',
    );
    const validation = receiver.validations().find((v) => (v.body.transfer as { id: string } | undefined)?.id === transfer.id);
    expect(validation?.body.type).toBe('TRANSFER');
    // Asaas's header (https://docs.asaas.com/docs/mechanism-for-validating-transfers-via-webhooks).
    expect(validation?.headers['asaas-access-token']).toBe(webhookToken);
    // The documented shape: the key inside bankAccount, the reference as created.
    expect(validation?.body.transfer).toMatchObject({ bankAccount: { pixAddressKey: expect.any(String) }, externalReference: expect.any(String), operationType: 'PIX' });
    expect((validation?.body.transfer as Record<string, unknown>).pixAddressKey).toBeUndefined();
    const events = receiver.events().filter((e) => e.transfer?.id === transfer.id);
    expect(events.map((e) => e.event)).toEqual(['TRANSFER_CREATED', 'TRANSFER_IN_BANK_PROCESSING', 'TRANSFER_DONE']);
    expect(events.every((e) => e.headers['asaas-access-token'] === webhookToken)).toBe(true);
    const done = await client.getTransfer(transfer.id);
    expect(done).toMatchObject({ status: 'DONE', gatewayStatus: 'DONE', authorized: true, pixAddressKey: transfer.pixAddressKey });
    // A datetime since Asaas's changelog of 2024-04-15.
    expect(done.effectiveDate).toMatch(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/);
    expect(done.endToEndIdentifier).toMatch(/^E\d{20}[a-z0-9]{11}$/);
  });

  it('pays a boleto: a bill payment is validated (type BILL), goes PAID (our DONE), its BILL_* events classify, the line with dots and spaces', async () => {
    const line = buildBoleto({ amountMinor: 2_500n, dueDate: dueInDays(10), freeField: '1234567890123456789012345' }).identificationField;
    const input = { amountMinor: 2_500n, identificationField: line, description: 'boleto payout', externalReference: unique('bill-ref') };
    const bill = await client.createBillPayment(input);
    expect(bill).toMatchObject({ status: 'PENDING', amountMinor: 2_500n, feeMinor: 0n, identificationField: line, failReason: null });
    await receiver.waitFor(() => receiver.events().some((e) => e.event === 'BILL_PAID' && e.bill?.id === bill.id), 3_000, 'BILL_PAID');
    const events = receiver.events().filter((e) => e.bill?.id === bill.id);
    expect(events.map((e) => e.event)).toEqual(['BILL_CREATED', 'BILL_BANK_PROCESSING', 'BILL_PAID']);
    // Validated first, as Asaas validates every cash-out once the mechanism is on: `{type: "BILL", bill}`.
    const validation = receiver.validations().find((v) => (v.body.bill as { id?: string } | undefined)?.id === bill.id);
    expect(validation?.body.type).toBe('BILL');
    expect(validation?.headers['asaas-access-token']).toBe(webhookToken);
    const doneEvent = receiver.events().find((e) => e.event === 'BILL_PAID' && e.bill?.id === bill.id);
    const raw = receiver.requests.find((r) => r.body.id === doneEvent?.id);
    // Asaas's words on the wire: status PAID, the digitable line with dots and spaces.
    expect(raw!.body.bill).toMatchObject({ status: 'PAID', identificationField: expect.stringMatching(/^\d{5}\.\d{5} \d{5}\.\d{6} \d{5}\.\d{6} \d \d{14}$/) });
    expect(classifyGatewayWebhookText(raw!.text)).toMatchObject({ kind: 'bill_payment_event', event: 'BILL_PAID', billPayment: { id: bill.id, status: 'DONE', gatewayStatus: 'PAID', identificationField: line } });
    expect(await client.getBillPayment(bill.id)).toMatchObject({ status: 'DONE', gatewayStatus: 'PAID', paymentDate: expect.any(String) });
    const listed = await client.listBillPayments({ externalReference: input.externalReference });
    expect(listed.items.map((b) => b.id)).toEqual([bill.id]);
    // A line written for another amount is refused: a bill is paid in full.
    const other = await expectGatewayError(client.createBillPayment({ ...input, amountMinor: 2_499n }));
    expect(other).toMatchObject({ status: 400, code: 'invalid_value', retryable: false });
    await expectGatewayError(client.getBillPayment('00000000-0000-4000-8000-000000000000')).then((e) => expect(e.code).toBe('not_found'));
  });

  it('a bill payment the bank refuses (injected fault) goes FAILED and the account gets the money back', async () => {
    await control(baseUrl, 'POST', '/sim/faults', { billPaymentFailRate: 1 });
    try {
      const before = simulator.state.balanceMinor;
      const line = buildBoleto({ amountMinor: 0n, dueDate: dueInDays(10), freeField: '5555544444333332222211111' }).identificationField;
      const bill = await client.createBillPayment({ amountMinor: 777n, identificationField: line, externalReference: unique('bill-ref') });
      await receiver.waitFor(() => receiver.events().some((e) => e.event === 'BILL_FAILED' && e.bill?.id === bill.id), 3_000, 'BILL_FAILED');
      expect(await client.getBillPayment(bill.id)).toMatchObject({ status: 'FAILED', failReason: expect.stringContaining('refused') });
      expect(simulator.state.balanceMinor).toBe(before);
    } finally {
      await control(baseUrl, 'POST', '/sim/faults', { billPaymentFailRate: 0 });
    }
  });

  it('REFUSED: the transfer is CANCELLED at once with the reason', async () => {
    const transfer = await cancelledPayout('refuse', '+5511987654321', 'PHONE');
    expect(await client.getTransfer(transfer.id)).toMatchObject({ status: 'CANCELLED', failReason: 'limit exceeded for this key' });
    expect(receiver.validations().filter((v) => (v.body.transfer as { id: string } | undefined)?.id === transfer.id)).toHaveLength(1);
  });

  it('three failed validation attempts cancel the transfer', async () => {
    const transfer = await cancelledPayout('fail', '7d9f0335-8dcc-4054-9bf9-0dbd61d36906', 'EVP');
    const attempts = receiver.validations().filter((v) => (v.body.transfer as { id: string } | undefined)?.id === transfer.id);
    expect(attempts).toHaveLength(3);
    const cancelled = await client.getTransfer(transfer.id);
    expect(cancelled.status).toBe('CANCELLED');
    expect(cancelled.failReason).toMatch(/3 attempts/);
  });

  it('sends no Idempotency-Key on a transfer (Asaas documents none): a second create is a second transfer, both found by their externalReference', async () => {
    const input = {
      amountMinor: 200n,
      pixAddressKey: 'someone@example.com',
      pixAddressKeyType: 'EMAIL' as const,
      externalReference: unique('approve'),
    };
    const first = await client.createTransfer(input);
    const again = await client.createTransfer(input);
    expect(again.id).not.toBe(first.id);
    const listed = await client.listTransfers({ externalReference: input.externalReference });
    expect(listed.items.map((t) => t.id)).toEqual([first.id, again.id]);
    expect(listed.items.every((t) => t.externalReference === input.externalReference)).toBe(true);
  });
});

describe('gateway client: listing transfers', () => {
  it('pages through the transfers oldest first, filtered by status, reference and creation date', async () => {
    const reference = unique('list');
    const made = [];
    for (let i = 0; i < 3; i += 1) {
      made.push(
        await client.createTransfer({
          amountMinor: 100n + BigInt(i),
          pixAddressKey: 'someone@example.com',
          pixAddressKeyType: 'EMAIL',
          externalReference: reference,
        }),
      );
    }
    const first = await client.listTransfers({ externalReference: reference, limit: 2 });
    expect(first).toMatchObject({ hasMore: true, totalCount: 3, limit: 2, offset: 0 });
    expect(first.items.map((t) => t.id)).toEqual([made[0]?.id, made[1]?.id]);
    expect(first.items[0]?.amountMinor).toBe(100n);
    const second = await client.listTransfers({ externalReference: reference, limit: 2, offset: 2 });
    expect(second).toMatchObject({ hasMore: false, totalCount: 3 });
    expect(second.items.map((t) => t.id)).toEqual([made[2]?.id]);

    const today = made[0]?.dateCreated as string;
    expect((await client.listTransfers({ externalReference: reference, dateCreatedFrom: today, dateCreatedTo: today })).totalCount).toBe(3);
    expect((await client.listTransfers({ externalReference: reference, dateCreatedFrom: '2999-01-01' })).totalCount).toBe(0);
    expect((await client.listTransfers({ externalReference: reference, dateCreatedTo: '2000-01-01' })).totalCount).toBe(0);
    await receiver.waitFor(async () => (await client.listTransfers({ externalReference: reference, status: 'DONE' })).totalCount === 3, 3_000, 'DONE');
    expect((await client.listTransfers({ externalReference: reference, status: 'PENDING' })).totalCount).toBe(0);
    // Payments take the same date filters.
    expect((await client.listPayments({ dateCreatedFrom: '2999-01-01' })).totalCount).toBe(0);

    const tooBig = await expectGatewayError(client.listTransfers({ limit: 101 }));
    expect(tooBig).toMatchObject({ code: 'INVALID_REQUEST', retryable: false });
    const badDate = await expectGatewayError(client.listTransfers({ dateCreatedFrom: '2026-13-01' }));
    expect(badDate).toMatchObject({ code: 'INVALID_REQUEST' });
    // The simulator refuses a bad filter the same way a gateway would.
    const raw = await fetch(`${baseUrl}/v3/transfers?limit=500`, { headers: { access_token: apiKey } });
    expect(raw.status).toBe(400);
    expect(await raw.json()).toMatchObject({ errors: [{ code: 'invalid_limit' }] });
  });
});

describe('gateway client: webhooks and fault injection', () => {
  async function paidCharge(): Promise<string> {
    const payment = await newCharge('PIX', 990n);
    await control(baseUrl, 'POST', `/sim/payments/${payment.id}/pay`);
    return payment.id;
  }

  const eventsFor = (paymentId: string) => receiver.events().filter((e) => e.payment?.id === paymentId);

  it('sends RECEIVED then CONFIRMED with the token, and they classify as payment events', async () => {
    const paymentId = await paidCharge();
    await receiver.waitFor(() => eventsFor(paymentId).length === 3, 15_000, 'three payment events');
    expect(eventsFor(paymentId).map((e) => e.event)).toEqual(['PAYMENT_CREATED', 'PAYMENT_RECEIVED', 'PAYMENT_CONFIRMED']);
    const raw = receiver.requests.find((r) => (r.body.payment as { id?: string } | undefined)?.id === paymentId && r.body.event === 'PAYMENT_RECEIVED');
    expect(raw?.headers['asaas-access-token']).toBe(webhookToken);
    const classified = classifyGatewayWebhookText(raw?.text ?? '');
    expect(classified).toMatchObject({ kind: 'payment_event', event: 'PAYMENT_RECEIVED', payment: { id: paymentId, status: 'RECEIVED', amountMinor: 990n } });
  });

  it('delivers duplicated webhooks n times with the same event id', async () => {
    await control(baseUrl, 'POST', '/sim/faults', { duplicateWebhooks: 3 });
    const paymentId = await paidCharge();
    await receiver.waitFor(() => eventsFor(paymentId).length === 9, 15_000, 'nine deliveries');
    const received = eventsFor(paymentId).filter((e) => e.event === 'PAYMENT_RECEIVED');
    expect(received).toHaveLength(3);
    expect(new Set(received.map((e) => e.id)).size).toBe(1);
  });

  it('does not deliver dropped webhooks', async () => {
    await control(baseUrl, 'POST', '/sim/faults', { dropWebhookRate: 1 });
    const paymentId = await paidCharge();
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(eventsFor(paymentId)).toEqual([]);
    const state = await control(baseUrl, 'GET', '/sim/state?limit=1000');
    const dropped = (state.deliveries as { resourceId: string; outcome: string }[]).filter((d) => d.resourceId === paymentId);
    expect(dropped.map((d) => d.outcome)).toEqual(['DROPPED', 'DROPPED', 'DROPPED']);
  });

  it('reorders webhooks: CONFIRMED arrives before RECEIVED', async () => {
    await control(baseUrl, 'POST', '/sim/faults', { reorderWebhooks: true, reorderWindowMs: 100 });
    const paymentId = await paidCharge();
    await receiver.waitFor(() => eventsFor(paymentId).length === 3, 15_000, 'three payment events');
    const order = eventsFor(paymentId).map((e) => e.event);
    expect(order.indexOf('PAYMENT_CONFIRMED')).toBeLessThan(order.indexOf('PAYMENT_RECEIVED'));
  });

  it('lists and updates webhooks', async () => {
    const hooks = await client.listWebhooks();
    expect(hooks).toHaveLength(1);
    expect(hooks[0]).toMatchObject({ id: 'wh_gateway', url: `${receiver.url}/webhook`, enabled: true, interrupted: false, penalizedRequestsCount: 0 });
    expect(JSON.stringify(hooks)).not.toContain(webhookToken);
    const updated = await client.updateWebhook('wh_gateway', { events: ['PAYMENT_RECEIVED', 'TRANSFER_DONE'] });
    expect(updated.events).toEqual(['PAYMENT_RECEIVED', 'TRANSFER_DONE']);
    const restored = await client.updateWebhook('wh_gateway', {
      events: ['PAYMENT_CREATED', 'PAYMENT_RECEIVED', 'PAYMENT_CONFIRMED', 'PAYMENT_OVERDUE', 'PAYMENT_REFUNDED', 'PAYMENT_DELETED',
        'TRANSFER_CREATED', 'TRANSFER_PENDING', 'TRANSFER_IN_BANK_PROCESSING', 'TRANSFER_DONE', 'TRANSFER_FAILED', 'TRANSFER_CANCELLED'],
    });
    expect(restored.events).toHaveLength(12);
  });
});
