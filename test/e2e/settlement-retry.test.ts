import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findViolations } from '../../db/ledger.ts';
import { redeemBody, startSettlementHarness, type SettlementHarness } from '../support/settlement.ts';
import { hop, newWallet } from '../support/wallet.ts';
import { replayAndRecord } from '../support/histories.ts';
import { waitFor } from '../support/wait.ts';

/**
 * An operator's retry of a settlement, through the gateway simulator: a payout whose webhook
 * never comes, retried by two admins at once; a payout refused for a transient cause (the
 * platform's gateway balance), retried before and after the cause is fixed; and the refusals.
 */
let h: SettlementHarness;
let secondAdmin: Record<string, string>;
const device = { 'x-device-id': 'device-retry' };
const pixKey = '123e4567-e89b-42d3-a456-556642440000';
const stalledAfterMs = 3000;

beforeAll(async () => {
  h = await startSettlementHarness({
    // The workflow waits long for a webhook before asking the gateway itself: the operator asks first.
    REDEMPTION_WEBHOOK_WAIT_MS: '600000',
    SETTLEMENT_RETRY_STALLED_AFTER_MS: String(stalledAfterMs),
  });
  secondAdmin = await h.t.adminHeaders('super_admin');
});
afterAll(async () => {
  await h?.close();
});

/** Issues a PLC, hands it on, and opens its redemption: the redemption's answer. */
async function openRedemption(amountMinor: bigint): Promise<{ redemption_id: string; workflow_id: string; token_id: string }> {
  const [a, b] = [newWallet(), newWallet()];
  await h.t.deposit(a.pubkey, '100.00');
  const plc = await h.t.issuePlc(a, amountMinor, device);
  const response = await h.t.app.inject({ method: 'POST', url: '/api/v1/redeem/', headers: device, payload: redeemBody(hop(plc, a, b), b, pixKey) });
  expect(response.statusCode).toBe(200);
  return response.json();
}

const retry = (redemptionId: string, headers: Record<string, string>, reason = 'the gateway never confirmed the payout') =>
  h.t.app.inject({ method: 'POST', url: `/api/v1/admin/redemptions/${redemptionId}/retry`, headers, payload: { reason } });
const detail = async (redemptionId: string) =>
  (await h.t.app.inject({ method: 'GET', url: `/api/v1/admin/redemptions/${redemptionId}`, headers: h.admin })).json();
const transfersOf = (redemptionId: string) => h.simulator.state.snapshot(1000).transfers.filter((transfer) => transfer.externalReference === redemptionId);

