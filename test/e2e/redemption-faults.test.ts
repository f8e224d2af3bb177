import { inboxOutcome } from '../support/inbox.ts';
import { WorkflowNotFoundError } from '@temporalio/client';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { findViolations } from '../../db/ledger.ts';
import { storeInboxEvent } from '../../db/inbox.ts';
import { deliverGatewayWebhook, handedOnPlc, redeemBody, startSettlementHarness, type SettlementHarness } from '../support/settlement.ts';
import { waitFor } from '../support/wait.ts';
import { transferEvent } from '../support/gateway-events.ts';

/**
 * Redemption under faults: duplicated and reordered webhooks, webhooks nobody expects, gateway
 * 5xx and lost answers. Every case must end in exactly one payout and a balanced ledger.
 */
let h: SettlementHarness;
const device = { 'x-device-id': 'device-faults' };
const pixKey = 'payee@example.com';

beforeAll(async () => {
  h = await startSettlementHarness();
});
afterEach(async () => {
  await fetch(`${h.t.config.GATEWAY_BASE_URL}/sim/faults`, { method: 'DELETE' });
});
afterAll(async () => {
  await h?.close();
});

const transferable = (amountMinor: bigint) => handedOnPlc(h.t, amountMinor, device);

async function faults(body: Record<string, unknown>) {
  const response = await fetch(`${h.t.config.GATEWAY_BASE_URL}/sim/faults`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  expect(response.status).toBe(200);
}

/** Waits until the redemption's pending activity (the payout's creation) has been tried `attempts` times. */
async function activityTried(workflowId: string, attempts: number): Promise<void> {
  await waitFor(
    async () => {
      const description = await h.t.temporal.workflow.getHandle(workflowId).describe();
      return (description.raw.pendingActivities ?? []).some((activity) => (activity.attempt ?? 0) >= attempts);
    },
    { what: `an activity of ${workflowId} tried ${attempts} times` },
  );
}

function payoutsOf(tokenId: string) {
  return h.simulator.state.snapshot(1000).transfers.filter((transfer) => transfer.description === `PLC ${tokenId}`);
}

describe('redemption faults', () => {
  it('settles once when every webhook is delivered 10 times and out of order', async () => {
    await faults({ duplicateWebhooks: 10, reorderWebhooks: true });
    const { plc, bearer } = await transferable(900n);
    const response = await h.t.app.inject({ method: 'POST', url: '/api/v1/redeem/', headers: device, payload: redeemBody(plc, bearer, pixKey) });
    expect(response.statusCode).toBe(200);
    const result = await h.t.temporal.workflow.getHandle(response.json().workflow_id).result();
    expect(result).toMatchObject({ status: 'SETTLED' });
    expect(payoutsOf(plc.commitment.tokenId)).toHaveLength(1);
    // The settlement may finish before the copies arrive: wait for them, then check that they
    // were counted and settled nothing more.
    const most = await waitFor(async () => {
      const duplicates = await h.t.db.pool.query<{ most: number | null }>(`SELECT max(duplicates) AS most FROM webhook_inbox WHERE event_type = 'TRANSFER_DONE'`);
      const value = duplicates.rows[0]?.most ?? 0;
      return value >= 1 ? value : undefined;
    }, { what: 'the duplicated TRANSFER_DONE copies to be counted' });
    expect(most).toBeGreaterThanOrEqual(1);
    const settled = await h.t.db.pool.query(`SELECT count(*)::int AS n FROM ledger_transactions WHERE tx_type = 'REDEEM_SETTLED' AND reference_id = $1`, [
      response.json().redemption_id,
    ]);
    expect(settled.rows[0].n).toBe(1);
    expect(await findViolations(h.t.db.pool)).toEqual([]);
  });

  it('acknowledges and ignores a webhook about a transfer nobody expects, and refuses a bad token', async () => {
    const event = transferEvent();
    const unauthorised = await h.t.app.inject({ method: 'POST', url: '/api/v1/redemption/webhook/gateway', payload: event });
    expect(unauthorised.statusCode).toBe(401);
    const response = await deliverGatewayWebhook(h.t, event);
    expect(response.statusCode).toBe(200);
    expect(response.json()).toMatchObject({ received: true, duplicate: false });
    const again = await deliverGatewayWebhook(h.t, event);
    expect(again.json()).toMatchObject({ duplicate: true });
    await inboxOutcome(h.t, event.id);
    const row = await h.t.db.pool.query(`SELECT status, duplicates FROM webhook_inbox WHERE event_id = $1`, [event.id]);
    expect(row.rows[0]).toMatchObject({ status: 'IGNORED', duplicates: 1 });
    // The synchronous authorization flow needs no token and never answers 401; a bill payment
    // nobody recorded an intent for is refused without a gateway read.
    const authorization = await h.t.app.inject({ method: 'POST', url: '/api/v1/redemption/webhook/gateway', payload: { type: 'BILL' } });
    expect(authorization.statusCode).toBe(200);
    expect(authorization.json()).toMatchObject({ status: 'REFUSED' });
  });

  it('stores the non-final transfer events IGNORED at once, starting no workflow; only the final one is processed', async () => {
    const { plc, bearer } = await transferable(600n);
    const response = await h.t.app.inject({ method: 'POST', url: '/api/v1/redeem/', headers: device, payload: redeemBody(plc, bearer, pixKey) });
    expect(response.statusCode).toBe(200);
    const result = await h.t.temporal.workflow.getHandle(response.json().workflow_id).result();
    expect(result).toMatchObject({ status: 'SETTLED' });
    const [transfer] = payoutsOf(plc.commitment.tokenId);
    const inboxRows = () =>
      h.t.db.pool.query<{ event_id: string; event_type: string; status: string; result: { reason?: string } | null; processed_at: Date | null }>(
        `SELECT event_id, event_type, status, result, processed_at FROM webhook_inbox
          WHERE raw_body::jsonb -> 'transfer' ->> 'id' = $1 ORDER BY received_at`,
        [transfer?.id],
      );
    // The redemption can finish before the webhook workflow that woke it records its own end:
    // wait for that workflow, then read the inbox.
    const doneEvent = (await inboxRows()).rows.find((r) => r.event_type === 'TRANSFER_DONE');
    expect(await inboxOutcome(h.t, doneEvent?.event_id ?? '')).toBe('PROCESSED');
    const rows = await inboxRows();
    expect(rows.rows.map((row) => [row.event_type, row.status])).toEqual([
      ['TRANSFER_CREATED', 'IGNORED'],
      ['TRANSFER_IN_BANK_PROCESSING', 'IGNORED'],
      ['TRANSFER_DONE', 'PROCESSED'],
    ]);
    for (const row of rows.rows.filter((r) => r.status === 'IGNORED')) {
      expect(row.result?.reason).toMatch(/only a final status acts/);
      expect(row.processed_at).not.toBeNull();
      await expect(h.t.temporal.workflow.getHandle(`webhook-gateway-${row.event_id}`).describe()).rejects.toBeInstanceOf(WorkflowNotFoundError);
    }

    // A non-final event delivered on its own (and again) is acknowledged, stored IGNORED in the
    // same request, and counted as a duplicate.
    const pending = transferEvent({ event: 'TRANSFER_IN_BANK_PROCESSING', transfer: { status: 'BANK_PROCESSING' } });
    for (const duplicate of [false, true]) {
      const answer = await deliverGatewayWebhook(h.t, pending);
      expect(answer.statusCode).toBe(200);
      expect(answer.json()).toMatchObject({ received: true, event_id: pending.id, duplicate });
      const row = await h.t.db.pool.query(`SELECT status, duplicates, raw_body FROM webhook_inbox WHERE event_id = $1`, [pending.id]);
      expect(row.rows[0]).toMatchObject({ status: 'IGNORED', duplicates: duplicate ? 1 : 0 });
      expect(JSON.parse(row.rows[0].raw_body)).toEqual(pending);
    }
    await expect(h.t.temporal.workflow.getHandle(`webhook-gateway-${pending.id}`).describe()).rejects.toBeInstanceOf(WorkflowNotFoundError);
  });

  it('processes an event stored before a crash (no answer was sent) when the gateway delivers it again', async () => {
    const { plc, bearer } = await transferable(500n);
    // The gateway's own webhooks are lost: only our delivery below reaches the service.
    await faults({ dropWebhookRate: 1 });
    const response = await h.t.app.inject({ method: 'POST', url: '/api/v1/redeem/', headers: device, payload: redeemBody(plc, bearer, pixKey) });
    expect(response.statusCode).toBe(200);
    const opened = response.json();
    // The gateway has paid out (the event is checked against it: a DONE it does not hold is contradicted).
    const transfer = await waitFor(() => payoutsOf(plc.commitment.tokenId).find((t) => t.status === 'DONE'), { what: 'the payout at the gateway, DONE' });
    const event = transferEvent({ transfer: { id: transfer.id, externalReference: opened.redemption_id } });
    // What a process that died between the inbox INSERT and the workflow start leaves behind.
    await storeInboxEvent(h.t.db.pool, { provider: 'gateway', endpoint: 'redemption/gateway', eventId: event.id, eventType: event.event, rawBody: JSON.stringify(event) });
    const again = await deliverGatewayWebhook(h.t, event);
    expect(again.json()).toMatchObject({ received: true, duplicate: true });
    expect(await inboxOutcome(h.t, event.id)).toBe('PROCESSED');
    expect(await h.t.temporal.workflow.getHandle(opened.workflow_id).result()).toMatchObject({ status: 'SETTLED' });
    const row = await h.t.db.pool.query(`SELECT status FROM webhook_inbox WHERE event_id = $1`, [event.id]);
    expect(row.rows[0]).toMatchObject({ status: 'PROCESSED' });
  });

  it('retries through gateway 5xx answers and lost responses without a second payout', async () => {
    // The gateway creates the transfer but its answer is lost (apiLostResponseRate 1 from that
    // request on); every lookup after it is lost too, again and again; then it heals. The activity
    // finds the transfer by its reference: no second one.
    const gateway = h.t.app.deps.gateway;
    const createTransfer = gateway.createTransfer.bind(gateway);
    let creates = 0;
    gateway.createTransfer = async (input, options) => {
      creates += 1;
      await faults({ apiLostResponseRate: 1 });
      return createTransfer(input, options);
    };
    const { plc, bearer } = await transferable(400n);
    let response;
    try {
      response = await h.t.app.inject({ method: 'POST', url: '/api/v1/redeem/', headers: device, payload: redeemBody(plc, bearer, pixKey) });
      expect(response.statusCode).toBe(200);
      await waitFor(() => payoutsOf(plc.commitment.tokenId).length === 1, { what: 'the payout whose answer was lost' });
      await activityTried(response.json().workflow_id, 3);
    } finally {
      gateway.createTransfer = createTransfer;
    }
    await fetch(`${h.t.config.GATEWAY_BASE_URL}/sim/faults`, { method: 'DELETE' });
    const result = await h.t.temporal.workflow.getHandle(response.json().workflow_id).result();
    expect(result).toMatchObject({ status: 'SETTLED' });
    expect(payoutsOf(plc.commitment.tokenId)).toHaveLength(1);
    expect(creates).toBe(1);

    await faults({ apiErrorRate: 1 });
    const second = await transferable(300n);
    const other = await h.t.app.inject({ method: 'POST', url: '/api/v1/redeem/', headers: device, payload: redeemBody(second.plc, second.bearer, pixKey) });
    await activityTried(other.json().workflow_id, 2);
    expect(payoutsOf(second.plc.commitment.tokenId)).toHaveLength(0);
    await fetch(`${h.t.config.GATEWAY_BASE_URL}/sim/faults`, { method: 'DELETE' });
    expect(await h.t.temporal.workflow.getHandle(other.json().workflow_id).result()).toMatchObject({ status: 'SETTLED' });
    expect(payoutsOf(second.plc.commitment.tokenId)).toHaveLength(1);
    expect(await findViolations(h.t.db.pool)).toEqual([]);
  });
});
