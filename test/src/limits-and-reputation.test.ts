import { describe, expect, it } from 'vitest';
import { automaticLimits, checkIncreaseRequest, effectiveLimits, tierShares, type Ceilings } from '../../src/limits/progressive.ts';
import { applyEvent, initialReputation, replay, ruleDelta, tierOf, type ReputationEventKind } from '../../src/reputation/rules.ts';

/** The rules of docs/limits-and-fees.md ("Reputation", "Progressive limits"), as tables. */

describe('reputation: the rule delta of each event', () => {
  it.each<[ReputationEventKind, { amountMinor?: bigint; severity?: string }, number]>([
    ['ACCOUNT_AGE', {}, 10],
    ['PLC_ISSUED', { amountMinor: 1_000_000n }, 1],
    ['PLC_EXPIRED', { amountMinor: 500n }, -3],
    ['REDEMPTION_SETTLED', { amountMinor: 0n }, 5],
    ['REDEMPTION_SETTLED', { amountMinor: 9_999n }, 5],
    ['REDEMPTION_SETTLED', { amountMinor: 10_000n }, 6],
    ['REDEMPTION_SETTLED', { amountMinor: 125_000n }, 17],
    ['REDEMPTION_SETTLED', { amountMinor: 200_000n }, 25],
    ['REDEMPTION_SETTLED', { amountMinor: 10n ** 15n }, 25],
    ['REDEMPTION_FAILED', { amountMinor: 10_000n }, -10],
    ['RISK_FLAG', { severity: 'low' }, -5],
    ['RISK_FLAG', { severity: 'medium' }, -20],
    ['RISK_FLAG', { severity: 'high' }, -50],
    ['RISK_FLAG', { severity: 'critical' }, -100],
    ['RISK_FLAG', { severity: 'unheard-of' }, -20],
    ['FORK_PROVEN', {}, 0],
    ['KEY_BLOCKED', {}, 0],
  ])('%s %o: %i', (kind, facts, delta) => {
    expect(ruleDelta(kind, facts)).toBe(delta);
  });
});

describe('reputation: tiers by score', () => {
  it.each([
    [0, false, 'RESTRICTED'],
    [199, false, 'RESTRICTED'],
    [200, false, 'BASIC'],
    [399, false, 'BASIC'],
    [400, false, 'STANDARD'],
    [500, false, 'STANDARD'],
    [599, false, 'STANDARD'],
    [600, false, 'TRUSTED'],
    [799, false, 'TRUSTED'],
    [800, false, 'PREMIUM'],
    [1000, false, 'PREMIUM'],
    [1000, true, 'RESTRICTED'],
  ])('score %i (sanctioned %s): %s', (score, sanctioned, tier) => {
    expect(tierOf(score, sanctioned)).toBe(tier);
  });

  it('refuses a score outside 0..1000', () => {
    expect(() => tierOf(1001, false)).toThrow(RangeError);
    expect(() => tierOf(-1, false)).toThrow(RangeError);
  });
});

describe('reputation: applying events', () => {
  it.each<[string, { score: number; sanctioned: boolean }, { kind: ReputationEventKind; amountMinor?: bigint; severity?: string }, { score: number; delta: number; tier: string; sanctioned: boolean }]>([
    ['a start', initialReputation, { kind: 'PLC_ISSUED' }, { score: 501, delta: 1, tier: 'STANDARD', sanctioned: false }],
    ['a clamp at the top', { score: 995, sanctioned: false }, { kind: 'REDEMPTION_SETTLED', amountMinor: 10n ** 6n }, { score: 1000, delta: 5, tier: 'PREMIUM', sanctioned: false }],
    ['a clamp at the bottom', { score: 30, sanctioned: false }, { kind: 'RISK_FLAG', severity: 'critical' }, { score: 0, delta: -30, tier: 'RESTRICTED', sanctioned: false }],
    ['a tier crossed', { score: 598, sanctioned: false }, { kind: 'REDEMPTION_SETTLED', amountMinor: 0n }, { score: 603, delta: 5, tier: 'TRUSTED', sanctioned: false }],
    ['a proven fork', { score: 900, sanctioned: false }, { kind: 'FORK_PROVEN' }, { score: 0, delta: -900, tier: 'RESTRICTED', sanctioned: true }],
    ['a blocked key', { score: 420, sanctioned: false }, { kind: 'KEY_BLOCKED' }, { score: 0, delta: -420, tier: 'RESTRICTED', sanctioned: true }],
    ['good conduct after a sanction', { score: 790, sanctioned: true }, { kind: 'REDEMPTION_SETTLED', amountMinor: 10n ** 6n }, { score: 815, delta: 25, tier: 'RESTRICTED', sanctioned: true }],
  ])('%s', (_name, state, event, expected) => {
    const applied = applyEvent(state, event);
    expect({ score: applied.state.score, delta: applied.delta, tier: applied.tier, sanctioned: applied.state.sanctioned }).toEqual(expected);
  });

  it('replays from 500', () => {
    expect(replay([])).toEqual({ score: 500, sanctioned: false });
    expect(replay([{ kind: 'PLC_ISSUED' }, { kind: 'PLC_EXPIRED' }, { kind: 'REDEMPTION_FAILED' }])).toEqual({ score: 488, sanctioned: false });
  });
});

