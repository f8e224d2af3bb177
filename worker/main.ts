import { Client } from '@temporalio/client';
import { NativeConnection, Runtime } from '@temporalio/worker';
import { pinResetMailFromConfig } from '../activities/security.ts';
import { createPool } from '../db/pool.ts';
import { createGatewayClient } from '../gateway/index.ts';
import { prepareDatabaseAt } from '../infra/bootstrap.ts';
import { ConfigError, loadConfig, plcTaskQueueOf, tracingEnabled, webhookAutoHealEnabled } from '../infra/config.ts';
import { createServiceMetrics, serveMetrics } from '../infra/metrics.ts';
import { startTracing } from '../infra/tracing.ts';
import { loadDotEnv } from '../infra/env-file.ts';
import { createLogger } from '../infra/logger.ts';
import { temporalLogger } from './temporal-logger.ts';
import { stopWhenSupervisorExits } from '../infra/supervised.ts';
import { createWorkerPair } from './create-worker.ts';
import { ensureGatewayAuditSchedule, ensureLedgerCheckSchedule, ensurePlcExpirySweepSchedule, ensureWebhookMonitorSchedule } from './schedules.ts';
import { workflowThreadGuardInstalled } from './workflow-thread-guard.ts';

/**
 * The worker process: `npm run start:worker` (node --import ./worker/preload.ts worker/main.ts;
 * the preload is the workflow-thread guard, worker/workflow-thread-guard.ts). Needs DATABASE_URL and TEMPORAL_ADDRESS. On
 * SIGTERM/SIGINT the SDK stops polling (both workers: the main task queue and the PLC workflows'), waits for running activities (up to SHUTDOWN_GRACE_MS),
 * and `run()` resolves; then the pool closes.
 */
