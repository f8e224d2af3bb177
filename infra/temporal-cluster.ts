import { execFile, spawn } from 'node:child_process';
import { closeSync, existsSync, openSync, readFileSync } from 'node:fs';
import { cp, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import type { RunningService, ServiceExit } from './supervisor.ts';
import { goBuildIntoCache, isExecutable, onPath, toolsCacheDir } from './tools-cache.ts';

/**
 * The Temporal server as production runs it, for `npm run start:cluster` (scripts/cluster.ts):
 * the server binary and its SQL schema tool built once with Go at a pinned version into the tools
 * cache (infra/tools-cache.ts), with the versioned PostgreSQL schema files that ship in the
 * server's module copied beside them; the schemas created or upgraded with the tool; each service
 * (frontend, history, matching, internal worker) a process of its own; the Temporal UI server
 * built the same way (its web assets ship in its Go module, so it builds offline).
 *
 * One version everywhere: docker-compose.yml's images and deploy/kubernetes/temporal-values.yaml
 * name the same one (scripts/check-compose.ts checks it).
 */

/** The Temporal server's pinned version (1.30 needs a newer Go toolchain than this machine's). */
export const temporalServerVersion = 'v1.29.2';
/** The Temporal UI server's (the one the Temporal CLI v1.5.1 embeds, already in its Go module cache). */
export const temporalUiVersion = 'v2.42.1';

const run = promisify(execFile);

export interface ServerBinaries {
  server: string;
  sqlTool: string;
  /** `schema/postgresql/v12` of the server module: `temporal/versioned` and `visibility/versioned`. */
  schemaDir: string;
}

export function serverCacheDir(env: Record<string, string | undefined> = process.env): string {
  return path.join(toolsCacheDir(env), `temporal-server-${temporalServerVersion}`);
}

export function uiCacheDir(env: Record<string, string | undefined> = process.env): string {
  return path.join(toolsCacheDir(env), `temporal-ui-${temporalUiVersion}`);
}

function cachedServer(dir: string): ServerBinaries {
  return { server: path.join(dir, 'temporal-server'), sqlTool: path.join(dir, 'temporal-sql-tool'), schemaDir: path.join(dir, 'schema', 'postgresql', 'v12') };
}

export const noGoHelp = 'Go is not installed: `npm run start:cluster` builds the Temporal server with it once (https://go.dev/doc/install), or use `npm start` (the Temporal CLI dev server).';

/**
 * The server, its schema tool and schema files from the tools cache, built first when missing
 * (`go install` of the pinned version, about 90 s with a warm Go module cache). Throws with
 * `noGoHelp` when they are missing and Go is absent.
 */
export async function resolveTemporalServer(progress: (line: string) => void): Promise<ServerBinaries> {
  const dir = serverCacheDir();
  const cached = cachedServer(dir);
  if ((await isExecutable(cached.server)) && (await isExecutable(cached.sqlTool)) && existsSync(path.join(cached.schemaDir, 'temporal', 'versioned'))) return cached;
  if (onPath('go') === null) throw new Error(noGoHelp);
  const module = 'go.temporal.io/server';
  await goBuildIntoCache({
    label: `the Temporal server ${temporalServerVersion} and its SQL tool`,
    args: () => ['install', `${module}/cmd/server@${temporalServerVersion}`, `${module}/cmd/tools/sql@${temporalServerVersion}`],
    binaries: { server: 'temporal-server', sql: 'temporal-sql-tool' },
    targetDir: dir,
    expected: 'about 90 s with a warm Go module cache, several minutes with an empty one',
    progress,
  });
  // The schema files ship in the module the build just fetched; keep a copy beside the binaries
  // so that a cleaned Go module cache does not take them away.
  const { stdout } = await run('go', ['env', 'GOMODCACHE']);
  const source = path.join(stdout.trim(), `${module}@${temporalServerVersion}`, 'schema', 'postgresql', 'v12');
  await rm(cached.schemaDir, { recursive: true, force: true });
  await mkdir(path.dirname(cached.schemaDir), { recursive: true });
  await cp(source, cached.schemaDir, { recursive: true });
  // The module cache's files are read-only; the copy must stay removable by the next pin's build.
  await run('chmod', ['-R', 'u+w', cached.schemaDir]);
  return cached;
}

/** The UI server from the tools cache, built first when missing; null when it cannot be built (no Go, or the build failed: said through `progress`). */
export async function resolveTemporalUi(progress: (line: string) => void): Promise<string | null> {
  const dir = uiCacheDir();
  const binary = path.join(dir, 'temporal-ui-server');
  if (await isExecutable(binary)) return binary;
  if (onPath('go') === null) return null;
  try {
    await goBuildIntoCache({
      label: `the Temporal UI server ${temporalUiVersion}`,
      args: () => ['install', `github.com/temporalio/ui-server/v2/cmd/server@${temporalUiVersion}`],
      binaries: { server: 'temporal-ui-server' },
      targetDir: dir,
      expected: 'about a minute; its web assets ship in the Go module',
      progress,
    });
    return binary;
  } catch (error) {
    progress(`the Temporal UI could not be built (${error instanceof Error ? error.message.split('\n')[0] : String(error)}): the cluster runs without it`);
    return null;
  }
}

export interface TemporalDatabase {
  host: string;
  port: number;
  user: string;
  password: string;
  database: string;
  visibilityDatabase: string;
}

/**
 * Creates Temporal's role and its two databases on the PostgreSQL at `adminUrl` when missing
 * (as deploy/postgres/init-temporal.sql does for docker-compose), owned by that role.
 */
export async function ensureTemporalDatabases(adminUrl: string, target: TemporalDatabase): Promise<void> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    const role = await client.query('SELECT 1 FROM pg_roles WHERE rolname = $1', [target.user]);
    if (role.rowCount === 0) await client.query(`CREATE ROLE ${pg.escapeIdentifier(target.user)} LOGIN PASSWORD ${pg.escapeLiteral(target.password)}`);
    else await client.query(`ALTER ROLE ${pg.escapeIdentifier(target.user)} LOGIN PASSWORD ${pg.escapeLiteral(target.password)}`);
    for (const name of [target.database, target.visibilityDatabase]) {
      const exists = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
      if (exists.rowCount === 0) await client.query(`CREATE DATABASE ${pg.escapeIdentifier(name)} OWNER ${pg.escapeIdentifier(target.user)}`);
    }
  } finally {
    await client.end();
  }
}

