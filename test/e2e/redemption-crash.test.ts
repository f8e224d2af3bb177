import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findViolations } from '../../db/ledger.ts';
import { redeemBody, startSettlementHarness, type SettlementHarness } from '../support/settlement.ts';
import { hop, issue, newWallet, plcToJson } from '../support/wallet.ts';
import { waitFor } from '../support/wait.ts';
import { startWorkerProcess } from '../support/worker-process.ts';

/**
 * The worker process killed (SIGKILL) in the middle of a redemption and started again: the
 * redemption finishes and the gateway holds exactly one transfer.
 */
let h: SettlementHarness;
const device = { 'x-device-id': 'device-crash' };

beforeAll(async () => {
  // Payouts wait in BANK_PROCESSING until the test completes them.
  h = await startSettlementHarness({}, { autoSettle: false }, { inProcessWorker: false });
});
afterAll(async () => {
  await h?.close();
});

describe('worker crash during a redemption', () => {
  // Two worker processes start here (each bundles the workflows, as deployed): minutes on a busy machine.
  it('finishes after a restart with exactly one payout', { timeout: 240_000 }, async () => {
    const first = await startWorkerProcess(h.t);
    const [issuer, bearer] = [newWallet(), newWallet()];
    await h.t.app.inject({
      method: 'POST',
      url: '/api/v1/balance/deposit',
      headers: { ...h.admin, 'idempotency-key': randomUUID() },
      payload: { owner_id: issuer.pubkey, amount: '10.00', currency: 'BRL' },
    });
    const plc = issue(issuer, { amountMinor: 650n });
    await h.t.app.inject({ method: 'POST', url: '/api/v1/plc/create', headers: device, payload: { plc: plcToJson(plc) } });
    const moved = hop(plc, issuer, bearer);
    const response = await h.t.app.inject({
      method: 'POST',
      url: '/api/v1/redeem/',
      headers: device,
      payload: redeemBody(moved, bearer, '12345678909'),
    });
    expect(response.statusCode).toBe(200);
    const { workflow_id: workflowId, redemption_id: redemptionId } = response.json();
    // Wait until the payout exists at the gateway, then kill the worker mid-workflow.
    const payouts = () => h.simulator.state.snapshot(100).transfers.filter((transfer) => transfer.externalReference === redemptionId);
    await waitFor(() => payouts().length > 0, { what: 'the payout at the gateway before the kill' });
    expect(payouts()).toHaveLength(1);
    await first.kill('SIGKILL');

    const second = await startWorkerProcess(h.t);
    try {
      const transferId = payouts()[0]?.id;
      await fetch(`${h.t.config.GATEWAY_BASE_URL}/sim/transfers/${transferId}/complete`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
      const result = await h.t.temporal.workflow.getHandle(workflowId).result();
      expect(result).toMatchObject({ status: 'SETTLED' });
      expect(payouts()).toHaveLength(1);
      const status = await h.t.app.inject({ method: 'GET', url: `/api/v1/plc/${plc.commitment.tokenId}/status` });
      expect(status.json()).toMatchObject({ status: 'REDEEMED' });
      expect(await findViolations(h.t.db.pool)).toEqual([]);
    } finally {
      await second.kill('SIGTERM');
    }
  });
});
