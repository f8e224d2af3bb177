import { randomBytes, randomUUID } from 'node:crypto';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection } from '@temporalio/worker';
import type { FastifyInstance, InjectOptions } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { buildApp } from '../../api/app.ts';
import { ensureAdminUser } from '../../db/admin-users.ts';
import { createPool, type Pool } from '../../db/pool.ts';
import { createGatewayClient } from '../../gateway/index.ts';
import { loadConfig, plcTaskQueueOf } from '../../infra/config.ts';
import { hashPassword } from '../../infra/passwords.ts';
import { createWorkerPair, type WorkerPair } from '../../worker/create-worker.ts';
import { installQuietRuntime } from '../support/app.ts';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';
import { startPausableProxy, type PausableProxy } from '../support/pausable-proxy.ts';
import { hop, issue, newWallet, plcToJson } from '../support/wallet.ts';

/**
 * Fail fast, say why, recover by itself (issue 17, item 4). The API reaches PostgreSQL and
 * Temporal through proxies the test freezes (nothing forwarded, nothing refused: what a stopped
 * process or a black-holed network looks like); the worker talks to both directly. While a
 * dependency is frozen, requests that need it answer 503 with Retry-After and a code naming it,
 * within the configured bounds; /readyz reports each dependency on its own; once the freeze ends,
 * the same requests succeed again with no restart, and nothing is booked twice.
 */
const bounds = {
  DATABASE_CONNECT_TIMEOUT_MS: 500,
  DATABASE_STATEMENT_TIMEOUT_MS: 1000,
  TEMPORAL_CALL_TIMEOUT_MS: 1500,
  READINESS_TIMEOUT_MS: 400,
  DEPENDENCY_RETRY_AFTER_SECONDS: 3,
};
/** The client's own wait for a statement: the statement timeout plus db/pool.ts's grace. */
const queryWaitMs = bounds.DATABASE_STATEMENT_TIMEOUT_MS + 1000;
/** Scheduling slack on a loaded two-CPU machine. */
const slackMs = 2500;

let db: TestDatabase;
let pgProxy: PausableProxy;
let temporalProxy: PausableProxy;
let appPool: Pool;
let connection: Connection;
let app: FastifyInstance;
let worker: { worker: WorkerPair; running: Promise<void>; connection: NativeConnection };
let admin: Record<string, string>;

beforeAll(async () => {
  db = await createTestDatabase();
  const dbUrl = new URL(db.url);
  pgProxy = await startPausableProxy({ host: dbUrl.hostname, port: Number(dbUrl.port || 5432) });
  const [temporalHost, temporalPort] = inject('temporalAddress').split(':') as [string, string];
  temporalProxy = await startPausableProxy({ host: temporalHost, port: Number(temporalPort) });
  const taskQueue = `test-${randomUUID()}`;
  const config = loadConfig({
    APP_ENV: 'test',
    LOG_LEVEL: 'silent',
    JWT_SECRET: randomBytes(32).toString('hex'),
    TEMPORAL_TASK_QUEUE: taskQueue,
    ...Object.fromEntries(Object.entries(bounds).map(([key, value]) => [key, String(value)])),
  });
  const proxiedUrl = new URL(db.url);
  proxiedUrl.host = pgProxy.address;
  appPool = createPool({
    connectionString: proxiedUrl.toString(),
    max: 10,
    applicationName: 'test-outage',
    connectTimeoutMs: config.DATABASE_CONNECT_TIMEOUT_MS,
    statementTimeoutMs: config.DATABASE_STATEMENT_TIMEOUT_MS,
  });
  connection = await Connection.connect({ address: temporalProxy.address });
  const temporal = new Client({ connection, namespace: config.TEMPORAL_NAMESPACE });
  const gateway = createGatewayClient({ baseUrl: 'http://127.0.0.1:9', apiKey: 'k', timeoutMs: 500 });
  app = await buildApp({ deps: { config, pool: appPool, temporal, gateway }, logger: false });
  installQuietRuntime();
  const workerConnection = await NativeConnection.connect({ address: inject('temporalAddress') });
  const created = await createWorkerPair({
    connection: workerConnection,
    namespace: config.TEMPORAL_NAMESPACE,
    taskQueue,
    pool: db.pool,
    gateway,
    workflowBundlePath: inject('workflowBundlePath'),
    shutdownGraceTimeMs: 1000,
    plcTaskQueue: plcTaskQueueOf(config),
    plcMaxCachedWorkflows: config.TEMPORAL_PLC_MAX_CACHED_WORKFLOWS,
  });
  worker = { worker: created, running: created.run(), connection: workerConnection };
  const username = `admin-${randomBytes(4).toString('hex')}`;
  const password = `pw-${randomBytes(12).toString('hex')}`;
  await ensureAdminUser(db.pool, { username, passwordHash: await hashPassword(password), role: 'admin' });
  const login = await app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { username, password } });
  admin = { authorization: `Bearer ${(login.json() as { access_token: string }).access_token}` };
});

