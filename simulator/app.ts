import { randomInt } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import Fastify, { type FastifyError, type FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import { z } from 'zod';
import { parseWireJson } from '../gateway/json.ts';
import { defaultSimulatorConfig, type SimulatorConfig } from './config.ts';
import { FaultInjector } from './faults.ts';
import { GatewayState, SimulatorApiError } from './gateway-state.ts';
import { memoryStore, sqliteStore } from './store.ts';
import { apiRoutes } from './routes/api.ts';
import { controlRoutes } from './routes/controls.ts';
import { WebhookDispatcher, webhookDefinitionsFromConfig } from './webhook-queue.ts';

/**
 * The payment gateway simulator: a Fastify app speaking the gateway's wire API
 * (docs/gateway-wire-api.md) from its state (in memory, or kept in a SQLite file across restarts:
 * SIMULATOR_STATE_FILE, simulator/store.ts), sending real webhooks and transfer
 * validation requests, with controls and fault injection under /sim. `createSimulator` builds
 * it without listening (tests listen on port 0); `startSimulator` builds and listens;
 * `simulator/main.ts` is the process (`npm run start:simulator`).
 */

export interface SimulatorOptions extends Partial<SimulatorConfig> {
  /** A pino logger, or false for none (the default). */
  logger?: Logger | false;
  /** The simulator's clock for dates on resources and events; the system clock by default. */
  now?: () => Date;
  /** Used for webhooks and validation requests; the global fetch by default. */
  fetch?: typeof fetch;
}

export interface Simulator {
  readonly app: FastifyInstance;
  readonly config: SimulatorConfig;
  readonly state: GatewayState;
  readonly dispatcher: WebhookDispatcher;
  readonly faults: FaultInjector;
  /** Base URL once listening ("http://127.0.0.1:8010"), else null. */
  readonly url: string | null;
  /** Listens on config.host:config.port (0 picks a free port) and returns the base URL. */
  listen(): Promise<string>;
  /** Forgets all state, queued webhooks, pending validations and faults. */
  reset(): Promise<void>;
  /** Stops webhook queues and validations, releases hung requests, closes the server. Idempotent. */
  close(): Promise<void>;
}

export const simulatorBodyLimitBytes = 64 * 1024;

export async function createSimulator(options: SimulatorOptions = {}): Promise<Simulator> {
  const { logger = false, now = () => new Date(), fetch: fetchImpl, ...overrides } = options;
  // An option given as undefined means "the default", not "unset".
  const given = Object.fromEntries(Object.entries(overrides).filter(([, value]) => value !== undefined)) as Partial<SimulatorConfig>;
  const config: SimulatorConfig = { ...defaultSimulatorConfig(), ...given };
  const log = logger === false ? null : logger;
  const store = config.stateFile === null ? memoryStore() : sqliteStore(config.stateFile);
  const faults = new FaultInjector(config.seed ?? randomInt(0, 2 ** 32 - 1));
  const dispatcher = new WebhookDispatcher(webhookDefinitionsFromConfig(config), {
    token: config.webhookToken,
    timeoutMs: config.webhookTimeoutMs,
    retryBaseMs: config.webhookRetryBaseMs,
    retryMaxMs: config.webhookRetryMaxMs,
    interruptAfterFailures: config.webhookInterruptAfterFailures,
    queueMax: config.webhookQueueMax,
    backoffRemovalCooldownMs: config.backoffRemovalCooldownMs,
    faults,
    logger: log,
    store,
    ...(fetchImpl === undefined ? {} : { fetch: fetchImpl }),
  });
  const state = new GatewayState({
    dispatcher,
    logger: log,
    webhookToken: config.webhookToken,
    validationUrl: config.validationUrl,
    validationDelayMs: config.validationDelayMs,
    validationTimeoutMs: config.validationTimeoutMs,
    validationAttempts: config.validationAttempts,
    autoSettle: config.autoSettle,
    billPaymentFails: () => faults.billPaymentFails(),
    store,
    now,
    ...(fetchImpl === undefined ? {} : { fetch: fetchImpl }),
  });

  // Requests held by the timeout fault; released when the simulator closes so shutdown never waits on them.
  const hangs = new Set<() => void>();
  const hang = (ms: number): Promise<void> =>
    new Promise((resolve) => {
      const release = (): void => {
        clearTimeout(timer);
        hangs.delete(release);
        resolve();
      };
      const timer = setTimeout(release, ms);
      hangs.add(release);
    });

  const common = { bodyLimit: simulatorBodyLimitBytes, forceCloseConnections: true, return503OnClosing: true } as const;
  const app: FastifyInstance =
    log === null ? Fastify({ ...common, logger: false }) : (Fastify({ ...common, loggerInstance: log }) as unknown as FastifyInstance);

  // JSON only, parsed exactly: a money number that a double cannot hold is NaN and fails validation.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_request, body, done) => {
    const text = typeof body === 'string' ? body : body.toString('utf8');
    if (text.trim() === '') {
      done(null, undefined);
      return;
    }
    try {
      done(null, parseWireJson(text));
    } catch (error) {
      done(new SimulatorApiError(400, 'invalid_json', `the body is not valid JSON: ${error instanceof Error ? error.message : 'parse error'}`), undefined);
    }
  });

  app.setErrorHandler(async (error: FastifyError | SimulatorApiError | z.ZodError, _request, reply) => {
    if (error instanceof SimulatorApiError) {
      return reply.code(error.status).headers(error.headers).send({ errors: [{ code: error.code, description: error.message }] });
    }
    if (error instanceof z.ZodError) {
      return reply.code(400).send({ errors: [{ code: 'invalid_request', description: error.issues[0]?.message ?? 'invalid request' }] });
    }
    const status = typeof error.statusCode === 'number' && error.statusCode >= 400 && error.statusCode < 500 ? error.statusCode : 500;
    if (status === 500) log?.error({ err: error }, 'simulator error');
    return reply.code(status).send({
      errors: [{ code: status === 500 ? 'internal_error' : 'invalid_request', description: status === 500 ? 'internal error' : error.message }],
    });
  });
  app.setNotFoundHandler(async (request, reply) =>
    reply.code(404).send({ errors: [{ code: 'not_found', description: `no route ${request.method} ${request.url.split('?')[0] ?? ''}` }] }),
  );

  const reset = async (): Promise<void> => {
    state.reset();
    faults.reset();
    await dispatcher.reset();
  };

  app.get('/health', async () => ({ status: 'ok' }));
  await app.register(apiRoutes, { prefix: '/v3', apiKey: config.apiKey, state, dispatcher, faults, hang, now });
  await app.register(controlRoutes, { prefix: '/sim', state, dispatcher, faults, reset });

  dispatcher.start();
  const resumed = state.resumePending();
  if (store.location !== null) log?.info({ stateFile: store.location, resumedValidations: resumed }, 'gateway simulator state kept in a file');

  let url: string | null = null;
  let closing: Promise<void> | null = null;
  return {
    app,
    config,
    state,
    dispatcher,
    faults,
    get url() {
      return url;
    },
    async listen() {
      await app.listen({ host: config.host, port: config.port });
      const address = app.server.address() as AddressInfo;
      const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
      url = `http://${host}:${address.port}`;
      return url;
    },
    reset,
    close() {
      closing ??= (async () => {
        state.close();
        for (const release of [...hangs]) release();
        await dispatcher.close();
        await app.close();
        store.close();
      })();
      return closing;
    },
  };
}

export async function startSimulator(options: SimulatorOptions = {}): Promise<Simulator> {
  const simulator = await createSimulator(options);
  try {
    await simulator.listen();
  } catch (error) {
    await simulator.close();
    throw error;
  }
  return simulator;
}