async function hasSchemaVersion(target: TemporalDatabase, database: string): Promise<boolean> {
  const client = new pg.Client({ host: target.host, port: target.port, user: target.user, password: target.password, database });
  await client.connect();
  try {
    const result = await client.query("SELECT 1 FROM information_schema.tables WHERE table_name = 'schema_version'");
    return (result.rowCount ?? 0) > 0;
  } finally {
    await client.end();
  }
}

/**
 * Creates (first run) and upgrades (every run: a newer pin brings newer versioned files) the
 * persistence and visibility schemas with the server's own tool, as
 * deploy/temporal/setup-schema.sh does in docker-compose.
 */
export async function setupTemporalSchemas(binaries: ServerBinaries, target: TemporalDatabase, say: (line: string) => void): Promise<void> {
  const parts = [
    { database: target.database, dir: path.join(binaries.schemaDir, 'temporal', 'versioned') },
    { database: target.visibilityDatabase, dir: path.join(binaries.schemaDir, 'visibility', 'versioned') },
  ];
  const env = { ...process.env, SQL_PASSWORD: target.password };
  for (const part of parts) {
    const base = ['--plugin', 'postgres12', '--ep', target.host, '-p', String(target.port), '-u', target.user, '--db', part.database];
    try {
      if (!(await hasSchemaVersion(target, part.database))) {
        await run(binaries.sqlTool, [...base, 'setup-schema', '-v', '0.0'], { env });
      }
      await run(binaries.sqlTool, [...base, 'update-schema', '-d', part.dir], { env });
    } catch (error) {
      const output = error as { stderr?: string; stdout?: string; message: string };
      throw new Error(`temporal-sql-tool failed on database ${part.database}: ${output.message}\n${(output.stderr ?? '').slice(-2000)}`, { cause: error });
    }
  }
  const versions = await Promise.all(
    parts.map(async (part) => {
      const client = new pg.Client({ host: target.host, port: target.port, user: target.user, password: target.password, database: part.database });
      await client.connect();
      try {
        const result = await client.query<{ curr_version: string }>('SELECT curr_version FROM schema_version LIMIT 1');
        return `${part.database} ${result.rows[0]?.curr_version ?? '?'}`;
      } finally {
        await client.end();
      }
    }),
  );
  say(`Temporal schemas ready (${versions.join(', ')})`);
}

