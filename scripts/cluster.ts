import { randomBytes } from 'node:crypto';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createPool } from '../db/pool.ts';
import { prepareDatabase } from '../infra/bootstrap.ts';
import { clusterPorts, loadClusterSettings, registerNamespace, ClusterConfigError, type ClusterPorts } from '../infra/cluster.ts';
import { ConfigError, loadConfig } from '../infra/config.ts';
import { prepareDevelopmentSecurity } from '../infra/dev-security.ts';
import { loadOrCreateSecret, waitForReady } from '../infra/dev-stack.ts';
import { AlreadyRunningError, claimDataDir, type DataDirClaim, type Endpoint } from '../infra/dev-state.ts';
import { startEmbeddedPostgres, stopLeftoverPostgres } from '../infra/embedded-postgres.ts';
import { createLogger } from '../infra/logger.ts';
import { onPath } from '../infra/tools-cache.ts';
import { inProcessService, startNodeProcess, StoppingError, Supervisor, type RunningService } from '../infra/supervisor.ts';
import { resolveTemporalCli, temporalCliHelp } from '../infra/temporal-cli.ts';
import {
  ensureTemporalDatabases,
  renderTemplate,
  resolveTemporalServer,
  resolveTemporalUi,
  setupTemporalSchemas,
  startBinary,
  temporalServerVersion,
  type TemporalDatabase,
  waitForClusterMetadata,
} from '../infra/temporal-cluster.ts';
import { waitForFrontend, waitForPort } from '../infra/temporal-dev-server.ts';
import { workerPreloadUrl } from '../worker/workflow-thread-guard.ts';

/**
 * `npm run start:cluster`: production's shape on one machine (docs/deployment.md). PostgreSQL
 * (the embedded one under CLUSTER_DATA_DIR, or the server at CLUSTER_POSTGRES_URL) holds the
 * ledger and Temporal's persistence and visibility; the Temporal server built once at its pinned
 * version runs its four services as separate processes (frontend, history, matching, internal
 * worker) from deploy/temporal/cluster/cluster.yaml, with the Temporal UI beside them; the
 * namespace and search attributes are registered through the frontend; two API replicas run
 * behind HAProxy (deploy/haproxy/haproxy.cfg), two workers poll the task queues, and the gateway
 * simulator answers payouts. Every port is CLUSTER_PORT_BASE plus an offset (infra/cluster.ts).
 *
 * As `npm start`, this process supervises them all (infra/supervisor.ts): a process that dies is
 * restarted, and Ctrl-C stops them in order: the load balancer stops taking connections, the APIs
 * drain, the workers finish their activities, then the simulator, the mail sink, the UI, the
 * Temporal services (internal worker, frontend, matching, history) and PostgreSQL stop.
 */

const root = fileURLToPath(new URL('..', import.meta.url));
const say = (line: string): void => {
  process.stdout.write(`[cluster] ${line}\n`);
};

function endpointsOf(ports: ClusterPorts, embeddedPostgres: boolean, dataDir: string): Endpoint[] {
  const at = (what: string, port: number, where?: string): Endpoint => ({
    what,
    where: where ?? `127.0.0.1:${port}`,
    port: { host: '127.0.0.1', port, variable: 'CLUSTER_PORT_BASE' },
  });
  return [
    at('API (load balancer)', ports.loadBalancer, `http://127.0.0.1:${ports.loadBalancer}/api/v1`),
    at('API replica 1', ports.api[0]),
    at('API replica 2', ports.api[1]),
    at('Temporal frontend', ports.frontend),
    at('Temporal history', ports.history),
    at('Temporal matching', ports.matching),
    at('Temporal internal worker', ports.internalWorker),
    at('Temporal UI', ports.ui, `http://127.0.0.1:${ports.ui}`),
    at('gateway simulator', ports.simulator, `http://127.0.0.1:${ports.simulator}`),
    at('mail (SMTP sink)', ports.smtp),
    embeddedPostgres ? at('PostgreSQL', ports.postgres, `127.0.0.1:${ports.postgres} (embedded, ${path.join(dataDir, 'postgres')})`) : { what: 'PostgreSQL', where: 'CLUSTER_POSTGRES_URL' },
  ];
}

