import { Client, Connection } from '@temporalio/client';
import { createPool } from '../db/pool.ts';
import { createGatewayClient } from '../gateway/index.ts';
import { prepareDatabase, onShutdownSignal } from '../infra/bootstrap.ts';
import { ConfigError, loadConfig } from '../infra/config.ts';
import { createLogger } from '../infra/logger.ts';
import { buildApp } from './app.ts';

/**
 * The API process: `npm run start:api`. Needs DATABASE_URL, TEMPORAL_ADDRESS and JWT_SECRET
 * (`npm start` provides all three in development). On SIGTERM it stops accepting connections,
 * lets in-flight requests finish (each money movement is one database transaction inside a
 * workflow activity, so nothing is left half-written), then closes the Temporal connection and
 * the pool.
 */
async function main(): Promise<void> {
  const config = loadConfig();
  const logger = createLogger(config.LOG_LEVEL, 'api');
  if (config.DATABASE_URL === undefined || config.TEMPORAL_ADDRESS === undefined) {
    throw new ConfigError([
      ...(config.DATABASE_URL === undefined ? ['DATABASE_URL: is required to run the API alone (npm start sets it)'] : []),
      ...(config.TEMPORAL_ADDRESS === undefined ? ['TEMPORAL_ADDRESS: is required to run the API alone (npm start sets it)'] : []),
    ]);
  }
  const pool = createPool({ connectionString: config.DATABASE_URL, max: config.DATABASE_POOL_MAX, applicationName: 'settlement-api' });
  await prepareDatabase(pool, config, logger);
  const connection = await Connection.connect({ address: config.TEMPORAL_ADDRESS });
  const temporal = new Client({ connection, namespace: config.TEMPORAL_NAMESPACE });
  const gateway = createGatewayClient({ baseUrl: config.GATEWAY_BASE_URL, apiKey: config.GATEWAY_API_KEY, timeoutMs: config.GATEWAY_TIMEOUT_MS });
  const app = await buildApp({ deps: { config, pool, temporal, gateway }, logger });
  await app.listen({ host: config.HOST, port: config.PORT });

  onShutdownSignal(logger, async () => {
    const timer = setTimeout(() => {
      logger.error('graceful shutdown timed out');
      process.exit(1);
    }, config.SHUTDOWN_GRACE_MS);
    await app.close();
    await connection.close();
    await pool.end();
    clearTimeout(timer);
  });
}

main().catch((error: unknown) => {
  if (error instanceof ConfigError) {
    process.stderr.write(`${error.message}\n`);
  } else {
    process.stderr.write(`api failed to start: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  }
  process.exit(1);
});
