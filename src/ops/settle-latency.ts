/**
 * The settlement-time histogram (docs/operations-console.md, "Stats"). Each settled redemption
 * counts once in the bucket of its time to settle (created -> SETTLED): bucket i holds durations up
 * to `settleLatencyBoundsMs[i]`, the last bucket everything longer. The database keeps the counts
 * per UTC day (migration 20_operator_views, `stats_latency_bucket`, which has the same bounds; a test holds the two
 * to each other), so a percentile over any range of days reads a few dozen counter rows.
 */
export const settleLatencyBoundsMs = [
  100, 250, 500, 1000, 2000, 5000, 10_000, 30_000, 60_000, 120_000, 300_000, 600_000, 1_800_000, 3_600_000, 14_400_000, 86_400_000,
] as const;

/** Buckets: one per bound plus the open-ended last one. */
export const settleLatencyBucketCount = settleLatencyBoundsMs.length + 1;

export function latencyBucketOf(ms: number): number {
  const index = settleLatencyBoundsMs.findIndex((bound) => ms <= bound);
  return index === -1 ? settleLatencyBoundsMs.length : index;
}

/**
 * The q-quantile (0 < q < 1) of a histogram, estimated by linear interpolation inside the bucket
 * that holds it (bucket i spans (bound[i-1], bound[i]]; the first starts at 0; the open last
 * bucket is reported at its lower bound, the longest time the histogram can vouch for). Null
 * for an empty histogram.
 */
export function histogramQuantileMs(counts: readonly number[], q: number): number | null {
  if (!(q > 0 && q < 1)) throw new RangeError(`quantile ${q} outside (0, 1)`);
  if (counts.length !== settleLatencyBucketCount) throw new RangeError(`expected ${settleLatencyBucketCount} buckets, got ${counts.length}`);
  const total = counts.reduce((sum, count) => sum + count, 0);
  if (total === 0) return null;
  const rank = q * total;
  let below = 0;
  for (let i = 0; i < counts.length; i += 1) {
    const count = counts[i] ?? 0;
    if (count > 0 && below + count >= rank) {
      const lower = i === 0 ? 0 : settleLatencyBoundsMs[i - 1]!;
      if (i === settleLatencyBoundsMs.length) return lower;
      const upper = settleLatencyBoundsMs[i]!;
      return Math.round(lower + ((rank - below) / count) * (upper - lower));
    }
    below += count;
  }
  return settleLatencyBoundsMs[settleLatencyBoundsMs.length - 1]!;
}

/** The bucket that holds a quantile: durations above `aboveMs` and at most `atMostMs` (null: no upper bound, the open last bucket). */
export interface QuantileBucket {
  aboveMs: number;
  atMostMs: number | null;
}

/**
 * The bucket holding the q-quantile (0 < q < 1): all the histogram can vouch for, without the
 * interpolation of `histogramQuantileMs` (which reads more precise than it is). Null for an
 * empty histogram.
 */
export function histogramQuantileBucket(counts: readonly number[], q: number): QuantileBucket | null {
  if (!(q > 0 && q < 1)) throw new RangeError(`quantile ${q} outside (0, 1)`);
  if (counts.length !== settleLatencyBucketCount) throw new RangeError(`expected ${settleLatencyBucketCount} buckets, got ${counts.length}`);
  const total = counts.reduce((sum, count) => sum + count, 0);
  if (total === 0) return null;
  const rank = q * total;
  let below = 0;
  for (let i = 0; i < counts.length; i += 1) {
    const count = counts[i] ?? 0;
    if (count > 0 && below + count >= rank) {
      return { aboveMs: i === 0 ? 0 : settleLatencyBoundsMs[i - 1]!, atMostMs: i === settleLatencyBoundsMs.length ? null : settleLatencyBoundsMs[i]! };
    }
    below += count;
  }
  return { aboveMs: settleLatencyBoundsMs[settleLatencyBoundsMs.length - 1]!, atMostMs: null };
}
