import { hashPassword } from './passwords.ts';
import { ensureAdminUser } from '../db/admin-users.ts';
import { applyMigrations } from '../db/migrate.ts';
import { createPool, type Pool } from '../db/pool.ts';
import type { Config } from './config.ts';
import type { Logger } from './logger.ts';

/**
 * What every process does against the database before serving: apply pending migrations (under
 * postgres-migrations' advisory lock, so replicas starting together are safe) and create the
 * first super-admin from ADMIN_USERNAME / ADMIN_PASSWORD when no user of that name exists.
 */
export async function prepareDatabase(pool: Pool, config: Config, logger: Logger): Promise<void> {
  const applied = await applyMigrations(pool);
  if (applied.length > 0) logger.info({ migrations: applied }, 'applied migrations');
  if (config.ADMIN_USERNAME !== undefined && config.ADMIN_PASSWORD !== undefined) {
    const created = await ensureAdminUser(pool, {
      username: config.ADMIN_USERNAME,
      passwordHash: await hashPassword(config.ADMIN_PASSWORD),
      role: 'super_admin',
    });
    if (created) logger.info({ username: config.ADMIN_USERNAME }, 'created the first super-admin');
  }
}

/**
 * `prepareDatabase` on a connection of its own without a statement timeout: a migration may
 * legitimately run longer than the serving pool's bound (DATABASE_STATEMENT_TIMEOUT_MS).
 */
export async function prepareDatabaseAt(connectionString: string, config: Config, logger: Logger, applicationName: string): Promise<void> {
  const pool = createPool({ connectionString, max: 1, applicationName, statementTimeoutMs: 0, connectTimeoutMs: config.DATABASE_CONNECT_TIMEOUT_MS });
  try {
    await prepareDatabase(pool, config, logger);
  } finally {
    await pool.end();
  }
}

/**
 * Runs `stop` once on SIGTERM or SIGINT, then exits; a second signal while stopping is ignored
 * so that a drain is never cut short by an impatient Ctrl-C.
 */
export function onShutdownSignal(logger: Logger, stop: () => Promise<void>): void {
  let stopping = false;
  const handler = (signal: NodeJS.Signals): void => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'shutting down');
    stop().then(
      () => process.exit(0),
      (error: unknown) => {
        logger.error({ err: error }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', handler);
  process.on('SIGINT', handler);
}
