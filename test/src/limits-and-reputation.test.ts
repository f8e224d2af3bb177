import { describe, expect, it } from 'vitest';
import { automaticLimits, checkIncreaseRequest, effectiveLimits, tierShares, type Ceilings } from '../../src/limits/progressive.ts';
import {
  applyEvent,
  currentReputation,
  decayStepsDue,
  defaultReputationSettings,
  gatedTier,
  initialReputation,
  replay,
  reputationSettingsOf,
  ruleDelta,
  settlementPoints,
  tierOf,
  type EventFacts,
  type ReputationEventKind,
} from '../../src/reputation/rules.ts';

/** The rules of docs/limits-and-fees.md ("Reputation", "Progressive limits"), as tables. */

const eligible = { creditEligible: true, pointsLimit: 1000 };

describe('reputation: the rule delta of each event', () => {
  it.each<[ReputationEventKind, EventFacts, number, number]>([
    ['ACCOUNT_AGE', {}, 500, 0],
    ['PLC_ISSUED', { amountMinor: 1_000_000n }, 500, 0],
    ['PLC_EXPIRED', { amountMinor: 500n }, 500, -3],
    // A settlement: +5 and 1 per 10.00, that part at most +20, when eligible, within the window's points left.
    ['REDEMPTION_SETTLED', { amountMinor: 1_000n, ...eligible }, 500, 6],
    ['REDEMPTION_SETTLED', { amountMinor: 9_999n, ...eligible }, 500, 14],
    ['REDEMPTION_SETTLED', { amountMinor: 20_000n, ...eligible }, 500, 25],
    ['REDEMPTION_SETTLED', { amountMinor: 10n ** 15n, ...eligible }, 500, 25],
    ['REDEMPTION_SETTLED', { amountMinor: 20_000n, creditEligible: true, pointsLimit: 7 }, 500, 7],
    ['REDEMPTION_SETTLED', { amountMinor: 20_000n, creditEligible: true, pointsLimit: 0 }, 500, 0],
    ['REDEMPTION_SETTLED', { amountMinor: 20_000n, creditEligible: false, pointsLimit: 1000 }, 500, 0],
    ['REDEMPTION_SETTLED', { amountMinor: 20_000n }, 500, 0],
    ['REDEMPTION_SETTLED', { amountMinor: 0n, ...eligible }, 500, 0],
    ['REDEMPTION_FAILED', { amountMinor: 10_000n }, 500, -10],
    // A risk flag takes back every point earned above the start, then its own penalty.
    ['RISK_FLAG', { severity: 'low' }, 500, -5],
    ['RISK_FLAG', { severity: 'medium' }, 500, -20],
    ['RISK_FLAG', { severity: 'high' }, 450, -50],
    ['RISK_FLAG', { severity: 'critical' }, 500, -100],
    ['RISK_FLAG', { severity: 'unheard-of' }, 500, -20],
    ['RISK_FLAG', { severity: 'low' }, 860, -365],
    ['INACTIVITY_DECAY', { pointsLimit: 10 }, 640, -10],
    ['INACTIVITY_DECAY', { pointsLimit: 10 }, 504, -4],
    ['INACTIVITY_DECAY', { pointsLimit: 10 }, 500, 0],
    ['INACTIVITY_DECAY', { pointsLimit: 10 }, 300, 0],
    ['FORK_PROVEN', {}, 500, 0],
    ['KEY_BLOCKED', {}, 500, 0],
  ])('%s %o on %i: %i', (kind, facts, score, delta) => {
    expect(ruleDelta(kind, facts, score)).toBe(delta);
  });

  it('the settlement points', () => {
    expect(settlementPoints(999n, true)).toBe(5);
    expect(settlementPoints(1_000n, false)).toBe(0);
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

const day = 86_400_000;
describe('reputation: the tier held is gated by account age and distinct independent counterparties (production defaults)', () => {
  it.each([
    [900, 100 * day, 20, false, 'PREMIUM'],
    [900, 89 * day, 20, false, 'TRUSTED'],
    [900, 100 * day, 19, false, 'TRUSTED'],
    [900, 100 * day, 4, false, 'STANDARD'],
    [900, 29 * day, 50, false, 'STANDARD'],
    [700, 30 * day, 5, false, 'TRUSTED'],
    [700, 0, 0, false, 'STANDARD'],
    [550, 0, 0, false, 'STANDARD'],
    [300, 0, 0, false, 'BASIC'],
    [900, 100 * day, 20, true, 'RESTRICTED'],
  ] as const)('score %i, age %i ms, %i counterparties, sanctioned %s: %s', (score, accountAgeMs, counterparties, sanctioned, tier) => {
    expect(gatedTier(score, sanctioned, { accountAgeMs, counterparties }, defaultReputationSettings)).toBe(tier);
  });
});

describe('reputation: decay without activity', () => {
  const stored = { score: 660, sanctioned: false, openedAtMs: 0, lastCreditAtMs: 0, decayStepsApplied: 0, counterparties: 5 };
  it.each([
    [29 * day, 0, 660, 'STANDARD'],
    [30 * day, 0, 650, 'TRUSTED'],
    [95 * day, 0, 630, 'TRUSTED'],
    [95 * day, 2, 650, 'TRUSTED'],
    [600 * day, 0, 500, 'STANDARD'],
  ])('idle %i ms, %i steps applied: score %i, tier %s', (nowMs, decayStepsApplied, score, tier) => {
    expect(currentReputation({ ...stored, decayStepsApplied }, nowMs, defaultReputationSettings)).toEqual({ score, tier });
  });

  it('steps due count whole idle periods less those applied', () => {
    expect(decayStepsDue(0, 0, { decayIdleMs: day })).toBe(0);
    expect(decayStepsDue(3 * day + 1, 1, { decayIdleMs: day })).toBe(2);
    expect(decayStepsDue(day, 5, { decayIdleMs: day })).toBe(0);
  });
});

describe('reputation: farming by the rules alone', () => {
  it('sixty settlements of 0.01 between one owner\'s wallets, or of any size when not eligible, move nothing', () => {
    const dust = Array.from({ length: 60 }, () => ({ kind: 'REDEMPTION_SETTLED' as const, amountMinor: 1n, creditEligible: false, pointsLimit: 50 }));
    const issues = Array.from({ length: 60 }, () => ({ kind: 'PLC_ISSUED' as const, amountMinor: 1n }));
    expect(replay([...issues, ...dust])).toEqual({ score: 500, sanctioned: false });
  });

  it('the window cap holds a day of eligible settlements to REPUTATION_GAIN_PER_WINDOW_MAX', () => {
    let pointsLimit = defaultReputationSettings.gainPerWindowMax;
    let state = initialReputation;
    for (let index = 0; index < 20; index += 1) {
      const applied = applyEvent(state, { kind: 'REDEMPTION_SETTLED', amountMinor: 50_000n, creditEligible: true, pointsLimit });
      pointsLimit -= applied.delta;
      state = applied.state;
    }
    expect(state.score).toBe(500 + defaultReputationSettings.gainPerWindowMax);
  });
});

describe('reputation: applying events', () => {
  it.each<[string, { score: number; sanctioned: boolean }, { kind: ReputationEventKind } & EventFacts, { score: number; delta: number; tier: string; sanctioned: boolean }]>([
    ['a start', initialReputation, { kind: 'PLC_ISSUED' }, { score: 500, delta: 0, tier: 'STANDARD', sanctioned: false }],
    ['a clamp at the top', { score: 995, sanctioned: false }, { kind: 'REDEMPTION_SETTLED', amountMinor: 10n ** 6n, ...eligible }, { score: 1000, delta: 5, tier: 'PREMIUM', sanctioned: false }],
    ['a clamp at the bottom', { score: 30, sanctioned: false }, { kind: 'RISK_FLAG', severity: 'critical' }, { score: 0, delta: -30, tier: 'RESTRICTED', sanctioned: false }],
    ['a tier crossed', { score: 598, sanctioned: false }, { kind: 'REDEMPTION_SETTLED', amountMinor: 1_000n, ...eligible }, { score: 604, delta: 6, tier: 'TRUSTED', sanctioned: false }],
    ['a risk flag takes the earned points back', { score: 790, sanctioned: false }, { kind: 'RISK_FLAG', severity: 'low' }, { score: 495, delta: -295, tier: 'STANDARD', sanctioned: false }],
    ['a proven fork', { score: 900, sanctioned: false }, { kind: 'FORK_PROVEN' }, { score: 0, delta: -900, tier: 'RESTRICTED', sanctioned: true }],
    ['a blocked key', { score: 420, sanctioned: false }, { kind: 'KEY_BLOCKED' }, { score: 0, delta: -420, tier: 'RESTRICTED', sanctioned: true }],
    ['good conduct after a sanction', { score: 790, sanctioned: true }, { kind: 'REDEMPTION_SETTLED', amountMinor: 10n ** 6n, ...eligible }, { score: 815, delta: 25, tier: 'RESTRICTED', sanctioned: true }],
  ])('%s', (_name, state, event, expected) => {
    const applied = applyEvent(state, event);
    expect({ score: applied.state.score, delta: applied.delta, tier: applied.tier, sanctioned: applied.state.sanctioned }).toEqual(expected);
  });

  it('replays from 500', () => {
    expect(replay([])).toEqual({ score: 500, sanctioned: false });
    expect(replay([{ kind: 'PLC_ISSUED' }, { kind: 'PLC_EXPIRED' }, { kind: 'REDEMPTION_FAILED' }])).toEqual({ score: 487, sanctioned: false });
  });
});

describe('reputation: settings from configuration', () => {
  it('turns the seconds of REPUTATION_* into the model', () => {
    const settings = reputationSettingsOf({
      REPUTATION_DUST_MINOR: 1_000n,
      REPUTATION_GAIN_WINDOW_SECONDS: 86_400,
      REPUTATION_GAIN_PER_WINDOW_MAX: 50,
      REPUTATION_DECAY_IDLE_SECONDS: 30 * 86_400,
      REPUTATION_DECAY_POINTS: 10,
      REPUTATION_TRUSTED_MIN_AGE_SECONDS: 30 * 86_400,
      REPUTATION_TRUSTED_MIN_COUNTERPARTIES: 5,
      REPUTATION_PREMIUM_MIN_AGE_SECONDS: 90 * 86_400,
      REPUTATION_PREMIUM_MIN_COUNTERPARTIES: 20,
    });
    expect(settings).toEqual(defaultReputationSettings);
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
