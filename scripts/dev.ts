import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createPool } from '../db/pool.ts';
import { prepareDatabase } from '../infra/bootstrap.ts';
import { ConfigError, loadConfig } from '../infra/config.ts';
import { startEmbeddedPostgres } from '../infra/embedded-postgres.ts';
import { createLogger } from '../infra/logger.ts';
import { resolveTemporalCli, temporalCliHelp } from '../infra/temporal-cli.ts';
import { startTemporalDevServer } from '../infra/temporal-dev-server.ts';
import { workerPreloadUrl } from '../worker/workflow-thread-guard.ts';

/**
 * `npm start`: the whole service on one machine with nothing configured. Uses DATABASE_URL and
 * TEMPORAL_ADDRESS when set; otherwise runs an embedded PostgreSQL and the Temporal CLI dev
 * server, both keeping their data under DATA_DIR (default .data/) so a restart keeps every row
 * and every workflow. Then starts the API and the worker as two child processes, the same
 * programs production runs alone (`npm run start:api`, `npm run start:worker`).
 */

const root = fileURLToPath(new URL('..', import.meta.url));
const say = (line: string): void => {
  process.stdout.write(`[start] ${line}\n`);
};

async function loadOrCreateSecret(file: string, make: () => string): Promise<{ value: string; created: boolean }> {
  if (existsSync(file)) return { value: (await readFile(file, 'utf8')).trim(), created: false };
  const value = make();
  await writeFile(file, `${value}\n`, { mode: 0o600 });
  return { value, created: true };
}

