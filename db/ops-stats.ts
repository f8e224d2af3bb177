import { z } from 'zod';
import type { Queryable } from './pool.ts';
import { many, maybeOne } from './sql.ts';

/**
 * The dashboards' reads (docs/operations-console.md): the counters the writing transactions keep
 * (migration 20_operator_views, `stats_counters` plus the deltas not folded yet) and the latest full ledger
 * check. Every statement here reads through an index or a table that stays small whatever the
 * size of the ledger; `test/db/ops-stats.test.ts` holds their query plans to that.
 */

export const counterRow = z.object({ metric: z.string(), dim: z.string(), count: z.bigint(), amount_minor: z.bigint() });
export type CounterRow = z.infer<typeof counterRow>;

/** Counters named `metrics`, every dimension (status counters: a few rows each). */
export function readCounters(db: Queryable, metrics: readonly string[]): Promise<CounterRow[]> {
  return many(db, counterRow, {
    name: 'ops-counters',
    text: `SELECT metric, dim, sum(count)::bigint AS count, sum(amount_minor)::bigint AS amount_minor
             FROM (SELECT metric, dim, count, amount_minor FROM stats_counters WHERE metric = ANY ($1::text[])
                   UNION ALL
                   SELECT metric, dim, count, amount_minor FROM stats_counter_deltas WHERE metric = ANY ($1::text[])) s
            GROUP BY metric, dim ORDER BY metric, dim`,
    values: [metrics],
  });
}

/**
 * Daily counters named `metrics` whose dimension starts with a day in [fromDay, toDay] (UTC,
 * YYYY-MM-DD): an index range per metric.
 */
export function readDailyCounters(db: Queryable, metrics: readonly string[], fromDay: string, toDay: string): Promise<CounterRow[]> {
  // Dimensions are "<day>" or "<day>:<more>": every one of the last day sorts below "<day>;".
  const upper = `${toDay};`;
  return many(db, counterRow, {
    name: 'ops-daily-counters',
    text: `SELECT metric, dim, sum(count)::bigint AS count, sum(amount_minor)::bigint AS amount_minor
             FROM (SELECT metric, dim, count, amount_minor FROM stats_counters
                    WHERE metric = ANY ($1::text[]) AND dim >= $2 AND dim < $3
                   UNION ALL
                   SELECT metric, dim, count, amount_minor FROM stats_counter_deltas
                    WHERE metric = ANY ($1::text[]) AND dim >= $2 AND dim < $3) s
            GROUP BY metric, dim ORDER BY metric, dim`,
    values: [metrics, fromDay, upper],
  });
}

/** Folds the pending deltas now (tests and the command line; writers fold as they go). */
export async function foldCounterDeltas(db: Queryable): Promise<bigint> {
  const row = await maybeOne(db, z.object({ folded: z.bigint() }), { name: 'ops-fold', text: 'SELECT stats_fold_deltas() AS folded' });
  return row?.folded ?? 0n;
}

export const ledgerCheckRow = z.object({
  id: z.string().uuid(),
  source: z.string(),
  started_at: z.date(),
  finished_at: z.date(),
  ok: z.boolean(),
  violations_count: z.number().int(),
  violations: z.array(z.object({ kind: z.string(), subject: z.string(), detail: z.string().nullable() })),
  totals: z.array(z.object({ currency: z.string(), bucket: z.string(), user_minor: z.string(), system_minor: z.string() })),
});
export type LedgerCheckRow = z.infer<typeof ledgerCheckRow>;

export function latestLedgerCheck(db: Queryable): Promise<LedgerCheckRow | null> {
  return maybeOne(db, ledgerCheckRow, {
    name: 'ops-latest-ledger-check',
    text: `SELECT id, source, started_at, finished_at, ok, violations_count, violations, totals
             FROM ledger_checks ORDER BY finished_at DESC LIMIT 1`,
  });
}
