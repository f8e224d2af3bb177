import { latestLedgerCheck, readCounters, readDailyCounters, type CounterRow } from '../db/ops-stats.ts';
import type { Pool } from '../db/pool.ts';
import { queueStats } from '../db/queue-stats.ts';
import { getFlag, listFlags, toFlagConfig } from '../db/feature-flags.ts';
import { currencies, formatAmount, type Currency } from '../src/money/currency.ts';
import { evaluateFlag, truncateIdentifier, type EligibilitySources, type FlagEvaluation } from '../src/ops/canary.ts';
import { acquisitionPeriods, lastDays, type AcquisitionPeriod } from '../src/ops/days.ts';
import { histogramQuantileBucket, histogramQuantileMs, settleLatencyBucketCount, type QuantileBucket } from '../src/ops/settle-latency.ts';

/**
 * The admin dashboards (docs/operations-console.md): `stats`, `canary/status`, `acquisition`.
 * Each reads counters kept by the writing transactions (migration 20_operator_views) and other bounded,
 * indexed reads; nothing here scans a table that grows with the business.
 */

export interface DashboardOptions {
  pool: Pool;
  /** The age from which a queue counts as lagging (QUEUE_LAG_ALERT_MS). */
  queueLagAlertMs: number;
  /** How often the ledger-check workflow runs; a check older than twice this is stale. */
  ledgerCheckIntervalMs: number;
  eligibility: EligibilitySources;
  now?: () => number;
}

interface StatusTotal {
  status: string;
  currency: Currency;
  count: number;
  amount: string;
}

interface CurrencyTotal {
  currency: Currency;
  count: number;
  amount: string;
}

/** Days of the stats dashboard's series and of its time-to-settle window. */
export const statsSeriesDays = 14;
export const settleWindowDays = 7;

function isCurrency(value: string): value is Currency {
  return (currencies as readonly string[]).includes(value);
}

/** Status counters (`<STATUS>:<CURRENCY>`) as rows, zero rows dropped. */
function statusTotals(rows: readonly CounterRow[], metric: string): StatusTotal[] {
  const totals: StatusTotal[] = [];
  for (const row of rows) {
    if (row.metric !== metric || row.count === 0n) continue;
    const [status, currency] = row.dim.split(':') as [string, string];
    if (!isCurrency(currency)) continue;
    totals.push({ status, currency, count: Number(row.count), amount: formatAmount(row.amount_minor, currency) });
  }
  return totals;
}

function sumByCurrency(rows: readonly CounterRow[], metric: string, statuses: readonly string[]): CurrencyTotal[] {
  const sums = new Map<Currency, { count: bigint; amountMinor: bigint }>();
  for (const row of rows) {
    if (row.metric !== metric) continue;
    const [status, currency] = row.dim.split(':') as [string, string];
    if (!statuses.includes(status) || !isCurrency(currency)) continue;
    const sum = sums.get(currency) ?? { count: 0n, amountMinor: 0n };
    sums.set(currency, { count: sum.count + row.count, amountMinor: sum.amountMinor + row.amount_minor });
  }
  return [...sums.entries()]
    .filter(([, sum]) => sum.count !== 0n)
    .map(([currency, sum]) => ({ currency, count: Number(sum.count), amount: formatAmount(sum.amountMinor, currency) }));
}

/** Per-day counts of a daily metric (dims `<day>` or `<day>:<more>`), summed over the rest of the dim. */
function perDay(rows: readonly CounterRow[], metric: string, days: readonly string[], filter?: (rest: string) => boolean): number[] {
  const byDay = new Map<string, bigint>();
  for (const row of rows) {
    if (row.metric !== metric) continue;
    const day = row.dim.slice(0, 10);
    const rest = row.dim.slice(11);
    if (filter !== undefined && !filter(rest)) continue;
    byDay.set(day, (byDay.get(day) ?? 0n) + row.count);
  }
  return days.map((day) => Number(byDay.get(day) ?? 0n));
}

/** A quantile's bucket as the API answers it. */
function bucketView(bucket: QuantileBucket | null): { above_ms: number; at_most_ms: number | null } | null {
  return bucket === null ? null : { above_ms: bucket.aboveMs, at_most_ms: bucket.atMostMs };
}

/** The settlement-time histogram of the given days. */
function latencyHistogram(rows: readonly CounterRow[], days: ReadonlySet<string>): number[] {
  const counts = new Array<number>(settleLatencyBucketCount).fill(0);
  for (const row of rows) {
    if (row.metric !== 'settle_latency_day' || !days.has(row.dim.slice(0, 10))) continue;
    const bucket = Number(row.dim.slice(11));
    if (Number.isInteger(bucket) && bucket >= 0 && bucket < settleLatencyBucketCount) counts[bucket]! += Number(row.count);
  }
  return counts;
}