const ceilings: Ceilings = { maxAmountMinor: 500_000n, dailyLimitMinor: 2_000_000n };

describe('progressive limits: automatic limits by tier and volume (ceilings 5,000.00 and 20,000.00)', () => {
  it.each([
    ['RESTRICTED', 0n, 25_000n, 100_000n],
    ['RESTRICTED', 5_000_000n, 25_000n, 100_000n],
    ['BASIC', 0n, 100_000n, 400_000n],
    ['BASIC', 5_000_000n, 100_000n, 400_000n],
    ['STANDARD', 0n, 250_000n, 1_000_000n],
    ['STANDARD', 1_000_000n, 250_000n, 1_100_000n],
    ['STANDARD', 50_000_000n, 250_000n, 2_000_000n],
    ['TRUSTED', 0n, 375_000n, 1_500_000n],
    ['TRUSTED', 2_000_000n, 375_000n, 1_700_000n],
    ['PREMIUM', 0n, 500_000n, 2_000_000n],
    ['PREMIUM', 10n ** 12n, 500_000n, 2_000_000n],
  ] as const)('%s with settled volume %s: %s per PLC, %s per 24 h', (tier, settledVolumeMinor, maxAmountMinor, dailyLimitMinor) => {
    expect(automaticLimits({ tier, settledVolumeMinor }, ceilings)).toEqual({ maxAmountMinor, dailyLimitMinor });
  });

  it('PREMIUM gets exactly the ceilings, every tier a share of at most all of them', () => {
    for (const shares of Object.values(tierShares)) {
      expect(shares.maxAmountBp).toBeLessThanOrEqual(10_000n);
      expect(shares.dailyLimitBp).toBeLessThanOrEqual(10_000n);
    }
    expect(tierShares.PREMIUM).toEqual({ maxAmountBp: 10_000n, dailyLimitBp: 10_000n });
  });

  it('never rounds a positive ceiling down to zero', () => {
    expect(automaticLimits({ tier: 'RESTRICTED', settledVolumeMinor: 0n }, { maxAmountMinor: 1n, dailyLimitMinor: 1n })).toEqual({ maxAmountMinor: 1n, dailyLimitMinor: 1n });
  });
});

describe('progressive limits: an override', () => {
  const automatic = { maxAmountMinor: 250_000n, dailyLimitMinor: 1_000_000n };
  it.each([
    ['none', null, { maxAmountMinor: 250_000n, dailyLimitMinor: 1_000_000n, source: 'TIER' }],
    ['higher in both', { maxAmountMinor: 400_000n, dailyLimitMinor: 1_600_000n }, { maxAmountMinor: 400_000n, dailyLimitMinor: 1_600_000n, source: 'OVERRIDE' }],
    ['higher in one only', { maxAmountMinor: 100_000n, dailyLimitMinor: 1_600_000n }, { maxAmountMinor: 250_000n, dailyLimitMinor: 1_600_000n, source: 'OVERRIDE' }],
    ['lower than the tier (the tier grew since)', { maxAmountMinor: 100_000n, dailyLimitMinor: 500_000n }, { maxAmountMinor: 250_000n, dailyLimitMinor: 1_000_000n, source: 'TIER' }],
    ['above the ceilings', { maxAmountMinor: 900_000n, dailyLimitMinor: 9_000_000n }, { maxAmountMinor: 500_000n, dailyLimitMinor: 2_000_000n, source: 'OVERRIDE' }],
  ] as const)('%s', (_name, override, expected) => {
    expect(effectiveLimits(automatic, override, ceilings)).toEqual({ ...expected, automatic });
  });
});

describe('progressive limits: what an increase request may ask', () => {
  const current = { maxAmountMinor: 250_000n, dailyLimitMinor: 1_000_000n };
  it.each([
    ['more per PLC', { maxAmountMinor: 300_000n, dailyLimitMinor: 1_000_000n }, null],
    ['more per day', { maxAmountMinor: 100n, dailyLimitMinor: 1_000_001n }, null],
    ['exactly the ceilings', { maxAmountMinor: 500_000n, dailyLimitMinor: 2_000_000n }, null],
    ['what it has', { maxAmountMinor: 250_000n, dailyLimitMinor: 1_000_000n }, 'LIMIT_INCREASE_NOT_NEEDED'],
    ['less', { maxAmountMinor: 1n, dailyLimitMinor: 1n }, 'LIMIT_INCREASE_NOT_NEEDED'],
    ['above the per-PLC ceiling', { maxAmountMinor: 500_001n, dailyLimitMinor: 1_000_000n }, 'LIMIT_ABOVE_CEILING'],
    ['above the daily ceiling', { maxAmountMinor: 300_000n, dailyLimitMinor: 2_000_001n }, 'LIMIT_ABOVE_CEILING'],
  ] as const)('%s', (_name, requested, code) => {
    const check = checkIncreaseRequest(requested, current, ceilings);
    expect(check.ok ? null : check.code).toBe(code);
  });
});
