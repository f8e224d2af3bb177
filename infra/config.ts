import { z } from 'zod';

/**
 * The service's configuration, read once from the environment at start. Every variable is listed
 * in `.env.example` with its default. A bad or missing variable stops the process with a message
 * naming each one, so a misconfigured deployment never half-starts.
 */

const booleanFromEnv = z
  .enum(['true', 'false', '1', '0'])
  .transform((value) => value === 'true' || value === '1');

const durationMs = z.coerce.number().int().min(1).max(30 * 24 * 3600 * 1000);

export const configSchema = z
  .object({
    APP_ENV: z.enum(['development', 'test', 'production']).default('development'),
    HOST: z.string().min(1).default('127.0.0.1'),
    PORT: z.coerce.number().int().min(0).max(65535).default(8000),
    LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),

    /** Where runtime data lives when the project manages PostgreSQL and Temporal itself. */
    DATA_DIR: z.string().min(1).default('.data'),

    /** PostgreSQL holding the ledger. Unset: `npm start` runs an embedded PostgreSQL under DATA_DIR. */
    DATABASE_URL: z.string().url().optional(),
    DATABASE_POOL_MAX: z.coerce.number().int().min(1).max(200).default(10),
    EMBEDDED_POSTGRES_PORT: z.coerce.number().int().min(1).max(65535).default(5433),

    /** Temporal frontend. Unset: `npm start` runs the Temporal CLI dev server under DATA_DIR. */
    TEMPORAL_ADDRESS: z.string().min(1).optional(),
    TEMPORAL_NAMESPACE: z.string().min(1).default('default'),
    TEMPORAL_TASK_QUEUE: z.string().min(1).default('settlement'),
    /**
     * Workflows the worker keeps in its sticky cache (0 turns the cache off). Unset: the SDK's
     * default, from the heap limit (about 2,400 at 4 GiB). PLC workflows wait hours on their
     * expiry timer, so a busy worker's cache fills with idle ones; docs/benchmarks.md measures
     * what a smaller one does to PLC creates.
     */
    TEMPORAL_MAX_CACHED_WORKFLOWS: z.coerce.number().int().min(0).max(1_000_000).optional(),
    TEMPORAL_CLI: z.string().min(1).optional(),
    TEMPORAL_DEV_PORT: z.coerce.number().int().min(1).max(65535).default(7233),
    TEMPORAL_UI_PORT: z.coerce.number().int().min(1).max(65535).default(8233),

    /** Administration: HMAC key for the admin JWTs, and the first super-admin created at start. */
    JWT_SECRET: z.string().min(32, 'must be at least 32 characters').optional(),
    JWT_TTL_SECONDS: z.coerce.number().int().min(60).max(3600).default(900),
    ADMIN_USERNAME: z.string().min(3).max(64).optional(),
    ADMIN_PASSWORD: z.string().min(12, 'must be at least 12 characters').max(256).optional(),
    LOGIN_RATE_LIMIT_PER_MINUTE: z.coerce.number().int().min(1).max(10_000).default(10),

    /** Bounded waits for readiness checks, so /readyz answers even when a dependency hangs. */
    READINESS_TIMEOUT_MS: durationMs.default(2000),
    SHUTDOWN_GRACE_MS: durationMs.default(30_000),

    /** PLC limits, in minor units of the PLC's currency (5,000.00 and 20,000.00 by default). */
    PLC_MAX_AMOUNT_MINOR: z.coerce.bigint().min(1n).max(10n ** 15n).default(500_000n),
    PLC_DAILY_LIMIT_MINOR: z.coerce.bigint().min(1n).max(10n ** 15n).default(2_000_000n),
    /** Clock tolerance of the offline protocol (expiry checks only) and freshness of signed requests. */
    CLOCK_TOLERANCE_MS: z.coerce.number().int().min(0).max(3_600_000).default(300_000),
    /**
     * Testing and staging only: expire every PLC this long after it was issued instead of at
     * expires_at plus the clock tolerance (the signed TTL stays 1 to 168 hours). Refused in production.
     */
    PLC_EXPIRY_OVERRIDE_MS: z.coerce.number().int().min(100).max(7 * 24 * 3_600_000).optional(),
    IDEMPOTENCY_WINDOW_MS: z.coerce.number().int().min(1000).max(86_400_000).default(300_000),
    RATE_LIMIT_PLC_PER_MINUTE: z.coerce.number().int().min(1).max(1_000_000).default(60),
    RATE_LIMIT_TRANSFER_PER_MINUTE: z.coerce.number().int().min(1).max(1_000_000).default(30),
    RATE_LIMIT_REDEEM_PER_MINUTE: z.coerce.number().int().min(1).max(1_000_000).default(20),
    /** The PLC status outbox's dispatcher (api/plc-status-dispatcher.ts): pause between polls when idle, rows per poll. */
    PLC_STATUS_POLL_MS: z.coerce.number().int().min(10).max(60_000).default(200),
    PLC_STATUS_BATCH: z.coerce.number().int().min(1).max(500).default(16),
    /** Signals per second per API process at most, so that mirroring statuses never starves requests. */
    PLC_STATUS_MAX_PER_SECOND: z.coerce.number().int().min(1).max(10_000).default(20),
    /**
     * While this process's event loop is at least PLC_STATUS_YIELD_UTILIZATION busy (0 to 1), the
     * dispatcher sends at most PLC_STATUS_BUSY_PER_SECOND signals per second: requests first, and
     * the outbox drains when the load falls.
     */
    PLC_STATUS_YIELD_UTILIZATION: z.coerce.number().min(0).max(1).default(0.7),
    PLC_STATUS_BUSY_PER_SECOND: z.coerce.number().int().min(1).max(10_000).default(2),
    /**
     * Group commit (db/group-commit.ts): statements of one kind (rate-limit counts, transfer
     * appends) running at once per process; requests arriving meanwhile join the next statement.
     * Each holds a pool connection: the two kinds together may hold 2 x this many, which must
     * leave DATABASE_POOL_MAX room for everything else.
     */
    GROUP_COMMIT_IN_FLIGHT: z.coerce.number().int().min(1).max(64).default(4),
    /** Registered chains of live PLCs this process remembers (api/registered-chains.ts); 0 turns the memo off. */
    PLC_CHAIN_MEMO_MAX: z.coerce.number().int().min(0).max(10_000_000).default(20_000),
    /** GET /api/v1/admin/queues/stats reports a queue as lagging once its oldest waiting item is this old. */
    QUEUE_LAG_ALERT_MS: z.coerce.number().int().min(1000).max(86_400_000).default(60_000),

    /** The payment gateway (docs/gateway-wire-api.md); in development the simulator (npm run start:simulator). */
    GATEWAY_BASE_URL: z.string().url().default('http://127.0.0.1:8010'),
    GATEWAY_API_KEY: z.string().min(1).max(255).default('sim-api-key'),
    /** The token the gateway sends in `gateway-access-token` on every webhook. */
    GATEWAY_WEBHOOK_TOKEN: z.string().min(8).max(255).default('sim-webhook-token'),
    GATEWAY_TIMEOUT_MS: z.coerce.number().int().min(100).max(120_000).default(10_000),
    /** Token required on POST /api/v1/webhooks/supabase (header `x-webhook-token`); unset refuses every call. */
    SUPABASE_WEBHOOK_TOKEN: z.string().min(8).max(255).optional(),
    /** How long a redemption waits for the gateway's transfer webhook before asking the gateway itself. */
    REDEMPTION_WEBHOOK_WAIT_MS: z.coerce.number().int().min(100).max(86_400_000).default(600_000),
    /** How long a charge waits for payment after its due date before it is failed. */
    CHARGE_DUE_DAYS: z.coerce.number().int().min(1).max(60).default(3),
    /** Testing only: how long a charge waits for its payment instead of until its due date. Refused in production. */
    CHARGE_WAIT_OVERRIDE_MS: z.coerce.number().int().min(100).max(7 * 86_400_000).optional(),
    /** The /api/v1/dev/ simulation endpoints: on outside production unless set; never in production. */
    DEV_ENDPOINTS_ENABLED: booleanFromEnv.optional(),

    /** Offers /docs (the interactive OpenAPI page); on by default. */
    API_DOCS_ENABLED: booleanFromEnv.default(true),
  })
  .superRefine((config, ctx) => {
    if (config.APP_ENV === 'production') {
      for (const key of ['DATABASE_URL', 'TEMPORAL_ADDRESS', 'JWT_SECRET'] as const) {
        if (config[key] === undefined) {
          ctx.addIssue({ code: 'custom', path: [key], message: 'is required when APP_ENV=production' });
        }
      }
    }
    if (config.APP_ENV === 'production') {
      for (const key of ['GATEWAY_API_KEY', 'GATEWAY_WEBHOOK_TOKEN'] as const) {
        if (config[key].startsWith('sim-')) {
          ctx.addIssue({ code: 'custom', path: [key], message: 'must be set to the real gateway credential when APP_ENV=production' });
        }
      }
      if (config.DEV_ENDPOINTS_ENABLED === true) {
        ctx.addIssue({ code: 'custom', path: ['DEV_ENDPOINTS_ENABLED'], message: 'must be false when APP_ENV=production' });
      }
      if (config.CHARGE_WAIT_OVERRIDE_MS !== undefined) {
        ctx.addIssue({ code: 'custom', path: ['CHARGE_WAIT_OVERRIDE_MS'], message: 'is for testing only and refused when APP_ENV=production' });
      }
    }
    if (config.APP_ENV === 'production' && config.PLC_EXPIRY_OVERRIDE_MS !== undefined) {
      ctx.addIssue({ code: 'custom', path: ['PLC_EXPIRY_OVERRIDE_MS'], message: 'is for testing only and refused when APP_ENV=production' });
    }
    if (2 * config.GROUP_COMMIT_IN_FLIGHT >= config.DATABASE_POOL_MAX) {
      ctx.addIssue({
        code: 'custom',
        path: ['GROUP_COMMIT_IN_FLIGHT'],
        message: `2 x GROUP_COMMIT_IN_FLIGHT (${2 * config.GROUP_COMMIT_IN_FLIGHT}) must stay below DATABASE_POOL_MAX (${config.DATABASE_POOL_MAX}): group commits would hold every connection`,
      });
    }
    if ((config.ADMIN_USERNAME === undefined) !== (config.ADMIN_PASSWORD === undefined)) {
      ctx.addIssue({
        code: 'custom',
        path: ['ADMIN_PASSWORD'],
        message: 'ADMIN_USERNAME and ADMIN_PASSWORD must be set together',
      });
    }
  });

export type Config = z.infer<typeof configSchema>;

export class ConfigError extends Error {
  readonly problems: readonly string[];
  constructor(problems: readonly string[]) {
    super(`invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'ConfigError';
    this.problems = problems;
  }
}

/** Parses the environment; throws a ConfigError naming every bad or missing variable. */
export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  // Empty strings mean "unset": `FOO=` in a .env file must not count as a value.
  const cleaned = Object.fromEntries(Object.entries(env).filter(([, value]) => value !== undefined && value !== ''));
  const result = configSchema.safeParse(cleaned);
  if (!result.success) {
    throw new ConfigError(
      result.error.issues.map((issue) => `${issue.path.join('.') || '(root)'}: ${issue.message}`),
    );
  }
  return result.data;
}

/** Config fields that must never reach a log line. */
export const secretConfigKeys = ['JWT_SECRET', 'ADMIN_PASSWORD', 'DATABASE_URL', 'GATEWAY_API_KEY', 'GATEWAY_WEBHOOK_TOKEN', 'SUPABASE_WEBHOOK_TOKEN'] as const;

export function devEndpointsEnabled(config: Config): boolean {
  return config.DEV_ENDPOINTS_ENABLED ?? config.APP_ENV !== 'production';
}
