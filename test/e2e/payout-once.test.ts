import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { findViolations } from '../../db/ledger.ts';
import type { GatewayClient } from '../../gateway/index.ts';
import { handedOnPlc, redeemBody, startSettlementHarness, type SettlementHarness } from '../support/settlement.ts';
import { transferWire } from '../support/gateway-events.ts';
import { waitFor } from '../support/wait.ts';

/**
 * One payout per redemption (issue 32, sections 3 and 4; docs/settlement.md "One payout per
 * redemption", "Anonymous validation requests"), end to end through the gateway simulator, which
 * speaks Asaas's wire format (its validation requests carry `asaas-access-token`):
 *
 * - the gateway's answers to the payout's creation are lost and a rogue second transfer names the
 *   redemption (anyone with the API key can make one): one payout goes out, the redemption settles
 *   with that payout's id, the other is refused at validation and flagged, and the service never
 *   created a second transfer of its own;
 * - a flood of validation requests without the gateway's token, while real payouts are validated:
 *   the made-up ones cost at most the configured gateway reads and one flag per reason, the real
 *   payouts are all approved.
 */
let h: SettlementHarness;
const device = { 'x-device-id': 'device-payout-once' };
const pixKey = 'payee@example.com';
const anonymousReadsPerMinute = 4;

beforeAll(async () => {
  h = await startSettlementHarness({ GATEWAY_VALIDATION_ANON_READS_PER_MINUTE: String(anonymousReadsPerMinute), GATEWAY_VALIDATION_ANON_FLAGS_PER_WINDOW: '5' });
});
afterEach(async () => {
  await fetch(`${h.t.config.GATEWAY_BASE_URL}/sim/faults`, { method: 'DELETE' });
});
afterAll(async () => {
  await h?.close();
});

/** Every transfer the simulated gateway holds under a redemption's reference. */
const transfersNaming = (redemptionId: string) => h.simulator.state.snapshot(2000).transfers.filter((t) => t.externalReference === redemptionId);

async function redeem(amountMinor: bigint) {
  const { plc, bearer } = await handedOnPlc(h.t, amountMinor, device);
  const response = await h.t.app.inject({ method: 'POST', url: '/api/v1/redeem/', headers: device, payload: redeemBody(plc, bearer, pixKey) });
  expect(response.statusCode, response.body).toBe(200);
  return { opened: response.json() as { redemption_id: string; workflow_id: string }, tokenId: plc.commitment.tokenId };
}

async function redemptionRow(id: string) {
  const result = await h.t.db.pool.query<{ status: string; gateway_transfer_id: string | null }>('SELECT status, gateway_transfer_id FROM redemptions WHERE id = $1', [id]);
  return result.rows[0];
}

