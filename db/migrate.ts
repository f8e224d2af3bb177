import { fileURLToPath } from 'node:url';
import { readdir } from 'node:fs/promises';
import { migrate } from 'postgres-migrations';
import { z } from 'zod';
import type { Pool } from './pool.ts';
import { one } from './sql.ts';

/** The folder of numbered SQL files (`1_foundation.sql`, `2_ledger.sql`, ...). */
export const migrationsDir = fileURLToPath(new URL('../migrations/', import.meta.url));

/**
 * Applies every migration not yet applied, forward only, each file once, in a transaction of its
 * own. postgres-migrations records each file's hash and refuses to start if an applied file was
 * edited afterwards, and holds an advisory lock so that two instances starting together do not
 * race.
 */
export async function applyMigrations(pool: Pool, log: (message: string) => void = () => {}): Promise<string[]> {
  const client = await pool.connect();
  try {
    const applied = await migrate({ client }, migrationsDir, { logger: log });
    return applied.map((migration) => migration.fileName);
  } finally {
    client.release();
  }
}

/** How many migration files the code ships, to compare with what the database has applied. */
export async function countMigrationFiles(): Promise<number> {
  const files = await readdir(migrationsDir);
  return files.filter((file) => /^\d+[-_].*\.sql$/.test(file)).length;
}

/** How many migrations the database has applied; 0 when the bookkeeping table does not exist. */
export async function countAppliedMigrations(pool: Pool): Promise<number> {
  // Two statements: a statement naming a table that does not exist fails when it is parsed,
  // whatever branch would have run.
  const { present } = await one(pool, z.object({ present: z.boolean() }), {
    name: 'migrations-table-exists',
    text: `SELECT to_regclass('public.migrations') IS NOT NULL AS present`,
  });
  if (!present) return 0;
  const { count } = await one(pool, z.object({ count: z.number().int() }), { name: 'migrations-count', text: 'SELECT count(*)::int AS count FROM migrations' });
  return count;
}
