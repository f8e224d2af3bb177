import { existsSync } from 'node:fs';
import { chmod, readdir, rm } from 'node:fs/promises';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startEmbeddedPostgres, stopLeftoverPostgres, templateDirFor } from '../../infra/embedded-postgres.ts';
import { toolsCacheDir } from '../../infra/temporal-cli.ts';
import { freePort } from '../../infra/temporal-dev-server.ts';

/**
 * Which PostgreSQL a test run uses, in this order:
 *  1. TEST_DATABASE_URL, when set (a superuser connection to an existing database; the run creates
 *     and drops its own databases there);
 *  2. TEST_DATABASE=embedded: an embedded PostgreSQL of the run's own, even when another answers;
 *     TEST_DATABASE=external: the PostgreSQL on 127.0.0.1:5432 (postgres user, no password), and
 *     an error when none answers;
 *  3. unset: the PostgreSQL on 127.0.0.1:5432 when one answers there, else the embedded one.
 *
 * The embedded one is the PostgreSQL `npm start` runs (infra/embedded-postgres.ts), with a
 * cluster of its own in the run's folder under the system's temporary directory, on a free port,
 * stopped and removed at the end. Its cluster is copied from a template initialised once into the
 * tools cache (a copy is faster than initdb; README, "Tests"). A run killed before its teardown
 * leaves its folder behind; the next run removes it (and stops its server).
 */

export const externalDefaultUrl = 'postgres://postgres@127.0.0.1:5432/postgres';
export const runFolderPrefix = 'plc-test-';

export interface TestDatabaseServer {
  adminUrl: string;
  /** One line saying which database the run uses, for the first line of its output. */
  description: string;
  /** The run's own server, removed at the end (nothing to drop in it). */
  embedded: boolean;
  stop(): Promise<void>;
}

function answers(host: string, port: number, timeoutMs: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host, port });
    const done = (value: boolean): void => {
      socket.destroy();
      resolve(value);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Removes the folders (and stops the servers) of earlier runs whose process is gone. */
export async function sweepLeftoverRuns(log: (line: string) => void): Promise<void> {
  const root = tmpdir();
  for (const entry of await readdir(root)) {
    const match = new RegExp(`^${runFolderPrefix}(\\d+)-`).exec(entry);
    if (match === null || isAlive(Number(match[1]))) continue;
    const folder = path.join(root, entry);
    await stopLeftoverPostgres(path.join(folder, 'db'), log).catch(() => null);
    await rm(folder, { recursive: true, force: true }).catch(() => {});
  }
}

export async function startTestDatabase(options: { runFolder: string; env?: Record<string, string | undefined> }): Promise<TestDatabaseServer> {
  const env = options.env ?? process.env;
  const url = env.TEST_DATABASE_URL;
  if (url !== undefined && url !== '') {
    return { adminUrl: url, description: `test database: TEST_DATABASE_URL (${redact(url)})`, embedded: false, stop: async () => {} };
  }
  const mode = env.TEST_DATABASE ?? '';
  if (mode !== '' && mode !== 'embedded' && mode !== 'external') {
    throw new Error(`TEST_DATABASE=${mode}: must be "embedded" or "external" (or unset: 127.0.0.1:5432 when it answers, else embedded)`);
  }
  if (mode === 'external' || (mode === '' && (await answers('127.0.0.1', 5432, 1000)))) {
    if (mode === 'external' && !(await answers('127.0.0.1', 5432, 2000))) {
      throw new Error('TEST_DATABASE=external: nothing answers on 127.0.0.1:5432 (unset TEST_DATABASE to use an embedded PostgreSQL, or set TEST_DATABASE_URL)');
    }
    return {
      adminUrl: externalDefaultUrl,
      description: `test database: the PostgreSQL on 127.0.0.1:5432 (${externalDefaultUrl}; TEST_DATABASE=embedded runs an embedded one instead, TEST_DATABASE_URL names another)`,
      embedded: false,
      stop: async () => {},
    };
  }

  const startedAt = performance.now();
  const dataDir = path.join(options.runFolder, 'db');
  // As root the server runs as the postgres user, which must reach its cluster through the run's folder (mkdtemp makes it 0700).
  await chmod(options.runFolder, 0o711);
  const templateDir = await templateDirFor(toolsCacheDir(env));
  const cached = existsSync(templateDir);
  const server = await startEmbeddedPostgres({
    dataDir,
    port: await freePort(),
    log: () => {},
    templateDir,
    database: null,
    // A throwaway cluster: nothing to keep across a crash of the machine.
    settings: { fsync: 'off', synchronous_commit: 'off', full_page_writes: 'off' },
  });
  const seconds = ((performance.now() - startedAt) / 1000).toFixed(1);
  const why = mode === 'embedded' ? 'TEST_DATABASE=embedded' : 'nothing answers on 127.0.0.1:5432 and TEST_DATABASE_URL is unset';
  return {
    adminUrl: server.adminUrl,
    description:
      `test database: embedded PostgreSQL on 127.0.0.1:${server.port} (${why}; started in ${seconds} s, ` +
      `${cached ? 'cluster copied from the cached template' : 'initdb, now cached'} in ${templateDir}; data in ${dataDir}, removed at the end)`,
    embedded: true,
    stop: () => server.stop(),
  };
}

function redact(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password !== '') parsed.password = '***';
    return parsed.toString();
  } catch {
    return '(not a URL)';
  }
}