afterAll(async () => {
  pgProxy?.resume();
  temporalProxy?.resume();
  if (worker !== undefined) {
    worker.worker.shutdown();
    await worker.running;
    await worker.connection.close();
  }
  await app?.close();
  await connection?.close();
  await appPool?.end();
  await pgProxy?.close();
  await temporalProxy?.close();
  await db?.drop();
});

async function timed(request: InjectOptions) {
  const started = performance.now();
  const response = await app.inject(request);
  return { response, ms: performance.now() - started };
}

function deposit(ownerId: string, key: string, amount = '10.00') {
  return timed({
    method: 'POST',
    url: '/api/v1/balance/deposit',
    headers: { ...admin, 'idempotency-key': key },
    payload: { owner_id: ownerId, amount, currency: 'BRL' },
  });
}

function expectOutage(response: { statusCode: number; headers: Record<string, unknown>; json(): unknown }, dependency: 'postgres' | 'temporal'): void {
  expect(response.statusCode).toBe(503);
  expect(response.headers['retry-after']).toBe(String(bounds.DEPENDENCY_RETRY_AFTER_SECONDS));
  expect(response.json()).toMatchObject({
    code: expect.stringMatching(/^DEPENDENCY_(TIMEOUT|UNAVAILABLE)$/),
    details: { dependency, retry_after_s: bounds.DEPENDENCY_RETRY_AFTER_SECONDS },
    request_id: expect.any(String),
  });
}

