import { fork, type ChildProcess } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { Client, Connection } from '@temporalio/client';
import { DefaultLogger, NativeConnection, Runtime, Worker } from '@temporalio/worker';
import { applyMigrations } from '../../db/migrate.ts';
import { createPool, type Pool } from '../../db/pool.ts';
import { createGatewayClient } from '../../gateway/index.ts';
import { loadConfig, plcTaskQueueOf, type Config } from '../../infra/config.ts';
import type { DevServer } from '../../infra/temporal-dev-server.ts';
import { cleanupStack, createBenchDatabase, startBenchDevServer, type Cleanups } from '../support/services.ts';
import { createWorkerPair } from '../../worker/create-worker.ts';
import type { ApiProcessSettings, ApiRequest } from './api-process.ts';
import { bareTable, createBareActivities } from './bare-activity.ts';

/**
 * Everything parts (b) and (c) of the protocol benchmark run against, started here and stopped
 * by `stop()` in reverse order (also after a failed start): a fresh migrated database, a Temporal
 * dev server (headless, in memory, free port), the service's two workers (main and PLC task queues) plus a worker for the
 * bench-only bare workflow (in this process), and the real app (`buildApp`) in a process of its
 * own (api-process.ts, as the API runs apart from the workers when deployed), listening on
 * 127.0.0.1, port 0, with rate limits raised out of the way and one bench-only baseline route.
 */

export const baselineTable = 'bench_baseline_rows';
export const baselinePath = '/bench/baseline';
export const floorPath = '/bench/floor';

/** The API process, seen from the bench. */
export interface ApiProcess {
  pid: number;
  /** Asks the API process about itself (api-process.ts). */
  ask<T>(request: ApiRequest): Promise<T>;
}

export interface BenchServices {
  databaseName: string;
  /** The bench's own pool (setup, counts, outbox waits); the API process has its own. */
  pool: Pool;
  /** The workers' pool (activities). */
  workerPool: Pool;
  config: Config;
  temporal: Client;
  devServer: DevServer;
  temporalCli: string;
  api: ApiProcess;
  baseUrl: string;
  /** With `metricsAb`: a second API process on the same database with METRICS_ENABLED=false (the first keeps its metrics on). */
  apiWithoutMetrics?: { api: ApiProcess; baseUrl: string } | undefined;
  taskQueue: string;
  bareTaskQueue: string;
  /** Starts one more API process (a replica: same settings, same database; stopped by `stop()`). */
  startReplica(): Promise<{ api: ApiProcess; baseUrl: string }>;
  stop(): Promise<void>;
}

export interface ServiceOptions {
  adminUrl: string;
  log: (line: string) => void;
  /** The API process's pool. */
  appPoolMax: number;
  workerPoolMax: number;
  /** PLC_STATUS_YIELD_UTILIZATION for the API process; the service's default when absent. */
  statusYieldUtilization?: number | undefined;
  /** Both workers' sticky cache (TEMPORAL_MAX_CACHED_WORKFLOWS); the SDK's default when absent. */
  workerCache?: number | undefined;
  /** Also start an API process with METRICS_ENABLED=false, for the metrics' cost (docs/benchmarks.md). */
  metricsAb?: boolean;
  /** PLC_CHAIN_MEMO_MAX for the API processes (0: no memo of registered chains); the service's default when absent. */
  chainMemo?: number | undefined;
}

