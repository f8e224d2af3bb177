import pg from 'pg';
import { causesOf } from '../src/errors.ts';
import { holdCommitted, releaseCommitted } from './committed.ts';

/**
 * PostgreSQL access. Only `db/` imports the driver: every other layer gets a `Db` and calls the
 * area modules (`db/ledger.ts`, ...), whose rows are parsed with zod at the boundary.
 */

// int8 (bigint) columns hold money in minor units: parse them as BigInt, never as a float.
pg.types.setTypeParser(pg.types.builtins.INT8, (value: string) => BigInt(value));
// NUMERIC is only used for aggregates of money; keep it exact as a string.
pg.types.setTypeParser(pg.types.builtins.NUMERIC, (value: string) => value);

export type Pool = pg.Pool;
export type PoolClient = pg.PoolClient;
/** What the helpers of db/sql.ts run on: the pool, a checked-out client, or a dedicated connection (LISTEN, a session lock). */
export type Queryable = pg.Pool | pg.ClientBase;

export interface PoolOptions {
  connectionString: string;
  max: number;
  applicationName: string;
  /**
   * A statement running longer than this is cancelled by the server (0: never). The client
   * also stops waiting for an answer `queryGraceMs` later: a server that is frozen or cut off
   * cannot cancel anything, and its connection would wait for ever.
   */
  statementTimeoutMs?: number;
  /** Bound on opening a connection and on waiting for a free one when the pool is full. */
  connectTimeoutMs?: number;
}

/** How long after the server's statement timeout the client gives up on an answer itself. */
export const queryGraceMs = 1000;

export function createPool(options: PoolOptions): Pool {
  const statementTimeoutMs = options.statementTimeoutMs ?? 30_000;
  const pool = new pg.Pool({
    connectionString: options.connectionString,
    max: options.max,
    application_name: options.applicationName,
    connectionTimeoutMillis: options.connectTimeoutMs ?? 5000,
    idleTimeoutMillis: 30_000,
    statement_timeout: statementTimeoutMs,
    // Client side: 'Query read timeout'. pool.query() then discards the connection.
    ...(statementTimeoutMs > 0 ? { query_timeout: statementTimeoutMs + queryGraceMs } : {}),
  });
  // An idle client that loses its connection emits 'error' on the pool; without a listener the
  // process would crash. The next checkout gets a fresh connection.
  pool.on('error', () => {});
  return pool;
}

/**
 * Runs `work` inside one database transaction on one connection: COMMIT when it resolves,
 * ROLLBACK when it throws. Transactions exist only inside this callback.
 */
export async function withTransaction<T>(pool: Pool, work: (client: PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  let broken: Error | undefined;
  let committed = false;
  holdCommitted(client);
  try {
    await client.query('BEGIN');
    const result = await work(client);
    await client.query('COMMIT');
    committed = true;
    return result;
  } catch (error) {
    if (databaseOutageOf(error) !== null) {
      // The connection is stuck or gone: a ROLLBACK would wait as long again. Discarding the
      // connection ends the transaction on the server (which rolls it back).
      broken = error instanceof Error ? error : new Error(String(error));
    } else {
      await client.query('ROLLBACK').catch(() => {});
    }
    throw error;
  } finally {
    // The facts the work reported (db/committed.ts): counted only once COMMIT succeeded.
    releaseCommitted(client, committed);
    client.release(broken);
  }
}

/**
 * What a failure says about PostgreSQL itself, apart from the statement: `timeout` when it did
 * not answer within a bound (no free connection in time, a connection not opened in time, a
 * statement past its timeout, no answer at all), `unavailable` when it refused or lost the
 * connection or is shutting down or starting; null for anything else (a constraint, a bad
 * value: the request's own fault or the code's).
 */
export type DatabaseOutage = 'timeout' | 'unavailable';

const outageSqlStates: Record<string, DatabaseOutage> = {
  '57014': 'timeout', // query_canceled: statement_timeout
  '57P01': 'unavailable', // admin_shutdown
  '57P02': 'unavailable', // crash_shutdown
  '57P03': 'unavailable', // cannot_connect_now (starting up, recovering)
  '53300': 'unavailable', // too_many_connections
  '08000': 'unavailable',
  '08003': 'unavailable',
  '08006': 'unavailable',
  '08001': 'unavailable',
  '08004': 'unavailable',
};
const outageSocketCodes = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN']);

export function databaseOutageOf(error: unknown): DatabaseOutage | null {
  for (const cause of causesOf(error, 4)) {
    if (!(cause instanceof Error)) break;
    const code = (cause as { code?: unknown }).code;
    if (typeof code === 'string') {
      const byState = outageSqlStates[code];
      if (byState !== undefined) return byState;
      if (outageSocketCodes.has(code)) return 'unavailable';
    }
    const message = cause.message;
    // pg and pg-pool's own messages (they carry no code).
    if (message === 'Query read timeout' || message === 'timeout exceeded when trying to connect' || message.startsWith('Connection terminated due to connection timeout')) {
      return 'timeout';
    }
    if (message.startsWith('Connection terminated') || message === 'Client has encountered a connection error and is not queryable') {
      return 'unavailable';
    }
  }
  return null;
}

/**
 * Whether a failed statement may be one item's fault, so that a group commit splits its batch to
 * find the item (db/group-commit.ts): a bad value (SQLSTATE class 22), a constraint (23), a
 * deadlock or serialization failure (40).
 */
export function isItemLevelError(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && /^(22|23|40)[0-9A-Z]{3}$/.test(code);
}
