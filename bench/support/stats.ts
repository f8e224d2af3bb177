/**
 * Latency statistics for benchmarks. Percentiles use the nearest-rank method on sorted samples:
 * p99 of 1,000 samples is the 990th smallest, an actual observed value, never an interpolation.
 */

/** Nearest-rank percentile of samples sorted ascending; `p` in (0, 100]. NaN for no samples. */
export function percentile(sortedAscending: ArrayLike<number>, p: number): number {
  if (!(p > 0 && p <= 100)) throw new RangeError(`percentile must be in (0, 100], got ${p}`);
  const count = sortedAscending.length;
  if (count === 0) return Number.NaN;
  const rank = Math.ceil((p / 100) * count);
  return sortedAscending[Math.min(count, Math.max(1, rank)) - 1] as number;
}

export interface LatencySummary {
  count: number;
  meanMs: number;
  p50Ms: number;
  p90Ms: number;
  p95Ms: number;
  p99Ms: number;
  maxMs: number;
}

export function summarize(samplesMs: readonly number[]): LatencySummary {
  const sorted = Float64Array.from(samplesMs).sort();
  const total = sorted.reduce((sum, value) => sum + value, 0);
  return {
    count: sorted.length,
    meanMs: sorted.length === 0 ? Number.NaN : total / sorted.length,
    p50Ms: percentile(sorted, 50),
    p90Ms: percentile(sorted, 90),
    p95Ms: percentile(sorted, 95),
    p99Ms: percentile(sorted, 99),
    maxMs: sorted.length === 0 ? Number.NaN : (sorted[sorted.length - 1] as number),
  };
}
