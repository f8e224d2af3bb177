import { z } from 'zod';
import { bytesToHex } from '../src/protocol/bytes.ts';
import { developmentBlocklistSeed } from '../src/protocol/blocklist.ts';
import { timestampMsMax } from '../src/protocol/constants.ts';

/** The blocklist's published development seed (src/protocol/blocklist.ts), refused in production. */
const developmentBlocklistSeedHex = bytesToHex(developmentBlocklistSeed);

/**
 * The service's configuration, read once from the environment at start. Every variable is listed
 * in `.env.example` with its default. A bad or missing variable stops the process with a message
 * naming each one, so a misconfigured deployment never half-starts.
 */

const booleanFromEnv = z
  .enum(['true', 'false', '1', '0'])
  .transform((value) => value === 'true' || value === '1');

const durationMs = z.coerce.number().int().min(1).max(30 * 24 * 3600 * 1000);

/** The gateway simulator's default address (npm run start:simulator). */
const simulatorBaseUrl = 'http://127.0.0.1:8010';

export const configSchema = z
  .object({
    APP_ENV: z.enum(['development', 'test', 'production']).default('development'),
    HOST: z.string().min(1).default('127.0.0.1'),
    PORT: z.coerce.number().int().min(0).max(65535).default(8000),
    LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
    /**
     * `json` (pino's lines: files, collectors, production) or `pretty` (one short line per record
     * for a person: a request as method, path, status, time and error code; infra/pretty-log.ts).
     * `npm start` sets `pretty` for its processes when its output is a terminal and LOG_FORMAT is unset.
     */
    LOG_FORMAT: z.enum(['json', 'pretty']).default('json'),

    /** Where runtime data lives when the project manages PostgreSQL and Temporal itself. */
    DATA_DIR: z.string().min(1).default('.data'),

    /** PostgreSQL holding the ledger. Unset: `npm start` runs an embedded PostgreSQL under DATA_DIR. */
    DATABASE_URL: z.string().url().optional(),
    DATABASE_POOL_MAX: z.coerce.number().int().min(1).max(200).default(10),
    /**
     * Operating limits (docs/architecture.md): every wait on PostgreSQL is bounded. Opening a
     * connection, and waiting for a free one when the pool is busy, at most this long.
     */
    DATABASE_CONNECT_TIMEOUT_MS: z.coerce.number().int().min(100).max(120_000).default(2000),
    /**
     * The API's statement timeout (PostgreSQL cancels a statement running longer); the client
     * itself stops waiting 1 s later, so a frozen or cut-off server is noticed too.
     */
    DATABASE_STATEMENT_TIMEOUT_MS: z.coerce.number().int().min(100).max(3_600_000).default(5000),
    /** The worker's statement timeout: activities are retried, and a reconcile batch may wait 10 s for its locks. */
    WORKER_DATABASE_STATEMENT_TIMEOUT_MS: z.coerce.number().int().min(100).max(3_600_000).default(30_000),
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
    /**
     * The PLC workflows' own task queue (unset: TEMPORAL_TASK_QUEUE with `-plc` appended), served
     * by a second worker in the worker process with a sticky cache of
     * TEMPORAL_PLC_MAX_CACHED_WORKFLOWS: a PLC workflow waits up to 168 hours on its expiry timer,
     * so a large cache holds idle ones and makes every create dearer (docs/benchmarks.md). The
     * main worker still runs PLC workflows started on TEMPORAL_TASK_QUEUE before the split.
     */
    TEMPORAL_PLC_TASK_QUEUE: z.string().min(1).optional(),
    TEMPORAL_PLC_MAX_CACHED_WORKFLOWS: z.coerce.number().int().min(0).max(1_000_000).default(20),
    /**
     * The Temporal calls made while answering a request (update-with-start and its wait for the
     * update's outcome, signals, starts, describes) end this long after the request arrived at
     * the latest; so does each signal of the PLC status outbox's dispatcher.
     */
    TEMPORAL_CALL_TIMEOUT_MS: z.coerce.number().int().min(100).max(120_000).default(5000),
    TEMPORAL_CLI: z.string().min(1).optional(),
    TEMPORAL_DEV_PORT: z.coerce.number().int().min(1).max(65535).default(7233),
    TEMPORAL_UI_PORT: z.coerce.number().int().min(1).max(65535).default(8233),
    /**
     * Where operators open the Temporal UI: the web console links every PLC, redemption, charge and
     * reconcile run to its workflow there. Unset: the embedded dev server's UI in development
     * (http://127.0.0.1:TEMPORAL_UI_PORT), no links elsewhere.
     */
    TEMPORAL_UI_URL: z.string().url().optional(),

    /** Administration: HMAC key for the admin JWTs, and the first super-admin created at start. */
    JWT_SECRET: z.string().min(32, 'must be at least 32 characters').optional(),
    JWT_TTL_SECONDS: z.coerce.number().int().min(60).max(3600).default(900),
    ADMIN_USERNAME: z.string().min(3).max(64).optional(),
    ADMIN_PASSWORD: z.string().min(12, 'must be at least 12 characters').max(256).optional(),
    LOGIN_RATE_LIMIT_PER_MINUTE: z.coerce.number().int().min(1).max(10_000).default(10),
    /**
     * Refuse an admin token whose lifetime (exp - iat) is longer than this, however correctly it
     * is signed. Unset: JWT_TTL_SECONDS, the lifetime of the tokens this service issues.
     */
    JWT_MAX_LIFETIME_SECONDS: z.coerce.number().int().min(60).max(86_400).optional(),
    /**
     * The per-account login throttle (db/admin-login-throttle.ts), counted in PostgreSQL across
     * replicas: this many consecutive failures without delay; then a wait of
     * ADMIN_LOGIN_DELAY_BASE_MS doubling with each failure; at ADMIN_LOGIN_LOCKOUT_FAILURES the
     * account is locked for ADMIN_LOGIN_LOCKOUT_MS (again after each failure past it) unless an
     * operator lifts it (`npm run admin -- unlock <username>`); a correct password clears it.
     */
    ADMIN_LOGIN_FREE_ATTEMPTS: z.coerce.number().int().min(1).max(100).default(3),
    ADMIN_LOGIN_DELAY_BASE_MS: z.coerce.number().int().min(1).max(3_600_000).default(1000),
    ADMIN_LOGIN_LOCKOUT_FAILURES: z.coerce.number().int().min(2).max(1000).default(10),
    ADMIN_LOGIN_LOCKOUT_MS: z.coerce.number().int().min(1).max(30 * 86_400_000).default(900_000),
    /** An account's failures idle this long (and not waiting) are forgotten. */
    ADMIN_LOGIN_FORGET_AFTER_MS: z.coerce.number().int().min(1000).max(365 * 86_400_000).default(86_400_000),

    /** Bounded waits for readiness checks, so /readyz answers even when a dependency hangs. */
    READINESS_TIMEOUT_MS: durationMs.default(2000),
    SHUTDOWN_GRACE_MS: durationMs.default(30_000),
    /** Retry-After of a 503 answered because PostgreSQL or Temporal did not answer in time or could not be reached. */
    DEPENDENCY_RETRY_AFTER_SECONDS: z.coerce.number().int().min(1).max(3600).default(2),

    /**
     * Ceilings of the progressive PLC limits, in minor units of the PLC's currency (5,000.00 and
     * 20,000.00 by default): the PREMIUM tier's limits; lower tiers get a share of them
     * (docs/limits-and-fees.md).
     */
    PLC_MAX_AMOUNT_MINOR: z.coerce.bigint().min(1n).max(10n ** 15n).default(500_000n),
    PLC_DAILY_LIMIT_MINOR: z.coerce.bigint().min(1n).max(10n ** 15n).default(2_000_000n),
    /**
     * Reputation that cannot be farmed (docs/limits-and-fees.md): a settlement below
     * REPUTATION_DUST_MINOR (10.00) counts nothing; settlements credit at most
     * REPUTATION_GAIN_PER_WINDOW_MAX points per REPUTATION_GAIN_WINDOW_SECONDS (a day), once per
     * payer in that window; each REPUTATION_DECAY_IDLE_SECONDS (30 days) without an independent
     * settlement takes REPUTATION_DECAY_POINTS back toward 500; TRUSTED needs an account of
     * REPUTATION_TRUSTED_MIN_AGE_SECONDS (30 days) and REPUTATION_TRUSTED_MIN_COUNTERPARTIES (5)
     * distinct independent payers, PREMIUM 90 days and 20. Seconds, so tests can use seconds.
     */
    REPUTATION_DUST_MINOR: z.coerce.bigint().min(1n).max(10n ** 15n).default(1_000n),
    REPUTATION_GAIN_WINDOW_SECONDS: z.coerce.number().int().min(1).max(365 * 86_400).default(86_400),
    REPUTATION_GAIN_PER_WINDOW_MAX: z.coerce.number().int().min(0).max(1000).default(50),
    REPUTATION_DECAY_IDLE_SECONDS: z.coerce.number().int().min(1).max(10 * 365 * 86_400).default(30 * 86_400),
    REPUTATION_DECAY_POINTS: z.coerce.number().int().min(0).max(1000).default(10),
    REPUTATION_TRUSTED_MIN_AGE_SECONDS: z.coerce.number().int().min(0).max(10 * 365 * 86_400).default(30 * 86_400),
    REPUTATION_TRUSTED_MIN_COUNTERPARTIES: z.coerce.number().int().min(0).max(100).default(5),
    REPUTATION_PREMIUM_MIN_AGE_SECONDS: z.coerce.number().int().min(0).max(10 * 365 * 86_400).default(90 * 86_400),
    REPUTATION_PREMIUM_MIN_COUNTERPARTIES: z.coerce.number().int().min(0).max(100).default(20),
    /**
     * Slow clients (docs/security.md, "Slow requests"): the time to receive a request's headers
     * (HTTP_HEADERS_TIMEOUT_MS, 10 s) and the whole request, headers and body
     * (HTTP_REQUEST_TIMEOUT_MS, 30 s), checked every HTTP_CONNECTIONS_CHECK_INTERVAL_MS (1 s); a
     * connection silent for HTTP_CONNECTION_IDLE_TIMEOUT_MS (60 s) is closed; a request may take
     * HTTP_HANDLER_TIMEOUT_MS (60 s) from routing to its answer (the event streams excepted).
     */
    HTTP_HEADERS_TIMEOUT_MS: z.coerce.number().int().min(100).max(600_000).default(10_000),
    HTTP_REQUEST_TIMEOUT_MS: z.coerce.number().int().min(100).max(600_000).default(30_000),
    HTTP_CONNECTIONS_CHECK_INTERVAL_MS: z.coerce.number().int().min(50).max(60_000).default(1000),
    HTTP_CONNECTION_IDLE_TIMEOUT_MS: z.coerce.number().int().min(100).max(3_600_000).default(60_000),
    HTTP_HANDLER_TIMEOUT_MS: z.coerce.number().int().min(100).max(600_000).default(60_000),
    /** How long an admin has to decide a PLC limit increase request before it expires (72 hours). */
    LIMIT_REVIEW_TIMEOUT_SECONDS: z.coerce.number().int().min(1).max(90 * 86_400).default(72 * 3600),
    /** Clock tolerance of the offline protocol (expiry checks only) and freshness of signed requests. */
    CLOCK_TOLERANCE_MS: z.coerce.number().int().min(0).max(3_600_000).default(300_000),
    /**
     * Testing and staging only: expire every PLC this long after it was issued instead of at
     * expires_at plus the clock tolerance (the signed TTL stays 1 to 168 hours). Refused in production.
     */
    PLC_EXPIRY_OVERRIDE_MS: z.coerce.number().int().min(100).max(7 * 24 * 3_600_000).optional(),
    /**
     * The width of a PLC expiry bucket (docs/plc.md, "Expiry by time buckets"): one workflow per
     * bucket of due time expires its PLCs at the bucket's end, so a PLC expires at most this long
     * after it falls due. One minute: a week's horizon is 10,080 buckets.
     */
    PLC_EXPIRY_BUCKET_MS: z.coerce.number().int().min(1000).max(3_600_000).default(60_000),
    IDEMPOTENCY_WINDOW_MS: z.coerce.number().int().min(1000).max(86_400_000).default(300_000),
    RATE_LIMIT_PLC_PER_MINUTE: z.coerce.number().int().min(1).max(1_000_000).default(60),
    RATE_LIMIT_TRANSFER_PER_MINUTE: z.coerce.number().int().min(1).max(1_000_000).default(30),
    /**
     * A device route's limit per client address, whatever X-Device-ID it sends: this many times
     * the route's per-device limit (1: rotating X-Device-ID gains nothing). Raise it where many
     * devices share one address (a carrier NAT); each device still gets the route's limit.
     */
    RATE_LIMIT_ADDRESS_FACTOR: z.coerce.number().int().min(1).max(10_000).default(1),
    RATE_LIMIT_REDEEM_PER_MINUTE: z.coerce.number().int().min(1).max(1_000_000).default(20),
    /**
     * Business customers (docs/b2b.md): the freshness window of a signed request's timestamp
     * (either way; its nonce is kept as long), the grace period of a rotated credential, the
     * requests per minute of one credential on the B2B and POS routes, sign-ups per minute per
     * client address, and how long a POS batch left IN_PROGRESS (its run died) blocks its id.
     */
    API_SIGNATURE_WINDOW_SECONDS: z.coerce.number().int().min(1).max(3600).default(300),
    API_KEY_ROTATION_GRACE_SECONDS: z.coerce.number().int().min(0).max(30 * 86_400).default(86_400),
    RATE_LIMIT_B2B_PER_MINUTE: z.coerce.number().int().min(1).max(1_000_000).default(120),
    RATE_LIMIT_B2B_SIGNUP_PER_MINUTE: z.coerce.number().int().min(1).max(1_000_000).default(5),
    POS_BATCH_STALE_SECONDS: z.coerce.number().int().min(1).max(86_400).default(600),
    /** The PLC status outbox's dispatcher (api/plc-status-dispatcher.ts): pause between polls when idle, rows per poll. */
    PLC_STATUS_POLL_MS: z.coerce.number().int().min(10).max(60_000).default(200),
    PLC_STATUS_BATCH: z.coerce.number().int().min(1).max(500).default(16),
    /** Signals per second per API process at most, so that mirroring statuses never starves requests. */
    PLC_STATUS_MAX_PER_SECOND: z.coerce.number().int().min(1).max(10_000).default(20),
    /**
     * While this process's event loop or its host's CPUs (PLC_STATUS_YIELD_TO_HOST) are at least PLC_STATUS_YIELD_UTILIZATION busy (0 to 1), the
     * dispatcher sends at most PLC_STATUS_BUSY_PER_SECOND signals per second: requests first, and
     * the outbox drains when the load falls.
     */
    PLC_STATUS_YIELD_UTILIZATION: z.coerce.number().min(0).max(1).default(0.7),
    /** Whether the host's CPUs count as busy too (false: only this process's event loop), for PLC_STATUS_YIELD_UTILIZATION. */
    PLC_STATUS_YIELD_TO_HOST: booleanFromEnv.default(true),
    PLC_STATUS_BUSY_PER_SECOND: z.coerce.number().int().min(1).max(10_000).default(2),
    /**
     * One API process delivers the outbox at a time, elected by a PostgreSQL advisory lock: the
     * others ask for the lock this often, which bounds the failover after its holder dies.
     */
    PLC_STATUS_LEADER_RETRY_MS: z.coerce.number().int().min(100).max(60_000).default(2000),
    /**
     * Group commit (db/group-commit.ts): statements of one kind (rate-limit counts, transfer
     * appends) running at once per process; requests arriving meanwhile join the next statement.
     * Each holds a pool connection: the two kinds together may hold 2 x this many, which must
     * leave DATABASE_POOL_MAX room for everything else.
     */
    GROUP_COMMIT_IN_FLIGHT: z.coerce.number().int().min(1).max(64).default(4),
    /** Registered chains of live PLCs this process remembers (api/registered-chains.ts); 0 turns the memo off. */
    PLC_CHAIN_MEMO_MAX: z.coerce.number().int().min(0).max(10_000_000).default(20_000),
    /**
     * How often the ledger-check workflow (a Temporal schedule) checks every ledger invariant and
     * records the totals the stats dashboard shows; a check older than twice this is reported stale.
     */
    LEDGER_CHECK_INTERVAL_MS: durationMs.default(3_600_000),
    /**
     * Realtime event streams (docs/operations-console.md, "Realtime events"): a comment line this
     * often on an idle stream; the bus polls the event table this often while anyone listens (a
     * NOTIFY normally wakes it first); a stream whose unsent data passes this many bytes is
     * dropped (the client resumes with Last-Event-ID); at most this many streams per process;
     * the event table keeps the newest REALTIME_EVENTS_KEEP events for at most the retention.
     */
    REALTIME_HEARTBEAT_MS: z.coerce.number().int().min(100).max(300_000).default(15_000),
    REALTIME_POLL_MS: z.coerce.number().int().min(50).max(60_000).default(1000),
    REALTIME_CLIENT_BUFFER_BYTES: z.coerce.number().int().min(1024).max(64 * 1024 * 1024).default(256 * 1024),
    REALTIME_MAX_CLIENTS: z.coerce.number().int().min(1).max(100_000).default(1000),
    REALTIME_EVENTS_KEEP: z.coerce.number().int().min(100).max(100_000_000).default(100_000),
    REALTIME_EVENTS_RETENTION_MS: durationMs.default(86_400_000),
    /** GET /api/v1/admin/queues/stats reports a queue as lagging once its oldest waiting item is this old. */
    QUEUE_LAG_ALERT_MS: z.coerce.number().int().min(1000).max(86_400_000).default(60_000),

    /** The payment gateway (docs/gateway-wire-api.md); in development the simulator (npm run start:simulator). */
    GATEWAY_BASE_URL: z.string().url().default(simulatorBaseUrl),
    /**
     * A real Asaas account (README, "Pointing the service at the Asaas sandbox"): `sandbox` or
     * `production` picks Asaas's documented base URL (asaasBaseUrls) while GATEWAY_BASE_URL is left
     * unset; an explicit GATEWAY_BASE_URL always wins.
     */
    GATEWAY_ASAAS_ENVIRONMENT: z.enum(['sandbox', 'production']).optional(),
    /** The account's API key (Asaas: `access_token` header). */
    GATEWAY_API_KEY: z.string().min(1).max(255).default('sim-api-key'),
    /**
     * The token the gateway sends on every webhook and validation request: the authToken set on the
     * webhook at Asaas (32 to 255 characters there), checked in constant time in the header
     * GATEWAY_WEBHOOK_TOKEN_HEADER and in the interface's `gateway-access-token`.
     */
    GATEWAY_WEBHOOK_TOKEN: z.string().min(8).max(255).default('sim-webhook-token'),
    /** The header the gateway itself sends the webhook token in (Asaas: `asaas-access-token`). */
    GATEWAY_WEBHOOK_TOKEN_HEADER: z
      .string()
      .regex(/^[a-z0-9][a-z0-9-]{0,99}$/, 'must be a lower-case header name')
      .default('asaas-access-token'),
    /**
     * The URL registered at the gateway for its transfer validation ("Mechanism for validating
     * transfers via webhooks"); unset: http://HOST:PORT/api/v1/webhooks/transfer/validate. `npm start`
     * points the simulator's validation at it.
     */
    GATEWAY_VALIDATION_URL: z.string().url().optional(),
    /**
     * Gateway reads a validation request without the webhook token may cause, per source address
     * per minute (docs/settlement.md, "Anonymous validation requests"); past it the request answers
     * 503 without reading. Authenticated requests (the gateway's token) are never counted.
     */
    GATEWAY_VALIDATION_ANON_READS_PER_MINUTE: z.coerce.number().int().min(0).max(100_000).default(30),
    /** Risk flags anonymous validation requests may raise per window (10 minutes), all sources together; one per source and reason. */
    GATEWAY_VALIDATION_ANON_FLAGS_PER_WINDOW: z.coerce.number().int().min(0).max(100_000).default(20),
    GATEWAY_TIMEOUT_MS: z.coerce.number().int().min(100).max(120_000).default(10_000),
    /**
     * The URL the gateway delivers events to, set on a webhook by PUT /api/v1/redemption/webhook/configure
     * (the dual-flow endpoint). Unset: http://HOST:PORT/api/v1/redemption/webhook/gateway outside
     * production; in production configure refuses until it is set.
     */
    GATEWAY_WEBHOOK_URL: z.string().url().optional(),
    /** Least time between two backoff removals of one webhook (the spec's Limits: at least 5 minutes). */
    WEBHOOK_BACKOFF_COOLDOWN_MS: z.coerce.number().int().min(100).max(86_400_000).default(300_000),
    /**
     * Backoff removal requests (remove-backoff and remove-penalty together) per minute per client
     * address, counted before the admin guard: a removal refused by its cooldown still costs a
     * Temporal update, so a client retrying in a loop is slowed, with or without a valid token.
     */
    RATE_LIMIT_WEBHOOK_REMOVAL_PER_MINUTE: z.coerce.number().int().min(1).max(1_000_000).default(10),
    /** The webhook monitor's schedule (webhook-monitor): how often it reads the gateway's queues. */
    WEBHOOK_MONITOR_INTERVAL_MS: z.coerce.number().int().min(1000).max(86_400_000).default(300_000),
    /** Whether the worker creates (or updates) the webhook-monitor schedule at start. */
    WEBHOOK_MONITOR_ENABLED: booleanFromEnv.default(true),
    /** Whether the scheduled monitor removes penalties itself as cooldowns allow; unset: on outside production. */
    WEBHOOK_AUTO_HEAL: booleanFromEnv.optional(),
    /** Token required on POST /api/v1/webhooks/supabase (header `x-webhook-token`); unset refuses every call. */
    SUPABASE_WEBHOOK_TOKEN: z.string().min(8).max(255).optional(),
    /** How long a redemption waits for the gateway's transfer webhook before asking the gateway itself. */
    REDEMPTION_WEBHOOK_WAIT_MS: z.coerce.number().int().min(100).max(86_400_000).default(600_000),
    /**
     * An operator may retry a PENDING_PAYMENT redemption whose payout has had no final answer for
     * this long (sooner when its payout is stuck or its workflow has ended); a stuck or stalled
     * payout waits REDEMPTION_OPERATOR_WAIT_MS for a retry before its run ends.
     */
    SETTLEMENT_RETRY_STALLED_AFTER_MS: durationMs.default(1_800_000),
    REDEMPTION_OPERATOR_WAIT_MS: durationMs.default(7 * 86_400_000),
    /**
     * The gateway audit (docs/reconciliation.md): how often its Temporal Schedule (`gateway-audit`,
     * created by the worker at start) runs it, 0 for never (the schedule is removed), and how many
     * days back from today (the gateway's calendar) it lists the gateway's transfers and payments.
     */
    GATEWAY_AUDIT_INTERVAL_MS: z.coerce.number().int().min(0).max(7 * 86_400_000).default(3_600_000),
    GATEWAY_AUDIT_LOOKBACK_DAYS: z.coerce.number().int().min(0).max(90).default(2),
    /** How long a charge waits for payment after its due date before it is failed. */
    CHARGE_DUE_DAYS: z.coerce.number().int().min(1).max(60).default(3),
    /** Testing only: how long a charge waits for its payment instead of until its due date. Refused in production. */
    CHARGE_WAIT_OVERRIDE_MS: z.coerce.number().int().min(100).max(7 * 86_400_000).optional(),
    /** The /api/v1/dev/ simulation endpoints: on outside production unless set; never in production. */
    DEV_ENDPOINTS_ENABLED: booleanFromEnv.optional(),

    /**
     * Security (docs/security.md). PIN_PEPPER: the server-side secret mixed into every stored PIN
     * hash, kept outside the database (at least 32 characters); generated into DATA_DIR by
     * `npm start` in development, required in production. Without it the PIN routes answer 503.
     */
    PIN_PEPPER: z.string().min(32, 'must be at least 32 characters').max(1024).optional(),
    /** The first lockout after 5 consecutive failed PIN attempts; each further one doubles, up to the cap. */
    PIN_LOCKOUT_MS: z.coerce.number().int().min(1000).max(7 * 86_400_000).default(15 * 60_000),
    PIN_LOCKOUT_MAX_MS: z.coerce.number().int().min(1000).max(30 * 86_400_000).default(86_400_000),
    /** How long an e-mailed PIN reset token is valid. */
    PIN_RESET_TOKEN_TTL_MS: z.coerce.number().int().min(1000).max(86_400_000).default(30 * 60_000),
    /** Reset requests per owner per hour (every address together), on top of the per-address limit. */
    PIN_RESET_REQUESTS_PER_HOUR: z.coerce.number().int().min(1).max(1000).default(5),
    /** Requests per minute per client address on each /api/v1/security/ route. */
    RATE_LIMIT_SECURITY_PER_MINUTE: z.coerce.number().int().min(1).max(1_000_000).default(30),
    /** Requests per minute per client address on each /api/v1/fees/ route but the schedule. */
    RATE_LIMIT_FEES_PER_MINUTE: z.coerce.number().int().min(1).max(1_000_000).default(60),
    /**
     * Outgoing mail for PIN resets: smtp://user:pass@host:port (or smtps://). Unset: request-reset
     * answers 501 PIN_RESET_EMAIL_UNAVAILABLE. `npm start` points it at its embedded sink.
     */
    SMTP_URL: z
      .string()
      .url()
      .refine((value) => /^smtps?:\/\//.test(value), 'must be an smtp:// or smtps:// URL')
      .optional(),
    SMTP_FROM: z.string().min(3).max(320).default('PLC settlement <no-reply@localhost>'),
    /** Port of the SMTP sink `npm start` runs when SMTP_URL is unset (messages kept under DATA_DIR/mail). */
    SMTP_SINK_PORT: z.coerce.number().int().min(0).max(65535).default(2525),

    /**
     * The blocklist's signing key (docs/protocol.md section 18): the 32-byte Ed25519 seed, 64 hex
     * digits. Unset: the published development seed, SHA-256("svc:blocklist:development-key"),
     * whose secret anyone can read; required, and refused if it is that one, in production.
     */
    BLOCKLIST_SIGNING_SEED: z
      .string()
      .regex(/^[0-9a-fA-F]{64}$/, 'must be 64 hex digits (a 32-byte Ed25519 seed)')
      .transform((value) => value.toLowerCase())
      .optional(),

    /**
     * The service's issue receipts (docs/protocol.md section 19). RECEIPT_SIGNING_SEED: the
     * 32-byte Ed25519 seed that signs them, 64 hex digits; unset, the blocklist's key signs them.
     * RECEIPT_KEY_VALID_FROM_MS: from when that key signs (the start of its period in the signed
     * blocklist's receipt keys; 0 when unset). RECEIPT_KEYS_RETIRED: earlier receipt keys still
     * trusted for the receipts they made, `<64 hex>:<valid_from_ms>:<valid_until_ms>` separated
     * by commas; a key left out is revoked for wallets at their next refresh (section 19.4).
     */
    RECEIPT_SIGNING_SEED: z
      .string()
      .regex(/^[0-9a-fA-F]{64}$/, 'must be 64 hex digits (a 32-byte Ed25519 seed)')
      .transform((value) => value.toLowerCase())
      .optional(),
    RECEIPT_KEY_VALID_FROM_MS: z.coerce.number().int().min(0).max(timestampMsMax).optional(),
    RECEIPT_KEYS_RETIRED: z
      .string()
      .max(16 * 120)
      .transform((value, ctx) => {
        const entries = value.trim() === '' ? [] : value.split(',').map((entry) => entry.trim());
        const keys: { pubkey: string; validFromMs: number; validUntilMs: number }[] = [];
        for (const entry of entries) {
          const match = /^([0-9a-f]{64}):(\d{1,15}):(\d{1,15})$/.exec(entry);
          const from = Number(match?.[2]);
          const until = Number(match?.[3]);
          if (match === null || from > until || until > timestampMsMax) {
            ctx.addIssue({ code: 'custom', message: `each entry is <64 lowercase hex>:<valid_from_ms>:<valid_until_ms>, from <= until: ${entry.slice(0, 140)}` });
            return z.NEVER;
          }
          keys.push({ pubkey: match[1]!, validFromMs: from, validUntilMs: until });
        }
        if (new Set(keys.map((key) => key.pubkey)).size !== keys.length) {
          ctx.addIssue({ code: 'custom', message: 'a key is listed twice' });
          return z.NEVER;
        }
        return keys;
      })
      .optional(),

    /** Offers /docs (the interactive OpenAPI page); on by default. */
    API_DOCS_ENABLED: booleanFromEnv.default(true),

    /**
     * Observability (docs/operations.md). METRICS_ENABLED: the Prometheus metrics (prom-client) of
     * the API and the worker. The API's `GET /metrics` on its own port (outside /api/v1) asks for
     * `Authorization: Bearer METRICS_TOKEN` when the token is set; in production it is not served
     * there at all without one. A separate bind, METRICS_HOST:API_METRICS_PORT (the API) and
     * METRICS_HOST:WORKER_METRICS_PORT (the worker), serves `GET /metrics` alone, without a token:
     * who reaches that address is the deployment's decision (loopback by default; unset port:
     * none). The Temporal SDK's worker metrics go to TEMPORAL_METRICS_BIND (host:port; unset: none).
     */
    METRICS_ENABLED: booleanFromEnv.default(true),
    METRICS_TOKEN: z.string().min(16, 'must be at least 16 characters').max(255).optional(),
    METRICS_HOST: z.string().min(1).default('127.0.0.1'),
    API_METRICS_PORT: z.coerce.number().int().min(0).max(65535).optional(),
    WORKER_METRICS_PORT: z.coerce.number().int().min(0).max(65535).optional(),
    TEMPORAL_METRICS_BIND: z
      .string()
      .regex(/^[^\s:]+:\d{1,5}$/, 'must be host:port')
      .optional(),
    /**
     * OpenTelemetry traces: the spans of each request, the workflows and activities it starts, its
     * SQL statements and gateway calls, sent over OTLP/HTTP to this endpoint (the collector's base
     * URL, e.g. http://127.0.0.1:4318). Unset: no tracing at all (and no trace ids in the logs)
     * unless TRACING_ENABLED=true, which traces without exporting (trace ids in the logs only).
     */
    OTEL_EXPORTER_OTLP_ENDPOINT: z.string().url().optional(),
    TRACING_ENABLED: booleanFromEnv.optional(),
  })
  .superRefine((config, ctx) => {
    if (config.APP_ENV === 'production') {
      for (const key of ['DATABASE_URL', 'TEMPORAL_ADDRESS', 'JWT_SECRET', 'PIN_PEPPER', 'BLOCKLIST_SIGNING_SEED'] as const) {
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
      if (config.RECEIPT_SIGNING_SEED === developmentBlocklistSeedHex) {
        ctx.addIssue({ code: 'custom', path: ['RECEIPT_SIGNING_SEED'], message: 'is the published development seed: set a secret one when APP_ENV=production' });
      }
      if (config.BLOCKLIST_SIGNING_SEED === developmentBlocklistSeedHex) {
        ctx.addIssue({ code: 'custom', path: ['BLOCKLIST_SIGNING_SEED'], message: 'is the published development seed: set a secret one when APP_ENV=production' });
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
    if (config.REALTIME_HEARTBEAT_MS >= config.HTTP_CONNECTION_IDLE_TIMEOUT_MS) {
      ctx.addIssue({ code: 'custom', path: ['REALTIME_HEARTBEAT_MS'], message: 'must stay below HTTP_CONNECTION_IDLE_TIMEOUT_MS, or idle event streams are closed between heartbeats' });
    }
    if (config.HTTP_HEADERS_TIMEOUT_MS > config.HTTP_REQUEST_TIMEOUT_MS) {
      ctx.addIssue({ code: 'custom', path: ['HTTP_HEADERS_TIMEOUT_MS'], message: 'must not exceed HTTP_REQUEST_TIMEOUT_MS (the headers are part of the request)' });
    }
    if (2 * config.GROUP_COMMIT_IN_FLIGHT >= config.DATABASE_POOL_MAX) {
      ctx.addIssue({
        code: 'custom',
        path: ['GROUP_COMMIT_IN_FLIGHT'],
        message: `2 x GROUP_COMMIT_IN_FLIGHT (${2 * config.GROUP_COMMIT_IN_FLIGHT}) must stay below DATABASE_POOL_MAX (${config.DATABASE_POOL_MAX}): group commits would hold every connection`,
      });
    }
    if (config.PIN_LOCKOUT_MAX_MS < config.PIN_LOCKOUT_MS) {
      ctx.addIssue({ code: 'custom', path: ['PIN_LOCKOUT_MAX_MS'], message: `must be at least PIN_LOCKOUT_MS (${config.PIN_LOCKOUT_MS})` });
    }
    if (config.JWT_MAX_LIFETIME_SECONDS !== undefined && config.JWT_MAX_LIFETIME_SECONDS < config.JWT_TTL_SECONDS) {
      ctx.addIssue({
        code: 'custom',
        path: ['JWT_MAX_LIFETIME_SECONDS'],
        message: `must be at least JWT_TTL_SECONDS (${config.JWT_TTL_SECONDS}): the service would refuse its own tokens`,
      });
    }
    if (config.ADMIN_LOGIN_LOCKOUT_FAILURES <= config.ADMIN_LOGIN_FREE_ATTEMPTS) {
      ctx.addIssue({
        code: 'custom',
        path: ['ADMIN_LOGIN_LOCKOUT_FAILURES'],
        message: `must be above ADMIN_LOGIN_FREE_ATTEMPTS (${config.ADMIN_LOGIN_FREE_ATTEMPTS})`,
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

/**
 * Asaas's documented API base URLs (without `/v3`, which the client adds): the sandbox and
 * production environments (https://docs.asaas.com/docs/authentication-2, "Sandbox" and
 * "Production"; the API reference's servers api-sandbox.asaas.com/v3 and api.asaas.com/v3).
 */
export const asaasBaseUrls = { sandbox: 'https://api-sandbox.asaas.com', production: 'https://api.asaas.com' } as const;

/** The gateway base URL a process uses: GATEWAY_BASE_URL when set, else Asaas's for GATEWAY_ASAAS_ENVIRONMENT, else the simulator's. */
export function gatewayBaseUrl(config: Pick<Config, 'GATEWAY_BASE_URL' | 'GATEWAY_ASAAS_ENVIRONMENT'>): string {
  if (config.GATEWAY_ASAAS_ENVIRONMENT !== undefined && config.GATEWAY_BASE_URL === simulatorBaseUrl) {
    return asaasBaseUrls[config.GATEWAY_ASAAS_ENVIRONMENT];
  }
  return config.GATEWAY_BASE_URL;
}

/** The URL the gateway's transfer validation is sent to: GATEWAY_VALIDATION_URL, else this service's own route. */
export function gatewayValidationUrl(config: Pick<Config, 'GATEWAY_VALIDATION_URL' | 'HOST' | 'PORT'>): string {
  if (config.GATEWAY_VALIDATION_URL !== undefined) return config.GATEWAY_VALIDATION_URL;
  const host = config.HOST === '0.0.0.0' ? '127.0.0.1' : config.HOST;
  return `http://${host}:${config.PORT}/api/v1/webhooks/transfer/validate`;
}

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
export const secretConfigKeys = [
  'JWT_SECRET',
  'ADMIN_PASSWORD',
  'DATABASE_URL',
  'GATEWAY_API_KEY',
  'GATEWAY_WEBHOOK_TOKEN',
  'SUPABASE_WEBHOOK_TOKEN',
  'PIN_PEPPER',
  'SMTP_URL',
  'BLOCKLIST_SIGNING_SEED',
  'RECEIPT_SIGNING_SEED',
  'METRICS_TOKEN',
] as const;

export function webhookAutoHealEnabled(config: Config): boolean {
  return config.WEBHOOK_AUTO_HEAL ?? config.APP_ENV !== 'production';
}

/** The URL a configured webhook delivers to, or null when production has not set one. */
export function gatewayWebhookUrl(config: Config): string | null {
  if (config.GATEWAY_WEBHOOK_URL !== undefined) return config.GATEWAY_WEBHOOK_URL;
  if (config.APP_ENV === 'production') return null;
  const host = config.HOST === '0.0.0.0' ? '127.0.0.1' : config.HOST;
  return `http://${host}:${config.PORT}/api/v1/redemption/webhook/gateway`;
}

/** The login throttle's policy, from the configuration. */
export function loginThrottlePolicy(config: Config) {
  return {
    freeAttempts: config.ADMIN_LOGIN_FREE_ATTEMPTS,
    delayBaseMs: config.ADMIN_LOGIN_DELAY_BASE_MS,
    lockoutFailures: config.ADMIN_LOGIN_LOCKOUT_FAILURES,
    lockoutMs: config.ADMIN_LOGIN_LOCKOUT_MS,
    forgetAfterMs: config.ADMIN_LOGIN_FORGET_AFTER_MS,
  };
}

export function devEndpointsEnabled(config: Config): boolean {
  return config.DEV_ENDPOINTS_ENABLED ?? config.APP_ENV !== 'production';
}

/** Whether the API serves GET /metrics: on unless turned off, and in production only with a token. */
export function apiMetricsServed(config: Config): boolean {
  return config.METRICS_ENABLED && (config.APP_ENV !== 'production' || config.METRICS_TOKEN !== undefined);
}

/** Whether the process traces (docs/operations.md, "Traces"): on with an OTLP endpoint unless turned off. */
export function tracingEnabled(config: Config): boolean {
  return config.TRACING_ENABLED ?? config.OTEL_EXPORTER_OTLP_ENDPOINT !== undefined;
}

/** The task queue PLC workflows start on (TEMPORAL_PLC_TASK_QUEUE, or TEMPORAL_TASK_QUEUE + `-plc`). */
export function plcTaskQueueOf(config: Pick<Config, 'TEMPORAL_TASK_QUEUE' | 'TEMPORAL_PLC_TASK_QUEUE'>): string {
  return config.TEMPORAL_PLC_TASK_QUEUE ?? `${config.TEMPORAL_TASK_QUEUE}-plc`;
}
