import { afterEach, describe, expect, it } from 'vitest';
import { createGatewayClient, type GatewayClient } from '../../gateway/client.ts';
import { GatewayError } from '../../gateway/errors.ts';
import { createSimulator, type Simulator, type SimulatorOptions } from '../../simulator/app.ts';
import { control, dueInDays, startReceiver, type Receiver } from '../gateway/receiver.ts';

/**
 * The simulator's webhook queues: at-least-once delivery with backoff, the penalty and
 * interruption model, backoff removal with its cooldown, and routing to several URLs.
 */

const apiKey = 'queue-test-key';
const opened: { simulator: Simulator; receiver: Receiver }[] = [];
const extraReceivers: Receiver[] = [];

async function setup(overrides: SimulatorOptions = {}): Promise<{ simulator: Simulator; receiver: Receiver; client: GatewayClient; baseUrl: string }> {
  const receiver = await startReceiver();
  const simulator = await createSimulator({
    port: 0,
    apiKey,
    webhookUrl: `${receiver.url}/webhook`,
    validationUrl: null,
    webhookRetryBaseMs: 10,
    webhookRetryMaxMs: 40,
    webhookInterruptAfterFailures: 3,
    seed: 7,
    ...overrides,
  });
  opened.push({ simulator, receiver });
  const baseUrl = await simulator.listen();
  return { simulator, receiver, baseUrl, client: createGatewayClient({ baseUrl, apiKey, timeoutMs: 2_000 }) };
}

async function createCharge(client: GatewayClient, reference: string): Promise<string> {
  const customer = await client.createCustomer({ idempotencyKey: `customer:${reference}`, name: 'Payer', externalReference: reference });
  const payment = await client.createPayment({
    idempotencyKey: `charge:${reference}`,
    customerId: customer.id,
    billingType: 'PIX',
    amountMinor: 1_000n,
    dueDate: dueInDays(1),
    externalReference: reference,
  });
  return payment.id;
}

afterEach(async () => {
  for (const { simulator, receiver } of opened.splice(0)) {
    await simulator.close();
    await receiver.close();
  }
  for (const receiver of extraReceivers.splice(0)) await receiver.close();
});

