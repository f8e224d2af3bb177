import { randomBytes } from 'node:crypto';
import type { Client } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../api/app.ts';
import { dependencyFailure } from '../../api/plugins/errors.ts';
import type { Pool } from '../../db/pool.ts';
import { createGatewayClient } from '../../gateway/index.ts';
import { loadConfig } from '../../infra/config.ts';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';

/**
 * Readiness answers within its bound when a dependency hangs, and an unexpected failure answers
 * 500 with the request id and nothing of its internals.
 */
let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await db?.drop();
});

const config = () =>
  loadConfig({ APP_ENV: 'test', LOG_LEVEL: 'silent', JWT_SECRET: randomBytes(32).toString('hex'), READINESS_TIMEOUT_MS: '300' });
const gateway = createGatewayClient({ baseUrl: 'http://127.0.0.1:9', apiKey: 'k', timeoutMs: 100 });
const never = () => new Promise<never>(() => {});

describe('readiness and failures', () => {
  it('/readyz answers 503 within its bound when Temporal hangs', async () => {
    const temporal = { workflowService: { getSystemInfo: never } } as unknown as Client;
    const app = await buildApp({ deps: { config: config(), pool: db.pool, temporal, gateway }, logger: false });
    try {
      const started = Date.now();
      const response = await app.inject({ method: 'GET', url: '/readyz' });
      expect(Date.now() - started).toBeLessThan(2000);
      expect(response.statusCode).toBe(503);
      expect(response.json()).toMatchObject({ status: 'not_ready', checks: { postgres: { ok: true }, temporal: { ok: false } } });
    } finally {
      await app.close();
    }
  });

  it('/readyz answers 503 within its bound when PostgreSQL hangs, and /healthz still answers', async () => {
    const temporal = { workflowService: { getSystemInfo: async () => ({}) } } as unknown as Client;
    const hangingPool = { query: never, connect: never, end: async () => {} } as unknown as Pool;
    const app = await buildApp({ deps: { config: config(), pool: hangingPool, temporal, gateway }, logger: false });
    try {
      const response = await app.inject({ method: 'GET', url: '/readyz' });
      expect(response.statusCode).toBe(503);
      expect(response.json().checks.postgres.ok).toBe(false);
      expect((await app.inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(200);
    } finally {
      await app.close();
    }
  });

  it('answers an unexpected failure with 500, the request id and no internals', async () => {
    const temporal = { workflowService: { getSystemInfo: async () => ({}) } } as unknown as Client;
    const brokenPool = {
      query: async () => {
        throw new Error('connection to 10.0.0.5 refused: password authentication failed for user "secret"');
      },
    } as unknown as Pool;
    const app = await buildApp({ deps: { config: config(), pool: brokenPool, temporal, gateway }, logger: false });
    try {
      const response = await app.inject({ method: 'GET', url: '/api/v1/balance/alice', headers: { 'x-request-id': 'req-500-test' } });
      expect(response.statusCode).toBe(500);
      expect(response.json()).toEqual({ code: 'INTERNAL', message: 'internal error', request_id: 'req-500-test' });
      expect(response.body).not.toContain('secret');
    } finally {
      await app.close();
    }
  });
});

describe('dependencyFailure', () => {
  const grpc = (code: number, details: string) => Object.assign(new Error(`${code} ${details}`), { code, details, metadata: {} });
  it.each([
    ['no free pooled connection in time', new Error('timeout exceeded when trying to connect'), 'DEPENDENCY_TIMEOUT', 'postgres'],
    ['a connection not opened in time', new Error('Connection terminated due to connection timeout'), 'DEPENDENCY_TIMEOUT', 'postgres'],
    ['no answer to a statement', new Error('Query read timeout'), 'DEPENDENCY_TIMEOUT', 'postgres'],
    ['statement_timeout', Object.assign(new Error('canceling statement due to statement timeout'), { code: '57014' }), 'DEPENDENCY_TIMEOUT', 'postgres'],
    ['connection refused', Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' }), 'DEPENDENCY_UNAVAILABLE', 'postgres'],
    ['the server shutting down', Object.assign(new Error('terminating connection due to administrator command'), { code: '57P01' }), 'DEPENDENCY_UNAVAILABLE', 'postgres'],
    ['a lost connection', new Error('Connection terminated unexpectedly'), 'DEPENDENCY_UNAVAILABLE', 'postgres'],
    ['a Temporal deadline', grpc(4, 'Deadline exceeded'), 'DEPENDENCY_TIMEOUT', 'temporal'],
    ['Temporal wrapped by the SDK', new Error('Failed to start', { cause: grpc(14, 'No connection established') }), 'DEPENDENCY_UNAVAILABLE', 'temporal'],
  ])('%s answers %s naming %s', (_, error, code, dependency) => {
    const failure = dependencyFailure(error, 7);
    expect(failure).toMatchObject({ code, details: { dependency, retry_after_s: 7 } });
  });

  it.each([
    ['a constraint violation', Object.assign(new Error('duplicate key'), { code: '23505' })],
    ['a refused Temporal call', grpc(3, 'invalid argument')],
    ['a plain bug', new TypeError('x is undefined')],
  ])('%s is not an outage', (_, error) => {
    expect(dependencyFailure(error, 7)).toBeNull();
  });
});
