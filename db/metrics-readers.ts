import { latestLedgerCheck } from './ops-stats.ts';
import type { Queryable } from './pool.ts';
import { queueStats } from './queue-stats.ts';
import { pendingPaymentStats } from './redemptions.ts';

/** The reads behind the metrics' database gauges (infra/metrics.ts), each one bounded statement. */
export function metricsDatabaseReaders(db: Queryable) {
  return {
    queues: () => queueStats(db),
    pendingRedemptions: () => pendingPaymentStats(db),
    latestLedgerCheck: async () => {
      const check = await latestLedgerCheck(db);
      return check === null ? null : { violations: check.violations_count, checked_at: check.finished_at };
    },
  };
}
