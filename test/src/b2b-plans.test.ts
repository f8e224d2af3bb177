import { describe, expect, it } from 'vitest';
import { b2bPlanIds, b2bPlans, bandFor, isB2bPlanId } from '../../src/b2b/plans.ts';

describe('the B2B plans', () => {
  it('are well formed: bands ascending from 0, prices falling with volume', () => {
    for (const id of b2bPlanIds) {
      const plan = b2bPlans[id];
      expect(plan.id).toBe(id);
      expect(plan.bands[0]?.fromMonthlyCount).toBe(0);
      for (let i = 1; i < plan.bands.length; i += 1) {
        const [before, band] = [plan.bands[i - 1]!, plan.bands[i]!];
        expect(band.fromMonthlyCount).toBeGreaterThan(before.fromMonthlyCount);
        expect(band.rateBps).toBeLessThanOrEqual(before.rateBps);
        expect(band.fixedMinor).toBeLessThanOrEqual(before.fixedMinor);
      }
    }
  });

  it.each([
    ['STARTER', 0, 80],
    ['STARTER', 2_000, 80],
    ['STARTER', 2_001, null],
    ['BUSINESS', 9_999, 60],
    ['BUSINESS', 10_000, 45],
    ['BUSINESS', 100_001, null],
    ['ENTERPRISE', 99_999, 40],
    ['ENTERPRISE', 100_000, 30],
    ['ENTERPRISE', 5_000_000, 20],
    ['ENTERPRISE', -1, null],
    ['ENTERPRISE', 1.5, null],
  ] as const)('%s at %d redemptions a month: %s bps', (id, count, rateBps) => {
    expect(bandFor(b2bPlans[id], count)?.rateBps ?? null).toBe(rateBps);
  });

  it('knows its ids', () => {
    expect(isB2bPlanId('BUSINESS')).toBe(true);
    expect(isB2bPlanId('business')).toBe(false);
  });
});
