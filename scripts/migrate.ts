import { applyMigrations, countAppliedMigrations, countMigrationFiles } from '../db/migrate.ts';
import { createPool } from '../db/pool.ts';

/**
 * `npm run migrate`: applies the pending migrations to DATABASE_URL and exits, without starting a
 * service (every process also applies them at start). For a migration that rewrites large tables
 * under a lock (its header says so, e.g. migration 12), run this in the maintenance window first.
 * Exit 0: the database is up to date; 1: a migration failed (it rolled back, nothing half-applied);
 * 2: DATABASE_URL missing.
 */
const url = process.env.DATABASE_URL;
if (url === undefined || url === '') {
  process.stderr.write('migrate: DATABASE_URL is not set (the database to migrate)\n');
  process.exit(2);
}
const pool = createPool({ connectionString: url, max: 1, applicationName: 'migrate', statementTimeoutMs: 0 });
try {
  const before = await countAppliedMigrations(pool);
  const shipped = await countMigrationFiles();
  process.stderr.write(`migrate: ${before} of ${shipped} migrations applied; applying the rest, each in its own transaction\n`);
  const applied = await applyMigrations(pool, (message) => process.stderr.write(`migrate: ${message}\n`));
  process.stdout.write(applied.length === 0 ? 'up to date: nothing to apply\n' : `applied: ${applied.join(', ')}\n`);
} catch (error) {
  process.stderr.write(`migrate: failed: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exitCode = 1;
} finally {
  await pool.end();
}
