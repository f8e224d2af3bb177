import { randomBytes, randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { Client, Connection } from '@temporalio/client';
import { DefaultLogger, NativeConnection, Runtime, Worker } from '@temporalio/worker';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../api/app.ts';
import { applyMigrations } from '../../db/migrate.ts';
import { createPool, type Pool } from '../../db/pool.ts';
import { createGatewayClient } from '../../gateway/index.ts';
import { loadConfig, type Config } from '../../infra/config.ts';
import type { DevServer } from '../../infra/temporal-dev-server.ts';
import { cleanupStack, createBenchDatabase, startBenchDevServer } from '../support/services.ts';
import { createWorker } from '../../worker/create-worker.ts';
import { bareTable, createBareActivities } from './bare-activity.ts';

/**
 * Everything parts (b) and (c) of the protocol benchmark run against, started here and stopped
 * by `stop()` in reverse order (also after a failed start): a fresh migrated database, a Temporal
 * dev server (headless, in memory, free port), the service's worker plus a second worker for the
 * bench-only bare workflow, and the real app (`buildApp`) listening on 127.0.0.1, port 0, with
 * rate limits raised out of the way and one bench-only baseline route.
 */

export const baselineTable = 'bench_baseline_rows';
export const baselinePath = '/bench/baseline';

export interface BenchServices {
  databaseName: string;
  /** The app's pool (API requests and the baseline route). */
  pool: Pool;
  /** The workers' pool (activities). */
  workerPool: Pool;
  config: Config;
  temporal: Client;
  devServer: DevServer;
  temporalCli: string;
  app: FastifyInstance;
  baseUrl: string;
  taskQueue: string;
  bareTaskQueue: string;
  stop(): Promise<void>;
}

export interface ServiceOptions {
  adminUrl: string;
  log: (line: string) => void;
  appPoolMax: number;
  workerPoolMax: number;
}

export async function startServices(options: ServiceOptions): Promise<BenchServices> {
  const { log } = options;
  const cleanups = cleanupStack(log);
  const stop = () => cleanups.stop();

  try {
    const { name: databaseName, url } = await createBenchDatabase(options.adminUrl, 'plc_bench_protocol', cleanups);
    const pool = createPool({ connectionString: url, max: options.appPoolMax, applicationName: 'bench-protocol-api' });
    cleanups.push({ name: 'app pool', run: () => pool.end() });
    const workerPool = createPool({ connectionString: url, max: options.workerPoolMax, applicationName: 'bench-protocol-worker' });
    cleanups.push({ name: 'worker pool', run: () => workerPool.end() });
    const applied = await applyMigrations(pool);
    await pool.query(`CREATE TABLE ${baselineTable} (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, device_id text NOT NULL, created_at timestamptz NOT NULL DEFAULT now())`);
    await pool.query(`CREATE TABLE ${bareTable} (id text PRIMARY KEY, created_at timestamptz NOT NULL DEFAULT now())`);
    log(`database ${databaseName}: ${applied.length} migrations applied`);

    const { devServer, cliPath } = await startBenchDevServer(log, cleanups);
    log(`Temporal dev server (${cliPath}) on ${devServer.address}, in memory`);

    const taskQueue = `bench-protocol-${randomUUID()}`;
    const bareTaskQueue = `bench-bare-${randomUUID()}`;
    const config = loadConfig({
      APP_ENV: 'test',
      LOG_LEVEL: 'silent',
      DATABASE_URL: url,
      TEMPORAL_ADDRESS: devServer.address,
      TEMPORAL_TASK_QUEUE: taskQueue,
      JWT_SECRET: randomBytes(32).toString('hex'),
      API_DOCS_ENABLED: 'false',
      RATE_LIMIT_PLC_PER_MINUTE: '1000000',
      RATE_LIMIT_TRANSFER_PER_MINUTE: '1000000',
      RATE_LIMIT_REDEEM_PER_MINUTE: '1000000',
      PLC_DAILY_LIMIT_MINOR: String(10n ** 15n),
      // Idle, the dev server takes 40 status signals a second (it saturates near 45 workflow
      // tasks/s); the default 20 would make draining a run's first hops take twice as long.
      PLC_STATUS_MAX_PER_SECOND: '40',
    });
    const gateway = createGatewayClient({ baseUrl: config.GATEWAY_BASE_URL, apiKey: config.GATEWAY_API_KEY, timeoutMs: config.GATEWAY_TIMEOUT_MS });

    Runtime.install({ logger: new DefaultLogger('WARN') });
    const workerConnection = await NativeConnection.connect({ address: devServer.address });
    cleanups.push({ name: 'worker connection', run: () => workerConnection.close() });
    const bundleStarted = performance.now();
    const worker = await createWorker({ connection: workerConnection, namespace: config.TEMPORAL_NAMESPACE, taskQueue, pool: workerPool, gateway, shutdownGraceTimeMs: 2000 });
    const bareWorker = await Worker.create({
      connection: workerConnection,
      namespace: config.TEMPORAL_NAMESPACE,
      taskQueue: bareTaskQueue,
      workflowsPath: fileURLToPath(new URL('./bare-workflow.ts', import.meta.url)),
      activities: createBareActivities({ pool: workerPool }),
      shutdownGraceTime: 2000,
    });
    for (const [name, w] of [['worker', worker], ['bare worker', bareWorker]] as const) {
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

    const app = await buildApp({ deps: { config, pool, temporal, gateway }, logger: false });
    cleanups.push({ name: 'app', run: () => app.close() });
    // Bench-only: the same app instance, one INSERT and nothing else (no schema, no rate limit).
    app.post(baselinePath, async (request) => {
      const device = request.headers['x-device-id'];
      await pool.query({ name: 'bench-baseline-insert', text: `INSERT INTO ${baselineTable} (device_id) VALUES ($1)`, values: [typeof device === 'string' ? device : '-'] });
      return { ok: true };
    });
    const address = await app.listen({ host: '127.0.0.1', port: 0 });
    log(`app listening on ${address}`);

    return {
      databaseName,
      pool,
      workerPool,
      config,
      temporal,
      devServer,
      temporalCli: cliPath,
      app,
      baseUrl: address,
      taskQueue,
      bareTaskQueue,
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}
