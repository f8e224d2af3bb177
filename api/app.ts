import fastifyRateLimit from '@fastify/rate-limit';
import Fastify, { LogController, type FastifyInstance } from 'fastify';
import { serializerCompiler, validatorCompiler } from 'fastify-type-provider-zod';
import type { Logger } from 'pino';
import { advisoryLeadership } from '../db/advisory-leader.ts';
import { createPgRateLimitStore } from '../db/rate-limit-store.ts';
import { setReputationSettings } from '../db/reputation.ts';
import { reputationSettingsOf } from '../src/reputation/rules.ts';
import { DomainError } from '../src/errors.ts';
import { authPlugin } from './plugins/auth.ts';
import { busyMeter, eventLoopUtilizationMeter, plcStatusDispatcherLockKey, startPlcStatusDispatcher, type PlcStatusDispatcher } from './plc-status-dispatcher.ts';
import { deadlinesPlugin } from './plugins/deadlines.ts';
import { depsPlugin, type AppDeps, type AppDepsInput } from './plugins/deps.ts';
import { answerClientError, answerFrameworkError, errorsPlugin } from './plugins/errors.ts';
import { requestLogPlugin } from './plugins/request-log.ts';
import { documentedResponsesPlugin } from './plugins/documented-responses.ts';
import { idempotencyPlugin } from './plugins/idempotency.ts';
import { storableTextPlugin } from './plugins/storable-text.ts';
import { subjectRateLimitPlugin } from './plugins/subject-rate-limit.ts';
import { jsonBodyPlugin } from './plugins/json-body.ts';
import { openapiPlugin } from './plugins/openapi.ts';
import { requestIdFrom, requestIdPlugin } from './plugins/request-id.ts';
import { adminDashboardRoutes } from './routes/admin-dashboards.ts';
import { adminEventRoutes, walletEventRoutes } from './routes/events.ts';
import { adminRedemptionRoutes } from './routes/admin-redemptions.ts';
import { consoleRoutes } from './routes/console.ts';
import { walletRoutes } from './routes/wallet.ts';
import { adminLedgerRoutes } from './routes/admin-ledger.ts';
import { adminPlcRoutes } from './routes/admin-plc.ts';
import { adminBlocklistRoutes, blocklistRoutes } from './routes/blocklist.ts';
import { adminUserRoutes } from './routes/admin-users.ts';
import { adminReputationRoutes } from './routes/admin-reputation.ts';
import { adminPlcLimitRoutes, plcLimitRoutes } from './routes/plc-limits.ts';
import { adminQueueRoutes } from './routes/admin-queues.ts';
import { adminMonitorRoutes } from './routes/admin-monitor.ts';
import { adminReconcileRoutes } from './routes/admin-reconcile.ts';
import { authRoutes } from './routes/auth.ts';
import { balanceRoutes, promiseRoutes } from './routes/balance.ts';
import { balanceReconcileRoutes } from './routes/balance-reconcile.ts';
import { healthRoutes } from './routes/health.ts';
import { plcRoutes } from './routes/plc.ts';
import { redeemRoutes } from './routes/redeem.ts';
import { chargeRoutes } from './routes/charges.ts';
import { webhookRoutes } from './routes/webhooks.ts';
import { redemptionWebhookRoutes } from './routes/redemption-webhooks.ts';
import { devRoutes } from './routes/dev.ts';
import { adminB2bRoutes, b2bRoutes } from './routes/b2b.ts';
import { posRoutes } from './routes/pos.ts';
import { feeRoutes } from './routes/fees.ts';
import { securityRoutes } from './routes/security.ts';
import { createSecurityService } from '../services/security.ts';
import { apiMetricsServed, devEndpointsEnabled } from '../infra/config.ts';
import { createServiceMetrics, type ServiceMetrics } from '../infra/metrics.ts';
import { metricsDatabaseReaders } from '../db/metrics-readers.ts';
import { metricsPlugin } from './plugins/metrics.ts';
import { nameServerSpan } from '../infra/trace-context.ts';

/** Largest request body accepted; a PLC with a full chain is a few tens of KiB at most. */
export const bodyLimitBytes = 128 * 1024;
/** Longest path parameter the router accepts (an owner id is up to 128 characters); longer answers 414. */
export const maxParamLength = 256;

export interface BuildAppOptions {
  deps: AppDepsInput;
  logger: Logger | false;
  /**
   * The process's metrics (infra/metrics.ts), shared with its gateway client; null: none. Left
   * out: the app makes its own when METRICS_ENABLED (without the process's default metrics),
   * closed with the app.
   */
  metrics?: ServiceMetrics | null;
}

/**
 * Builds the Fastify app: infrastructure plugins first, then one plugin per route group. It
 * listens nowhere; `api/server.ts` does that, and tests call `app.inject`.
 */
