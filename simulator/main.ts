import { createLogger } from '../infra/logger.ts';
import { stopWhenSupervisorExits } from '../infra/supervised.ts';
import { startSimulator } from './app.ts';
import { loadSimulatorConfig, SimulatorConfigError } from './config.ts';

/**
 * The gateway simulator process: `npm run start:simulator` (node simulator/main.ts). Configured
 * by SIMULATOR_* variables (docs/gateway-wire-api.md). The state is in memory and starts empty on
 * every start, unless SIMULATOR_STATE_FILE names a SQLite file that keeps it (npm start does):
 * then resources, queued webhooks and pending validations carry on after a restart. On SIGTERM or
 * SIGINT it stops taking requests and exits 0; an event being delivered at that moment is sent
 * again after a restart (at least once, as a gateway does).
 */

const shutdownGraceMs = 10_000;

async function main(): Promise<void> {
  const config = loadSimulatorConfig();
  const logger = createLogger(config.logLevel, 'gateway-simulator', process.env.LOG_FORMAT === 'pretty' ? 'pretty' : 'json');
  const simulator = await startSimulator({ ...config, logger });
  logger.info(
    {
      url: simulator.url,
      seed: simulator.faults.seed,
      webhooks: simulator.dispatcher.list().map((hook) => ({ id: hook.id, url: hook.url })),
      validationUrl: config.validationUrl,
      validationDelayMs: config.validationDelayMs,
      autoSettle: config.autoSettle,
      stateFile: config.stateFile,
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
  stopWhenSupervisorExits();
}

main().catch((error: unknown) => {
  if (error instanceof SimulatorConfigError) {
    process.stderr.write(`${error.message}\n`);
  } else {
    process.stderr.write(`gateway simulator failed to start: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  }
  process.exit(1);
});
