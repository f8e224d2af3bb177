import { z } from 'zod';

/**
 * The simulator's configuration, from the environment (zod over `process.env`, like the
 * service's `infra/config.ts`). Every variable is documented in `docs/gateway-wire-api.md`.
 * Empty strings count as unset. Tests build the simulator in-process and pass the camelCase
 * `SimulatorConfig` fields directly instead.
 */

const booleanFromEnv = z
  .enum(['true', 'false', '1', '0'])
  .transform((value) => value === 'true' || value === '1');

const durationMs = (max: number) => z.coerce.number().int().min(0).max(max);
const httpUrl = z.string().regex(/^https?:\/\/\S+$/, 'must be an http(s) URL');
/** A URL, or "off" to switch the feature off. */
const urlOrOff = z.union([z.literal('off'), httpUrl]);

export const simulatorEnvSchema = z
  .object({
    SIMULATOR_HOST: z.string().min(1).default('127.0.0.1'),
    SIMULATOR_PORT: z.coerce.number().int().min(0).max(65535).default(8010),
    SIMULATOR_API_KEY: z.string().min(1).max(255).default('sim-api-key'),
    SIMULATOR_LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),

    /** Receives every payment and transfer event not routed elsewhere by the three overrides below. */
    SIMULATOR_WEBHOOK_URL: urlOrOff.default('http://127.0.0.1:8000/api/v1/redemption/webhook/gateway'),
    SIMULATOR_PAYMENT_WEBHOOK_URL_PIX: httpUrl.optional(),
    SIMULATOR_PAYMENT_WEBHOOK_URL_BOLETO: httpUrl.optional(),
    SIMULATOR_TRANSFER_WEBHOOK_URL: httpUrl.optional(),
    /** Sent as `asaas-access-token` (Asaas's header) on every webhook and validation request. */
    SIMULATOR_WEBHOOK_TOKEN: z.string().min(1).max(255).default('sim-webhook-token'),
    SIMULATOR_WEBHOOK_TIMEOUT_MS: durationMs(120_000).default(10_000),
    SIMULATOR_WEBHOOK_RETRY_BASE_MS: durationMs(3_600_000).default(1_000),
    SIMULATOR_WEBHOOK_RETRY_MAX_MS: durationMs(3_600_000).default(60_000),
    SIMULATOR_WEBHOOK_INTERRUPT_AFTER: z.coerce.number().int().min(1).max(1_000).default(15),
    SIMULATOR_WEBHOOK_QUEUE_MAX: z.coerce.number().int().min(1).max(1_000_000).default(10_000),
    SIMULATOR_BACKOFF_REMOVAL_COOLDOWN_MS: durationMs(24 * 3_600_000).default(300_000),
    /**
     * Appended to the webhook ids (`wh_gateway<suffix>`): a real gateway's webhook ids are unique per
     * account, and simulators sharing one Temporal namespace (the tests) must not share the
     * `webhook-cooldown-<webhook_id>` workflows of their webhooks.
     */
    SIMULATOR_WEBHOOK_ID_SUFFIX: z.string().regex(/^[A-Za-z0-9_-]{0,40}$/).default(''),

    /** Transfer validation ("validate before paying out"); "off" approves every transfer. */
    SIMULATOR_VALIDATION_URL: urlOrOff.default('http://127.0.0.1:8000/api/v1/webhooks/transfer/validate'),
    SIMULATOR_VALIDATION_DELAY_MS: durationMs(600_000).default(5_000),
    SIMULATOR_VALIDATION_TIMEOUT_MS: durationMs(120_000).default(10_000),
    SIMULATOR_VALIDATION_ATTEMPTS: z.coerce.number().int().min(1).max(10).default(3),
    /** Transfers that pass validation go DONE at once; false leaves them in BANK_PROCESSING for /sim controls. */
    SIMULATOR_AUTO_SETTLE: booleanFromEnv.default(true),

    /** A SQLite file that keeps the state across restarts (simulator/store.ts); unset: memory only. `npm start` sets it in DATA_DIR. */
    SIMULATOR_STATE_FILE: z.string().min(1).max(4096).optional(),

    /** Seed of the fault injector's random numbers; unset: a random seed, logged at start. */
    SIMULATOR_SEED: z.coerce.number().int().min(0).max(2 ** 32 - 1).optional(),
  })
  .superRefine((env, ctx) => {
    if (env.SIMULATOR_WEBHOOK_RETRY_MAX_MS < env.SIMULATOR_WEBHOOK_RETRY_BASE_MS) {
      ctx.addIssue({ code: 'custom', path: ['SIMULATOR_WEBHOOK_RETRY_MAX_MS'], message: 'must be at least SIMULATOR_WEBHOOK_RETRY_BASE_MS' });
    }
  });

