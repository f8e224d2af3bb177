import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  basisPointsToPercent,
  evaluateFlag,
  pendingEligibilitySources,
  percentToBasisPoints,
  rolloutBucket,
  truncateIdentifier,
  type EligibilitySources,
  type FlagConfig,
} from '../../src/ops/canary.ts';
import { lastDays } from '../../src/ops/days.ts';
import { histogramQuantileBucket, histogramQuantileMs, latencyBucketOf, settleLatencyBoundsMs, settleLatencyBucketCount } from '../../src/ops/settle-latency.ts';

const flag = (overrides: Partial<FlagConfig> = {}): FlagConfig => ({
  name: 'test_flag',
  description: 'a flag',
  enabled: true,
  rolloutBasisPoints: 5000,
  unit: 'device',
  minReputationTier: null,
  excludeBlockedKeys: false,
  ...overrides,
});

describe('canary rollout', () => {
  it('puts about the rollout share of ids in, and raising the share only adds ids', () => {
    const ids = Array.from({ length: 4000 }, (_, i) => `device-${i}`);
    const buckets = ids.map((id) => rolloutBucket('test_flag', 'device', id));
    const share = (basisPoints: number) => buckets.filter((bucket) => bucket < basisPoints).length / ids.length;
    expect(share(1000)).toBeGreaterThan(0.08);
    expect(share(1000)).toBeLessThan(0.12);
    expect(share(5000)).toBeGreaterThan(0.47);
    expect(share(5000)).toBeLessThan(0.53);
    expect(share(10_000)).toBe(1);
    expect(share(0)).toBe(0);
    // Another flag draws other buckets: rollouts of two flags are independent.
    expect(ids.map((id) => rolloutBucket('other_flag', 'device', id))).not.toEqual(buckets);
    expect(rolloutBucket('test_flag', 'device', 'device-7')).toBe(buckets[7]);
  });

  it.each([
    ['0', 0],
    ['12.5', 1250],
    ['12.50', 1250],
    ['100', 10_000],
    ['100.00', 10_000],
    ['0.01', 1],
  ])('percent %s is %i basis points', (percent, basisPoints) => {
    expect(percentToBasisPoints(percent)).toBe(basisPoints);
    expect(percentToBasisPoints(basisPointsToPercent(basisPoints))).toBe(basisPoints);
  });

  it.each(['100.01', '-1', '1e2', '12.345', '', 'abc', '1000'])('refuses the percentage %j', (percent) => {
    expect(() => percentToBasisPoints(percent)).toThrow(RangeError);
  });

  it('truncates every identifier to at most 6 characters and at most a third of it', () => {
    fc.assert(
      fc.property(fc.string({ minLength: 0, maxLength: 200 }), (id) => {
        const shown = truncateIdentifier(id);
        expect(shown.endsWith('…')).toBe(true);
        const kept = shown.slice(0, -1);
        expect(id.startsWith(kept)).toBe(true);
        expect(kept.length).toBeLessThanOrEqual(Math.min(6, id.length / 3));
      }),
    );
    expect(truncateIdentifier('device-canary-0123456789')).toBe('device…');
    expect(truncateIdentifier('abc')).toBe('a…');
  });

  it.each<[string, Partial<FlagConfig>, { deviceId: string | null; meshId: string | null }, boolean | null, string]>([
    ['disabled', { enabled: false, rolloutBasisPoints: 10_000 }, { deviceId: 'd-1', meshId: null }, false, 'off'],
    ['full rollout', { rolloutBasisPoints: 10_000 }, { deviceId: 'd-1', meshId: null }, true, 'full'],
    ['zero rollout', { rolloutBasisPoints: 0 }, { deviceId: 'd-1', meshId: null }, false, 'off'],
    ['no id of the unit', { unit: 'mesh', rolloutBasisPoints: 10_000 }, { deviceId: 'd-1', meshId: null }, null, 'full'],
    ['mesh unit', { unit: 'mesh', rolloutBasisPoints: 10_000 }, { deviceId: null, meshId: 'm-1' }, true, 'full'],
    ['a pending rule includes nobody', { rolloutBasisPoints: 10_000, minReputationTier: 'gold' }, { deviceId: 'd-1', meshId: null }, false, 'full'],
  ])('%s', async (_, overrides, subject, eligible, status) => {
    const evaluation = await evaluateFlag(flag(overrides), subject, pendingEligibilitySources);
    expect(evaluation.eligible).toBe(eligible);
    expect(evaluation.status).toBe(status);
  });

  it('asks the eligibility sources for the rules a flag names, and passes when they pass', async () => {
    const asked: string[] = [];
    const sources: EligibilitySources = {
      meetsReputationTier: async (deviceId, tier) => {
        asked.push(`tier ${deviceId} ${tier}`);
        return { state: 'pass' };
      },
      hasBlockedKey: async (deviceId) => {
        asked.push(`blocked ${deviceId}`);
        return { state: 'fail', detail: 'key abc… is blocked' };
      },
    };
    const evaluation = await evaluateFlag(flag({ rolloutBasisPoints: 10_000, minReputationTier: 'gold', excludeBlockedKeys: true }), { deviceId: 'd-9', meshId: null }, sources);
    expect(asked).toEqual(['tier d-9 gold', 'blocked d-9']);
    expect(evaluation.eligible).toBe(false);
    expect(evaluation.rules.map((rule) => `${rule.rule}:${rule.state}`)).toEqual([
      'enabled:pass',
      'rollout:pass',
      'min_reputation_tier:pass',
      'exclude_blocked_keys:fail',
    ]);
  });
});

