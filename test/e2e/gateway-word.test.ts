import { inboxOutcome } from '../support/inbox.ts';
import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { findViolations } from '../../db/ledger.ts';
import type { TransferWire } from '../../gateway/wire.ts';
import { handedOnPlc, redeemBody, startSettlementHarness, type SettlementHarness } from '../support/settlement.ts';
import { eventually } from '../support/temporal-cli.ts';

/**
 * Money moves on the gateway's word, never on a message's (issue 17, item 1). Webhook events and
 * validation requests are checked against the gateway (the simulator, read with our API key);
 * an event the gateway contradicts moves no money of its own, is stored CONTRADICTED with the
 * gateway's answer and raises a WEBHOOK_CONTRADICTS_GATEWAY risk flag.
 *
 * The simulator here does not settle payouts by itself (`autoSettle: false`): the tests complete
 * or fail each transfer, so they decide what the gateway holds when a forged event arrives. The
 * redemption's own poll of the gateway is an hour away, so whatever settles a redemption here is
 * the routing of an event.
 */
let h: SettlementHarness;
const device = { 'x-device-id': 'device-gateway-word' };
const pixKey = 'payee@example.com';

beforeAll(async () => {
  h = await startSettlementHarness({ REDEMPTION_WEBHOOK_WAIT_MS: '3600000', CHARGE_WAIT_OVERRIDE_MS: '3600000' }, { autoSettle: false });
});
afterEach(async () => {
  await fetch(`${h.simulator.url}/sim/faults`, { method: 'DELETE' });
});
afterAll(async () => {
  await h?.close();
});

const token = () => ({ 'gateway-access-token': h.t.config.GATEWAY_WEBHOOK_TOKEN });

const transferable = (amountMinor: bigint) => handedOnPlc(h.t, amountMinor, device);

function payoutsOf(tokenId: string): TransferWire[] {
  return h.simulator.state.snapshot(1000).transfers.filter((transfer) => transfer.description === `PLC ${tokenId}`);
}

/** Redeems and waits until the gateway holds the payout in BANK_PROCESSING (validated, not yet paid). */
async function redeemToBank(amountMinor: bigint) {
  const { plc, bearer } = await transferable(amountMinor);
  const response = await h.t.app.inject({ method: 'POST', url: '/api/v1/redeem/', headers: device, payload: redeemBody(plc, bearer, pixKey) });
  expect(response.statusCode).toBe(200);
  const opened = response.json() as { redemption_id: string; workflow_id: string };
  const transfer = await eventually(async () => payoutsOf(plc.commitment.tokenId).find((t) => t.status === 'BANK_PROCESSING'), 15_000);
  return { plc, bearer, opened, transfer };
}

function transferEvent(event: 'TRANSFER_DONE' | 'TRANSFER_FAILED', transfer: TransferWire) {
  const status = event === 'TRANSFER_DONE' ? 'DONE' : 'FAILED';
  return {
    id: `evt_forged_${randomUUID().replaceAll('-', '')}`,
    event,
    dateCreated: '2026-11-22 10:00:00',
    transfer: { ...transfer, status, failReason: status === 'FAILED' ? 'Pix key not found at the receiving institution' : null },
  };
}

async function post(path: string, body: object, headers: Record<string, string> = token()) {
  return h.t.app.inject({ method: 'POST', url: `/api/v1${path}`, headers, payload: body });
}

async function inboxRow(eventId: string) {
  const result = await h.t.db.pool.query<{ status: string; result: Record<string, unknown> | null }>(
    'SELECT status, result FROM webhook_inbox WHERE event_id = $1',
    [eventId],
  );
  return result.rows[0];
}

async function flagsOf(tokenId: string | null, eventId: string) {
  const result = await h.t.db.pool.query<{ flag_type: string; severity: string; details: Record<string, unknown> }>(
    `SELECT flag_type, severity, details FROM risk_flags WHERE dedupe_key = $1 AND ($2::uuid IS NULL OR token_id = $2)`,
    [`webhook-contradiction:gateway:${eventId}`, tokenId],
  );
  return result.rows;
}

async function redemptionRow(id: string) {
  const result = await h.t.db.pool.query<{ status: string; gateway_status: string | null }>('SELECT status, gateway_status FROM redemptions WHERE id = $1', [id]);
  return result.rows[0];
}

async function ledgerCount(txType: string, referenceId: string): Promise<number> {
  const result = await h.t.db.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM ledger_transactions WHERE tx_type = $1 AND reference_id = $2', [
    txType,
    referenceId,
  ]);
  return result.rows[0]?.n ?? 0;
}

