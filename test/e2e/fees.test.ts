import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { publishFeeSchedule } from '../../db/fees.ts';
import { findViolations } from '../../db/ledger.ts';
import { field, ok } from '../bin/wallet-cli.ts';
import { snapshotOf } from '../support/ledger.ts';
import { feeConsentBody, redeemBody, settlementBody, startSettlementHarness, type SettlementHarness } from '../support/settlement.ts';
import { hop, newWallet, type TestWallet } from '../support/wallet.ts';

/**
 * Fees end to end (docs/limits-and-fees.md, "Fees"): a schedule that charges Pix, a redemption
 * refused before anything is booked while the bearer has not consented, the signed consent, then
 * a redemption charged by the consented version: the gateway pays out the net, the settlement
 * books the fee to `fees` with the payout, the ledger verifies clean; a failed redemption books
 * no fee.
 */
let h: SettlementHarness;
const device = { 'x-device-id': 'device-fees' };
const pixKey = '123e4567-e89b-42d3-a456-556642440000';

beforeAll(async () => {
  h = await startSettlementHarness({ RATE_LIMIT_FEES_PER_MINUTE: '100000' });
});
afterAll(async () => {
  await h?.close();
});

const balance = async (wallet: TestWallet) => (await h.t.app.inject({ method: 'GET', url: `/api/v1/balance/${wallet.pubkey}` })).json();
const redeem = (body: object) => h.t.app.inject({ method: 'POST', url: '/api/v1/redeem/', headers: device, payload: body });

/** The bearer's signed consent to this fee schedule version. */
function consent(wallet: TestWallet, version: number) {
  return h.t.app.inject({ method: 'POST', url: '/api/v1/fees/consent', payload: feeConsentBody(wallet, version) });
}

async function ledgerRowsOf(tokenId: string) {
  const redemptions = await h.t.db.pool.query('SELECT id FROM redemptions WHERE token_id = $1', [tokenId]);
  const transactions = await h.t.db.pool.query(`SELECT count(*)::int AS n FROM ledger_transactions WHERE reference_type = 'redemption'`);
  return { redemptions: redemptions.rowCount, redemptionTransactions: (transactions.rows[0] as { n: number }).n };
}