async function until<T>(attempt: () => Promise<T | undefined>, timeoutMs: number): Promise<{ value: T; ms: number }> {
  const started = performance.now();
  for (;;) {
    const value = await attempt();
    if (value !== undefined) return { value, ms: performance.now() - started };
    if (performance.now() - started > timeoutMs) throw new Error(`not recovered within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

describe('PostgreSQL frozen', () => {
  it('answers 503 naming PostgreSQL within its bounds, readiness says so, and everything works again once it thaws', async () => {
    const owner = `outage-${randomUUID()}`;
    expect((await deposit(owner, randomUUID())).response.statusCode).toBe(200);
    expect((await timed({ method: 'GET', url: `/api/v1/balance/${owner}` })).response.statusCode).toBe(200);

    pgProxy.pause();
    const frozenAt = performance.now();
    // A read on a pooled connection: the client stops waiting for the frozen server.
    const first = await timed({ method: 'GET', url: `/api/v1/balance/${owner}` });
    expectOutage(first.response, 'postgres');
    expect(first.response.json()).toMatchObject({ code: 'DEPENDENCY_TIMEOUT' });
    expect(first.ms).toBeLessThan(queryWaitMs + slackMs);
    // Many at once, through the rate limiter's shared store too: every one fails fast.
    const burst = await Promise.all([
      ...Array.from({ length: 10 }, () => timed({ method: 'GET', url: `/api/v1/balance/${owner}` })),
      ...Array.from({ length: 10 }, () =>
        timed({ method: 'POST', url: '/api/v1/plc/create', headers: { 'x-device-id': 'device-outage' }, payload: { plc: {} } }),
      ),
    ]);
    for (const { response, ms } of burst) {
      expectOutage(response, 'postgres');
      expect(ms).toBeLessThan(queryWaitMs + slackMs);
    }
    const ready = await timed({ method: 'GET', url: '/readyz' });
    expect(ready.response.statusCode).toBe(503);
    expect(ready.response.json()).toMatchObject({ status: 'not_ready', checks: { postgres: { ok: false }, temporal: { ok: true } } });
    expect(ready.ms).toBeLessThan(bounds.READINESS_TIMEOUT_MS + slackMs);
    expect((await app.inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(200);
    // A deposit needs Temporal, which is up, but reads its admin from PostgreSQL first.
    expectOutage((await deposit(owner, randomUUID())).response, 'postgres');
    const frozenForMs = performance.now() - frozenAt;

    pgProxy.resume();
    const recovered = await until(async () => {
      const { response } = await timed({ method: 'GET', url: `/api/v1/balance/${owner}` });
      return response.statusCode === 200 ? response.json() : undefined;
    }, 10_000);
    expect(recovered.value).toMatchObject({ available: '10.00' });
    expect((await app.inject({ method: 'GET', url: '/readyz' })).statusCode).toBe(200);
    expect((await deposit(owner, randomUUID())).response.statusCode).toBe(200);
    console.info(
      `PostgreSQL frozen ${Math.round(frozenForMs)} ms: first 503 after ${Math.round(first.ms)} ms, a burst of 20 within ${Math.round(Math.max(...burst.map((b) => b.ms)))} ms, ` +
        `readiness ${Math.round(ready.ms)} ms; recovered ${Math.round(recovered.ms)} ms after the thaw`,
    );
  });
});

describe('Temporal frozen', () => {
  it('answers 503 naming Temporal within its bound, keeps serving reads, and books a retried deposit once after the thaw', async () => {
    const owner = `outage-t-${randomUUID()}`;
    const key = randomUUID();
    // A PLC registered before the freeze, to hop while Temporal is frozen.
    const issuer = newWallet();
    expect((await deposit(issuer.pubkey, randomUUID())).response.statusCode).toBe(200);
    const plc = issue(issuer, { amountMinor: 100n });
    const device = { 'x-device-id': 'device-outage' };
    // The PLC worker's first workflow task loads the workflow bundle, which on a loaded machine can
    // take longer than this file's short Temporal bound: the create is retried (it is idempotent).
    await until(async () => {
      const created = await app.inject({ method: 'POST', url: '/api/v1/plc/create', headers: device, payload: { plc: plcToJson(plc) } });
      return created.statusCode === 200 ? true : undefined;
    }, 30_000);
    temporalProxy.pause();
    const frozenAt = performance.now();
    const frozen = await deposit(owner, key);
    expectOutage(frozen.response, 'temporal');
    expect(frozen.response.json()).toMatchObject({ code: 'DEPENDENCY_TIMEOUT' });
    expect(frozen.ms).toBeLessThan(bounds.TEMPORAL_CALL_TIMEOUT_MS + slackMs);
    expect(frozen.ms).toBeGreaterThanOrEqual(bounds.TEMPORAL_CALL_TIMEOUT_MS - 50);
    const burst = await Promise.all(Array.from({ length: 8 }, () => deposit(`outage-t-${randomUUID()}`, randomUUID())));
    for (const { response, ms } of burst) {
      expectOutage(response, 'temporal');
      expect(ms).toBeLessThan(bounds.TEMPORAL_CALL_TIMEOUT_MS + slackMs);
    }
    // What needs only PostgreSQL goes on: reads, and registering a hop (its status for the PLC's
    // workflow waits in the outbox, whose signals fail within their bound and are retried).
    expect((await app.inject({ method: 'GET', url: `/api/v1/balance/${owner}` })).statusCode).toBe(200);
    const hopped = await timed({ method: 'POST', url: '/api/v1/transfer/', headers: device, payload: { plc: plcToJson(hop(plc, issuer, newWallet())) } });
    expect(hopped.response.statusCode).toBe(200);
    // The hop needs nothing of Temporal: a PLC has no workflow of its own to tell (issue 38), so no
    // status signal waits in the outbox for the thaw.
    const outbox = await db.pool.query('SELECT 1 FROM plc_status_outbox WHERE token_id = $1', [plc.commitment.tokenId]);
    expect(outbox.rowCount).toBe(0);
    const ready = await timed({ method: 'GET', url: '/readyz' });
    expect(ready.response.statusCode).toBe(503);
    expect(ready.response.json()).toMatchObject({ status: 'not_ready', checks: { postgres: { ok: true }, migrations: { ok: true }, temporal: { ok: false } } });
    expect(ready.ms).toBeLessThan(bounds.READINESS_TIMEOUT_MS + slackMs);
    const frozenForMs = performance.now() - frozenAt;

    temporalProxy.resume();
    // The client retries with the same Idempotency-Key: booked once, whatever reached Temporal
    // of the request that timed out.
    const recovered = await until(async () => {
      const { response } = await deposit(owner, key);
      return response.statusCode === 200 ? response.json() : undefined;
    }, 15_000);
    expect(recovered.value).toMatchObject({ available: '10.00' });
    const again = await deposit(owner, key);
    expect(again.response.statusCode).toBe(200);
    expect((await app.inject({ method: 'GET', url: `/api/v1/balance/${owner}` })).json()).toMatchObject({ available: '10.00' });
    expect((await app.inject({ method: 'GET', url: '/readyz' })).statusCode).toBe(200);
    console.info(
      `Temporal frozen ${Math.round(frozenForMs)} ms: deposit 503 after ${Math.round(frozen.ms)} ms, a burst of 8 within ${Math.round(Math.max(...burst.map((b) => b.ms)))} ms; ` +
        `recovered ${Math.round(recovered.ms)} ms after the thaw`,
    );
  });
});
