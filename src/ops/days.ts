/** UTC days as the dashboards' counters name them (YYYY-MM-DD). */

const dayMs = 86_400_000;

export function utcDay(at: Date | number): string {
  return new Date(at).toISOString().slice(0, 10);
}

/** The `count` UTC days ending with the day of `now`, oldest first. */
export function lastDays(now: Date | number, count: number): string[] {
  if (!Number.isInteger(count) || count < 1 || count > 366) throw new RangeError(`day count ${count} outside 1..366`);
  const today = Date.UTC(new Date(now).getUTCFullYear(), new Date(now).getUTCMonth(), new Date(now).getUTCDate());
  return Array.from({ length: count }, (_, i) => utcDay(today - (count - 1 - i) * dayMs));
}

/** The acquisition dashboard's periods (the spec: today, 7d, 30d) in days. */
export const acquisitionPeriods = { today: 1, '7d': 7, '30d': 30 } as const;
export type AcquisitionPeriod = keyof typeof acquisitionPeriods;