describe('retrying a settlement', () => {
  it('a payout whose webhook never comes, retried by two admins at once: one transfer, one settlement, the ledger clean', async () => {
    h.simulator.faults.update({ dropWebhookRate: 1 });
    try {
      const opened = await openRedemption(1500n);
      // The gateway pays out; its webhook is lost.
      await waitFor(() => transfersOf(opened.redemption_id)[0]?.status === 'DONE', { what: 'the payout to be DONE', timeoutMs: 20_000, intervalMs: 100 });
      const early = await retry(opened.redemption_id, h.admin, 'too early');
      expect(early.statusCode).toBe(409);
      expect(early.json()).toMatchObject({ code: 'REDEMPTION_NOT_STALLED', details: { retryable_at: expect.any(String) } });
      await new Promise((resolve) => setTimeout(resolve, stalledAfterMs));

      const [first, second] = await Promise.all([
        retry(opened.redemption_id, h.admin, 'operator one: no webhook after the wait'),
        retry(opened.redemption_id, secondAdmin, 'operator two: same redemption, same minute'),
      ]);
      const answers = [first, second].map((response) => ({ status: response.statusCode, body: response.json() }));
      const settled = answers.filter((answer) => answer.status === 200);
      const refused = answers.filter((answer) => answer.status === 409);
      expect(settled).toHaveLength(1);
      expect(settled[0]?.body).toMatchObject({ outcome: 'SETTLED', redemption: { status: 'SETTLED' } });
      expect(refused).toHaveLength(1);
      expect(refused[0]?.body).toMatchObject({ code: 'REDEMPTION_ALREADY_SETTLED' });

      expect(transfersOf(opened.redemption_id)).toHaveLength(1);
      const settlements = await h.t.db.pool.query(`SELECT count(*)::int AS n FROM ledger_transactions WHERE reference_id = $1 AND tx_type = 'REDEEM_SETTLED'`, [
        opened.redemption_id,
      ]);
      expect(settlements.rows[0].n).toBe(1);
      expect(await findViolations(h.t.db.pool)).toEqual([]);
      const status = await h.t.app.inject({ method: 'GET', url: `/api/v1/plc/${opened.token_id}/status` });
      expect(status.json()).toMatchObject({ status: 'REDEEMED' });

      // Every retry is on record: who, why, the outcome; the workflow's history has the two updates.
      const shown = await detail(opened.redemption_id);
      expect(shown.status).toBe('SETTLED');
      expect(shown.retries.map((r: { outcome: string }) => r.outcome).sort()).toEqual(['ALREADY_SETTLED', 'REFUSED', 'SETTLED']);
      expect(shown.retries.every((r: { requested_by: string; reason: string; finished_at: string | null }) => r.requested_by !== '' && r.reason.length >= 3 && r.finished_at !== null)).toBe(true);
      const result = await h.t.temporal.workflow.getHandle(opened.workflow_id).result();
      expect(result).toMatchObject({ status: 'SETTLED' });
      const history = await h.t.temporal.workflow.getHandle(opened.workflow_id).fetchHistory();
      const updates = (history.events ?? []).filter((event) => event.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest?.input?.name === 'retrySettlement');
      expect(updates.length).toBeGreaterThanOrEqual(1);
      await replayAndRecord(h.t.temporal, opened.workflow_id, 'redemption-lean-retried-settled');
      // Retrying it again is a 409 at once.
      expect((await retry(opened.redemption_id, h.admin, 'once more')).json()).toMatchObject({ code: 'REDEMPTION_ALREADY_SETTLED' });
    } finally {
      h.simulator.faults.reset();
    }
  });

  it('a payout refused for a transient cause waits for an operator; a retry after the cause is fixed pays once under a new key', async () => {
    h.simulator.state.setBalance(0n);
    try {
      const opened = await openRedemption(800n);
      await waitFor(async () => (await detail(opened.redemption_id)).payout_error !== null, { what: 'the payout to be refused', timeoutMs: 20_000, intervalMs: 100 });
      const stuck = await detail(opened.redemption_id);
      expect(stuck).toMatchObject({ status: 'PENDING_PAYMENT', gateway_status: 'REFUSED:insufficient_balance', payout_attempt: 1 });
      // Retried before the balance is fixed: a new attempt, refused again, still waiting.
      const tooSoon = await retry(opened.redemption_id, h.admin, 'retry before funding');
      expect(tooSoon.statusCode).toBe(200);
      expect(tooSoon.json()).toMatchObject({ outcome: 'NEW_ATTEMPT', attempt: 2, redemption: { status: 'PENDING_PAYMENT' } });
      expect(transfersOf(opened.redemption_id)).toHaveLength(0);

      h.simulator.state.setBalance(100_000_000n);
      const fixed = await retry(opened.redemption_id, secondAdmin, 'gateway account funded');
      expect(fixed.statusCode).toBe(200);
      expect(fixed.json()).toMatchObject({ outcome: 'NEW_ATTEMPT', attempt: 3 });
      const result = await h.t.temporal.workflow.getHandle(opened.workflow_id).result();
      expect(result).toMatchObject({ status: 'SETTLED' });
      const transfers = transfersOf(opened.redemption_id);
      expect(transfers).toHaveLength(1);
      expect(transfers[0]).toMatchObject({ status: 'DONE' });
      const shown = await detail(opened.redemption_id);
      expect(shown).toMatchObject({ status: 'SETTLED', payout_attempt: 3, gateway_transfer_id: transfers[0]?.id });
      expect(shown.attempts.map((a: { attempt: number; gateway_status: string }) => [a.attempt, a.gateway_status])).toEqual([
        [1, 'REFUSED:insufficient_balance'],
        [2, 'REFUSED:insufficient_balance'],
      ]);
      expect(await findViolations(h.t.db.pool)).toEqual([]);
      await replayAndRecord(h.t.temporal, opened.workflow_id, 'redemption-lean-refused-retried-settled');
    } finally {
      h.simulator.state.setBalance(100_000_000n);
    }
  });

  it('a redemption failed for good is a 409; an unknown one a 404; a reason is required', async () => {
    const opened = await openRedemption(300n);
    // The validation refuses a payout to another destination: the transfer is cancelled, the redemption FAILED.
    await h.t.db.pool.query(`UPDATE redemptions SET destination = 'someone-else@example.com' WHERE id = $1`, [opened.redemption_id]);
    await h.t.temporal.workflow.getHandle(opened.workflow_id).result();
    const refused = await retry(opened.redemption_id, h.admin, 'try again');
    expect(refused.statusCode).toBe(409);
    expect(refused.json()).toMatchObject({ code: 'REDEMPTION_FAILED_FINAL' });
    expect((await retry(randomUUID(), h.admin)).statusCode).toBe(404);
    const noReason = await h.t.app.inject({ method: 'POST', url: `/api/v1/admin/redemptions/${opened.redemption_id}/retry`, headers: h.admin, payload: {} });
    expect(noReason.statusCode).toBe(422);
    expect((await h.t.app.inject({ method: 'POST', url: `/api/v1/admin/redemptions/${opened.redemption_id}/retry`, payload: { reason: 'no token' } })).statusCode).toBe(401);
    const shown = await detail(opened.redemption_id);
    expect(shown.retries).toHaveLength(1);
    expect(shown.retries[0]).toMatchObject({ outcome: 'REFUSED', reason: 'try again' });
  });
});
