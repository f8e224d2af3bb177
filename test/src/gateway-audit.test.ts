import { describe, expect, it } from 'vitest';
import {
  auditFindings,
  auditWindowStart,
  chargeFinding,
  findingFlagKey,
  findingKey,
  paidFailedRepair,
  redemptionFinding,
  type Outcome,
  type PaidFailedRedemptionFacts,
} from '../../src/reconciliation/gateway-audit.ts';

/** The gateway audit's rules (src/reconciliation/gateway-audit.ts), table by table. */
describe('gateway audit rules', () => {
  const redemptionRows: [status: string, outcome: Outcome | null, finding: string | null][] = [
    ['FAILED', 'paid', 'FAILED_REDEMPTION_PAID'],
    ['FAILED', 'failed', null],
    ['FAILED', 'open', null],
    ['SETTLED', 'paid', null],
    ['SETTLED', 'failed', 'SETTLED_REDEMPTION_UNPAID'],
    ['SETTLED', 'open', 'SETTLED_REDEMPTION_UNPAID'],
    // A transfer the gateway does not know (or none recorded).
    ['SETTLED', null, 'SETTLED_REDEMPTION_UNPAID'],
    // In flight: its workflow books whatever the gateway says.
    ['PENDING_PAYMENT', 'paid', null],
    ['PENDING_PAYMENT', 'failed', null],
  ];
  it.each(redemptionRows)('a %s redemption whose transfer is %s: %s', (status, outcome, finding) => {
    expect(redemptionFinding(status, outcome)).toBe(finding);
  });

  const chargeRows: [status: string, outcome: Outcome | null, gatewayStatus: string | null, finding: string | null][] = [
    ['FAILED', 'paid', 'CONFIRMED', 'FAILED_CHARGE_PAID'],
    ['FAILED', 'failed', 'DELETED', null],
    ['FAILED', 'failed', 'OVERDUE', null],
    ['SETTLED', 'paid', 'RECEIVED', null],
    ['SETTLED', 'open', 'PENDING', 'SETTLED_CHARGE_UNPAID'],
    ['SETTLED', 'failed', 'DELETED', 'SETTLED_CHARGE_UNPAID'],
    ['SETTLED', null, null, 'SETTLED_CHARGE_UNPAID'],
    ['SETTLED', 'failed', 'REFUNDED', 'SETTLED_CHARGE_REFUNDED'],
    ['SETTLED', 'open', 'CHARGEBACK_REQUESTED', 'SETTLED_CHARGE_REFUNDED'],
    ['PENDING', 'paid', 'RECEIVED', null],
  ];
  it.each(chargeRows)('a %s charge whose payment is %s (%s): %s', (status, outcome, gatewayStatus, finding) => {
    expect(chargeFinding(status, outcome, gatewayStatus)).toBe(finding);
  });

  const safe: PaidFailedRedemptionFacts = {
    redemptionStatus: 'FAILED',
    transferIsItsOwn: true,
    transferAmountMinor: 700n,
    expectedAmountMinor: 700n,
    plcStatus: 'TRANSFERRED',
    plcRedemptionId: null,
    otherLiveRedemption: false,
  };
  const repairRows: [what: string, facts: Partial<PaidFailedRedemptionFacts>, why: RegExp | null][] = [
    ['as the failure left it', {}, null],
    ['settled meanwhile', { redemptionStatus: 'SETTLED' }, /is SETTLED now/],
    ['another transfer', { transferIsItsOwn: false }, /not the one the redemption recorded/],
    ['another amount', { transferAmountMinor: 699n }, /paid 699, the payout was 700/],
    ['the PLC expired', { plcStatus: 'EXPIRED' }, /PLC is EXPIRED/],
    ['the PLC cancelled', { plcStatus: 'CANCELLED' }, /PLC is CANCELLED/],
    ['the PLC redeemed again', { plcStatus: 'REDEEMED', otherLiveRedemption: true }, /PLC is REDEEMED/],
    ['another redemption in flight', { plcRedemptionId: 'b0000000-0000-4000-8000-000000000000', otherLiveRedemption: true }, /in flight or settled/],
  ];
  it.each(repairRows)('the repair of a FAILED redemption paid out, %s', (_what, change, why) => {
    const verdict = paidFailedRepair({ ...safe, ...change });
    if (why === null) expect(verdict).toEqual({ safe: true });
    else expect(verdict).toMatchObject({ safe: false, why: expect.stringMatching(why) });
  });

  it('keys an item and its flag by the finding and its subject; every finding has a severity and a text', () => {
    expect(findingKey('PLC_PAID_TWICE', 't1')).toBe('PLC_PAID_TWICE/t1');
    expect(findingFlagKey('PLC_PAID_TWICE', 't1')).toBe('gateway-audit:PLC_PAID_TWICE:t1');
    for (const spec of Object.values(auditFindings)) {
      expect(['low', 'medium', 'high', 'critical']).toContain(spec.severity);
      expect(spec.text.length).toBeGreaterThan(20);
    }
  });

  it("opens the audit's window on the gateway's calendar (America/Sao_Paulo), whole days back", () => {
    // 02:00 UTC on the 10th is still the 9th in Sao Paulo (UTC-3).
    expect(auditWindowStart(new Date('2026-11-10T02:00:00Z'), 2)).toBe('2026-11-07');
    expect(auditWindowStart(new Date('2026-11-10T03:00:00Z'), 2)).toBe('2026-11-08');
    expect(auditWindowStart(new Date('2026-03-01T12:00:00Z'), 1)).toBe('2026-02-28');
    expect(auditWindowStart(new Date('2026-11-10T12:00:00Z'), 0)).toBe('2026-11-10');
  });
});
