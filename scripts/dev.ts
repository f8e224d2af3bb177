import { randomBytes } from 'node:crypto';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createPool } from '../db/pool.ts';
import { prepareDatabase } from '../infra/bootstrap.ts';
import { ConfigError, loadConfig } from '../infra/config.ts';
import { prepareDevelopmentSecurity } from '../infra/dev-security.ts';
import { loadOrCreateSecret, waitForReady } from '../infra/dev-stack.ts';
import { AlreadyRunningError, claimDataDir, type DataDirClaim, type Endpoint } from '../infra/dev-state.ts';
import { startEmbeddedPostgres, stopLeftoverPostgres } from '../infra/embedded-postgres.ts';
import { loadDotEnv } from '../infra/env-file.ts';
import { createLogger } from '../infra/logger.ts';
import { inProcessService, startNodeProcess, StoppingError, Supervisor, type RunningService } from '../infra/supervisor.ts';
import { resolveTemporalCli, temporalCliHelp } from '../infra/temporal-cli.ts';
import { startTemporalDevServer } from '../infra/temporal-dev-server.ts';
import { loadSimulatorConfig, SimulatorConfigError } from '../simulator/config.ts';
import { workerPreloadUrl } from '../worker/workflow-thread-guard.ts';

/**
 * `npm start`: the whole service on one machine with nothing configured. Uses DATABASE_URL and
 * TEMPORAL_ADDRESS when set; otherwise runs an embedded PostgreSQL and the Temporal CLI dev
 * server, both keeping their data under DATA_DIR (default .data/) so a restart keeps every row
 * and every workflow. Then starts the API and the worker, the same programs production runs alone
 * (`npm run start:api`, `npm run start:worker`), and the gateway simulator when GATEWAY_BASE_URL
 * is unset (its state in DATA_DIR too).
 *
 * This process supervises them all (infra/supervisor.ts): each runs in a process group of its
 * own, so Ctrl-C (SIGINT to the terminal's foreground group), SIGTERM or SIGHUP reach this process
 * only, which stops them in order, a line per step: the API drains its requests, the worker
 * finishes its activities, then the simulator, Temporal and PostgreSQL stop. A process that dies
 * once the stack is up is restarted, with a growing delay, at most 5 times in 10 minutes.
 * `<DATA_DIR>/npm-start.json` says a stack runs there (infra/dev-state.ts): a second `npm start`
 * on the same folder says what runs and where, and exits 1.
 *
 * Before anything it reads `.env` (infra/env-file.ts; the environment wins over it). In a terminal
 * the processes log one short line per record (LOG_FORMAT=pretty), else pino's JSON. The worker's
 * metrics are served on WORKER_METRICS_PORT (default 9464) and its Temporal SDK's on
 * TEMPORAL_METRICS_BIND (default 127.0.0.1:9465), beside the API's `GET /metrics`.
 */

/** Where the worker serves its metrics under `npm start` unless WORKER_METRICS_PORT says otherwise (the compose port). */
export const devWorkerMetricsPort = 9464;
/** Where the worker's Temporal SDK serves its metrics under `npm start` unless TEMPORAL_METRICS_BIND says otherwise. */
export const devTemporalMetricsPort = 9465;

const root = fileURLToPath(new URL('..', import.meta.url));
const say = (line: string): void => {
  process.stdout.write(`[start] ${line}\n`);
};

function hostPort(bind: string): { host: string; port: number } {
  const at = bind.lastIndexOf(':');
  return { host: bind.slice(0, at), port: Number(bind.slice(at + 1)) };
}

