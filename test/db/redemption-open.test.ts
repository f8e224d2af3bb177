import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRedemptionActivities } from '../../activities/redemption.ts';
import { findViolations } from '../../db/ledger.ts';
import { createTestApp, type TestApp } from '../support/app.ts';
import { hop, newWallet } from '../support/wallet.ts';
import { openRedemptionInput } from '../support/settlement.ts';

/**
 * Opening a redemption is retried by Temporal when an attempt takes too long; the attempt given up
 * on may still commit. The chaos campaign found it: PostgreSQL frozen for 15 s, the opening's first
 * attempt timed out (10 s) while its transaction waited, the second attempt waited for the PLC's
 * lock behind it, and when both ran the second refused the redemption the first had just opened
 * (PLC_ALREADY_REDEEMED): the workflow ended REFUSED and the redemption stayed PENDING_PAYMENT
 * with nobody to pay it. The second attempt must answer the redemption its own first attempt opened.
 */
let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
  await t.startWorker();
});
afterAll(async () => {
  await t?.close();
});

describe('opening a redemption twice at once, under one redemption id', () => {
  it('the attempt that waited for the PLC behind the other answers the redemption the other opened', async () => {
    const [issuer, bearer] = [newWallet(), newWallet()];
    await t.deposit(issuer.pubkey, '50.00');
    const plc = await t.issuePlc(issuer, 700n, { 'x-device-id': 'device-open' });
    const input = openRedemptionInput(hop(plc, issuer, bearer), bearer, 'device-open');
    const unused = () => Promise.reject(new Error('not used'));
    const activities = createRedemptionActivities({
      pool: t.db.pool,
      gateway: { createTransfer: unused, getTransfer: unused } as never,
      temporal: {} as never,
    });

    // Something holds the PLC's row (a frozen PostgreSQL, in effect): both attempts queue behind it.
    const blocker = await t.db.pool.connect();
    try {
      await blocker.query('BEGIN');
      await blocker.query('SELECT 1 FROM plcs WHERE token_id = $1 FOR UPDATE', [input.tokenId]);
      const first = activities.openRedemption(input);
      const second = activities.openRedemption(input);
      // Both are waiting for the lock before it is released.
      for (let i = 0; i < 100; i += 1) {
        const waiting = await t.db.pool.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%FROM plcs WHERE token_id = $1 FOR UPDATE%'`,
        );
        if ((waiting.rows[0]?.n ?? 0) >= 2) break;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      await blocker.query('COMMIT');
      const results = await Promise.all([first, second]);
      expect(results.map((r) => r.state.redemptionId)).toEqual([input.redemptionId, input.redemptionId]);
      expect(results.map((r) => r.created).sort()).toEqual([false, true]);
    } finally {
      blocker.release();
    }
    const rows = await t.db.pool.query('SELECT status FROM redemptions WHERE token_id = $1', [input.tokenId]);
    expect(rows.rows).toEqual([{ status: 'PENDING_PAYMENT' }]);
    const requested = await t.db.pool.query(`SELECT count(*)::int AS n FROM ledger_transactions WHERE tx_type = 'REDEEM_REQUESTED' AND reference_id = $1`, [
      input.redemptionId,
    ]);
    expect(requested.rows[0]).toEqual({ n: 1 });
    expect(await findViolations(t.db.pool)).toEqual([]);
  });
});