async function main(): Promise<void> {
  const startedAt = Date.now();
  const settings = loadClusterSettings(process.env, root);
  const ports = clusterPorts(settings.portBase);
  const dataDir = settings.dataDir;
  await mkdir(dataDir, { recursive: true });
  const logDir = path.join(dataDir, 'logs');
  await mkdir(logDir, { recursive: true });
  const haproxy = onPath('haproxy');
  if (haproxy === null) {
    throw new ClusterConfigError('HAProxy is not installed: start:cluster runs the API replicas behind it (Debian: apt-get install haproxy)');
  }

  const lb = `http://127.0.0.1:${ports.loadBalancer}`;
  // The children's environment: the caller's, with this topology's addresses over it.
  const env: Record<string, string> = {
    ...(process.env as Record<string, string>),
    DATA_DIR: dataDir,
    HOST: '127.0.0.1',
    TEMPORAL_ADDRESS: `127.0.0.1:${ports.frontend}`,
    SMTP_SINK_PORT: String(ports.smtp),
    TEMPORAL_UI_URL: `http://127.0.0.1:${ports.ui}`,
    // The gateway's validation call and its webhooks reach the API through the load balancer.
    GATEWAY_VALIDATION_URL: `${lb}/api/v1/webhooks/transfer/validate`,
  };
  // A gateway of the caller's (GATEWAY_BASE_URL, or an Asaas environment), as `npm start` takes one; else the simulator.
  const realGateway = (process.env.GATEWAY_BASE_URL ?? '') !== '' || (process.env.GATEWAY_ASAAS_ENVIRONMENT ?? '') !== '';
  if (!realGateway) env.GATEWAY_BASE_URL = `http://127.0.0.1:${ports.simulator}`;
  const config = loadConfig(env);
  const namespace = config.TEMPORAL_NAMESPACE;

  const claim: DataDirClaim = await claimDataDir({ dataDir, endpoints: endpointsOf(ports, settings.postgresUrl === null, dataDir), say, program: 'cluster.ts' });
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
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.removeAllListeners(signal);
    process.on(signal, () => void shutdown(signal, 0));
  }

  try {
    // The binaries first: a first run builds them (about 90 s), before anything runs.
    const server = await resolveTemporalServer(say);
    const ui = settings.ui ? await resolveTemporalUi(say) : null;
    const cli = await resolveTemporalCli({ configured: config.TEMPORAL_CLI, allowBuild: true, progress: say });
    if (cli === null) throw new Error(temporalCliHelp);
    say(`Temporal server ${temporalServerVersion}: ${server.server}`);

    // PostgreSQL: the embedded one, or the server CLUSTER_POSTGRES_URL names (a role that may create roles and databases).
    let adminUrl = settings.postgresUrl;
    if (adminUrl === null) {
      await stopLeftoverPostgres(dataDir, say);
      const started = await supervisor.start({
        name: 'postgres',
        stopped: 'PostgreSQL stopped',
        stopRank: 9,
        restart: true,
        start: async () => {
          const db = await startEmbeddedPostgres({ dataDir, port: ports.postgres, log: say, detached: true, settings: { max_connections: '300' } });
          adminUrl = db.adminUrl;
          return { pid: db.pid, exited: db.exited, stop: () => db.stop() };
        },
      });
      say(`embedded PostgreSQL listening on 127.0.0.1:${ports.postgres} (pid ${String(started.pid)}, data in ${path.join(dataDir, 'postgres')})`);
    }
    if (adminUrl === null) throw new Error('no database');
    const admin = new URL(adminUrl);
    const ledgerUrl = new URL(adminUrl);
    ledgerUrl.pathname = `/${settings.ledgerDatabase}`;
    env.DATABASE_URL = ledgerUrl.toString();
    {
      const pgClient = (await import('pg')).default;
      const client = new pgClient.Client({ connectionString: adminUrl });
      await client.connect();
      try {
        const exists = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [settings.ledgerDatabase]);
        if (exists.rowCount === 0) await client.query(`CREATE DATABASE ${pgClient.escapeIdentifier(settings.ledgerDatabase)}`);
      } finally {
        await client.end();
      }
    }

    // Temporal's role, databases and schemas.
    const temporalDb: TemporalDatabase = {
      host: admin.hostname,
      port: Number(admin.port || '5432'),
      user: 'temporal',
      password: (await loadOrCreateSecret(path.join(dataDir, 'temporal-db-password'), () => randomBytes(18).toString('base64url'))).value,
      database: 'temporal',
      visibilityDatabase: 'temporal_visibility',
    };
    await ensureTemporalDatabases(adminUrl, temporalDb);
    await setupTemporalSchemas(server, temporalDb, say);

    // The Temporal services, each a process; internal worker first to stop, history last.
    const temporalEnv = (service: string, metricsPort: number): Record<string, string> => ({
      ...(process.env as Record<string, string>),
      PLC_TEMPORAL_LOG_LEVEL: process.env.CLUSTER_TEMPORAL_LOG_LEVEL ?? 'warn',
      PLC_TEMPORAL_DB: temporalDb.database,
      PLC_TEMPORAL_VISIBILITY_DB: temporalDb.visibilityDatabase,
      PLC_TEMPORAL_DB_ADDRESS: `${temporalDb.host}:${temporalDb.port}`,
      PLC_TEMPORAL_DB_USER: temporalDb.user,
      PLC_TEMPORAL_DB_PASSWORD: temporalDb.password,
      PLC_TEMPORAL_METRICS_PORT: String(metricsPort),
      PLC_TEMPORAL_FRONTEND_PORT: String(ports.frontend),
      PLC_TEMPORAL_FRONTEND_HTTP_PORT: String(ports.frontendHttp),
      PLC_TEMPORAL_FRONTEND_MEMBERSHIP_PORT: String(ports.membership.frontend),
      PLC_TEMPORAL_HISTORY_PORT: String(ports.history),
      PLC_TEMPORAL_HISTORY_MEMBERSHIP_PORT: String(ports.membership.history),
      PLC_TEMPORAL_MATCHING_PORT: String(ports.matching),
      PLC_TEMPORAL_MATCHING_MEMBERSHIP_PORT: String(ports.membership.matching),
      PLC_TEMPORAL_WORKER_PORT: String(ports.internalWorker),
      PLC_TEMPORAL_WORKER_MEMBERSHIP_PORT: String(ports.membership.worker),
      PLC_TEMPORAL_DYNAMIC_CONFIG: path.join(root, 'deploy/temporal/cluster/dynamicconfig.yaml'),
      PLC_TEMPORAL_SERVICE: service,
    });
    const services = [
      { service: 'history', rank: 8.4, metrics: ports.metrics.history },
      { service: 'matching', rank: 8.3, metrics: ports.metrics.matching },
      { service: 'frontend', rank: 8.2, metrics: ports.metrics.frontend },
      { service: 'worker', rank: 8.1, metrics: ports.metrics.worker },
    ] as const;
    for (const { service, rank, metrics } of services) {
      const name = `temporal-${service}`;
      const running = await supervisor.start({
        name,
        stopped: `the Temporal ${service === 'worker' ? 'internal worker' : service} service stopped`,
        stopRank: rank,
        restart: true,
        start: () =>
          Promise.resolve(
            startBinary({
              name,
              command: server.server,
              args: ['--root', path.join(root, 'deploy/temporal'), '--config', 'cluster', '--env', 'cluster', '--allow-no-auth', 'start', '--service', service],
              env: temporalEnv(service, metrics),
              logFile: path.join(logDir, `${name}.log`),
              graceMs: 20_000,
              say,
            }),
          ),
      });
      say(`Temporal ${service} service started (pid ${String(running.pid)}, log ${path.join(logDir, `${name}.log`)})`);
      // History first and alone until the cluster's metadata is written (a fresh database's first start).
      if (service === 'history') {
        let ended = false;
        void running.exited.then(() => {
          ended = true;
        });
        await waitForClusterMetadata(temporalDb, 120_000, () => ended);
      }
    }
    const frontendAddress = `127.0.0.1:${ports.frontend}`;
    await waitForFrontend(frontendAddress, 120_000);
    await registerNamespace({ cli: cli.path, address: frontendAddress, namespace, say });

    let uiUrl: string | null = null;
    if (ui !== null) {
      const uiConfigDir = path.join(dataDir, 'temporal-ui');
      await renderTemplate(path.join(root, 'deploy/temporal/cluster/ui/cluster.yaml'), path.join(uiConfigDir, 'cluster.yaml'), {
        PLC_TEMPORAL_UI_FRONTEND: frontendAddress,
        PLC_TEMPORAL_UI_PORT: String(ports.ui),
        PLC_TEMPORAL_UI_NAMESPACE: namespace,
      });
      await supervisor.start({
        name: 'temporal-ui',
        stopped: 'the Temporal UI stopped',
        stopRank: 7,
        restart: true,
        start: () =>
          Promise.resolve(
            startBinary({
              name: 'temporal-ui',
              command: ui,
              args: ['--root', dataDir, '--config', 'temporal-ui', '--env', 'cluster', 'start'],
              env: process.env as Record<string, string>,
              logFile: path.join(logDir, 'temporal-ui.log'),
              graceMs: 5_000,
              say,
            }),
          ),
      });
      await waitForPort('127.0.0.1', ports.ui, 30_000);
      uiUrl = `http://127.0.0.1:${ports.ui}`;
    }

    // The application's secrets, kept in the data folder as `npm start` keeps them.
    if (config.JWT_SECRET === undefined) {
      env.JWT_SECRET = (await loadOrCreateSecret(path.join(dataDir, 'jwt-secret'), () => randomBytes(32).toString('hex'))).value;
    }
    if (config.ADMIN_USERNAME === undefined) {
      env.ADMIN_USERNAME = 'admin';
      env.ADMIN_PASSWORD = (await loadOrCreateSecret(path.join(dataDir, 'admin-password'), () => randomBytes(18).toString('base64url'))).value;
      say(`administrator: username "admin", password in ${path.join(dataDir, 'admin-password')}`);
    }
    await supervisor.start({
      name: 'mail',
      stopped: 'the SMTP sink stopped',
      stopRank: 6,
      restart: false,
      start: async () => {
        const security = await prepareDevelopmentSecurity({ config: loadConfig(env), dataDir, env, say });
        return inProcessService(() => security.stop());
      },
    });

    const pool = createPool({ connectionString: env.DATABASE_URL, max: 1, applicationName: 'settlement-start-cluster' });
    try {
      await prepareDatabase(pool, loadConfig(env), createLogger('warn', 'start-cluster'));
    } finally {
      await pool.end();
    }

    const graceMs = config.SHUTDOWN_GRACE_MS + 5_000;
    const node = (name: string, file: string, nodeOptions: readonly string[], childEnv: Record<string, string>) => (): Promise<RunningService> =>
      Promise.resolve(startNodeProcess({ name, file: path.join(root, file), nodeOptions, env: childEnv, graceMs, say }));
    if (!realGateway) await supervisor.start({
      name: 'simulator',
      stopped: 'the gateway simulator stopped (its state kept in the data folder)',
      stopRank: 5,
      restart: true,
      start: node('simulator', 'simulator/main.ts', [], {
        ...env,
        SIMULATOR_HOST: '127.0.0.1',
        SIMULATOR_PORT: String(ports.simulator),
        SIMULATOR_API_KEY: config.GATEWAY_API_KEY,
        SIMULATOR_WEBHOOK_TOKEN: config.GATEWAY_WEBHOOK_TOKEN,
        SIMULATOR_WEBHOOK_URL: `${lb}/api/v1/redemption/webhook/gateway`,
        SIMULATOR_VALIDATION_URL: `${lb}/api/v1/webhooks/transfer/validate`,
        SIMULATOR_STATE_FILE: path.join(dataDir, 'gateway-simulator.sqlite'),
      }),
    });
    for (const [index, rank] of [[1, 4.2], [2, 4.1]] as const) {
      await supervisor.start({
        name: `worker-${index}`,
        stopped: `worker ${index} finished its activities and stopped`,
        stopRank: rank,
        restart: true,
        start: node(`worker-${index}`, 'worker/main.ts', ['--import', workerPreloadUrl], env),
      });
    }
    for (const [index, rank] of [[1, 3.2], [2, 3.1]] as const) {
      await supervisor.start({
        name: `api-${index}`,
        stopped: `API replica ${index} drained its requests and stopped`,
        stopRank: rank,
        restart: true,
        start: node(`api-${index}`, 'api/server.ts', [], { ...env, PORT: String(ports.api[index - 1]) }),
      });
    }
    // HAProxy stops first: SIGUSR1 is its soft stop (no new connections, the open ones finish).
    await supervisor.start({
      name: 'load-balancer',
      stopped: 'the load balancer stopped taking connections',
      stopRank: 1,
      restart: true,
      start: () =>
        Promise.resolve(
          startBinary({
            name: 'load-balancer',
            command: haproxy,
            args: ['-db', '-f', path.join(root, 'deploy/haproxy/haproxy.cfg')],
            env: {
              ...(process.env as Record<string, string>),
              PLC_LB_HOST: '127.0.0.1',
              PLC_LB_PORT: String(ports.loadBalancer),
              PLC_API1_PORT: String(ports.api[0]),
              PLC_API2_PORT: String(ports.api[1]),
            },
            logFile: path.join(logDir, 'load-balancer.log'),
            graceMs: 10_000,
            stopSignal: 'SIGUSR1',
            say,
          }),
        ),
    });
    await claim.update(supervisor.pids());

    if (await waitForReady(`${lb}/readyz`, 180_000, () => supervisor.stopping)) {
      supervisor.markUp();
      say(`ready in ${((Date.now() - startedAt) / 1000).toFixed(1)} s`);
      say(`API:          ${lb}/api/v1  (through HAProxy; replicas on :${ports.api[0]} and :${ports.api[1]})`);
      say(`API docs:     ${lb}/docs`);
      say(`Web console:  ${lb}/console/`);
      say(`Temporal:     ${frontendAddress} (namespace ${namespace}; frontend, history, matching and internal worker as separate processes)`);
      say(uiUrl === null ? 'Temporal UI:  not running (CLUSTER_UI=0, or it could not be built)' : `Temporal UI:  ${uiUrl}`);
      say(`data folder:  ${dataDir} (logs in ${logDir})`);
      say('Ctrl-C stops everything in order: the load balancer, the APIs drain, the workers finish their activities, then the simulator, Temporal and PostgreSQL stop');
    } else if (!supervisor.stopping) {
      say('the API did not become ready through the load balancer within 180 s; see the logs above');
      await shutdown('the API was not ready', 1);
    }
  } catch (error) {
    if (error instanceof StoppingError) return;
    process.stderr.write(`start:cluster failed: ${error instanceof Error ? error.message : String(error)}\n`);
    await shutdown('start failed', 1);
  }
}

main().catch((error: unknown) => {
  if (error instanceof ConfigError || error instanceof ClusterConfigError || error instanceof AlreadyRunningError) process.stderr.write(`${error.message}\n`);
  else process.stderr.write(`start:cluster failed: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exitCode = 1;
});
