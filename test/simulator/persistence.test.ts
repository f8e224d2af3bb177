import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createGatewayClient, type GatewayClient } from '../../gateway/client.ts';
import { createSimulator, type Simulator, type SimulatorOptions } from '../../simulator/app.ts';
import { waitFor } from '../support/wait.ts';
import { buildBoleto } from '../../simulator/documents.ts';
import { control, dueInDays, startReceiver, type Receiver } from '../gateway/receiver.ts';
import { listeningUrl, spawnSimulator } from '../support/simulator-process.ts';

/**
 * The simulator with a state file (SIMULATOR_STATE_FILE, as npm start runs it): charges,
 * transfers, idempotency keys, the balance and queued webhooks survive a restart, and a
 * transfer waiting for its validation is validated after it; a process killed with SIGKILL right
 * after answering has kept what it answered.
 */

const apiKey = 'persist-key';
let dir = '';
const open: Simulator[] = [];
const receivers: Receiver[] = [];

beforeEach(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'sim-state-'));
});

afterEach(async () => {
  for (const simulator of open.splice(0)) await simulator.close();
  for (const receiver of receivers.splice(0)) await receiver.close();
  await rm(dir, { recursive: true, force: true });
});

async function start(overrides: SimulatorOptions = {}): Promise<{ simulator: Simulator; client: GatewayClient; baseUrl: string }> {
  const simulator = await createSimulator({ port: 0, apiKey, webhookUrl: null, validationUrl: null, stateFile: path.join(dir, 'gateway.sqlite'), seed: 1, ...overrides });
  open.push(simulator);
  const baseUrl = await simulator.listen();
  return { simulator, baseUrl, client: createGatewayClient({ baseUrl, apiKey, timeoutMs: 5_000 }) };
}

async function stop(simulator: Simulator): Promise<void> {
  open.splice(open.indexOf(simulator), 1);
  await simulator.close();
}

async function receiver(): Promise<Receiver> {
  const started = await startReceiver();
  receivers.push(started);
  return started;
}

const transferInput = (reference: string) => ({
  amountMinor: 12_345n,
  pixAddressKey: 'payee@example.com',
  pixAddressKeyType: 'EMAIL' as const,
  externalReference: reference,
});

/** A customer's charge, created and paid on the simulator (its control endpoint): the charge. */
async function paidCharge(started: { client: GatewayClient; baseUrl: string }, reference: string, billingType: 'PIX' | 'BOLETO', amountMinor: bigint) {
  const customer = await started.client.createCustomer({ idempotencyKey: `customer:${reference}`, name: 'Payer', externalReference: reference });
  const payment = await started.client.createPayment({
    idempotencyKey: `charge:${reference}`,
    customerId: customer.id,
    billingType,
    amountMinor,
    dueDate: dueInDays(1),
    externalReference: reference,
  });
  await control(started.baseUrl, 'POST', `/sim/payments/${payment.id}/pay`);
  return payment;
}

