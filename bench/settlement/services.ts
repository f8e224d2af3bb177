import { randomBytes, randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { Client, Connection, WithStartWorkflowOperation } from '@temporalio/client';
import { bundleWorkflowCode, DefaultLogger, NativeConnection, Runtime, Worker } from '@temporalio/worker';
import type { FastifyInstance } from 'fastify';
import { createActivities } from '../../activities/index.ts';
import { buildApp } from '../../api/app.ts';
import { ensureAdminUser } from '../../db/admin-users.ts';
import { applyMigrations } from '../../db/migrate.ts';
import { createPool, type Pool } from '../../db/pool.ts';
import { configuredGatewayClient } from '../../infra/gateway-client.ts';
import { loadConfig, plcTaskQueueOf, type Config } from '../../infra/config.ts';
import { createServiceMetrics } from '../../infra/metrics.ts';
import { metricsDatabaseReaders } from '../../db/metrics-readers.ts';
import { hashPassword } from '../../infra/passwords.ts';
import { freePort, type DevServer } from '../../infra/temporal-dev-server.ts';
import { createSimulator, type Simulator } from '../../simulator/app.ts';
import { workflowsPath } from '../../worker/workflows-path.ts';
import { bareTableDdl, createBareActivities, insertBareRow } from './bare-activities.ts';
import { bareOpenUpdate, bareSettlementWorkflow, bareWebhookWorkflow } from './bare-workflow.ts';
import { cleanupStack, createBenchDatabase, startBenchDevServer } from '../support/services.ts';
import { nowMs, type Probes } from './probes.ts';

/**
 * Everything the settlement benchmark runs against, started here and stopped by `stop()` in
 * reverse order (also after a failed start): a fresh migrated database, a Temporal dev server
 * (headless, in memory, free port), the service's worker (every workflow and activity, the
 * activities timed by the probes) and a second worker for the bench-only bare workflows on their
 * own task queue, the real app (`buildApp`) listening on 127.0.0.1 with two bench-only routes,
 * and the gateway simulator, each pointed at the other as in test/support/settlement.ts.
 */

export const bareOpenPath = '/bench/bare/open';
export const bareWebhookPath = '/bench/bare/webhook';

export interface BenchServices {
  databaseName: string;
  databaseUrl: string;
  /** The app's pool (API requests and the bare routes). */
  pool: Pool;
  /** The workers' pool (activities). */
  workerPool: Pool;
  config: Config;
  /** The app's Temporal client (instrumented by the probes). */
  temporal: Client;
  /** A second client for the load driver's waits on workflow results. */
  driverTemporal: Client;
  devServer: DevServer;
  temporalCli: string;
  app: FastifyInstance;
  baseUrl: string;
  simulator: Simulator;
  taskQueue: string;
  bareTaskQueue: string;
  adminHeaders: Record<string, string>;
  stop(): Promise<void>;
}

export interface ServiceOptions {
  adminUrl: string;
  log: (line: string) => void;
  probes: Probes;
  appPoolMax: number;
  workerPoolMax: number;
  validationDelayMs: number;
  /** METRICS_ENABLED of the app, its gateway client and the worker's (docs/benchmarks.md, "Metrics"). */
  metrics?: boolean;
}

export async function startServices(options: ServiceOptions): Promise<BenchServices> {
  const { log, probes } = options;
  const cleanups = cleanupStack(log);
  const stop = () => cleanups.stop();

  try {
    const { name: databaseName, url } = await createBenchDatabase(options.adminUrl, 'plc_bench_settlement', cleanups);
    const pool = createPool({ connectionString: url, max: options.appPoolMax, applicationName: 'bench-settlement-api' });
    cleanups.push({ name: 'app pool', run: () => pool.end() });
    const workerPool = createPool({ connectionString: url, max: options.workerPoolMax, applicationName: 'bench-settlement-worker' });
    cleanups.push({ name: 'worker pool', run: () => workerPool.end() });
    const applied = await applyMigrations(pool);
    await pool.query(bareTableDdl);
    log(`database ${databaseName}: ${applied.length} migrations applied`);

    const { devServer, cliPath } = await startBenchDevServer(log, cleanups);
    log(`Temporal dev server (${cliPath}) on ${devServer.address}, in memory, headless`);

    const simulatorPort = await freePort();
    const webhookToken = `bench-token-${randomUUID()}`;
    const gatewayApiKey = 'bench-api-key';
    const taskQueue = `bench-settlement-${randomUUID()}`;
    const bareTaskQueue = `bench-settlement-bare-${randomUUID()}`;
    const config = loadConfig({
      APP_ENV: 'test',
      LOG_LEVEL: 'silent',
      DATABASE_URL: url,
      TEMPORAL_ADDRESS: devServer.address,
      TEMPORAL_TASK_QUEUE: taskQueue,
      JWT_SECRET: randomBytes(32).toString('hex'),
      API_DOCS_ENABLED: 'false',
      GATEWAY_BASE_URL: `http://127.0.0.1:${simulatorPort}`,
      GATEWAY_API_KEY: gatewayApiKey,
      GATEWAY_WEBHOOK_TOKEN: webhookToken,
      RATE_LIMIT_PLC_PER_MINUTE: '1000000',
      RATE_LIMIT_TRANSFER_PER_MINUTE: '1000000',
      RATE_LIMIT_REDEEM_PER_MINUTE: '1000000',
      PLC_DAILY_LIMIT_MINOR: String(10n ** 15n),
      METRICS_ENABLED: options.metrics === false ? 'false' : 'true',
      // The setup's PLC creates go through Temporal; on a loaded shared machine a workflow's first
      // task may take seconds (the tests do the same).
      TEMPORAL_CALL_TIMEOUT_MS: '30000',
    });
    // As in production, the API and the worker each have their metrics (here in one process, so
    // both hear every committed fact: the cost measured is, if anything, above a real one's).
    const apiMetrics = config.METRICS_ENABLED ? createServiceMetrics({ process: 'api', database: metricsDatabaseReaders(pool) }) : null;
    const workerMetrics = config.METRICS_ENABLED ? createServiceMetrics({ process: 'worker' }) : null;
    cleanups.push({ name: 'metrics', run: async () => [apiMetrics, workerMetrics].forEach((metrics) => metrics?.close()) });
    const gateway = configuredGatewayClient(config, workerMetrics, probes.gatewayFetch());

    Runtime.install({ logger: new DefaultLogger('WARN') });
    const workerConnection = await NativeConnection.connect({ address: devServer.address });
    cleanups.push({ name: 'worker connection', run: () => workerConnection.close() });

    // The bench's emulated gateway for the bare flow: once the payout row is in, the webhook is
    // POSTed to the bare webhook route after the same delay the simulator's validation waits.
    let appUrl: string | null = null;
    const sendBareWebhook = (id: string): void => {
      setTimeout(() => {
        if (appUrl === null) return;
        const start = nowMs();
        const eventId = `evt_${randomBytes(16).toString('hex')}`;
        fetch(`${appUrl}${bareWebhookPath}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ id, event_id: eventId }),
        })
          .then(async (response) => {
            await response.body?.cancel();
            probes.bareProbe(id).webhook = { start, end: nowMs(), eventId };
            if (response.status !== 200) log(`  bare webhook for ${id} answered ${response.status}`);
          })
          .catch((error: unknown) => log(`  bare webhook for ${id} failed: ${error instanceof Error ? error.message : String(error)}`));
      }, options.validationDelayMs);
    };

    const bundleStarted = performance.now();
    // The service's worker as worker/create-worker.ts builds it, with the activities timed.
    // The worker process's two workers (worker/create-worker.ts, createWorkerPair) from one bundle:
    // the main task queue, and the PLC workflows' own with its small sticky cache.
    const { code } = await bundleWorkflowCode({ workflowsPath, logger: new DefaultLogger('WARN') });
    const serviceWorker = (queue: string, cache: number | undefined) =>
      Worker.create({
        connection: workerConnection,
        namespace: config.TEMPORAL_NAMESPACE,
        taskQueue: queue,
        workflowBundle: { code },
        activities: probes.wrapActivities(
          createActivities({ pool: workerPool, gateway, temporal: new Client({ connection: workerConnection, namespace: config.TEMPORAL_NAMESPACE }) }),
        ),
        shutdownGraceTime: 2000,
        ...(cache === undefined ? {} : { maxCachedWorkflows: cache }),
      });
    const worker = await serviceWorker(taskQueue, config.TEMPORAL_MAX_CACHED_WORKFLOWS);
    const plcWorker = await serviceWorker(plcTaskQueueOf(config), config.TEMPORAL_PLC_MAX_CACHED_WORKFLOWS);
    const bareWorker = await Worker.create({
      connection: workerConnection,
      namespace: config.TEMPORAL_NAMESPACE,
      taskQueue: bareTaskQueue,
      workflowsPath: fileURLToPath(new URL('./bare-workflow.ts', import.meta.url)),
      activities: probes.wrapActivities(createBareActivities({ pool: workerPool, onPayout: sendBareWebhook })),
      shutdownGraceTime: 2000,
    });
    for (const [name, w] of [
      ['worker', worker],
      ['PLC worker', plcWorker],
      ['bare worker', bareWorker],
    ] as const) {
      const running = w.run();
      cleanups.push({
        name,
        run: async () => {
          if (w.getState() === 'RUNNING') w.shutdown();
          await running;
        },
      });
    }
    log(`workers started (service + bare, workflows bundled in ${((performance.now() - bundleStarted) / 1000).toFixed(1)} s)`);

    const connection = await Connection.connect({ address: devServer.address });
    cleanups.push({ name: 'client connection', run: () => connection.close() });
    const temporal = new Client({ connection, namespace: config.TEMPORAL_NAMESPACE });
    probes.instrumentClient(temporal);
    const driverConnection = await Connection.connect({ address: devServer.address });
    cleanups.push({ name: 'driver connection', run: () => driverConnection.close() });
    const driverTemporal = new Client({ connection: driverConnection, namespace: config.TEMPORAL_NAMESPACE });

    const app = await buildApp({ deps: { config, pool, temporal, gateway }, logger: false, metrics: apiMetrics });
    cleanups.push({ name: 'app', run: () => app.close() });
    // Bench-only routes on the same app instance: the bare settlement, driven like a redemption.
    app.post(bareOpenPath, async (request) => {
      const id = field(request.body, 'id');
      await temporal.workflow.executeUpdateWithStart(bareOpenUpdate, {
        args: [{ id }],
        startWorkflowOperation: new WithStartWorkflowOperation(bareSettlementWorkflow, {
          workflowId: `bare-${id}`,
          taskQueue: bareTaskQueue,
          args: [{ id }],
          workflowIdConflictPolicy: 'FAIL',
        }),
      });
      return { id, workflow_id: `bare-${id}` };
    });
    app.post(bareWebhookPath, async (request) => {
      const id = field(request.body, 'id');
      const eventId = field(request.body, 'event_id');
      // The inbox row of the real webhook route, then the webhook workflow.
      await insertBareRow(pool, id, 'inbox');
      await temporal.workflow.start(bareWebhookWorkflow, {
        workflowId: `bare-webhook-${eventId}`,
        taskQueue: bareTaskQueue,
        args: [{ id, eventId }],
      });
      return { received: true, event_id: eventId };
    });
    const baseUrl = await app.listen({ host: '127.0.0.1', port: 0 });
    appUrl = baseUrl;
    log(`app listening on ${baseUrl}`);

    const simulator = await createSimulator({
      host: '127.0.0.1',
      port: simulatorPort,
      apiKey: gatewayApiKey,
      webhookUrl: `${baseUrl}/api/v1/redemption/webhook/gateway`,
      validationUrl: `${baseUrl}/api/v1/webhooks/transfer/validate`,
      webhookToken,
      validationDelayMs: options.validationDelayMs,
      autoSettle: true,
      webhookRetryBaseMs: 50,
      webhookRetryMaxMs: 500,
      seed: 42,
      fetch: probes.simulatorFetch(),
    });
    cleanups.push({ name: 'simulator', run: () => simulator.close() });
    await simulator.listen();
    log(`gateway simulator on ${simulator.url ?? '?'} (validation delay ${options.validationDelayMs} ms, auto-settle on, no faults)`);

    const username = `bench-${randomBytes(4).toString('hex')}`;
    const password = `pw-${randomBytes(12).toString('hex')}`;
    await ensureAdminUser(pool, { username, passwordHash: await hashPassword(password), role: 'admin' });
    const login = await app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { username, password } });
    if (login.statusCode !== 200) throw new Error(`admin login answered ${login.statusCode}: ${login.body}`);
    const adminHeaders = { authorization: `Bearer ${(login.json() as { access_token: string }).access_token}` };

    return {
      databaseName,
      databaseUrl: url,
      pool,
      workerPool,
      config,
      temporal,
      driverTemporal,
      devServer,
      temporalCli: cliPath,
      app,
      baseUrl,
      simulator,
      taskQueue,
      bareTaskQueue,
      adminHeaders,
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}

function field(body: unknown, key: string): string {
  const value = typeof body === 'object' && body !== null ? (body as Record<string, unknown>)[key] : undefined;
  if (typeof value !== 'string' || !/^[A-Za-z0-9_-]{1,100}$/.test(value)) throw new Error(`bench route: ${key} must be a short id`);
  return value;
}