describe('one payout per redemption', () => {
  it("answers lost and a rogue second transfer naming the redemption: one payout, settled with its id, the rogue refused and flagged, no second transfer of ours", async () => {
    // The answer to the payout's creation is lost at the gateway (apiLostResponseRate 1 around
    // that one request: the transfer is made, its answer never comes back); afterwards a third of
    // all answers are lost (the activity's lookups too).
    const gateway = h.t.app.deps.gateway as GatewayClient;
    const createTransfer = gateway.createTransfer.bind(gateway);
    let creates = 0;
    gateway.createTransfer = async (input, options) => {
      creates += 1;
      if (creates > 1) return createTransfer(input, options);
      h.simulator.faults.update({ apiLostResponseRate: 1 });
      try {
        return await createTransfer(input, options);
      } finally {
        h.simulator.faults.update({ apiLostResponseRate: 0.3 });
      }
    };
    let opened: { redemption_id: string; workflow_id: string };
    let tokenId: string;
    let ours: ReturnType<typeof transfersNaming>[number];
    try {
      ({ opened, tokenId } = await redeem(3_000n));
      ours = await waitFor(() => transfersNaming(opened.redemption_id).find((t) => t.description === `PLC ${tokenId}`), {
        what: 'the payout created at the gateway (its answer lost)',
      });
    } finally {
      gateway.createTransfer = createTransfer;
    }
    // The intent was recorded before the gateway was asked.
    const intent = await h.t.db.pool.query('SELECT attempt, amount_minor::text AS amount FROM payout_intents WHERE redemption_id = $1', [opened.redemption_id]);
    expect(intent.rows).toEqual([{ attempt: 1, amount: String(Math.round(ours.value * 100)) }]);
    // Someone with the API key creates a second transfer naming the redemption, same amount, same key.
    const rogue = h.simulator.state.createTransfer(
      { valueMinor: BigInt(Math.round(ours.value * 100)), pixAddressKey: pixKey, pixAddressKeyType: 'EMAIL', description: 'rogue', externalReference: opened.redemption_id },
      null,
      randomUUID(),
    ).resource;
    // The activity's next attempts find its transfer by its reference, never creating another.
    const result = await h.t.temporal.workflow.getHandle(opened.workflow_id).result();
    expect(result).toMatchObject({ status: 'SETTLED' });

    const all = await waitFor(
      () => {
        const named = transfersNaming(opened.redemption_id);
        return named.every((t) => t.status === 'DONE' || t.status === 'CANCELLED') ? named : undefined;
      },
      { what: 'both transfers final at the gateway' },
    );
    // The service asked for one transfer, and made one, lost answers and all.
    expect(creates).toBe(1);
    expect(all.filter((t) => t.description === `PLC ${tokenId}`)).toHaveLength(1);
    expect(all.map((t) => t.id).sort()).toEqual([ours.id, rogue.id].sort());
    const paid = all.filter((t) => t.status === 'DONE');
    expect(paid).toHaveLength(1);
    const row = await redemptionRow(opened.redemption_id);
    expect(row).toEqual({ status: 'SETTLED', gateway_transfer_id: paid[0]?.id });
    const refused = all.find((t) => t.status === 'CANCELLED');
    expect(refused?.failReason).toMatch(/another payout|payout is|redemption is SETTLED|not one of our open payout intents/);
    // The refused one is flagged, and the claim names the paid one.
    const flags = await h.t.db.pool.query<{ severity: string }>(`SELECT severity FROM risk_flags WHERE details ->> 'payout_id' = $1`, [refused?.id]);
    expect(flags.rows.length).toBeGreaterThanOrEqual(1);
    expect(flags.rows.every((f) => f.severity === 'high')).toBe(true);
    const claimed = await h.t.db.pool.query('SELECT claimed_payout_id FROM payout_intents WHERE redemption_id = $1', [opened.redemption_id]);
    expect(claimed.rows).toEqual([{ claimed_payout_id: paid[0]?.id }]);
    expect(await findViolations(h.t.db.pool)).toEqual([]);
  });

  it('a flood of validation requests without the token, during real payouts: bounded gateway reads and flags, every real payout approved', async () => {
    // Count the API's gateway reads by the transfer they ask for.
    const gateway = h.t.app.deps.gateway as GatewayClient;
    const readIds: string[] = [];
    const getTransfer = gateway.getTransfer.bind(gateway);
    gateway.getTransfer = (id, options) => {
      readIds.push(id);
      return getTransfer(id, options);
    };
    const flagsBefore = await h.t.db.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM risk_flags WHERE details ->> 'authenticated' = 'false'`);
    try {
      const real = await Promise.all([redeem(1_500n), redeem(1_600n), redeem(1_700n)]);
      const target = real[0]!.opened.redemption_id;
      // The flood names an open payout intent (recorded before the gateway is asked): before it
      // exists, every request is refused without a read and the budget is never reached.
      await waitFor(
        async () => ((await h.t.db.pool.query('SELECT 1 FROM payout_intents WHERE redemption_id = $1', [target])).rowCount ?? 0) > 0 || undefined,
        { what: "the target redemption's payout intent" },
      );
      const madeUp: string[] = [];
      const flood = Array.from({ length: 120 }, (_, index) => {
        // Half name references nobody has; half name a real redemption waiting for its payout, with made-up transfers.
        const transfer = index % 2 === 0 ? transferWire() : transferWire({ externalReference: target });
        madeUp.push(transfer.id);
        return h.t.app.inject({ method: 'POST', url: '/api/v1/redemption/webhook/gateway', payload: { type: 'TRANSFER', transfer } });
      });
      const answers = await Promise.all(flood);
      const results = await Promise.all(real.map(({ opened }) => h.t.temporal.workflow.getHandle(opened.workflow_id).result()));
      expect(results.map((r) => r.status)).toEqual(['SETTLED', 'SETTLED', 'SETTLED']);

      // No made-up transfer was approved; a request without the token is never answered 401.
      expect(answers.every((a) => a.statusCode === 200 || a.statusCode === 503)).toBe(true);
      expect(answers.filter((a) => a.statusCode === 200).every((a) => a.json().status === 'REFUSED')).toBe(true);
      // The references nobody has were refused without a gateway read; the others spent the budget.
      const madeUpReads = readIds.filter((id) => madeUp.includes(id));
      expect(madeUpReads.length).toBeLessThanOrEqual(anonymousReadsPerMinute);
      // Past the budget the requests naming a real open payout answer 503 without a read (once the
      // redemption settles they are refused without a read too).
      expect(answers.filter((a) => a.statusCode === 503).length).toBeGreaterThanOrEqual(1);
      // Flags: one per source and reason, not one per request.
      const flagsAfter = await h.t.db.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM risk_flags WHERE details ->> 'authenticated' = 'false'`);
      const raised = flagsAfter.rows[0]!.n - flagsBefore.rows[0]!.n;
      expect(raised).toBeGreaterThanOrEqual(1);
      expect(raised).toBeLessThanOrEqual(2);
      // Every real payout was validated and approved by the gateway's own authenticated request.
      const validations = h.simulator.state.snapshot(2000).validations;
      for (const { opened } of real) {
        const row = await redemptionRow(opened.redemption_id);
        expect(row?.status).toBe('SETTLED');
        const outcomes = validations.filter((v) => v.transferId === row?.gateway_transfer_id).map((v) => v.outcome);
        expect(outcomes).toEqual(['APPROVED']);
      }
    } finally {
      gateway.getTransfer = getTransfer;
    }
  });
});
