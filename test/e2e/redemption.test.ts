import { inboxOutcome } from '../support/inbox.ts';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findViolations } from '../../db/ledger.ts';
import { snapshotOf } from '../support/ledger.ts';
import { redeemBody, startSettlementHarness, type SettlementHarness } from '../support/settlement.ts';
import { hop, newWallet, plcToJson, type TestWallet } from '../support/wallet.ts';
import { redemptionWorkflow } from '../../workflows/redemption.ts';
import { replayAndRecord } from '../support/histories.ts';

/**
 * Redemption end to end: API -> redemption workflow -> gateway simulator (Pix transfer, the
 * validation request, the TRANSFER_DONE webhook) -> settlement, with real Temporal and PostgreSQL.
 */
let h: SettlementHarness;
const device = { 'x-device-id': 'device-e2e' };
const pixKey = '123e4567-e89b-42d3-a456-556642440000';

beforeAll(async () => {
  h = await startSettlementHarness();
});
afterAll(async () => {
  await h?.close();
});

async function balance(wallet: TestWallet | string) {
  const owner = typeof wallet === 'string' ? wallet : wallet.pubkey;
  return (await h.t.app.inject({ method: 'GET', url: `/api/v1/balance/${owner}` })).json();
}

const redeem = (body: object) => h.t.app.inject({ method: 'POST', url: '/api/v1/redeem/', headers: device, payload: body });