function tail(file: string, lines: number): string {
  try {
    return readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return '(no log)';
  }
}

/**
 * A binary of the cluster (a Temporal service, the UI server, the load balancer) as a supervised
 * process: its own process group (a terminal's Ctrl-C reaches the supervisor only), its output
 * appended to `logFile`. `stop()` sends `stopSignal` (default SIGTERM) and SIGKILL past `graceMs`.
 */
export function startBinary(options: {
  name: string;
  command: string;
  args: readonly string[];
  env: Record<string, string | undefined>;
  logFile: string;
  graceMs: number;
  say: (line: string) => void;
  stopSignal?: NodeJS.Signals;
  cwd?: string;
}): RunningService & { logTail: () => string } {
  const fd = openSync(options.logFile, 'a', 0o600);
  let child;
  try {
    child = spawn(options.command, [...options.args], { cwd: options.cwd, env: options.env, stdio: ['ignore', fd, fd], detached: true });
  } finally {
    closeSync(fd);
  }
  // Never leave one behind when this process ends, however it ends.
  const killOnExit = (): void => {
    child.kill('SIGKILL');
  };
  process.once('exit', killOnExit);
  const exited = new Promise<ServiceExit>((resolve) => {
    child.once('exit', (code, signal) => {
      process.removeListener('exit', killOnExit);
      resolve({ code, signal });
    });
    child.once('error', (error) => {
      options.say(`${options.name} could not start: ${error.message}`);
      resolve({ code: null, signal: null });
    });
  });
  return {
    pid: child.pid ?? null,
    exited,
    logTail: () => tail(options.logFile, 15),
    stop: async () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill(options.stopSignal ?? 'SIGTERM');
      const timer = setTimeout(() => {
        options.say(`${options.name} did not stop within ${(options.graceMs / 1000).toFixed(1)} s: killing it`);
        child.kill('SIGKILL');
      }, options.graceMs);
      await exited;
      clearTimeout(timer);
    },
  };
}

/**
 * Writes `template` to `target` with each `${NAME}` replaced by `values[NAME]`; a placeholder
 * without a value is an error (a config file must never reach a server half filled in).
 */
export async function renderTemplate(template: string, target: string, values: Readonly<Record<string, string>>): Promise<void> {
  const text = await readFile(template, 'utf8');
  const missing = new Set<string>();
  const rendered = text.replace(/\$\{([A-Z0-9_]+)\}/g, (_, name: string) => {
    const value = values[name];
    if (value === undefined) missing.add(name);
    return value ?? '';
  });
  if (missing.size > 0) throw new Error(`${template}: no value for ${[...missing].join(', ')}`);
  await mkdir(path.dirname(target), { recursive: true });
  await writeFile(target, rendered);
}

/**
 * Waits until the first service has written the cluster's metadata row (`cluster_metadata_info`).
 * Every service writes it at its start when missing; on a fresh database, services started
 * together race to insert it and the losers exit ("duplicate key ... cluster_metadata_info_pkey"),
 * so the first service starts alone and the others after this.
 */
export async function waitForClusterMetadata(target: TemporalDatabase, timeoutMs: number, ended: () => boolean): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const client = new pg.Client({ host: target.host, port: target.port, user: target.user, password: target.password, database: target.database });
    try {
      await client.connect();
      const result = await client.query('SELECT 1 FROM cluster_metadata_info LIMIT 1');
      if ((result.rowCount ?? 0) > 0) return;
    } finally {
      await client.end().catch(() => {});
    }
    if (ended()) throw new Error('the first Temporal service exited before it wrote the cluster metadata (see its log)');
    if (Date.now() > deadline) throw new Error(`the first Temporal service did not write the cluster metadata within ${timeoutMs / 1000} s`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}
