import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { acquisitionPeriods, type AcquisitionPeriod } from '../../src/ops/days.ts';
import { truncateIdentifier } from '../../src/ops/canary.ts';
import { adminErrors } from '../schemas/common.ts';
import { amountSchema, currencySchema } from '../schemas/money.ts';

/**
 * The spec's three dashboards (docs/operations-console.md): `GET /admin/stats` (every admin),
 * `GET /admin/canary/status` (every admin; identifiers truncated in the answer and the logs) and
 * `GET /admin/acquisition` (super_admin only, as the spec says).
 */

const statusTotal = z.object({ status: z.string(), currency: currencySchema, count: z.number().int(), amount: amountSchema });
const currencyTotal = z.object({ currency: currencySchema, count: z.number().int(), amount: amountSchema });
const ageMs = z.number().int().nullable();

/** The histogram bucket that holds a quantile: above `above_ms`, at most `at_most_ms` (null: the open bucket beyond 24 h). Null without settlements. */
const quantileBucket = z.object({ above_ms: z.number().int(), at_most_ms: z.number().int().nullable() }).nullable();

const adminStatsResponse = z
  .object({
    generated_at: z.string(),
    plcs: z.object({
      by_status: z.array(statusTotal),
      promised: z.array(currencyTotal).describe('PLCs ISSUED or TRANSFERRED: value promised and not yet redeemed'),
      redeemed: z.array(currencyTotal).describe('PLCs REDEEMED: value paid out'),
    }),
    redemptions: z.object({
      by_status: z.array(statusTotal),
      time_to_settle: z
        .object({
          window_days: z.number().int(),
          settled: z.number().int(),
          p50_ms: z.number().int().nullable().describe('interpolated inside its bucket: an estimate, no more precise than p50_bucket'),
          p95_ms: z.number().int().nullable().describe('interpolated inside its bucket: an estimate, no more precise than p95_bucket'),
          p50_bucket: quantileBucket,
          p95_bucket: quantileBucket,
        })
        .describe('From the redemption request to SETTLED, over the last window_days UTC days (a histogram: the buckets are what it knows, the _ms values estimates inside them)'),
    }),
    charges: z.object({ by_status: z.array(statusTotal) }),
    ledger: z
      .object({
        check_interval_s: z.number().int(),
        stale: z.boolean().describe('No check, or the latest is older than twice the interval'),
        last_check: z
          .object({
            checked_at: z.string(),
            age_s: z.number().int(),
            source: z.string(),
            ok: z.boolean().describe('Every ledger invariant held'),
            violations_count: z.number().int(),
            violations: z.array(z.object({ kind: z.string(), subject: z.string(), detail: z.string().nullable() })),
            totals: z.array(z.object({ currency: currencySchema, bucket: z.string(), users: amountSchema, system: amountSchema })),
          })
          .nullable(),
      })
      .describe('The latest full ledger check (the ledger-check workflow, npm run ledger -- verify)'),
    webhooks: z.object({
      received_waiting: z.number().int(),
      processing: z.number().int(),
      dead: z.number().int(),
      oldest_age_ms: ageMs,
      lagging: z.boolean(),
      ok: z.boolean(),
    }),
    queues: z.object({
      ok: z.boolean(),
      lag_alert_ms: z.number().int(),
      plc_status_outbox: z.object({ pending: z.number().int(), failing: z.number().int(), oldest_age_ms: ageMs, lagging: z.boolean() }),
    }),
    series: z
      .array(
        z.object({
          date: z.string(),
          plcs_issued: z.number().int(),
          plcs_redeemed: z.number().int(),
          settled: z.number().int(),
          settle_p50_ms: z.number().int().nullable(),
          settle_p95_ms: z.number().int().nullable(),
          settle_p50_bucket: quantileBucket,
          settle_p95_bucket: quantileBucket,
          webhooks_received: z.number().int(),
          webhooks_processed: z.number().int(),
          webhooks_ignored: z.number().int(),
          webhooks_dead: z.number().int(),
        }),
      )
      .describe('The last 14 UTC days, oldest first'),
  })
  .meta({ id: 'AdminStatsResponse' });

/** Optional identifiers of the canary query: the same alphabet as X-Device-ID. */
const canaryId = z.string().regex(/^[A-Za-z0-9._:-]{1,128}$/, '1 to 128 characters of A-Z a-z 0-9 . _ : -');