async function main(): Promise<void> {
  // `.env` of the working directory, under the environment (infra/env-file.ts).
  loadDotEnv();
  const config = loadConfig();
  const logger = createLogger(config.LOG_LEVEL, 'worker', config.LOG_FORMAT);
  if (config.DATABASE_URL === undefined || config.TEMPORAL_ADDRESS === undefined) {
    throw new ConfigError([
      ...(config.DATABASE_URL === undefined ? ['DATABASE_URL: is required to run the worker alone (npm start sets it)'] : []),
      ...(config.TEMPORAL_ADDRESS === undefined ? ['TEMPORAL_ADDRESS: is required to run the worker alone (npm start sets it)'] : []),
    ]);
  }
  Runtime.install({
    shutdownSignals: ['SIGTERM', 'SIGINT'],
    // The SDK's log through this process's logger: JSON or pretty like the rest, an expected
    // refusal one line with its code instead of a stack (worker/temporal-logger.ts).
    logger: temporalLogger(logger),
    // The SDK's own worker metrics (task slots, poll latencies, sticky cache, activity and workflow
    // task outcomes), served by its core on a Prometheus endpoint of their own.
    ...(config.METRICS_ENABLED && config.TEMPORAL_METRICS_BIND !== undefined
      ? { telemetryOptions: { metrics: { prometheus: { bindAddress: config.TEMPORAL_METRICS_BIND }, metricPrefix: 'temporal_' } } }
      : {}),
  });
  // Traces (docs/operations.md): before the pool and the worker exist.
  const tracing = tracingEnabled(config) ? startTracing({ serviceName: 'plc-settlement-worker', otlpEndpoint: config.OTEL_EXPORTER_OTLP_ENDPOINT }) : null;
  const metrics = config.METRICS_ENABLED ? createServiceMetrics({ process: 'worker' }) : null;
  // Ready (GET /readyz on the metrics bind) from the moment the workers poll until they stop.
  let polling = false;
  const metricsServer =
    metrics !== null && config.WORKER_METRICS_PORT !== undefined
      ? await serveMetrics(metrics, { host: config.METRICS_HOST, port: config.WORKER_METRICS_PORT }, { ready: () => polling })
      : null;
  stopWhenSupervisorExits();
  await prepareDatabaseAt(config.DATABASE_URL, config, logger, 'settlement-worker-migrate');
  const pool = createPool({
    connectionString: config.DATABASE_URL,
    max: config.DATABASE_POOL_MAX,
    applicationName: 'settlement-worker',
    connectTimeoutMs: config.DATABASE_CONNECT_TIMEOUT_MS,
    statementTimeoutMs: config.WORKER_DATABASE_STATEMENT_TIMEOUT_MS,
  });
  const connection = await NativeConnection.connect({ address: config.TEMPORAL_ADDRESS });
  try {
    // Two workers from one bundle: the main task queue, and the PLC workflows' own with a small
    // sticky cache (docs/plc.md, "Task queues").
    const workers = await createWorkerPair({
      connection,
      namespace: config.TEMPORAL_NAMESPACE,
      taskQueue: config.TEMPORAL_TASK_QUEUE,
      pool,
      gateway: createGatewayClient({
        baseUrl: config.GATEWAY_BASE_URL,
        apiKey: config.GATEWAY_API_KEY,
        timeoutMs: config.GATEWAY_TIMEOUT_MS,
        ...(metrics === null ? {} : { observe: metrics.observeGatewayCall }),
      }),
      tracing,
      mail: pinResetMailFromConfig(config),
      shutdownGraceTimeMs: config.SHUTDOWN_GRACE_MS,
      maxCachedWorkflows: config.TEMPORAL_MAX_CACHED_WORKFLOWS,
      plcTaskQueue: plcTaskQueueOf(config),
      plcMaxCachedWorkflows: config.TEMPORAL_PLC_MAX_CACHED_WORKFLOWS,
    });
    if (config.WEBHOOK_MONITOR_ENABLED) {
      const outcome = await ensureWebhookMonitorSchedule(new Client({ connection, namespace: config.TEMPORAL_NAMESPACE }), {
        taskQueue: config.TEMPORAL_TASK_QUEUE,
        intervalMs: config.WEBHOOK_MONITOR_INTERVAL_MS,
        autoHeal: webhookAutoHealEnabled(config),
        cooldownMs: config.WEBHOOK_BACKOFF_COOLDOWN_MS,
      });
      logger.info({ schedule: 'webhook-monitor', outcome, intervalMs: config.WEBHOOK_MONITOR_INTERVAL_MS, autoHeal: webhookAutoHealEnabled(config) }, 'webhook monitor scheduled');
    }
    const ledgerCheck = await ensureLedgerCheckSchedule(new Client({ connection, namespace: config.TEMPORAL_NAMESPACE }), {
      taskQueue: config.TEMPORAL_TASK_QUEUE,
      intervalMs: config.LEDGER_CHECK_INTERVAL_MS,
    });
    logger.info({ schedule: 'ledger-check', outcome: ledgerCheck, intervalMs: config.LEDGER_CHECK_INTERVAL_MS }, 'ledger check scheduled');
    // The gateway audit (docs/reconciliation.md), every GATEWAY_AUDIT_INTERVAL_MS (0 removes the schedule).
    await ensureGatewayAuditSchedule(new Client({ connection, namespace: config.TEMPORAL_NAMESPACE }), config, logger);
    // The PLC expiry sweep (docs/plc.md, "Expiry by time buckets"): the net under the bucket workflows.
    const expirySweep = await ensurePlcExpirySweepSchedule(new Client({ connection, namespace: config.TEMPORAL_NAMESPACE }), { taskQueue: config.TEMPORAL_TASK_QUEUE });
    logger.info({ schedule: 'plc-expiry-sweep', outcome: expirySweep }, 'PLC expiry sweep scheduled');
    const guard = workflowThreadGuardInstalled();
    if (!guard) logger.warn('started without worker/preload.ts: workflow threads use the SDK\'s per-call timeout (a thread per call); start with `node --import ./worker/preload.ts worker/main.ts`');
    logger.info(
      {
        taskQueue: config.TEMPORAL_TASK_QUEUE,
        maxCachedWorkflows: workers.main.options.maxCachedWorkflows,
        plcTaskQueue: plcTaskQueueOf(config),
        plcMaxCachedWorkflows: workers.plc.options.maxCachedWorkflows,
        workflowThreadGuard: guard,
      },
      'worker started',
    );
    polling = true;
    try {
      await workers.run();
    } finally {
      polling = false;
    }
    logger.info('worker stopped');
  } finally {
    await connection.close();
    await pool.end();
    metricsServer?.close();
    metrics?.close();
    await tracing?.shutdown();
  }
}

main().catch((error: unknown) => {
  if (error instanceof ConfigError) process.stderr.write(`${error.message}\n`);
  else process.stderr.write(`worker failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