async function waitForReady(url: string, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    try {
      const response = await fetch(url, { signal: AbortSignal.timeout(3000) });
      if (response.status === 200) return true;
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  return false;
}

async function main(): Promise<void> {
  const startedAt = Date.now();
  const config = loadConfig();
  const dataDir = path.resolve(root, config.DATA_DIR);
  await mkdir(dataDir, { recursive: true });
  const stops: (() => Promise<void>)[] = [];
  const env: Record<string, string> = { ...(process.env as Record<string, string>) };

  let databaseUrl = config.DATABASE_URL;
  if (databaseUrl === undefined) {
    const embedded = await startEmbeddedPostgres({ dataDir, port: config.EMBEDDED_POSTGRES_PORT, log: say });
    stops.unshift(embedded.stop);
    databaseUrl = embedded.databaseUrl;
  }
  env.DATABASE_URL = databaseUrl;

  let temporalAddress = config.TEMPORAL_ADDRESS;
  let temporalUi: string | null = null;
  if (temporalAddress === undefined) {
    const cli = await resolveTemporalCli({ configured: config.TEMPORAL_CLI, allowBuild: true, progress: say });
    if (cli !== null) {
      say(`Temporal CLI: ${cli.path} (${cli.source})`);
      const server = await startTemporalDevServer({
        cliPath: cli.path,
        ip: '127.0.0.1',
        port: config.TEMPORAL_DEV_PORT,
        uiPort: config.TEMPORAL_UI_PORT,
        dbFilename: path.join(dataDir, 'temporal.sqlite'),
        namespace: config.TEMPORAL_NAMESPACE,
        startTimeoutMs: 60_000,
        log: say,
      });
      stops.unshift(server.stop);
      temporalAddress = server.address;
      temporalUi = server.uiUrl;
    } else {
      // Last resort: the SDK's own download of the dev server (needs the internet).
      say('no Temporal CLI found and Go is not installed: trying the Temporal SDK download');
      try {
        const { TestWorkflowEnvironment } = await import('@temporalio/testing');
        const { customSearchAttributes } = await import('../infra/search-attributes.ts');
        const { SearchAttributeType } = await import('@temporalio/common');
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
        stops.unshift(() => environment.teardown());
        temporalAddress = `127.0.0.1:${config.TEMPORAL_DEV_PORT}`;
        temporalUi = `http://127.0.0.1:${config.TEMPORAL_UI_PORT}`;
      } catch (error) {
        throw new Error(`${temporalCliHelp}\n(the SDK download failed too: ${error instanceof Error ? error.message : String(error)})`);
      }
    }
  }
  env.TEMPORAL_ADDRESS = temporalAddress;

  if (config.JWT_SECRET === undefined) {
    env.JWT_SECRET = (await loadOrCreateSecret(path.join(dataDir, 'jwt-secret'), () => randomBytes(32).toString('hex'))).value;
  }
  if (config.ADMIN_USERNAME === undefined) {
    const password = await loadOrCreateSecret(path.join(dataDir, 'admin-password'), () => randomBytes(18).toString('base64url'));
    env.ADMIN_USERNAME = 'admin';
    env.ADMIN_PASSWORD = password.value;
    say(`administrator: username "admin", password in ${path.join(config.DATA_DIR, 'admin-password')}`);
  }

  // Migrate once here so the two children start against a ready schema.
  const pool = createPool({ connectionString: databaseUrl, max: 1, applicationName: 'settlement-start' });
  try {
    await prepareDatabase(pool, loadConfig(env), createLogger('warn', 'start'));
  } finally {
    await pool.end();
  }

  const children: ChildProcess[] = [];
  let stopping = false;
  const stopAll = async (exitCode: number): Promise<never> => {
    if (!stopping) {
      stopping = true;
      say('stopping: draining the API, then the worker, then the embedded services');
      await Promise.all(
        children.map(
          (child) =>
            new Promise<void>((resolve) => {
              if (child.exitCode !== null || child.signalCode !== null) return resolve();
              child.once('exit', () => resolve());
              child.kill('SIGTERM');
            }),
        ),
      );
      for (const stop of stops) await stop().catch(() => {});
    }
    process.exit(exitCode);
  };
  const host = config.HOST === '0.0.0.0' ? '127.0.0.1' : config.HOST;
  const base = `http://${host}:${config.PORT}`;
  // No gateway configured: run the simulator beside the service, each pointed at the other.
  // [name, the program under the repository, node's options before it, its environment]
  const processes: [string, string, string[], Record<string, string>][] = [
    ['api', 'api/server.ts', [], env],
    // The worker as production starts it: with the workflow-thread guard preloaded.
    ['worker', 'worker/main.ts', ['--import', workerPreloadUrl], env],
  ];
  if (process.env.GATEWAY_BASE_URL === undefined || process.env.GATEWAY_BASE_URL === '') {
    const simulatorUrl = new URL(config.GATEWAY_BASE_URL);
    processes.push([
      'simulator',
      'simulator/main.ts',
      [],
      {
        ...env,
        SIMULATOR_HOST: simulatorUrl.hostname,
        SIMULATOR_PORT: simulatorUrl.port || '80',
        SIMULATOR_API_KEY: config.GATEWAY_API_KEY,
        SIMULATOR_WEBHOOK_TOKEN: config.GATEWAY_WEBHOOK_TOKEN,
        SIMULATOR_WEBHOOK_URL: `${base}/api/v1/redemption/webhook/gateway`,
        SIMULATOR_VALIDATION_URL: `${base}/api/v1/webhooks/transfer/validate`,
      },
    ]);
    say(`gateway: the simulator on ${config.GATEWAY_BASE_URL} (set GATEWAY_BASE_URL for a real gateway)`);
  }
  for (const [name, file, nodeOptions, childEnv] of processes) {
    const child = spawn(process.execPath, [...nodeOptions, path.join(root, file)], { env: childEnv, stdio: ['ignore', 'inherit', 'inherit'] });
    child.once('exit', (code, signal) => {
      if (!stopping) {
        say(`${name} exited (code ${String(code)}, signal ${String(signal)}): stopping everything`);
        void stopAll(1);
      }
    });
    children.push(child);
  }
  // embedded-postgres installs exit hooks that stop PostgreSQL and exit at the first signal,
  // before the API has drained. Our own handler stops things in the right order instead.
  process.removeAllListeners('SIGINT');
  process.removeAllListeners('SIGTERM');
  process.on('SIGINT', () => void stopAll(0));
  process.on('SIGTERM', () => void stopAll(0));

  if (await waitForReady(`${base}/readyz`, 120_000)) {
    say(`ready in ${((Date.now() - startedAt) / 1000).toFixed(1)} s`);
    say(`API:          ${base}/api/v1  (health ${base}/readyz)`);
    say(`API docs:     ${base}/docs  (OpenAPI ${base}/openapi.json)`);
    if (temporalUi !== null) say(`Temporal UI:  ${temporalUi}`);
    say('Ctrl-C stops everything gracefully');
  } else {
    say('the API did not become ready within 120 s; see the logs above');
    await stopAll(1);
  }
}

main().catch((error: unknown) => {
  if (error instanceof ConfigError) process.stderr.write(`${error.message}\n`);
  else process.stderr.write(`start failed: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