describe('money moves on the gateway\'s word', () => {
  it('the issue\'s case: a forged TRANSFER_FAILED ahead of the real TRANSFER_DONE settles once, pays once, and the PLC cannot be redeemed again', async () => {
    const { plc, bearer, opened, transfer } = await redeemToBank(700n);
    // The bank pays out; the gateway's own TRANSFER_DONE is on its way, slowly.
    const faults = await fetch(`${h.simulator.url}/sim/faults`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ webhookDelayMs: 1500 }),
    });
    expect(faults.status).toBe(200);
    h.simulator.state.completeTransfer(transfer.id);

    // An authenticated TRANSFER_FAILED (a leaked token, a misbehaving gateway) arrives first.
    const forged = transferEvent('TRANSFER_FAILED', transfer);
    expect((await post('/redemption/webhook/gateway', forged)).statusCode).toBe(200);
    expect(await inboxOutcome(h.t, forged.id)).toBe('CONTRADICTED');
    // The gateway says DONE: the redemption settles on that, not on the event.
    expect(await h.t.temporal.workflow.getHandle(opened.workflow_id).result()).toMatchObject({ status: 'SETTLED' });
    expect(await redemptionRow(opened.redemption_id)).toEqual({ status: 'SETTLED', gateway_status: 'DONE' });

    const stored = await inboxRow(forged.id);
    expect(stored?.status).toBe('CONTRADICTED');
    expect(stored?.result).toMatchObject({
      contradiction: { eventStatus: 'FAILED', gatewayStatus: 'DONE', reason: expect.stringMatching(/the event says FAILED; the gateway says transfer .* is DONE/) },
      signalled: opened.workflow_id,
      status: 'DONE',
    });
    const [flag] = await flagsOf(plc.commitment.tokenId, forged.id);
    expect(flag).toMatchObject({ flag_type: 'WEBHOOK_CONTRADICTS_GATEWAY', severity: 'high' });
    expect(flag?.details).toMatchObject({ event_status: 'FAILED', gateway_status: 'DONE', redemption_id: opened.redemption_id, transfer_id: transfer.id });

    // The real TRANSFER_DONE arrives later and changes nothing.
    const realDone = await eventually(async () => {
      const result = await h.t.db.pool.query<{ event_id: string }>(
        `SELECT event_id FROM webhook_inbox WHERE event_type = 'TRANSFER_DONE' AND raw_body::jsonb -> 'transfer' ->> 'id' = $1`,
        [transfer.id],
      );
      return result.rows[0]?.event_id;
    }, 15_000);
    expect(['PROCESSED', 'IGNORED']).toContain(await inboxOutcome(h.t, realDone));

    // A second redeem of the same PLC is refused: one payout, one settlement.
    const again = await h.t.app.inject({ method: 'POST', url: '/api/v1/redeem/', headers: device, payload: redeemBody(plc, bearer, pixKey) });
    expect(again.statusCode).toBe(409);
    expect(again.json()).toMatchObject({ code: 'PLC_ALREADY_REDEEMED' });
    expect(payoutsOf(plc.commitment.tokenId)).toHaveLength(1);
    expect(await ledgerCount('REDEEM_SETTLED', opened.redemption_id)).toBe(1);
    expect(await ledgerCount('REDEEM_FAILED', opened.redemption_id)).toBe(0);
    const plcRow = await h.t.db.pool.query('SELECT status FROM plcs WHERE token_id = $1', [plc.commitment.tokenId]);
    expect(plcRow.rows[0]).toEqual({ status: 'REDEEMED' });
    expect(await findViolations(h.t.db.pool)).toEqual([]);
  });

  it('a forged TRANSFER_DONE about a payout the bank has not made moves nothing; the real failure later reverts the PLC', async () => {
    const { plc, opened, transfer } = await redeemToBank(600n);
    const forged = transferEvent('TRANSFER_DONE', transfer);
    expect((await post('/redemption/webhook/gateway', forged)).statusCode).toBe(200);
    expect(await inboxOutcome(h.t, forged.id)).toBe('CONTRADICTED');
    expect(await inboxRow(forged.id)).toMatchObject({
      status: 'CONTRADICTED',
      result: { contradiction: { eventStatus: 'DONE', gatewayStatus: 'BANK_PROCESSING' } },
    });
    expect(await flagsOf(plc.commitment.tokenId, forged.id)).toHaveLength(1);
    expect(await redemptionRow(opened.redemption_id)).toMatchObject({ status: 'PENDING_PAYMENT' });
    expect(await ledgerCount('REDEEM_SETTLED', opened.redemption_id)).toBe(0);

    // The bank refuses the payout: the gateway's own TRANSFER_FAILED fails the redemption.
    h.simulator.state.failTransfer(transfer.id, 'Pix key not found at the receiving institution');
    expect(await h.t.temporal.workflow.getHandle(opened.workflow_id).result()).toMatchObject({ status: 'FAILED' });
    expect(await redemptionRow(opened.redemption_id)).toMatchObject({ status: 'FAILED', gateway_status: 'FAILED' });
    expect(await findViolations(h.t.db.pool)).toEqual([]);
  });

  it('an event naming a transfer the gateway does not know, for a real redemption, is contradicted and moves nothing', async () => {
    const { plc, opened, transfer } = await redeemToBank(500n);
    const forged = transferEvent('TRANSFER_FAILED', { ...transfer, id: randomUUID(), externalReference: opened.redemption_id });
    expect((await post('/redemption/webhook/gateway', forged)).statusCode).toBe(200);
    expect(await inboxOutcome(h.t, forged.id)).toBe('CONTRADICTED');
    expect(await inboxRow(forged.id)).toMatchObject({
      status: 'CONTRADICTED',
      result: { contradiction: { gatewayStatus: null, reason: expect.stringMatching(/the gateway does not know transfer/) } },
    });
    expect(await flagsOf(plc.commitment.tokenId, forged.id)).toHaveLength(1);
    expect(await redemptionRow(opened.redemption_id)).toMatchObject({ status: 'PENDING_PAYMENT' });
    h.simulator.state.completeTransfer(transfer.id);
    expect(await h.t.temporal.workflow.getHandle(opened.workflow_id).result()).toMatchObject({ status: 'SETTLED' });
  });

  it('a forged PAYMENT_RECEIVED for a charge nobody paid credits nothing; the real payment settles it', async () => {
    const owner = `owner-${randomUUID().slice(0, 8)}`;
    const created = await h.t.app.inject({
      method: 'POST',
      url: '/api/v1/redemption/pix',
      headers: { 'idempotency-key': randomUUID(), 'x-device-id': 'device-gateway-word' },
      payload: { owner_id: owner, amount: '25.50', customer: { name: 'Maria Silva' } },
    });
    expect(created.statusCode).toBe(200);
    const charge = created.json() as { charge_id: string; payment_id: string };
    const payment = h.simulator.state.getPayment(charge.payment_id);
    const forged = {
      id: `evt_forged_${randomUUID().replaceAll('-', '')}`,
      event: 'PAYMENT_RECEIVED',
      dateCreated: '2026-11-22 10:00:00',
      payment: { ...payment, status: 'RECEIVED', paymentDate: payment.dateCreated },
    };
    expect((await post('/webhooks/payment/pix', forged)).statusCode).toBe(200);
    expect(await inboxOutcome(h.t, forged.id)).toBe('CONTRADICTED');
    expect(await inboxRow(forged.id)).toMatchObject({
      status: 'CONTRADICTED',
      result: { contradiction: { eventStatus: 'RECEIVED', gatewayStatus: 'PENDING' } },
    });
    expect(await flagsOf(null, forged.id)).toHaveLength(1);
    const pending = await h.t.db.pool.query('SELECT status FROM charges WHERE id = $1', [charge.charge_id]);
    expect(pending.rows[0]).toEqual({ status: 'PENDING' });
    expect(await ledgerCount('CHARGE_SETTLED', charge.charge_id)).toBe(0);

    // The payer pays: the gateway's own events settle it.
    h.simulator.state.payPayment(charge.payment_id);
    await eventually(async () => {
      const row = await h.t.db.pool.query<{ status: string }>('SELECT status FROM charges WHERE id = $1', [charge.charge_id]);
      return row.rows[0]?.status === 'SETTLED' ? true : undefined;
    }, 15_000);
    expect(await ledgerCount('CHARGE_SETTLED', charge.charge_id)).toBe(1);
  });

  it('decides a transfer validation on the gateway\'s copy: a request that differs from it, or names a transfer it does not know, is refused and flagged', async () => {
    const { opened, transfer } = await redeemToBank(400n);
    // The gateway's own copy is BANK_PROCESSING by now: validation is over for it.
    const late = await post('/webhooks/transfer/validate', { type: 'TRANSFER', transfer: { ...transfer, status: 'PENDING' } });
    expect(late.json()).toEqual({ status: 'REFUSED', refuseReason: 'the gateway holds the transfer BANK_PROCESSING' });
    // A request whose amount differs from the gateway's copy is refused and flagged.
    const tampered = await post('/webhooks/transfer/validate', { type: 'TRANSFER', transfer: { ...transfer, value: 9999.99, netValue: 9999.99 } });
    expect(tampered.json()).toMatchObject({ status: 'REFUSED', refuseReason: expect.stringMatching(/differs from the gateway's copy \(amount\)/) });
    const flagged = await h.t.db.pool.query('SELECT flag_type FROM risk_flags WHERE dedupe_key = $1', [`validation-contradiction:${transfer.id}`]);
    expect(flagged.rows).toEqual([{ flag_type: 'WEBHOOK_CONTRADICTS_GATEWAY' }]);
    // The dual flow decides a TRANSFER authorization the same way, without a token and never with a 401.
    const unknown = await post('/redemption/webhook/gateway', { type: 'TRANSFER', transfer: { ...transfer, id: randomUUID() } }, {});
    expect(unknown.statusCode).toBe(200);
    expect(unknown.json()).toMatchObject({ status: 'REFUSED', refuseReason: expect.stringMatching(/the gateway does not know transfer/) });
    // Any other cash-out is refused: this service makes none (a BILL without its bill, a QR code payment).
    expect((await post('/redemption/webhook/gateway', { type: 'BILL' }, {})).json()).toMatchObject({ status: 'REFUSED' });
    expect((await post('/redemption/webhook/gateway', { type: 'PIX_QR_CODE', pixQrCode: {} }, {})).json()).toMatchObject({ status: 'REFUSED' });
    h.simulator.state.completeTransfer(transfer.id);
    expect(await h.t.temporal.workflow.getHandle(opened.workflow_id).result()).toMatchObject({ status: 'SETTLED' });
  });
});