async function main(): Promise<void> {
  const startedAt = Date.now();
  const dotEnv = loadDotEnv();
  if (dotEnv !== null) {
    const kept = dotEnv.overridden.length === 0 ? '' : `; the environment's ${dotEnv.overridden.join(', ')} kept over it`;
    say(`read ${path.relative(process.cwd(), dotEnv.file) || dotEnv.file} (${dotEnv.names.length} settings${kept})`);
  }
  // A person at a terminal reads short lines; a file or a collector gets JSON.
  if ((process.env.LOG_FORMAT ?? '') === '' && process.stdout.isTTY === true) process.env.LOG_FORMAT = 'pretty';
  // Every process that counts something is scraped: the worker's metrics and its SDK's on ports of their own.
  if ((process.env.WORKER_METRICS_PORT ?? '') === '') process.env.WORKER_METRICS_PORT = String(devWorkerMetricsPort);
  if ((process.env.TEMPORAL_METRICS_BIND ?? '') === '') process.env.TEMPORAL_METRICS_BIND = `127.0.0.1:${devTemporalMetricsPort}`;
  const config = loadConfig();
  const dataDir = path.resolve(root, config.DATA_DIR);
  await mkdir(dataDir, { recursive: true });
  const env: Record<string, string> = { ...(process.env as Record<string, string>) };
  const host = config.HOST === '0.0.0.0' ? '127.0.0.1' : config.HOST;
  const base = `http://${host}:${config.PORT}`;
  const embeddedPostgres = config.DATABASE_URL === undefined;
  const embeddedTemporal = config.TEMPORAL_ADDRESS === undefined;
  // No gateway configured: run the simulator beside the service, each pointed at the other.
  // A real gateway: GATEWAY_BASE_URL, or an Asaas environment (GATEWAY_ASAAS_ENVIRONMENT); else the simulator.
  const realGateway = (process.env.GATEWAY_BASE_URL ?? '') !== '' || (process.env.GATEWAY_ASAAS_ENVIRONMENT ?? '') !== '';
  const simulator = realGateway ? null : loadSimulatorConfig();
  const simulatorUrl = simulator === null ? null : `http://${simulator.host}:${simulator.port}`;
  if (simulatorUrl !== null) env.GATEWAY_BASE_URL = simulatorUrl;
  const childConfig = (): ReturnType<typeof loadConfig> => loadConfig(env);

  const endpoints: Endpoint[] = [
    { what: 'API', where: `${base}/api/v1 (docs ${base}/docs)`, port: { host, port: config.PORT, variable: 'PORT' } },
    embeddedTemporal
      ? { what: 'Temporal', where: `127.0.0.1:${config.TEMPORAL_DEV_PORT}`, port: { host: '127.0.0.1', port: config.TEMPORAL_DEV_PORT, variable: 'TEMPORAL_DEV_PORT' } }
      : { what: 'Temporal', where: config.TEMPORAL_ADDRESS ?? '' },
    ...(embeddedTemporal
      ? [{ what: 'Temporal UI', where: `http://127.0.0.1:${config.TEMPORAL_UI_PORT}`, port: { host: '127.0.0.1', port: config.TEMPORAL_UI_PORT, variable: 'TEMPORAL_UI_PORT' } }]
      : []),
    embeddedPostgres
      ? {
          what: 'PostgreSQL',
          where: `127.0.0.1:${config.EMBEDDED_POSTGRES_PORT} (embedded, ${path.join(dataDir, 'postgres')})`,
          port: { host: '127.0.0.1', port: config.EMBEDDED_POSTGRES_PORT, variable: 'EMBEDDED_POSTGRES_PORT' },
        }
      : { what: 'PostgreSQL', where: 'DATABASE_URL' },
    ...(simulator !== null && simulatorUrl !== null
      ? [{ what: 'gateway simulator', where: simulatorUrl, port: { host: simulator.host, port: simulator.port, variable: 'SIMULATOR_PORT' } }]
      : []),
    ...(config.METRICS_ENABLED && config.WORKER_METRICS_PORT !== undefined
      ? [{ what: 'worker metrics', where: `http://${config.METRICS_HOST}:${config.WORKER_METRICS_PORT}/metrics`, port: { host: config.METRICS_HOST, port: config.WORKER_METRICS_PORT, variable: 'WORKER_METRICS_PORT' } }]
      : []),
    ...(config.METRICS_ENABLED && config.TEMPORAL_METRICS_BIND !== undefined
      ? [{ what: 'Temporal SDK metrics', where: `http://${config.TEMPORAL_METRICS_BIND}/metrics`, port: { ...hostPort(config.TEMPORAL_METRICS_BIND), variable: 'TEMPORAL_METRICS_BIND' } }]
      : []),
    ...(config.APP_ENV !== 'production' && config.SMTP_URL === undefined && config.SMTP_SINK_PORT !== 0
      ? [{ what: 'mail (SMTP sink)', where: `127.0.0.1:${config.SMTP_SINK_PORT}`, port: { host: '127.0.0.1', port: config.SMTP_SINK_PORT, variable: 'SMTP_SINK_PORT' } }]
      : []),
  ];
  const claim: DataDirClaim = await claimDataDir({ dataDir, endpoints, say });

  let exiting = false;
  const supervisor = new Supervisor({
    say,
    onFailure: (reason) => void shutdown(reason, 1),
    onRestart: () => void claim.update(supervisor.pids()).catch(() => {}),
  });
  async function shutdown(reason: string, exitCode: number): Promise<void> {
    if (exiting) return;
    exiting = true;
    try {
      await supervisor.stopAll(reason);
    } finally {
      await claim.release().catch(() => {});
      process.exit(exitCode);
    }
  }
  // embedded-postgres and the Temporal SDK may install exit hooks that act at the first signal;
  // this process alone decides the order.
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.removeAllListeners(signal);
    process.on(signal, () => void shutdown(signal, 0));
  }

  try {
    let databaseUrl = config.DATABASE_URL;
    if (embeddedPostgres) {
      // This supervisor owns the data folder now: a server still running on it was left by an earlier one.
      await stopLeftoverPostgres(dataDir, say);
      const started = await supervisor.start({
        name: 'postgres',
        stopped: 'PostgreSQL stopped',
        stopRank: 5,
        restart: true,
        start: async () => {
          const db = await startEmbeddedPostgres({ dataDir, port: config.EMBEDDED_POSTGRES_PORT, log: say, detached: true });
          databaseUrl = db.databaseUrl;
          return { pid: db.pid, exited: db.exited, stop: () => db.stop() };
        },
      });
      say(`embedded PostgreSQL listening on 127.0.0.1:${config.EMBEDDED_POSTGRES_PORT} (pid ${String(started.pid)}, data in ${path.join(dataDir, 'postgres')})`);
    }
    if (databaseUrl === undefined) throw new Error('no database');
    env.DATABASE_URL = databaseUrl;

    let temporalUi: string | null = null;
    if (embeddedTemporal) {
      const cli = await resolveTemporalCli({ configured: config.TEMPORAL_CLI, allowBuild: true, progress: say });
      if (cli !== null) {
        say(`Temporal CLI: ${cli.path} (${cli.source})`);
        await supervisor.start({
          name: 'temporal',
          stopped: 'Temporal dev server stopped',
          stopRank: 4,
          restart: true,
          start: async () => {
            const server = await startTemporalDevServer({
              cliPath: cli.path,
              ip: '127.0.0.1',
              port: config.TEMPORAL_DEV_PORT,
              uiPort: config.TEMPORAL_UI_PORT,
              dbFilename: path.join(dataDir, 'temporal.sqlite'),
              namespace: config.TEMPORAL_NAMESPACE,
              startTimeoutMs: 60_000,
              log: say,
              detached: true,
            });
            temporalUi = server.uiUrl;
            return { pid: server.process.pid ?? null, exited: server.exited, stop: server.stop };
          },
        });
        env.TEMPORAL_ADDRESS = `127.0.0.1:${config.TEMPORAL_DEV_PORT}`;
      } else {
        // Last resort: the SDK's own download of the dev server (needs the internet). It runs in
        // this process group: a Ctrl-C reaches it directly.
        say('no Temporal CLI found and Go is not installed: trying the Temporal SDK download');
        try {
          const { TestWorkflowEnvironment } = await import('@temporalio/testing');
          const { customSearchAttributes } = await import('../infra/search-attributes.ts');
          const { SearchAttributeType } = await import('@temporalio/common');
          await supervisor.start({
            name: 'temporal',
            stopped: 'Temporal dev server stopped',
            stopRank: 4,
            restart: false,
            start: async () => {
              const environment = await TestWorkflowEnvironment.createLocal({
                server: {
                  ip: '127.0.0.1',
                  port: config.TEMPORAL_DEV_PORT,
                  ui: true,
                  uiPort: config.TEMPORAL_UI_PORT,
                  dbFilename: path.join(dataDir, 'temporal.sqlite'),
                  namespace: config.TEMPORAL_NAMESPACE,
                  searchAttributes: Object.keys(customSearchAttributes).map((name) => ({ name, type: SearchAttributeType.KEYWORD })),
                },
              });
              return inProcessService(() => environment.teardown());
            },
          });
          env.TEMPORAL_ADDRESS = `127.0.0.1:${config.TEMPORAL_DEV_PORT}`;
          temporalUi = `http://127.0.0.1:${config.TEMPORAL_UI_PORT}`;
        } catch (error) {
          if (error instanceof StoppingError) throw error;
          throw new Error(`${temporalCliHelp}\n(the SDK download failed too: ${error instanceof Error ? error.message : String(error)})`, { cause: error });
        }
      }
    }

    if (config.JWT_SECRET === undefined) {
      env.JWT_SECRET = (await loadOrCreateSecret(path.join(dataDir, 'jwt-secret'), () => randomBytes(32).toString('hex'))).value;
    }
    if (config.ADMIN_USERNAME === undefined) {
      const password = await loadOrCreateSecret(path.join(dataDir, 'admin-password'), () => randomBytes(18).toString('base64url'));
      env.ADMIN_USERNAME = 'admin';
      env.ADMIN_PASSWORD = password.value;
      say(`administrator: username "admin", password in ${path.join(config.DATA_DIR, 'admin-password')}`);
    }

    // PIN_PEPPER and the SMTP sink for PIN resets (docs/security.md); the sink runs in this
    // process and stops after the worker, which sends the mail.
    await supervisor.start({
      name: 'mail',
      stopped: 'the SMTP sink stopped',
      stopRank: 3.5,
      restart: false,
      start: async () => {
        const security = await prepareDevelopmentSecurity({ config, dataDir, env, say });
        return inProcessService(() => security.stop());
      },
    });

    // Migrate once here so the children start against a ready schema.
    const pool = createPool({ connectionString: databaseUrl, max: 1, applicationName: 'settlement-start' });
    try {
      await prepareDatabase(pool, childConfig(), createLogger('warn', 'start'));
    } finally {
      await pool.end();
    }

    const graceMs = config.SHUTDOWN_GRACE_MS + 5_000;
    const node = (name: string, file: string, nodeOptions: readonly string[], childEnv: Record<string, string>) => (): Promise<RunningService> =>
      Promise.resolve(startNodeProcess({ name, file: path.join(root, file), nodeOptions, env: childEnv, graceMs, say }));
    if (simulator !== null && simulatorUrl !== null) {
      await supervisor.start({
        name: 'simulator',
        stopped: 'the gateway simulator stopped (its state kept in the data folder)',
        stopRank: 3,
        restart: true,
        start: node('simulator', 'simulator/main.ts', [], {
          ...env,
          SIMULATOR_API_KEY: config.GATEWAY_API_KEY,
          SIMULATOR_WEBHOOK_TOKEN: config.GATEWAY_WEBHOOK_TOKEN,
          SIMULATOR_WEBHOOK_URL: `${base}/api/v1/redemption/webhook/gateway`,
          SIMULATOR_VALIDATION_URL: config.GATEWAY_VALIDATION_URL ?? `${base}/api/v1/webhooks/transfer/validate`,
          SIMULATOR_STATE_FILE: process.env.SIMULATOR_STATE_FILE ?? path.join(dataDir, 'gateway-simulator.sqlite'),
        }),
      });
      say(`gateway: the simulator on ${simulatorUrl} (set GATEWAY_ASAAS_ENVIRONMENT or GATEWAY_BASE_URL for a real gateway)`);
    }
    // The worker as production starts it: with the workflow-thread guard preloaded.
    await supervisor.start({
      name: 'worker',
      stopped: 'the worker finished its activities and stopped',
      stopRank: 2,
      restart: true,
      start: node('worker', 'worker/main.ts', ['--import', workerPreloadUrl], env),
    });
    await supervisor.start({
      name: 'api',
      stopped: 'the API drained its requests and stopped',
      stopRank: 1,
      restart: true,
      start: node('api', 'api/server.ts', [], env),
    });
    await claim.update(supervisor.pids());

    if (await waitForReady(`${base}/readyz`, 120_000, () => supervisor.stopping)) {
      supervisor.markUp();
      say(`ready in ${((Date.now() - startedAt) / 1000).toFixed(1)} s`);
      say(`API:          ${base}/api/v1  (health ${base}/readyz)`);
      say(`API docs:     ${base}/docs  (OpenAPI ${base}/openapi.json)`);
      say(`Web console:  ${base}/console/`);
      if (config.METRICS_ENABLED) {
        const served = [`API ${base}/metrics`];
        if (config.WORKER_METRICS_PORT !== undefined) served.push(`worker http://${config.METRICS_HOST}:${config.WORKER_METRICS_PORT}/metrics`);
        if (config.TEMPORAL_METRICS_BIND !== undefined) served.push(`Temporal SDK http://${config.TEMPORAL_METRICS_BIND}/metrics`);
        say(`metrics:      ${served.join(', ')}`);
      }
      if (temporalUi !== null) say(`Temporal UI:  ${temporalUi}`);
      say(`data folder:  ${dataDir}`);
      say('Ctrl-C stops everything in order: the API drains, the worker finishes its activities, then the simulator, the mail sink, Temporal and PostgreSQL stop');
    } else if (!supervisor.stopping) {
      say('the API did not become ready within 120 s; see the logs above');
      await shutdown('the API was not ready', 1);
    }
  } catch (error) {
    // A signal that arrived while starting: the stop prints its own lines.
    if (error instanceof StoppingError) return;
    process.stderr.write(`start failed: ${error instanceof Error ? error.message : String(error)}\n`);
    await shutdown('start failed', 1);
  }
}

main().catch((error: unknown) => {
  if (error instanceof ConfigError || error instanceof SimulatorConfigError || error instanceof AlreadyRunningError) process.stderr.write(`${error.message}\n`);
  else process.stderr.write(`start failed: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exitCode = 1;
});
