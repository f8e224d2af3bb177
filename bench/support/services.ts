import pg from 'pg';
import { resolveTemporalCli, temporalCliHelp } from '../../infra/temporal-cli.ts';
import { freePort, startTemporalDevServer, type DevServer } from '../../infra/temporal-dev-server.ts';

/**
 * What the benchmarks that run the whole service share: a stack of cleanups run in reverse on
 * the way out (each failure logged, none stopping the rest), a fresh database dropped at the
 * end, and a headless in-memory Temporal dev server of their own.
 */

export interface Cleanups {
  push(cleanup: { name: string; run: () => Promise<void> }): void;
  /** Runs every cleanup pushed so far, last first. */
  stop(): Promise<void>;
}

export function cleanupStack(log: (line: string) => void): Cleanups {
  const cleanups: { name: string; run: () => Promise<void> }[] = [];
  return {
    push: (cleanup) => {
      cleanups.push(cleanup);
    },
    async stop() {
      while (cleanups.length > 0) {
        const cleanup = cleanups.pop()!;
        try {
          await cleanup.run();
        } catch (error) {
          log(`  (stopping ${cleanup.name} failed: ${error instanceof Error ? error.message : String(error)})`);
        }
      }
    },
  };
}

/** Creates `<prefix>_<pid>_<time>` on `adminUrl`, dropped (WITH FORCE) by the cleanups; returns its name and URL. */
export async function createBenchDatabase(adminUrl: string, prefix: string, cleanups: Cleanups): Promise<{ name: string; url: string }> {
  const name = `${prefix}_${process.pid}_${Date.now().toString(36)}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${pg.escapeIdentifier(name)}`);
  } finally {
    await admin.end();
  }
  cleanups.push({
    name: 'database',
    run: async () => {
      const dropper = new pg.Client({ connectionString: adminUrl });
      await dropper.connect();
      try {
        await dropper.query(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(name)} WITH (FORCE)`);
      } finally {
        await dropper.end();
      }
    },
  });
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return { name, url: url.toString() };
}

/** A headless, in-memory dev server on a free port, stopped by the cleanups. */
export async function startBenchDevServer(log: (line: string) => void, cleanups: Cleanups): Promise<{ devServer: DevServer; cliPath: string }> {
  const cli = await resolveTemporalCli({ configured: process.env.TEMPORAL_CLI, allowBuild: true, progress: log });
  if (cli === null) throw new Error(temporalCliHelp);
  const devServer = await startTemporalDevServer({
    cliPath: cli.path,
    ip: '127.0.0.1',
    port: await freePort(),
    uiPort: null,
    dbFilename: null,
    namespace: 'default',
    startTimeoutMs: 30_000,
    log: () => {},
  });
  cleanups.push({ name: 'Temporal dev server', run: () => devServer.stop() });
  return { devServer, cliPath: cli.path };
}