describe('simulator state file', () => {
  it('keeps charges, transfers, their references and the balance across a restart', async () => {
    const first = await start();
    const payment = await paidCharge(first, 'charge-1', 'BOLETO', 5_000n);
    const transfer = await first.client.createTransfer(transferInput('payout-1'));
    const done = await waitFor(async () => {
      const now = await first.client.getTransfer(transfer.id);
      return now.status === 'DONE' ? now : undefined;
    }, { what: 'the payout to settle' });
    const balanceBefore = (await control(first.baseUrl, 'GET', '/sim/state')).balance;
    await stop(first.simulator);

    const second = await start();
    expect(await second.client.getTransfer(transfer.id)).toEqual(done);
    expect(await second.client.getPayment(payment.id)).toMatchObject({ id: payment.id, status: 'CONFIRMED', amountMinor: 5_000n });
    expect((await control(second.baseUrl, 'GET', '/sim/state')).balance).toBe(balanceBefore);
    // A lost answer is found again by the transfer's reference, after a restart too (no Idempotency-Key on payouts).
    expect((await second.client.listTransfers({ externalReference: 'payout-1' })).items).toEqual([done]);
    // The charges' keys are kept: the same key answers the same charge.
    expect((await control(second.baseUrl, 'GET', '/sim/state')).counts).toMatchObject({ customers: 1, payments: 1, transfers: 1 });

    // A reset forgets the file's contents too.
    await control(second.baseUrl, 'POST', '/sim/reset');
    await stop(second.simulator);
    const third = await start();
    await expect(third.client.getTransfer(transfer.id)).rejects.toMatchObject({ status: 404 });
  });

  it('delivers after a restart the events queued before it, with the same event ids', async () => {
    const down = await receiver();
    down.webhookAnswer = () => ({ status: 503 });
    const first = await start({ webhookUrl: `${down.url}/webhook`, webhookRetryBaseMs: 20, webhookRetryMaxMs: 50, webhookInterruptAfterFailures: 100 });
    await paidCharge(first, 'q', 'PIX', 1_000n);
    await waitFor(() => down.events().length >= 2, { what: 'two failed delivery attempts' });
    const refused = new Set(down.events().map((event) => event.id));
    await stop(first.simulator);

    const up = await receiver();
    await start({ webhookUrl: `${up.url}/webhook` });
    await waitFor(() => up.events().length === 3, { what: 'the three queued events', describe: () => `${up.events().length} delivered` });
    expect(up.events().map((event) => event.event)).toEqual(['PAYMENT_CREATED', 'PAYMENT_RECEIVED', 'PAYMENT_CONFIRMED']);
    // The event the first run kept retrying is the same event (same id), not a new one.
    expect(refused.has(up.events()[0]?.id ?? '')).toBe(true);
  });

  it('keeps a bill payment across a restart, and finishes one that was waiting for the bank', async () => {
    const first = await start({ autoSettle: false });
    const line = buildBoleto({ amountMinor: 0n, dueDate: dueInDays(5), freeField: '1212123434345656567878789' }).identificationField;
    const input = { amountMinor: 5_000n, identificationField: line, externalReference: 'persist-bill' };
    const bill = await first.client.createBillPayment(input);
    await waitFor(async () => (await first.client.getBillPayment(bill.id)).status === 'BANK_PROCESSING', { what: 'the bill payment at the bank', timeoutMs: 5_000 });
    const balance = first.simulator.state.balanceMinor;
    await stop(first.simulator);
    const second = await start({ autoSettle: true });
    // Its reference finds the same bill payment; the one left at the bank is paid once the simulator is back.
    expect((await second.client.listBillPayments({ externalReference: 'persist-bill' })).items.map((b) => b.id)).toEqual([bill.id]);
    await waitFor(async () => (await second.client.getBillPayment(bill.id)).status === 'DONE', { what: 'the bill payment paid after the restart', timeoutMs: 5_000 });
    expect(second.simulator.state.balanceMinor).toBe(balance);
    expect((await second.client.listBillPayments({ externalReference: 'persist-bill' })).items.map((b) => b.id)).toEqual([bill.id]);
  });

  it('asks again for the validation of a transfer that was waiting for it', async () => {
    const validator = await receiver();
    const first = await start({ validationUrl: `${validator.url}/validate`, validationDelayMs: 600_000 });
    const transfer = await first.client.createTransfer(transferInput('pending-1'));
    expect(transfer.status).toBe('PENDING');
    await stop(first.simulator);

    const second = await start({ validationUrl: `${validator.url}/validate`, validationDelayMs: 20 });
    await waitFor(async () => (await second.client.getTransfer(transfer.id)).status === 'DONE', { what: 'the resumed validation to settle the payout' });
    expect(validator.validations()).toHaveLength(1);
  });

  it('has kept what it answered when the process is killed with SIGKILL', async () => {
    const file = path.join(dir, 'killed.sqlite');
    const run = async (): Promise<{ url: string; kill: () => Promise<void> }> => {
      const simulator = spawnSimulator({ SIMULATOR_PORT: '0', SIMULATOR_API_KEY: apiKey, SIMULATOR_WEBHOOK_URL: 'off', SIMULATOR_VALIDATION_URL: 'off', SIMULATOR_STATE_FILE: file });
      const kill = async (): Promise<void> => {
        simulator.child.kill('SIGKILL');
        await simulator.exited;
      };
      try {
        return { url: await listeningUrl(simulator), kill };
      } catch (error) {
        simulator.child.kill('SIGKILL');
        throw error;
      }
    };
    const first = await run();
    const client = createGatewayClient({ baseUrl: first.url, apiKey, timeoutMs: 5_000 });
    const transfers = [];
    for (let i = 0; i < 5; i += 1) transfers.push(await client.createTransfer(transferInput(`killed-${i}`)));
    await first.kill();

    const second = await run();
    try {
      const after = createGatewayClient({ baseUrl: second.url, apiKey, timeoutMs: 5_000 });
      for (const transfer of transfers) expect((await after.getTransfer(transfer.id)).id).toBe(transfer.id);
    } finally {
      await second.kill();
    }
  });
});