export interface SimulatorConfig {
  host: string;
  port: number;
  apiKey: string;
  logLevel: string;
  /** null: no catch-all webhook. */
  webhookUrl: string | null;
  paymentWebhookUrlPix: string | null;
  paymentWebhookUrlBoleto: string | null;
  transferWebhookUrl: string | null;
  webhookToken: string;
  webhookTimeoutMs: number;
  webhookRetryBaseMs: number;
  webhookRetryMaxMs: number;
  webhookInterruptAfterFailures: number;
  webhookQueueMax: number;
  backoffRemovalCooldownMs: number;
  /** Appended to every webhook id ('' by default). */
  webhookIdSuffix: string;
  /** null: validation is off and every transfer is approved. */
  validationUrl: string | null;
  validationDelayMs: number;
  validationTimeoutMs: number;
  validationAttempts: number;
  autoSettle: boolean;
  /** null: the state lives in memory and is lost when the process ends. */
  stateFile: string | null;
  seed: number | null;
}

export class SimulatorConfigError extends Error {
  readonly problems: readonly string[];
  constructor(problems: readonly string[]) {
    super(`invalid simulator configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'SimulatorConfigError';
    this.problems = problems;
  }
}

export function loadSimulatorConfig(env: Record<string, string | undefined> = process.env): SimulatorConfig {
  const cleaned = Object.fromEntries(
    Object.entries(env).filter(([key, value]) => key.startsWith('SIMULATOR_') && value !== undefined && value !== ''),
  );
  const result = simulatorEnvSchema.safeParse(cleaned);
  if (!result.success) {
    throw new SimulatorConfigError(result.error.issues.map((issue) => `${issue.path.join('.') || '(root)'}: ${issue.message}`));
  }
  const e = result.data;
  return {
    host: e.SIMULATOR_HOST,
    port: e.SIMULATOR_PORT,
    apiKey: e.SIMULATOR_API_KEY,
    logLevel: e.SIMULATOR_LOG_LEVEL,
    webhookUrl: e.SIMULATOR_WEBHOOK_URL === 'off' ? null : e.SIMULATOR_WEBHOOK_URL,
    paymentWebhookUrlPix: e.SIMULATOR_PAYMENT_WEBHOOK_URL_PIX ?? null,
    paymentWebhookUrlBoleto: e.SIMULATOR_PAYMENT_WEBHOOK_URL_BOLETO ?? null,
    transferWebhookUrl: e.SIMULATOR_TRANSFER_WEBHOOK_URL ?? null,
    webhookToken: e.SIMULATOR_WEBHOOK_TOKEN,
    webhookTimeoutMs: e.SIMULATOR_WEBHOOK_TIMEOUT_MS,
    webhookRetryBaseMs: e.SIMULATOR_WEBHOOK_RETRY_BASE_MS,
    webhookRetryMaxMs: e.SIMULATOR_WEBHOOK_RETRY_MAX_MS,
    webhookInterruptAfterFailures: e.SIMULATOR_WEBHOOK_INTERRUPT_AFTER,
    webhookQueueMax: e.SIMULATOR_WEBHOOK_QUEUE_MAX,
    backoffRemovalCooldownMs: e.SIMULATOR_BACKOFF_REMOVAL_COOLDOWN_MS,
    webhookIdSuffix: e.SIMULATOR_WEBHOOK_ID_SUFFIX,
    validationUrl: e.SIMULATOR_VALIDATION_URL === 'off' ? null : e.SIMULATOR_VALIDATION_URL,
    validationDelayMs: e.SIMULATOR_VALIDATION_DELAY_MS,
    validationTimeoutMs: e.SIMULATOR_VALIDATION_TIMEOUT_MS,
    validationAttempts: e.SIMULATOR_VALIDATION_ATTEMPTS,
    autoSettle: e.SIMULATOR_AUTO_SETTLE,
    stateFile: e.SIMULATOR_STATE_FILE ?? null,
    seed: e.SIMULATOR_SEED ?? null,
  };
}

/** Every default, as `loadSimulatorConfig({})` gives them. */
export function defaultSimulatorConfig(): SimulatorConfig {
  return loadSimulatorConfig({});
}