const canaryStatusResponse = z
  .object({
    device_id: z.string().nullable().describe('Truncated'),
    mesh_id: z.string().nullable().describe('Truncated'),
    evaluated_at: z.string(),
    flags: z.array(
      z.object({
        name: z.string(),
        description: z.string(),
        enabled: z.boolean(),
        rollout_percent: z.string(),
        unit: z.enum(['device', 'mesh']),
        status: z.enum(['off', 'partial', 'full']),
        eligible: z.boolean().nullable().describe('Null when the id of the flag\'s unit was not given'),
        bucket: z.number().int().nullable().describe('The id\'s rollout bucket for this flag, 0 to 9,999'),
        rules: z.array(
          z.object({
            rule: z.enum(['enabled', 'rollout', 'min_reputation_tier', 'exclude_blocked_keys']),
            state: z.enum(['pass', 'fail', 'pending']),
            detail: z.string(),
          }),
        ),
      }),
    ),
  })
  .meta({ id: 'CanaryStatusResponse' });

const acquisitionCounts = {
  new_owners: z.number().int(),
  new_devices: z.number().int(),
  owners_first_plc: z.number().int(),
  owners_first_redemption: z.number().int(),
  devices_first_plc: z.number().int(),
  devices_first_redemption: z.number().int(),
};

const acquisitionResponse = z
  .object({
    period: z.enum(Object.keys(acquisitionPeriods) as [AcquisitionPeriod, ...AcquisitionPeriod[]]),
    time_zone: z.literal('UTC'),
    from: z.string(),
    to: z.string(),
    days: z.array(z.object({ date: z.string(), ...acquisitionCounts })),
    totals: z.object(acquisitionCounts),
    funnel: z.object({
      cohort: z.string(),
      steps: z.array(
        z.object({
          step: z.enum(['opened_account', 'issued_first_plc', 'first_redemption']),
          owners: z.number().int(),
          share: z.number().nullable(),
        }),
      ),
    }),
  })
  .meta({ id: 'AcquisitionResponse' });

export async function adminDashboardRoutes(app: FastifyInstance): Promise<void> {
  const routes = app.withTypeProvider<ZodTypeProvider>();
  const { dashboards } = app.services;
  const security = [{ bearer: [] }];

  routes.get(
    '/stats',
    {
      schema: {
        tags: ['admin: dashboards'],
        summary: 'System dashboard: PLCs, redemptions (with time to settle), charges, the latest ledger check, webhooks, queues',
        description:
          'Read from counters the writing transactions keep and a few indexed reads, never a scan of a growing table ' +
          '(docs/operations-console.md, "Stats"): PLCs, redemptions and charges by status and currency, the p50 and p95 ' +
          'time to settle over 7 days, the latest full ledger check, webhook and queue health, and the last 14 days as a series.',
        security,
        response: { 200: adminStatsResponse, ...adminErrors },
      },
      onRequest: app.requireAdmin(),
    },
    async () => dashboards.stats(),
  );

  routes.get(
    '/canary/status',
    {
      schema: {
        tags: ['admin: dashboards'],
        summary: 'Rollout state of the feature flags for a device or mesh: status, eligibility and why (identifiers truncated)',
        description:
          'Every feature flag (configuration: npm run admin -- flag set) with its status and, for the given device or mesh, whether it is ' +
          'in the rollout (a hash of its id), and each eligibility rule\'s state. Identifiers are truncated in the answer and the logs; no ' +
          'tax id, Pix key, token or list of devices, keys or owners is shown.',
        security,
        querystring: z.object({ mesh_id: canaryId.optional(), device_id: canaryId.optional() }),
        requestExample: { querystring: { mesh_id: 'mesh-sao-paulo-07', device_id: 'device-7f3a9c21' } },
        response: { 200: canaryStatusResponse, ...adminErrors },
      },
      onRequest: app.requireAdmin(),
    },
    async (request) => {
      const subject = { deviceId: request.query.device_id ?? null, meshId: request.query.mesh_id ?? null };
      const status = await dashboards.canaryStatus(subject);
      request.log.info(
        {
          device_id: subject.deviceId === null ? null : truncateIdentifier(subject.deviceId),
          mesh_id: subject.meshId === null ? null : truncateIdentifier(subject.meshId),
          eligible: status.flags.filter((flag) => flag.eligible === true).map((flag) => flag.name),
        },
        'canary status',
      );
      return status;
    },
  );

  routes.get(
    '/acquisition',
    {
      schema: {
        tags: ['admin: dashboards'],
        summary: 'Acquisition per UTC day: new owners and devices, first PLC, first redemption, the activation funnel (super_admin only)',
        description:
          'Per UTC day of the period (today, 7d or 30d; 7d by default): new owners and devices, owners and devices with their first PLC ' +
          'and first redemption, and the funnel of the owners first seen in the period. Restricted to super_admin, as the spec says.',
        security,
        querystring: z.object({ period: z.enum(['today', '7d', '30d']).default('7d') }),
        requestExample: { querystring: { period: '7d' } },
        response: { 200: acquisitionResponse, ...adminErrors },
      },
      onRequest: app.requireAdmin(['super_admin']),
    },
    async (request) => dashboards.acquisition(request.query.period),
  );
}