describe('redemption through the gateway', () => {
  it('issue, three offline hops, redeem: SETTLED, PLC REDEEMED, balances as the money model says, one transfer', async () => {
    const [a, b, c, d] = [newWallet(), newWallet(), newWallet(), newWallet()];
    await h.t.deposit(a.pubkey, '100.00');
    const plc0 = await h.t.issuePlc(a, 2500n, device);
    const plc3 = hop(hop(hop(plc0, a, b), b, c), c, d);
    const response = await redeem(redeemBody(plc3, d, pixKey));
    expect(response.statusCode).toBe(200);
    const opened = response.json();
    expect(opened).toMatchObject({ status: 'PENDING_PAYMENT', amount: '25.00', bearer_pubkey: d.pubkey, rail: 'pix' });
    expect(await balance(a)).toMatchObject({ available: '75.00', promised: '0.00' });
    // The redeem answer says where the bearer follows it, without admin rights.
    expect(opened.status_url).toBe(`/api/v1/redemptions/${opened.redemption_id}`);
    const result = await h.t.temporal.workflow.getHandle(opened.workflow_id).result();
    expect(result).toMatchObject({ status: 'SETTLED', state: { status: 'SETTLED' } });
    const followed = await h.t.app.inject({ method: 'GET', url: opened.status_url });
    expect(followed.statusCode).toBe(200);
    expect(followed.json()).toMatchObject({ redemption_id: opened.redemption_id, status: 'SETTLED', amount: '25.00', fee: '0.00', gateway_status: 'DONE' });
    expect(followed.json().gateway_transfer_id).toEqual(expect.any(String));
    expect(followed.json().finished_at).toEqual(expect.any(String));
    expect((await h.t.app.inject({ method: 'GET', url: `/api/v1/redemptions/${randomUUID()}` })).statusCode).toBe(404);
    const status = await h.t.app.inject({ method: 'GET', url: `/api/v1/plc/${plc0.commitment.tokenId}/status` });
    expect(status.json()).toMatchObject({ status: 'REDEEMED', chain_length: 3, bearer_pubkey: d.pubkey });
    // No PLC workflow to tell (docs/plc.md, "Expiry by time buckets"): its expiry bucket will find it REDEEMED.
    await expect(h.t.temporal.workflow.getHandle(`plc-${plc0.commitment.tokenId}`).describe()).rejects.toThrow();
    expect(await balance(d)).toMatchObject({ available: '0.00', pending: '0.00' });
    expect(await balance(a)).toMatchObject({ available: '75.00', promised: '0.00' });
    expect(await snapshotOf(h.t.db.pool, 'system:world', 'AVAILABLE')).toBe(-10000n + 2500n);
    const transfers = h.simulator.state.snapshot(100).transfers.filter((tr) => tr.externalReference === opened.redemption_id);
    expect(transfers).toHaveLength(1);
    expect(transfers[0]).toMatchObject({ status: 'DONE' });
    // A second redemption of the same PLC is refused.
    const again = await redeem(redeemBody(plc3, d, pixKey));
    expect(again.statusCode).toBe(409);
    expect(again.json()).toMatchObject({ code: 'PLC_ALREADY_REDEEMED' });
    const transactions = (await h.t.app.inject({ method: 'GET', url: `/api/v1/balance/${d.pubkey}/transactions` })).json();
    expect(transactions.map((tx: { tx_type: string }) => tx.tx_type).sort()).toEqual(['REDEEM_REQUESTED', 'REDEEM_SETTLED']);
    expect(await findViolations(h.t.db.pool)).toEqual([]);
    await replayAndRecord(h.t.temporal, opened.workflow_id, 'redemption-lean-settled');
    // This redemption's DONE event.
    const event = await h.t.db.pool.query(`SELECT event_id FROM webhook_inbox WHERE event_type = 'TRANSFER_DONE' AND raw_body::jsonb -> 'transfer' ->> 'id' = $1`, [
      transfers[0]?.id,
    ]);
    expect(await inboxOutcome(h.t, event.rows[0].event_id)).toBe('PROCESSED');
    // Processed in the webhook's request (services/webhook-routing.ts): no workflow of its own.
    await expect(h.t.temporal.workflow.getHandle(`webhook-gateway-${event.rows[0].event_id}`).describe()).rejects.toThrow();
    // The redemption's whole history (issue 38: 42 events with its webhook workflow before).
    const events = (await h.t.temporal.workflow.getHandle(opened.workflow_id).fetchHistory()).events ?? [];
    expect(events.length).toBeLessThanOrEqual(21);
    const listed = (await h.t.app.inject({ method: 'GET', url: '/api/v1/admin/redemptions?status=SETTLED', headers: h.admin })).json();
    expect(listed.some((r: { redemption_id: string }) => r.redemption_id === opened.redemption_id)).toBe(true);
    expect((await h.t.app.inject({ method: 'GET', url: '/api/v1/admin/redemptions' })).statusCode).toBe(401);
  });

  it('a redemption row whose opening update was lost is adopted by a run that got no update, and paid once', async () => {
    const [a, b] = [newWallet(), newWallet()];
    await h.t.deposit(a.pubkey, '10.00');
    const plc0 = await h.t.issuePlc(a, 700n, device);
    const response = await redeem(redeemBody(hop(plc0, a, b), b, pixKey));
    expect(response.statusCode).toBe(200);
    const { workflow_id: workflowId, redemption_id: redemptionId } = response.json();
    // The run that opened the row is gone, as when the opening update's workflow task timed out
    // after its local activity committed the row and the caller had given up (seen in the chaos
    // suite on a loaded machine): the bearer's money sits in PENDING with no run to pay or revert it.
    await h.t.temporal.workflow.getHandle(workflowId).terminate('test: the opening run is lost');
    // A run that gets no opening update adopts the row once its wait is over, and pays it once.
    const again = await h.t.temporal.workflow.start(redemptionWorkflow, {
      workflowId,
      taskQueue: h.t.taskQueue,
      args: [{ redemptionId, tokenId: plc0.commitment.tokenId, webhookWaitMs: 2_000, openWaitMs: 500 }],
    });
    expect(await again.result()).toMatchObject({ status: 'SETTLED', state: { status: 'SETTLED' } });
    const transfers = h.simulator.state.snapshot(100).transfers.filter((tr) => tr.externalReference === redemptionId);
    expect(transfers).toHaveLength(1);
    expect(await balance(b)).toMatchObject({ pending: '0.00' });
    expect(await findViolations(h.t.db.pool)).toEqual([]);
  });

  it('the same PLC redeemed concurrently through two forks by many requests pays out exactly once', async () => {
    const [a, b, m, n] = [newWallet(), newWallet(), newWallet(), newWallet()];
    await h.t.deposit(a.pubkey, '10.00');
    const plc0 = await h.t.issuePlc(a, 700n, device);
    const plc1 = hop(plc0, a, b);
    // b spends the same state twice, offline: two forks, each held by a different bearer.
    const forkM = hop(plc1, b, m);
    const forkN = hop(plc1, b, n);
    const bodies = Array.from({ length: 10 }, (_, i) => (i % 2 === 0 ? redeemBody(forkM, m, pixKey) : redeemBody(forkN, n, pixKey)));
    const responses = await Promise.all(bodies.map((body) => redeem(body)));
    const statuses = responses.map((response) => response.statusCode);
    expect(statuses.filter((status) => status === 200)).toHaveLength(1);
    for (const response of responses) {
      if (response.statusCode !== 200) {
        expect(response.statusCode).toBe(409);
        expect(['PLC_ALREADY_REDEEMED', 'DOUBLE_SPEND_DETECTED']).toContain(response.json().code);
      }
    }
    const winner = responses.find((response) => response.statusCode === 200)?.json();
    await h.t.temporal.workflow.getHandle(winner.workflow_id).result();
    const payouts = h.simulator.state.snapshot(500).transfers.filter((tr) => tr.description === `PLC ${plc0.commitment.tokenId}`);
    expect(payouts).toHaveLength(1);
    expect(await balance(a)).toMatchObject({ available: '3.00', promised: '0.00' });
    expect(await findViolations(h.t.db.pool)).toEqual([]);
  });

  it('a transfer refused at validation fails the redemption and reverts the PLC, which can be redeemed again', async () => {
    const [a, b] = [newWallet(), newWallet()];
    await h.t.deposit(a.pubkey, '10.00');
    const plc0 = await h.t.issuePlc(a, 300n, device);
    const plc1 = hop(plc0, a, b);
    // A transfer whose amount the validation will not recognise: tamper the expected amount.
    const response = await redeem(redeemBody(plc1, b, pixKey));
    expect(response.statusCode).toBe(200);
    const opened = response.json();
    await h.t.db.pool.query(`UPDATE redemptions SET destination = 'someone-else@example.com' WHERE id = $1`, [opened.redemption_id]);
    const result = await h.t.temporal.workflow.getHandle(opened.workflow_id).result();
    expect(result).toMatchObject({ status: 'FAILED' });
    await replayAndRecord(h.t.temporal, opened.workflow_id, 'redemption-lean-failed-validation');
    const status = (await h.t.app.inject({ method: 'GET', url: `/api/v1/plc/${plc0.commitment.tokenId}/status` })).json();
    expect(status).toMatchObject({ status: 'TRANSFERRED', redemption_in_flight: false });
    // Redeemable again, and still due to expire by its bucket (PostgreSQL's row: no workflow to tell).
    const due = await h.t.db.pool.query('SELECT expiry_due_at FROM plcs WHERE token_id = $1', [plc0.commitment.tokenId]);
    expect(due.rows[0]?.expiry_due_at).toBeInstanceOf(Date);
    expect(await balance(a)).toMatchObject({ available: '7.00', promised: '3.00' });
    expect(await balance(b)).toMatchObject({ pending: '0.00' });
    await h.t.db.pool.query(`UPDATE redemptions SET destination = $2 WHERE id = $1`, [opened.redemption_id, pixKey]);
    const retry = await redeem(redeemBody(plc1, b, pixKey));
    expect(retry.statusCode).toBe(200);
    expect(await h.t.temporal.workflow.getHandle(retry.json().workflow_id).result()).toMatchObject({ status: 'SETTLED' });
    expect(await findViolations(h.t.db.pool)).toEqual([]);
  });

  it('refuses a redeem signed by a former bearer, with a stale timestamp, or to an invalid Pix key', async () => {
    const [a, b, c] = [newWallet(), newWallet(), newWallet()];
    await h.t.deposit(a.pubkey, '10.00');
    const plc0 = await h.t.issuePlc(a, 100n, device);
    const plc1 = hop(plc0, a, b);
    const plc2 = hop(plc1, b, c);
    await h.t.app.inject({ method: 'POST', url: '/api/v1/transfer/', headers: device, payload: { plc: plcToJson(plc2) } });
    const former = await redeem(redeemBody(plc1, b, pixKey));
    expect(former.statusCode).toBe(409);
    expect(former.json()).toMatchObject({ code: 'NOT_CURRENT_BEARER' });
    const stale = await redeem(redeemBody(plc2, c, pixKey, Date.now() - 3600_000));
    expect(stale.statusCode).toBe(422);
    const badKey = await redeem(redeemBody(plc2, c, 'not a pix key'));
    expect(badKey.statusCode).toBe(422);
    expect(await balance(c)).toMatchObject({ pending: '0.00' });
    const flags = (await h.t.app.inject({ method: 'GET', url: '/api/v1/admin/risk-flags?severity=medium', headers: h.admin })).json();
    expect(flags.some((flag: { flag_type: string; subject_pubkey: string }) => flag.flag_type === 'DOUBLE_REDEMPTION_ATTEMPT' && flag.subject_pubkey === b.pubkey)).toBe(true);
  });
});