describe('simulator webhook queue', () => {
  it('retries a failed delivery with backoff until it is accepted (at least once, same event id)', async () => {
    const { receiver, client } = await setup();
    let failuresLeft = 2;
    receiver.webhookAnswer = () => (failuresLeft-- > 0 ? { status: 503 } : { status: 200 });
    const paymentId = await createCharge(client, 'retry');
    await receiver.waitFor(() => receiver.events().length === 3, 15_000, 'three attempts');
    const attempts = receiver.events();
    expect(attempts.every((e) => e.event === 'PAYMENT_CREATED' && e.payment?.id === paymentId)).toBe(true);
    expect(new Set(attempts.map((e) => e.id)).size).toBe(1);
    // Backoff: 10 ms then 20 ms between attempts.
    const times = receiver.requests.map((r) => r.atMs);
    expect((times[2] ?? 0) - (times[0] ?? 0)).toBeGreaterThanOrEqual(25);
    const [hook] = await client.listWebhooks();
    expect(hook).toMatchObject({ interrupted: false, penalizedRequestsCount: 0 });
  });

  it('holds later events behind a failing one, so order is kept', async () => {
    const { receiver, client, baseUrl } = await setup();
    let failuresLeft = 2;
    receiver.webhookAnswer = () => (failuresLeft-- > 0 ? { status: 500 } : { status: 200 });
    const paymentId = await createCharge(client, 'ordered');
    await control(baseUrl, 'POST', `/sim/payments/${paymentId}/pay`);
    await receiver.waitFor(() => receiver.events().length === 5, 15_000, 'five requests');
    expect(receiver.events().map((e) => e.event)).toEqual(['PAYMENT_CREATED', 'PAYMENT_CREATED', 'PAYMENT_CREATED', 'PAYMENT_RECEIVED', 'PAYMENT_CONFIRMED']);
  });

  it('interrupts the queue after N consecutive failures; removeBackoff resumes it, at most once per cooldown', async () => {
    const { receiver, client, baseUrl } = await setup();
    receiver.webhookAnswer = () => ({ status: 500 });
    const paymentId = await createCharge(client, 'interrupt');
    await receiver.waitFor(() => receiver.events().length === 3, 15_000, 'three failures');
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(receiver.events()).toHaveLength(3);
    const [interrupted] = await client.listWebhooks();
    expect(interrupted).toMatchObject({ id: 'wh_gateway', interrupted: true, penalizedRequestsCount: 3 });

    // Events keep queueing while interrupted.
    await control(baseUrl, 'POST', `/sim/payments/${paymentId}/pay`);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(receiver.events()).toHaveLength(3);

    receiver.webhookAnswer = null;
    const resumed = await client.removeWebhookBackoff('wh_gateway');
    expect(resumed).toMatchObject({ interrupted: false, penalizedRequestsCount: 0 });
    await receiver.waitFor(() => receiver.events().length === 6, 15_000, 'the queued events');
    expect(receiver.events().slice(3).map((e) => e.event)).toEqual(['PAYMENT_CREATED', 'PAYMENT_RECEIVED', 'PAYMENT_CONFIRMED']);

    const tooSoon = await client.removeWebhookBackoff('wh_gateway').then(
      () => null,
      (e: unknown) => e,
    );
    expect(tooSoon).toBeInstanceOf(GatewayError);
    expect(tooSoon).toMatchObject({ status: 429, code: 'backoff_removal_too_soon', retryable: true });
    expect((tooSoon as GatewayError).retryAfterMs).toBeGreaterThan(290_000);

    const state = await control(baseUrl, 'GET', '/sim/state');
    const outcomes = (state.deliveries as { outcome: string }[]).map((d) => d.outcome);
    expect(outcomes.slice(0, 4)).toEqual(['FAILED', 'FAILED', 'FAILED', 'INTERRUPTED']);
  });

  it('lets an update with interrupted: false resume the queue, with no cooldown', async () => {
    const { receiver, client } = await setup({ webhookInterruptAfterFailures: 1 });
    for (const round of [1, 2]) {
      receiver.webhookAnswer = () => ({ status: 500 });
      await createCharge(client, `update-${round}`);
      await receiver.waitFor(() => receiver.events().length === 2 * round - 1, 15_000, `failure ${round}`);
      await receiver.waitFor(async () => (await client.listWebhooks())[0]?.interrupted === true, 15_000, 'interruption');
      receiver.webhookAnswer = null;
      const updated = await client.updateWebhook('wh_gateway', { interrupted: false });
      expect(updated.interrupted).toBe(false);
      await receiver.waitFor(() => receiver.events().length === 2 * round, 15_000, `delivery ${round}`);
    }
  });

  it('resets at once even while a delivery is in flight to an endpoint that never answers', async () => {
    const { receiver, client, baseUrl } = await setup({ webhookTimeoutMs: 30_000 });
    receiver.webhookAnswer = () => 'hang';
    await createCharge(client, 'hang');
    await receiver.waitFor(() => receiver.events().length === 1, 15_000, 'the hanging delivery');
    const startedAt = performance.now();
    await control(baseUrl, 'POST', '/sim/reset');
    expect(performance.now() - startedAt).toBeLessThan(1_000);
    const state = await control(baseUrl, 'GET', '/sim/state');
    expect(state.counts).toMatchObject({ payments: 0 });
    expect(state.queues).toEqual([{ webhookId: 'wh_gateway', queued: 0, penalizedRequestsCount: 0, interrupted: false, backoffUntil: null, lastBackoffRemovalAt: null }]);
  });

  it('does not queue events for a disabled webhook', async () => {
    const { receiver, client, baseUrl } = await setup();
    await client.updateWebhook('wh_gateway', { enabled: false });
    const paymentId = await createCharge(client, 'disabled');
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(receiver.events()).toEqual([]);
    const state = await control(baseUrl, 'GET', '/sim/state');
    expect((state.deliveries as { resourceId: string; outcome: string }[]).find((d) => d.resourceId === paymentId)?.outcome).toBe('SKIPPED_DISABLED');
  });

  it('routes Pix, Boleto and transfer events to their own URLs when configured', async () => {
    const receiver = await startReceiver();
    extraReceivers.push(receiver);
    const { client, baseUrl } = await setup({
      paymentWebhookUrlPix: `${receiver.url}/pix`,
      paymentWebhookUrlBoleto: `${receiver.url}/boleto`,
      transferWebhookUrl: `${receiver.url}/transfer`,
    });
    const hooks = await client.listWebhooks();
    expect(hooks.map((h) => h.id).sort()).toEqual(['wh_gateway', 'wh_payment_boleto', 'wh_payment_pix', 'wh_transfer']);
    const pixId = await createCharge(client, 'route-pix');
    const customer = await client.createCustomer({ idempotencyKey: 'c-route', name: 'B', externalReference: 'route' });
    const boleto = await client.createPayment({
      idempotencyKey: 'boleto-route',
      customerId: customer.id,
      billingType: 'BOLETO',
      amountMinor: 500n,
      dueDate: dueInDays(1),
      externalReference: 'route-boleto',
    });
    const transfer = await client.createTransfer({
      amountMinor: 500n,
      pixAddressKey: 'a@b.co',
      pixAddressKeyType: 'EMAIL',
      externalReference: 'route-transfer',
    });
    await receiver.waitFor(() => receiver.events('/transfer').some((e) => e.event === 'TRANSFER_DONE'), 15_000, 'TRANSFER_DONE');
    await receiver.waitFor(() => receiver.events('/pix').length === 1 && receiver.events('/boleto').length === 1, 15_000, 'charge events');
    expect(receiver.events('/pix')[0]?.payment?.id).toBe(pixId);
    expect(receiver.events('/boleto')[0]?.payment?.id).toBe(boleto.id);
    expect(receiver.events('/transfer').map((e) => e.transfer?.id)).toEqual([transfer.id, transfer.id, transfer.id]);
    expect(receiver.events('/webhook')).toEqual([]);
    await control(baseUrl, 'GET', '/sim/state');
  });
});
