import { randomBytes, randomUUID } from 'node:crypto';
import { Client, Connection } from '@temporalio/client';
import { DefaultLogger, NativeConnection, Runtime, type Worker } from '@temporalio/worker';
import type { FastifyInstance } from 'fastify';
import { inject } from 'vitest';
import { buildApp } from '../../api/app.ts';
import { ensureAdminUser, type AdminRole } from '../../db/admin-users.ts';
import { loadConfig, plcTaskQueueOf, type Config } from '../../infra/config.ts';
import { hashPassword } from '../../infra/passwords.ts';
import { createWorkerPair, type CreateWorkerOptions, type WorkerPair } from '../../worker/create-worker.ts';
import { OpenTelemetryWorkflowClientInterceptor } from '@temporalio/interceptors-opentelemetry';
import { createGatewayClient } from '../../gateway/index.ts';
import { pinResetMailFromConfig } from '../../activities/security.ts';
import { createTestDatabase, type TestDatabase } from './db.ts';
import { observeStatuses } from './documented-statuses.ts';
import { issue, plcToJson, type TestWallet } from './wallet.ts';
import type { Plc } from '../../src/protocol/index.ts';

export interface TestApp {
  app: FastifyInstance;
  db: TestDatabase;
  temporal: Client;
  config: Config;
  taskQueue: string;
  /** Starts the worker process's two workers (this app's task queue and its PLC queue); stopped by close(). Returns the main one. */
  startWorker(): Promise<Worker>;
  /** Stops the workers started so far (close() does it too): lets them finish while their dependencies still answer. */
  stopWorkers(): Promise<void>;
  /** Creates an admin user and returns a bearer header for it. */
  adminHeaders(role?: AdminRole): Promise<Record<string, string>>;
  /** An admin deposit through the API (needs a worker: it is booked by a deposit workflow); throws unless 200. */
  deposit(ownerId: string, amount: string, currency?: string): Promise<void>;
  /** Issues a PLC of `amountMinor` (BRL) from `issuer` and registers it through the API from this device; throws unless 200. */
  issuePlc(issuer: TestWallet, amountMinor: bigint, device: Record<string, string>): Promise<Plc>;
  close(): Promise<void>;
}

/**
 * A freshly built app on a database of its own, a Temporal client on the run's dev server and a
 * task queue of its own, so test files never see each other's rows or workflows.
 */
let runtimeInstalled = false;
/** Workers in tests log only errors: expected retries (injected gateway faults) would drown the output. */
export function installQuietRuntime(): void {
  if (runtimeInstalled) return;
  runtimeInstalled = true;
  try {
    Runtime.install({ logger: new DefaultLogger(process.env.TEST_WORKER_LOG_LEVEL === 'debug' ? 'DEBUG' : 'ERROR') });
  } catch {
    // Already installed by an earlier worker in this process.
  }
}

/** What a test changes in how the app and its workers are built (the tracing test: test/e2e/tracing.test.ts). */
export interface TestAppOptions {
  /** Traces: the client's and the worker's OpenTelemetry interceptors, with this span sink. */
  tracing?: CreateWorkerOptions['tracing'];
  /** A workflow bundle of the test's own (with the tracing interceptors) instead of the run's. */
  workflowBundlePath?: string;
}

