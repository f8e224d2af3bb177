import { Client, Connection } from '@temporalio/client';
import { createPool } from '../db/pool.ts';
import { configuredGatewayClient } from '../infra/gateway-client.ts';
import { prepareDatabaseAt, onShutdownSignal } from '../infra/bootstrap.ts';
import { stopWhenSupervisorExits } from '../infra/supervised.ts';
import { ConfigError, loadConfig, tracingEnabled } from '../infra/config.ts';
import { loadDotEnv } from '../infra/env-file.ts';
import { createLogger } from '../infra/logger.ts';
import { createServiceMetrics, serveMetrics } from '../infra/metrics.ts';
import { startTracing } from '../infra/tracing.ts';
import { metricsDatabaseReaders } from '../db/metrics-readers.ts';
import { OpenTelemetryWorkflowClientInterceptor } from '@temporalio/interceptors-opentelemetry';
import { buildApp } from './app.ts';
import { createSecurityService } from '../services/security.ts';

/**
 * The API process: `npm run start:api`. Needs DATABASE_URL, TEMPORAL_ADDRESS and JWT_SECRET
 * (`npm start` provides all three in development). On SIGTERM it stops accepting connections,
 * lets in-flight requests finish (each money movement is one database transaction inside a
 * workflow activity, so nothing is left half-written), then closes the Temporal connection and
 * the pool.
 */
async function main(): Promise<void> {
  // `.env` of the working directory, under the environment (infra/env-file.ts).
  loadDotEnv();
  const config = loadConfig();
  const logger = createLogger(config.LOG_LEVEL, 'api', config.LOG_FORMAT);
  if (config.DATABASE_URL === undefined || config.TEMPORAL_ADDRESS === undefined) {
    throw new ConfigError([
      ...(config.DATABASE_URL === undefined ? ['DATABASE_URL: is required to run the API alone (npm start sets it)'] : []),
      ...(config.TEMPORAL_ADDRESS === undefined ? ['TEMPORAL_ADDRESS: is required to run the API alone (npm start sets it)'] : []),
    ]);
  }
  // Traces (docs/operations.md): installed before the pool, the Temporal client and the server exist.
  const tracing = tracingEnabled(config) ? startTracing({ serviceName: 'plc-settlement-api', otlpEndpoint: config.OTEL_EXPORTER_OTLP_ENDPOINT }) : null;
  await prepareDatabaseAt(config.DATABASE_URL, config, logger, 'settlement-api-migrate');
  // Every wait on PostgreSQL bounded (docs/architecture.md, "Operating limits").
  const pool = createPool({
    connectionString: config.DATABASE_URL,
    max: config.DATABASE_POOL_MAX,
    applicationName: 'settlement-api',
    connectTimeoutMs: config.DATABASE_CONNECT_TIMEOUT_MS,
    statementTimeoutMs: config.DATABASE_STATEMENT_TIMEOUT_MS,
  });
  const connection = await Connection.connect({ address: config.TEMPORAL_ADDRESS });
  const temporal = new Client({
    connection,
    namespace: config.TEMPORAL_NAMESPACE,
    // The request's trace continues into the workflows it starts, signals and updates.
    ...(tracing === null ? {} : { interceptors: { workflow: [new OpenTelemetryWorkflowClientInterceptor()] } }),
  });
  const metrics = config.METRICS_ENABLED ? createServiceMetrics({ process: 'api', database: metricsDatabaseReaders(pool) }) : null;
  const gateway = configuredGatewayClient(config, metrics);
  const security = createSecurityService({ pool, temporal, config });
  const app = await buildApp({ deps: { config, pool, temporal, gateway, security }, logger, metrics });
  await app.listen({ host: config.HOST, port: config.PORT });
  // The separate metrics bind (no token: reaching it is the deployment's decision).
  const metricsServer =
    metrics !== null && config.API_METRICS_PORT !== undefined
      ? await serveMetrics(metrics, { host: config.METRICS_HOST, port: config.API_METRICS_PORT })
      : null;

  onShutdownSignal(logger, async () => {
    const timer = setTimeout(() => {
      logger.error('graceful shutdown timed out');
      process.exit(1);
    }, config.SHUTDOWN_GRACE_MS);
    // A client's keep-alive connection would hold the server open until it times out (72 s):
    // close each connection as soon as its last request has been answered.
    const idleSweep = setInterval(() => app.server.closeIdleConnections(), 100);
    try {
      await app.close();
    } finally {
      clearInterval(idleSweep);
    }
    metricsServer?.close();
    await connection.close();
    await pool.end();
    metrics?.close();
    await tracing?.shutdown();
    clearTimeout(timer);
  });
  stopWhenSupervisorExits();
}

main().catch((error: unknown) => {
  if (error instanceof ConfigError) {
    process.stderr.write(`${error.message}\n`);
  } else {
    process.stderr.write(`api failed to start: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  }
  process.exit(1);
});