export function createDashboards(options: DashboardOptions) {
  const { pool } = options;
  const now = options.now ?? Date.now;

  return {
    async stats() {
      const at = now();
      const days = lastDays(at, statsSeriesDays);
      const [status, daily, queues, check] = await Promise.all([
        readCounters(pool, ['plc_status', 'redemption_status', 'charge_status']),
        readDailyCounters(
          pool,
          ['plc_issued_day', 'plc_redeemed_day', 'settle_latency_day', 'webhook_received_day', 'webhook_outcome_day'],
          days[0]!,
          days[days.length - 1]!,
        ),
        queueStats(pool),
        latestLedgerCheck(pool),
      ]);
      const alertMs = options.queueLagAlertMs;
      const age = (ms: number | null) => (ms === null ? null : Math.max(0, Math.round(ms)));
      const outboxLagging = (queues.outbox_oldest_ms ?? 0) >= alertMs;
      const inboxLagging = (queues.inbox_oldest_ms ?? 0) >= alertMs;
      const windowDays = new Set(days.slice(-settleWindowDays));
      const window = latencyHistogram(daily, windowDays);
      const settledInWindow = window.reduce((sum, count) => sum + count, 0);
      const checkAgeS = check === null ? null : Math.max(0, Math.round((at - check.finished_at.getTime()) / 1000));
      return {
        generated_at: new Date(at).toISOString(),
        plcs: {
          by_status: statusTotals(status, 'plc_status'),
          promised: sumByCurrency(status, 'plc_status', ['ISSUED', 'TRANSFERRED']),
          redeemed: sumByCurrency(status, 'plc_status', ['REDEEMED']),
        },
        redemptions: {
          by_status: statusTotals(status, 'redemption_status'),
          time_to_settle: {
            window_days: settleWindowDays,
            settled: settledInWindow,
            p50_ms: histogramQuantileMs(window, 0.5),
            p95_ms: histogramQuantileMs(window, 0.95),
            p50_bucket: bucketView(histogramQuantileBucket(window, 0.5)),
            p95_bucket: bucketView(histogramQuantileBucket(window, 0.95)),
          },
        },
        charges: { by_status: statusTotals(status, 'charge_status') },
        ledger: {
          check_interval_s: Math.round(options.ledgerCheckIntervalMs / 1000),
          stale: check === null || (checkAgeS ?? 0) * 1000 > 2 * options.ledgerCheckIntervalMs,
          last_check:
            check === null
              ? null
              : {
                  checked_at: check.finished_at.toISOString(),
                  age_s: checkAgeS ?? 0,
                  source: check.source,
                  ok: check.ok,
                  violations_count: check.violations_count,
                  violations: check.violations,
                  totals: check.totals.flatMap((row) =>
                    isCurrency(row.currency)
                      ? [{ currency: row.currency, bucket: row.bucket, users: formatAmount(BigInt(row.user_minor), row.currency), system: formatAmount(BigInt(row.system_minor), row.currency) }]
                      : [],
                  ),
                },
        },
        webhooks: {
          received_waiting: queues.inbox_received,
          processing: queues.inbox_processing,
          dead: queues.inbox_dead,
          oldest_age_ms: age(queues.inbox_oldest_ms),
          lagging: inboxLagging,
          ok: !inboxLagging && queues.inbox_dead === 0,
        },
        queues: {
          ok: !outboxLagging && !inboxLagging && queues.inbox_dead === 0,
          lag_alert_ms: alertMs,
          plc_status_outbox: {
            pending: queues.outbox_pending,
            failing: queues.outbox_failing,
            oldest_age_ms: age(queues.outbox_oldest_ms),
            lagging: outboxLagging,
          },
        },
        series: days.map((day, i) => {
          const histogram = latencyHistogram(daily, new Set([day]));
          return {
            date: day,
            plcs_issued: perDay(daily, 'plc_issued_day', days)[i]!,
            plcs_redeemed: perDay(daily, 'plc_redeemed_day', days)[i]!,
            settled: histogram.reduce((sum, count) => sum + count, 0),
            settle_p50_ms: histogramQuantileMs(histogram, 0.5),
            settle_p95_ms: histogramQuantileMs(histogram, 0.95),
            settle_p50_bucket: bucketView(histogramQuantileBucket(histogram, 0.5)),
            settle_p95_bucket: bucketView(histogramQuantileBucket(histogram, 0.95)),
            webhooks_received: perDay(daily, 'webhook_received_day', days)[i]!,
            webhooks_processed: perDay(daily, 'webhook_outcome_day', days, (rest) => rest === 'PROCESSED')[i]!,
            webhooks_ignored: perDay(daily, 'webhook_outcome_day', days, (rest) => rest === 'IGNORED')[i]!,
            webhooks_dead: perDay(daily, 'webhook_outcome_day', days, (rest) => rest === 'DEAD')[i]!,
          };
        }),
      };
    },

    async acquisition(period: AcquisitionPeriod) {
      const at = now();
      const days = lastDays(at, acquisitionPeriods[period]);
      const rows = await readDailyCounters(
        pool,
        [
          'acq_new_owners_day',
          'acq_new_devices_day',
          'acq_first_plc_day',
          'acq_first_redemption_day',
          'acq_device_first_plc_day',
          'acq_device_first_redemption_day',
          'acq_cohort_plc',
          'acq_cohort_redemption',
        ],
        days[0]!,
        days[days.length - 1]!,
      );
      const columns = {
        new_owners: perDay(rows, 'acq_new_owners_day', days),
        new_devices: perDay(rows, 'acq_new_devices_day', days),
        owners_first_plc: perDay(rows, 'acq_first_plc_day', days),
        owners_first_redemption: perDay(rows, 'acq_first_redemption_day', days),
        devices_first_plc: perDay(rows, 'acq_device_first_plc_day', days),
        devices_first_redemption: perDay(rows, 'acq_device_first_redemption_day', days),
      };
      const cohortPlc = perDay(rows, 'acq_cohort_plc', days);
      const cohortRedemption = perDay(rows, 'acq_cohort_redemption', days);
      const sum = (values: readonly number[]) => values.reduce((total, value) => total + value, 0);
      const opened = sum(columns.new_owners);
      return {
        period,
        time_zone: 'UTC' as const,
        from: days[0]!,
        to: days[days.length - 1]!,
        days: days.map((date, i) => ({
          date,
          new_owners: columns.new_owners[i]!,
          new_devices: columns.new_devices[i]!,
          owners_first_plc: columns.owners_first_plc[i]!,
          owners_first_redemption: columns.owners_first_redemption[i]!,
          devices_first_plc: columns.devices_first_plc[i]!,
          devices_first_redemption: columns.devices_first_redemption[i]!,
        })),
        totals: {
          new_owners: opened,
          new_devices: sum(columns.new_devices),
          owners_first_plc: sum(columns.owners_first_plc),
          owners_first_redemption: sum(columns.owners_first_redemption),
          devices_first_plc: sum(columns.devices_first_plc),
          devices_first_redemption: sum(columns.devices_first_redemption),
        },
        funnel: {
          cohort: 'owners first seen in the period, and how many of them have reached each step since',
          steps: [
            { step: 'opened_account' as const, owners: opened, share: opened === 0 ? null : 1 },
            { step: 'issued_first_plc' as const, owners: sum(cohortPlc), share: opened === 0 ? null : sum(cohortPlc) / opened },
            { step: 'first_redemption' as const, owners: sum(cohortRedemption), share: opened === 0 ? null : sum(cohortRedemption) / opened },
          ],
        },
      };
    },

    /** One flag for one subject (a route the flag gates); null when no such flag is configured. */
    async evaluateFeature(name: string, subject: { deviceId: string | null; meshId: string | null }): Promise<FlagEvaluation | null> {
      const row = await getFlag(pool, name);
      return row === null ? null : evaluateFlag(toFlagConfig(row), subject, options.eligibility);
    },

    async canaryStatus(subject: { deviceId: string | null; meshId: string | null }) {
      const flags = await listFlags(pool);
      const evaluations: FlagEvaluation[] = [];
      for (const row of flags) evaluations.push(await evaluateFlag(toFlagConfig(row), subject, options.eligibility));
      return {
        device_id: subject.deviceId === null ? null : truncateIdentifier(subject.deviceId),
        mesh_id: subject.meshId === null ? null : truncateIdentifier(subject.meshId),
        evaluated_at: new Date(now()).toISOString(),
        flags: evaluations.map((flag) => ({
          name: flag.name,
          description: flag.description,
          enabled: flag.enabled,
          rollout_percent: flag.rolloutPercent,
          unit: flag.unit,
          status: flag.status,
          eligible: flag.eligible,
          bucket: flag.bucket,
          rules: flag.rules,
        })),
      };
    },
  };
}

export type Dashboards = ReturnType<typeof createDashboards>;
