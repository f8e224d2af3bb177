import { createLogger } from '../infra/logger.ts';
import { startSimulator } from './app.ts';
import { loadSimulatorConfig, SimulatorConfigError } from './config.ts';

/**
 * The gateway simulator process: `npm run start:simulator` (node simulator/main.ts). Configured
 * by SIMULATOR_* variables (docs/gateway-wire-api.md). State is in memory and starts empty on
 * every start. On SIGTERM or SIGINT it stops taking requests, abandons queued webhooks and
 * pending validations (a simulator restart loses them by design), and exits 0.
 */

const shutdownGraceMs = 10_000;

async function main(): Promise<void> {
  const config = loadSimulatorConfig();
  const logger = createLogger(config.logLevel, 'gateway-simulator');
  const simulator = await startSimulator({ ...config, logger });
  logger.info(
    {
      url: simulator.url,
      seed: simulator.faults.seed,
      webhooks: simulator.dispatcher.list().map((hook) => ({ id: hook.id, url: hook.url })),
      validationUrl: config.validationUrl,
      validationDelayMs: config.validationDelayMs,
      autoSettle: config.autoSettle,
    },
    'gateway simulator listening',
  );

  let stopping = false;
  const stop = (signal: NodeJS.Signals): void => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'shutting down');
    const timer = setTimeout(() => {
      logger.error('graceful shutdown timed out');
      process.exit(1);
    }, shutdownGraceMs);
    timer.unref();
    simulator.close().then(
      () => process.exit(0),
      (error: unknown) => {
        logger.error({ err: error }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

main().catch((error: unknown) => {
  if (error instanceof SimulatorConfigError) {
    process.stderr.write(`${error.message}\n`);
  } else {
    process.stderr.write(`gateway simulator failed to start: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  }
  process.exit(1);
});