export async function startServices(options: ServiceOptions): Promise<BenchServices> {
  const { log } = options;
  const cleanups = cleanupStack(log);
  const stop = () => cleanups.stop();

  try {
    const { name: databaseName, url } = await createBenchDatabase(options.adminUrl, 'plc_bench_protocol', cleanups);
    const pool = createPool({ connectionString: url, max: 4, applicationName: 'bench-protocol' });
    cleanups.push({ name: 'bench pool', run: () => pool.end() });
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
    const configEnv: Record<string, string> = {
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
      RATE_LIMIT_B2B_PER_MINUTE: '1000000',
      PLC_DAILY_LIMIT_MINOR: String(10n ** 15n),
      // Idle, the dev server takes 40 status signals a second (it saturates near 45 workflow
      // tasks/s); the default 20 would make draining a run's first hops take twice as long.
      PLC_STATUS_MAX_PER_SECOND: '40',
      // The preparation creates thousands of PLCs through the API: on a loaded machine the
      // update-with-start can take longer than the default 5 s, which would fail the run.
      TEMPORAL_CALL_TIMEOUT_MS: '30000',
      ...(options.statusYieldUtilization === undefined ? {} : { PLC_STATUS_YIELD_UTILIZATION: String(options.statusYieldUtilization) }),
      ...(options.chainMemo === undefined ? {} : { PLC_CHAIN_MEMO_MAX: String(options.chainMemo) }),
    };
    const config = loadConfig(configEnv);
    const gateway = createGatewayClient({ baseUrl: config.GATEWAY_BASE_URL, apiKey: config.GATEWAY_API_KEY, timeoutMs: config.GATEWAY_TIMEOUT_MS });

    Runtime.install({ logger: new DefaultLogger('WARN') });
    const workerConnection = await NativeConnection.connect({ address: devServer.address });
    cleanups.push({ name: 'worker connection', run: () => workerConnection.close() });
    const bundleStarted = performance.now();
    const cache = options.workerCache === undefined ? {} : { maxCachedWorkflows: options.workerCache };
    // The worker process's two workers (worker/main.ts): the main task queue and the PLC
    // workflows' own, whose sticky cache is TEMPORAL_PLC_MAX_CACHED_WORKFLOWS unless --worker-cache says.
    const pair = await createWorkerPair({
      connection: workerConnection,
      namespace: config.TEMPORAL_NAMESPACE,
      taskQueue,
      pool: workerPool,
      gateway,
      shutdownGraceTimeMs: 2000,
      ...cache,
      plcTaskQueue: plcTaskQueueOf(config),
      plcMaxCachedWorkflows: options.workerCache ?? config.TEMPORAL_PLC_MAX_CACHED_WORKFLOWS,
    });
    const worker = pair.main;
    const bareWorker = await Worker.create({
      connection: workerConnection,
      namespace: config.TEMPORAL_NAMESPACE,
      taskQueue: bareTaskQueue,
      workflowsPath: fileURLToPath(new URL('./bare-workflow.ts', import.meta.url)),
      activities: createBareActivities({ pool: workerPool }),
      shutdownGraceTime: 2000,
      ...cache,
    });
    for (const [name, w] of [['worker', worker], ['PLC worker', pair.plc], ['bare worker', bareWorker]] as const) {
      const running = w.run();
      cleanups.push({
        name,
        run: async () => {
          if (w.getState() === 'RUNNING') w.shutdown();
          await running;
        },
      });
    }
    log(`workers started (service + bare, workflows bundled in ${((performance.now() - bundleStarted) / 1000).toFixed(1)} s; sticky cache ${worker.options.maxCachedWorkflows} workflows each, the PLC worker's ${pair.plc.options.maxCachedWorkflows})`);

    const connection = await Connection.connect({ address: devServer.address });
    cleanups.push({ name: 'client connection', run: () => connection.close() });
    const temporal = new Client({ connection, namespace: config.TEMPORAL_NAMESPACE });

    const apiSettings: ApiProcessSettings = { env: configEnv, poolMax: options.appPoolMax, baselineTable, baselinePath, floorPath };
    const { api, baseUrl: address } = await startApiProcess(apiSettings, cleanups);
    log(`app listening on ${address} (API process ${api.pid})`);
    let apiWithoutMetrics: { api: ApiProcess; baseUrl: string } | undefined;
    if (options.metricsAb === true) {
      apiWithoutMetrics = await startApiProcess({ ...apiSettings, env: { ...configEnv, METRICS_ENABLED: 'false' } }, cleanups);
      log(`app without metrics listening on ${apiWithoutMetrics.baseUrl} (API process ${apiWithoutMetrics.api.pid})`);
    }

    return {
      databaseName,
      pool,
      workerPool,
      config,
      temporal,
      devServer,
      temporalCli: cliPath,
      api,
      baseUrl: address,
      apiWithoutMetrics,
      taskQueue,
      bareTaskQueue,
      startReplica: () => startApiProcess(apiSettings, cleanups),
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}

const apiProcessPath = fileURLToPath(new URL('./api-process.ts', import.meta.url));

/** Forks the API process and waits (at most 60 s) until it listens. */
async function startApiProcess(settings: ApiProcessSettings, cleanups: Cleanups): Promise<{ api: ApiProcess; baseUrl: string }> {
  const child: ChildProcess = fork(apiProcessPath, [], {
    env: { ...process.env, BENCH_API_SETTINGS: JSON.stringify(settings) },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const pending = new Map<number, { resolve: (value: unknown) => void; reject: (error: Error) => void }>();
  let nextId = 1;
  const exited = new Promise<never>((_, reject) => {
    child.once('exit', (code, signal) => {
      const error = new Error(`the API process exited (code ${code}, signal ${signal})`);
      for (const waiter of pending.values()) waiter.reject(error);
      pending.clear();
      reject(error);
    });
  });
  exited.catch(() => {});
  const ready = new Promise<string>((resolve) => {
    child.on('message', (message: { ready?: boolean; baseUrl?: string; id?: number; value?: unknown; error?: string }) => {
      if (message.ready === true && message.baseUrl !== undefined) resolve(message.baseUrl);
      if (message.id === undefined) return;
      const waiter = pending.get(message.id);
      pending.delete(message.id);
      if (message.error !== undefined) waiter?.reject(new Error(`API process: ${message.error}`));
      else waiter?.resolve(message.value);
    });
  });
  const api: ApiProcess = {
    pid: child.pid as number,
    ask: <T>(request: ApiRequest) =>
      new Promise<T>((resolve, reject) => {
        const id = nextId++;
        pending.set(id, { resolve: resolve as (value: unknown) => void, reject });
        child.send({ id, request });
      }),
  };
  cleanups.push({
    name: 'API process',
    run: async () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const gone = new Promise((resolve) => child.once('exit', resolve));
      await Promise.race([api.ask({ type: 'close' }).catch(() => {}), new Promise((resolve) => setTimeout(resolve, 10_000))]);
      child.kill('SIGTERM');
      await gone;
    },
  });
  const timeout = new Promise<never>((_, reject) => setTimeout(() => reject(new Error('the API process did not listen within 60 s')), 60_000).unref());
  const baseUrl = await Promise.race([ready, exited, timeout]);
  return { api, baseUrl };
}