describe('settlement time histogram', () => {
  it('buckets each duration at the first bound it does not pass', () => {
    expect(latencyBucketOf(0)).toBe(0);
    expect(latencyBucketOf(100)).toBe(0);
    expect(latencyBucketOf(101)).toBe(1);
    expect(latencyBucketOf(86_400_000)).toBe(settleLatencyBoundsMs.length - 1);
    expect(latencyBucketOf(86_400_001)).toBe(settleLatencyBoundsMs.length);
  });

  it('estimates quantiles inside the bucket that holds them, within its bounds', () => {
    const counts = new Array<number>(settleLatencyBucketCount).fill(0);
    expect(histogramQuantileMs(counts, 0.5)).toBeNull();
    counts[latencyBucketOf(800)] = 10; // 10 settlements between 500 ms and 1 s
    expect(histogramQuantileMs(counts, 0.5)).toBe(750);
    counts[latencyBucketOf(40_000)] = 10; // and 10 between 30 s and 60 s
    expect(histogramQuantileMs(counts, 0.5)).toBe(1000);
    expect(histogramQuantileMs(counts, 0.95)).toBe(57_000);
    counts.fill(0);
    counts[settleLatencyBucketCount - 1] = 3;
    expect(histogramQuantileMs(counts, 0.95)).toBe(86_400_000);
    expect(() => histogramQuantileMs(counts, 1)).toThrow(RangeError);
  });

  it('names the bucket that holds a quantile, the bounds the histogram vouches for, and holds the estimate inside it', () => {
    const counts = new Array<number>(settleLatencyBucketCount).fill(0);
    expect(histogramQuantileBucket(counts, 0.5)).toBeNull();
    counts[latencyBucketOf(80)] = 10; // 10 settlements within 100 ms
    expect(histogramQuantileBucket(counts, 0.5)).toEqual({ aboveMs: 0, atMostMs: 100 });
    counts[latencyBucketOf(1500)] = 30; // and 30 between 1 s and 2 s
    expect(histogramQuantileBucket(counts, 0.5)).toEqual({ aboveMs: 1000, atMostMs: 2000 });
    counts[settleLatencyBucketCount - 1] = 40; // and 40 beyond 24 h
    expect(histogramQuantileBucket(counts, 0.95)).toEqual({ aboveMs: 86_400_000, atMostMs: null });
    expect(() => histogramQuantileBucket(counts, 0)).toThrow(RangeError);
    fc.assert(
      fc.property(fc.array(fc.nat({ max: 1000 }), { minLength: settleLatencyBucketCount, maxLength: settleLatencyBucketCount }), fc.double({ min: 0.01, max: 0.99, noNaN: true }), (histogram, q) => {
        const bucket = histogramQuantileBucket(histogram, q);
        const estimate = histogramQuantileMs(histogram, q);
        if (bucket === null) return estimate === null;
        return estimate !== null && estimate >= bucket.aboveMs && (bucket.atMostMs === null || estimate <= bucket.atMostMs);
      }),
    );
  });

  it('any histogram: the quantile lies between the bounds of a non-empty bucket and grows with q', () => {
    fc.assert(
      fc.property(fc.array(fc.nat({ max: 1000 }), { minLength: settleLatencyBucketCount, maxLength: settleLatencyBucketCount }), (counts) => {
        const p50 = histogramQuantileMs(counts, 0.5);
        const p95 = histogramQuantileMs(counts, 0.95);
        if (counts.every((count) => count === 0)) return p50 === null && p95 === null;
        return p50 !== null && p95 !== null && p50 <= p95 && p50 >= 0 && p95 <= 86_400_000;
      }),
    );
  });
});

describe('days', () => {
  it('lists the last days in UTC, oldest first', () => {
    expect(lastDays(Date.UTC(2025, 0, 2, 23, 59), 3)).toEqual(['2024-12-31', '2025-01-01', '2025-01-02']);
    expect(lastDays(Date.UTC(2025, 0, 2, 0, 0), 1)).toEqual(['2025-01-02']);
  });
});