export async function createTestApp(overrides: Record<string, string> = {}, options: TestAppOptions = {}): Promise<TestApp> {
  const db = await createTestDatabase();
  const taskQueue = `test-${randomUUID()}`;
  const config = loadConfig({
    APP_ENV: 'test',
    LOG_LEVEL: 'silent',
    DATABASE_URL: db.url,
    TEMPORAL_ADDRESS: inject('temporalAddress'),
    TEMPORAL_TASK_QUEUE: taskQueue,
    JWT_SECRET: randomBytes(32).toString('hex'),
    PIN_PEPPER: randomBytes(32).toString('hex'),
    // A test machine runs many test files at once: a workflow's first task may take seconds
    // there. The fail-fast bounds are tested on their own (test/api/dependency-outage.test.ts).
    TEMPORAL_CALL_TIMEOUT_MS: '30000',
    // The other test files keep the machine's CPUs busy: the statuses a test waits for must not
    // wait for them. The yield is tested on its own (test/workflows/plc-status-outbox.test.ts,
    // test/api/plc-status-busy.test.ts).
    PLC_STATUS_YIELD_TO_HOST: 'false',
    ...overrides,
  });
  const connection = await Connection.connect({ address: inject('temporalAddress') });
  const temporal = new Client({
    connection,
    namespace: config.TEMPORAL_NAMESPACE,
    ...(options.tracing === undefined || options.tracing === null ? {} : { interceptors: { workflow: [new OpenTelemetryWorkflowClientInterceptor()] } }),
  });
  const gateway = createGatewayClient({ baseUrl: config.GATEWAY_BASE_URL, apiKey: config.GATEWAY_API_KEY, timeoutMs: config.GATEWAY_TIMEOUT_MS });
  const app = await buildApp({ deps: { config, pool: db.pool, temporal, gateway }, logger: false });
  const statuses = observeStatuses(app);
  const workers: { pair: WorkerPair; running: Promise<void>; connection: NativeConnection }[] = [];
  let depositHeaders: Promise<Record<string, string>> | undefined;

  const testApp: TestApp = {
    app,
    db,
    temporal,
    config,
    taskQueue,
    async startWorker() {
      installQuietRuntime();
      const workerConnection = await NativeConnection.connect({ address: inject('temporalAddress') });
      const pair = await createWorkerPair({
        connection: workerConnection,
        namespace: config.TEMPORAL_NAMESPACE,
        taskQueue,
        pool: db.pool,
        gateway,
        mail: pinResetMailFromConfig(config),
        workflowBundlePath: options.workflowBundlePath ?? inject('workflowBundlePath'),
        tracing: options.tracing ?? null,
        shutdownGraceTimeMs: 2000,
        maxCachedWorkflows: config.TEMPORAL_MAX_CACHED_WORKFLOWS,
        plcTaskQueue: plcTaskQueueOf(config),
        plcMaxCachedWorkflows: config.TEMPORAL_PLC_MAX_CACHED_WORKFLOWS,
      });
      workers.push({ pair, running: pair.run(), connection: workerConnection });
      return pair.main;
    },
    async adminHeaders(role: AdminRole = 'admin') {
      const username = `${role}-${randomBytes(4).toString('hex')}`;
      const password = `pw-${randomBytes(12).toString('hex')}`;
      await ensureAdminUser(db.pool, { username, passwordHash: await hashPassword(password), role });
      const response = await app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { username, password } });
      const token = (response.json() as { access_token: string }).access_token;
      return { authorization: `Bearer ${token}` };
    },
    async deposit(ownerId: string, amount: string, currency = 'BRL') {
      depositHeaders ??= testApp.adminHeaders();
      const response = await app.inject({
        method: 'POST',
        url: '/api/v1/balance/deposit',
        headers: { ...(await depositHeaders), 'idempotency-key': randomUUID() },
        payload: { owner_id: ownerId, amount, currency },
      });
      if (response.statusCode !== 200) throw new Error(`deposit of ${amount} ${currency} to ${ownerId} answered ${response.statusCode}: ${response.body}`);
    },
    async issuePlc(issuer: TestWallet, amountMinor: bigint, device: Record<string, string>) {
      const plc = issue(issuer, { amountMinor });
      const response = await app.inject({ method: 'POST', url: '/api/v1/plc/create', headers: device, payload: { plc: plcToJson(plc) } });
      if (response.statusCode !== 200) throw new Error(`creating a PLC of ${amountMinor} answered ${response.statusCode}: ${response.body}`);
      return plc;
    },
    async stopWorkers() {
      for (const entry of workers.splice(0)) {
        entry.pair.shutdown();
        await entry.running;
        await entry.connection.close();
      }
    },
    async close() {
      let undocumented: unknown;
      try {
        statuses.assertDocumented();
      } catch (error) {
        undocumented = error;
      }
      await testApp.stopWorkers();
      await app.close();
      await connection.close();
      await db.drop();
      // After the cleanup, so a failing file still releases what it holds.
      if (undocumented !== undefined) throw undocumented;
    },
  };
  return testApp;
}
