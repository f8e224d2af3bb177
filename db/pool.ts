import pg from 'pg';

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
export type Queryable = pg.Pool | pg.PoolClient;

export interface PoolOptions {
  connectionString: string;
  max: number;
  applicationName: string;
  /** A statement running longer than this is cancelled by the server. */
  statementTimeoutMs?: number;
}

export function createPool(options: PoolOptions): Pool {
  const pool = new pg.Pool({
    connectionString: options.connectionString,
    max: options.max,
    application_name: options.applicationName,
    connectionTimeoutMillis: 5000,
    idleTimeoutMillis: 30_000,
    statement_timeout: options.statementTimeoutMs ?? 30_000,
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
  try {
    await client.query('BEGIN');
    const result = await work(client);
    await client.query('COMMIT');
    return result;
  } catch (error) {
    await client.query('ROLLBACK').catch(() => {});
    throw error;
  } finally {
    client.release();
  }
}