export async function buildApp(options: BuildAppOptions): Promise<FastifyInstance> {
  const deps: AppDeps = { ...options.deps, security: options.deps.security ?? createSecurityService(options.deps) };
  // A terminal's log (LOG_FORMAT=pretty): one line per request from the request-log plugin instead of Fastify's two.
  const prettyLog = options.deps.config.LOG_FORMAT === 'pretty';
  const common = {
    genReqId: requestIdFrom,
    ...(prettyLog ? { logController: new LogController({ disableRequestLogging: true }) } : {}),
    bodyLimit: bodyLimitBytes,
    routerOptions: { maxParamLength },
    // While closing, the errors plugin answers 503 in the ErrorResponse shape instead.
    return503OnClosing: false,
    frameworkErrors: answerFrameworkError,
    clientErrorHandler: answerClientError,
    trustProxy: false,
    // Slow clients (docs/security.md, "Slow requests"): the whole request, headers and body, must
    // arrive within HTTP_REQUEST_TIMEOUT_MS and its headers within HTTP_HEADERS_TIMEOUT_MS (Node
    // checks every HTTP_CONNECTIONS_CHECK_INTERVAL_MS and answers 408), a silent connection is
    // closed after HTTP_CONNECTION_IDLE_TIMEOUT_MS, and a request is answered 503 once it has
    // taken HTTP_HANDLER_TIMEOUT_MS (an event stream hijacks its reply and is not bound by it).
    requestTimeout: options.deps.config.HTTP_REQUEST_TIMEOUT_MS,
    connectionTimeout: options.deps.config.HTTP_CONNECTION_IDLE_TIMEOUT_MS,
    handlerTimeout: options.deps.config.HTTP_HANDLER_TIMEOUT_MS,
    http: {
      headersTimeout: options.deps.config.HTTP_HEADERS_TIMEOUT_MS,
      requestTimeout: options.deps.config.HTTP_REQUEST_TIMEOUT_MS,
      connectionsCheckingInterval: options.deps.config.HTTP_CONNECTIONS_CHECK_INTERVAL_MS,
    },
  };
  const app: FastifyInstance =
    options.logger === false
      ? Fastify({ ...common, logger: false })
      : (Fastify({ ...common, loggerInstance: options.logger }) as unknown as FastifyInstance);

  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);

  await app.register(depsPlugin, { deps });
  // Prometheus metrics (docs/operations.md): before the routes, so every route is observed.
  const ownMetrics = options.metrics === undefined && deps.config.METRICS_ENABLED;
  const metrics = ownMetrics
    ? // The process's own figures (CPU, GC, event loop) are the server's to add: an app built alone has none.
      createServiceMetrics({ process: 'api', database: metricsDatabaseReaders(deps.pool), defaultMetrics: false })
    : (options.metrics ?? null);
  if (metrics !== null) {
    await app.register(metricsPlugin, { metrics, token: deps.config.METRICS_TOKEN, serve: apiMetricsServed(deps.config) });
    if (ownMetrics) app.addHook('onClose', async () => metrics.close());
  }
  // First of the onRequest hooks: the Temporal deadline covers everything the request does.
  await app.register(deadlinesPlugin);
  // With tracing on, the request's server span is named after its route template (a no-op otherwise).
  app.addHook('onRequest', async (request) => nameServerSpan(request.method, request.routeOptions.url));
  // Delivers queued PLC statuses to their workflows after the transfer route has answered.
  let dispatcher: PlcStatusDispatcher | undefined;
  app.addHook('onReady', async () => {
    dispatcher = startPlcStatusDispatcher({
      pool: options.deps.pool,
      temporal: options.deps.temporal,
      log: app.log,
      pollMs: options.deps.config.PLC_STATUS_POLL_MS,
      batchSize: options.deps.config.PLC_STATUS_BATCH,
      maxPerSecond: options.deps.config.PLC_STATUS_MAX_PER_SECOND,
      signalTimeoutMs: options.deps.config.TEMPORAL_CALL_TIMEOUT_MS,
      whenBusy: { utilization: options.deps.config.PLC_STATUS_YIELD_UTILIZATION, perSecond: options.deps.config.PLC_STATUS_BUSY_PER_SECOND },
      utilizationSinceLastCall: options.deps.config.PLC_STATUS_YIELD_TO_HOST ? busyMeter() : eventLoopUtilizationMeter(),
      // One dispatcher per database delivers, whatever the number of replicas: the caps above
      // are the deployment's rate, not each replica's.
      leadership: advisoryLeadership(options.deps.pool, {
        key: plcStatusDispatcherLockKey,
        retryMs: options.deps.config.PLC_STATUS_LEADER_RETRY_MS,
        timeoutMs: options.deps.config.DATABASE_CONNECT_TIMEOUT_MS,
        applicationName: 'settlement-api-plc-status-leader',
      }),
    });
  });
  app.addHook('onClose', async () => {
    await dispatcher?.stop();
  });
  // The reputation model's settings live where its SQL rules read them (docs/limits-and-fees.md).
  // Best effort and bounded: a database that is down must not keep the API from starting (its
  // readiness says so); the table then keeps what it had, the migration's production defaults at first.
  app.addHook('onReady', async () => {
    let timer: NodeJS.Timeout | undefined;
    const bound = new Promise<'timeout'>((resolve) => {
      timer = setTimeout(() => resolve('timeout'), options.deps.config.DATABASE_CONNECT_TIMEOUT_MS);
    });
    const write = setReputationSettings(options.deps.pool, reputationSettingsOf(options.deps.config)).then(
      () => 'written' as const,
      (error: unknown) => {
        app.log.warn({ err: error }, 'reputation settings not written at start');
        return 'failed' as const;
      },
    );
    const outcome = await Promise.race([write, bound]);
    clearTimeout(timer);
    if (outcome === 'timeout') app.log.warn('reputation settings not written at start: the database did not answer in time');
  });
  await app.register(requestIdPlugin);
  if (prettyLog) await app.register(requestLogPlugin);
  await app.register(errorsPlugin);
  await app.register(storableTextPlugin);
  await app.register(documentedResponsesPlugin, { bodyLimitBytes, maxParamLength });
  await app.register(idempotencyPlugin, { windowMs: options.deps.config.IDEMPOTENCY_WINDOW_MS });
  await app.register(jsonBodyPlugin);
  await app.register(openapiPlugin, { docsEnabled: options.deps.config.API_DOCS_ENABLED });
  await app.register(fastifyRateLimit, {
    global: false,
    store: createPgRateLimitStore(options.deps.pool, { inFlightMax: options.deps.config.GROUP_COMMIT_IN_FLIGHT }),
    // A shared store that cannot be reached must not silently lift the limits.
    skipOnError: false,
    errorResponseBuilder: (_request, context) =>
      new DomainError('RATE_LIMITED', `rate limit of ${context.max} requests exceeded; retry in ${context.after}`, {
        retry_after_s: Math.ceil(context.ttl / 1000),
      }),
  });
  // The device routes' other dimensions: the address whatever the device, the verified signing key.
  await app.register(subjectRateLimitPlugin, { addressFactor: options.deps.config.RATE_LIMIT_ADDRESS_FACTOR });
  await app.register(authPlugin, {
    secret: requireJwtSecret(options.deps),
    ttlSeconds: options.deps.config.JWT_TTL_SECONDS,
    maxLifetimeSeconds: options.deps.config.JWT_MAX_LIFETIME_SECONDS ?? options.deps.config.JWT_TTL_SECONDS,
  });

  await app.register(healthRoutes);
  await app.register(authRoutes, { prefix: '/api/v1/auth' });
  await app.register(balanceRoutes, { prefix: '/api/v1/balance' });
  await app.register(promiseRoutes, { prefix: '/api/v1/balance' });
  await app.register(balanceReconcileRoutes, { prefix: '/api/v1/balance' });
  await app.register(adminLedgerRoutes, { prefix: '/api/v1/admin' });
  await app.register(plcRoutes, { prefix: '/api/v1' });
  await app.register(adminPlcRoutes, { prefix: '/api/v1/admin' });
  await app.register(blocklistRoutes, { prefix: '/api/v1' });
  await app.register(adminBlocklistRoutes, { prefix: '/api/v1/admin' });
  await app.register(plcLimitRoutes, { prefix: '/api/v1' });
  await app.register(adminPlcLimitRoutes, { prefix: '/api/v1/admin' });
  await app.register(adminReputationRoutes, { prefix: '/api/v1/admin' });
  await app.register(adminQueueRoutes, { prefix: '/api/v1/admin' });
  await app.register(adminDashboardRoutes, { prefix: '/api/v1/admin' });
  await app.register(adminEventRoutes, { prefix: '/api/v1/admin' });
  await app.register(adminRedemptionRoutes, { prefix: '/api/v1/admin' });
  await app.register(walletEventRoutes, { prefix: '/api/v1' });
  await app.register(redeemRoutes, { prefix: '/api/v1' });
  await app.register(chargeRoutes, { prefix: '/api/v1' });
  await app.register(webhookRoutes, { prefix: '/api/v1' });
  await app.register(redemptionWebhookRoutes, { prefix: '/api/v1/redemption/webhook' });
  await app.register(adminMonitorRoutes, { prefix: '/api/v1/admin' });
  await app.register(adminUserRoutes, { prefix: '/api/v1/admin' });
  if (devEndpointsEnabled(options.deps.config)) await app.register(devRoutes, { prefix: '/api/v1/dev' });
  await app.register(adminReconcileRoutes, { prefix: '/api/v1/admin/reconcile' });
  await app.register(securityRoutes, { prefix: '/api/v1/security' });
  await app.register(b2bRoutes, { prefix: '/api/v1/b2b' });
  await app.register(adminB2bRoutes, { prefix: '/api/v1/admin/b2b' });
  await app.register(posRoutes, { prefix: '/api/v1/pos' });
  await app.register(feeRoutes, { prefix: '/api/v1/fees' });
  await app.register(consoleRoutes, {});
  await app.register(walletRoutes, {});

  return app;
}

function requireJwtSecret(deps: AppDepsInput): string {
  const secret = deps.config.JWT_SECRET;
  if (secret === undefined) throw new Error('JWT_SECRET is not configured');
  return secret;
}