describe('a redemption with a fee', () => {
  it('is refused before anything is booked without consent; after the consent it pays out the net and books the fee to `fees`', async () => {
    // Version 2 charges Pix: 0.10 + 1%, between 0.20 and 5.00.
    const version = await publishFeeSchedule(h.t.db.pool, {
      description: 'Pix charged',
      rules: [{ rail: 'PIX', tier: null, fixedMinor: 10n, rateBps: 100, minMinor: 20n, maxMinor: 500n }],
    });
    expect(version).toBe(2);
    const [a, b] = [newWallet(), newWallet()];
    await h.t.deposit(a.pubkey, '100.00');
    const plc0 = await h.t.issuePlc(a, 2500n, device);
    const plc1 = hop(plc0, a, b);
    const before = await ledgerRowsOf(plc0.commitment.tokenId);

    for (const response of [
      await redeem(redeemBody(plc1, b, pixKey)),
      await h.t.app.inject({ method: 'POST', url: '/api/v1/settlements', headers: device, payload: settlementBody(plc1, b, pixKey) }),
    ]) {
      expect(response.statusCode).toBe(409);
      expect(response.json()).toMatchObject({
        code: 'FEE_CONSENT_REQUIRED',
        details: { schedule_version: 2, fee: '0.35', tier: 'STANDARD', consent_url: '/api/v1/fees/consent' },
      });
    }
    // Nothing booked, nothing opened, no payout.
    expect(await ledgerRowsOf(plc0.commitment.tokenId)).toEqual(before);
    expect(before.redemptions).toBe(0);
    expect(await balance(a)).toMatchObject({ available: '75.00', promised: '25.00' });
    expect(await balance(b)).toMatchObject({ pending: '0.00' });
    expect(h.simulator.state.snapshot(500).transfers.filter((tr) => tr.description === `PLC ${plc0.commitment.tokenId}`)).toHaveLength(0);

    const estimate = await h.t.app.inject({ method: 'POST', url: '/api/v1/fees/estimate', payload: { amount: '25.00', rail: 'PIX', owner_id: b.pubkey } });
    expect(estimate.json()).toMatchObject({ schedule_version: 2, fee: '0.35', net_amount: '24.65', consent_required: true });
    expect((await consent(b, 2)).json()).toMatchObject({ owner_id: b.pubkey, schedule_version: 2, created: true });

    const feesBefore = (await snapshotOf(h.t.db.pool, 'system:fees', 'AVAILABLE')) ?? 0n;
    const worldBefore = (await snapshotOf(h.t.db.pool, 'system:world', 'AVAILABLE')) ?? 0n;
    const response = await redeem(redeemBody(plc1, b, pixKey));
    expect(response.statusCode).toBe(200);
    expect(response.json()).toMatchObject({ status: 'PENDING_PAYMENT', amount: '25.00', fee: '0.35' });
    const result = await h.t.temporal.workflow.getHandle(response.json().workflow_id).result();
    expect(result).toMatchObject({ status: 'SETTLED' });

    const row = (await h.t.db.pool.query('SELECT fee_minor, fee_schedule_version, settle_tx_id FROM redemptions WHERE id = $1', [response.json().redemption_id])).rows[0];
    expect(row).toMatchObject({ fee_minor: 35n, fee_schedule_version: 2 });
    // The gateway paid out the net.
    const payouts = h.simulator.state.snapshot(500).transfers.filter((tr) => tr.externalReference === response.json().redemption_id);
    expect(payouts).toHaveLength(1);
    expect(payouts[0]).toMatchObject({ value: 24.65, status: 'DONE' });
    // One settlement transaction: bearer PENDING -25.00, world +24.65, fees +0.35.
    const entries = await h.t.db.pool.query(
      `SELECT a.owner_id, e.bucket::text AS bucket, e.amount_minor FROM ledger_entries e JOIN ledger_accounts a ON a.id = e.account_id
        WHERE e.transaction_id = $1 ORDER BY e.amount_minor`,
      [row.settle_tx_id],
    );
    expect(entries.rows).toEqual([
      { owner_id: b.pubkey, bucket: 'PENDING', amount_minor: -2500n },
      { owner_id: 'system:fees', bucket: 'AVAILABLE', amount_minor: 35n },
      { owner_id: 'system:world', bucket: 'AVAILABLE', amount_minor: 2465n },
    ]);
    expect(await snapshotOf(h.t.db.pool, 'system:fees', 'AVAILABLE')).toBe(feesBefore + 35n);
    expect(await snapshotOf(h.t.db.pool, 'system:world', 'AVAILABLE')).toBe(worldBefore + 2465n);
    expect(await balance(b)).toMatchObject({ pending: '0.00', available: '0.00' });
    expect(await balance(a)).toMatchObject({ available: '75.00', promised: '0.00' });
    expect(await findViolations(h.t.db.pool)).toEqual([]);
  });

  it('the wallet program shows the schedule and signs its consent: the estimate then needs none', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'wallet-fees-'));
    try {
      const key = field(await ok(dir, 'init', '--server', h.appUrl), 'public_key');
      const shown = await ok(dir, 'fees');
      expect(shown).toContain('fee schedule version 2: Pix charged');
      expect(shown).toMatch(/pix\s+any tier\s+0\.10 \+ 100 bps, min 0\.20, max 5\.00/);
      expect((await h.t.app.inject({ method: 'POST', url: '/api/v1/fees/estimate', payload: { amount: '25.00', rail: 'PIX', owner_id: key } })).json()).toMatchObject({
        consent_required: true,
      });
      expect(await ok(dir, 'fees', '--consent')).toContain('consented to fee schedule version 2');
      expect(await ok(dir, 'fees', '--consent')).toContain('already consented to fee schedule version 2');
      expect((await h.t.app.inject({ method: 'POST', url: '/api/v1/fees/estimate', payload: { amount: '25.00', rail: 'PIX', owner_id: key } })).json()).toMatchObject({
        consented_version: 2,
        consent_required: false,
      });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a failed redemption books no fee: the whole amount goes back to the issuer', async () => {
    const [a, b] = [newWallet(), newWallet()];
    await h.t.deposit(a.pubkey, '10.00');
    expect((await consent(b, 2)).statusCode).toBe(200);
    const plc0 = await h.t.issuePlc(a, 300n, device);
    const plc1 = hop(plc0, a, b);
    const feesBefore = (await snapshotOf(h.t.db.pool, 'system:fees', 'AVAILABLE')) ?? 0n;
    const response = await redeem(redeemBody(plc1, b, pixKey));
    expect(response.statusCode).toBe(200);
    expect(response.json()).toMatchObject({ fee: '0.20' });
    // The validation refuses a payout to another destination: the transfer is cancelled, the redemption FAILED.
    await h.t.db.pool.query(`UPDATE redemptions SET destination = 'someone-else@example.com' WHERE id = $1`, [response.json().redemption_id]);
    expect(await h.t.temporal.workflow.getHandle(response.json().workflow_id).result()).toMatchObject({ status: 'FAILED' });
    expect((await snapshotOf(h.t.db.pool, 'system:fees', 'AVAILABLE')) ?? 0n).toBe(feesBefore);
    expect(await balance(a)).toMatchObject({ available: '7.00', promised: '3.00' });
    expect(await balance(b)).toMatchObject({ pending: '0.00' });
    expect(await findViolations(h.t.db.pool)).toEqual([]);
  });
});
