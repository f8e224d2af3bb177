import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { bundleWorkflowCode } from '@temporalio/worker';
import pg from 'pg';
import type { TestProject } from 'vitest/node';
import { applyMigrations } from '../../db/migrate.ts';
import { createPool } from '../../db/pool.ts';
import { resolveTemporalCli, temporalCliHelp } from '../../infra/temporal-cli.ts';
import { freePort, startTemporalDevServer, type DevServer } from '../../infra/temporal-dev-server.ts';
import { workflowsPath } from '../../worker/workflows-path.ts';
import { runFolderPrefix, startTestDatabase, sweepLeftoverRuns, type TestDatabaseServer } from './test-database.ts';

/**
 * Once per test run: the PostgreSQL server (test/support/test-database.ts: TEST_DATABASE_URL,
 * else 127.0.0.1:5432 when it answers, else an embedded one; its first line says which), a
 * migrated template database on it (each test file clones it), one Temporal dev server, and one
 * workflow bundle. Everything is torn down in the returned function, which vitest calls even when
 * tests fail; what setup started is also torn down if setup itself throws.
 */

declare module 'vitest' {
  export interface ProvidedContext {
    adminDatabaseUrl: string;
    templateDatabase: string;
    temporalAddress: string;
    workflowBundlePath: string;
  }
}

export const testDatabasePrefix = 'plc_test_';

function databaseUrl(adminUrl: string, database: string): string {
  const url = new URL(adminUrl);
  url.pathname = `/${database}`;
  return url.toString();
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const runId = `${process.pid}_${Date.now().toString(36)}`;
  const templateDatabase = `${testDatabasePrefix}tpl_${runId}`;
  let devServer: DevServer | null = null;
  let database: TestDatabaseServer | null = null;
  let admin: pg.Client | null = null;
  await sweepLeftoverRuns((line) => process.stdout.write(`${line}\n`));
  const workDir = await mkdtemp(path.join(tmpdir(), `${runFolderPrefix}${process.pid}-`));

  const teardown = async (): Promise<void> => {
    await devServer?.stop();
    devServer = null;
    if (admin !== null && database?.embedded !== true) {
      const stale = await admin.query<{ datname: string }>(
        `SELECT datname FROM pg_database WHERE datname LIKE $1 || '%' AND datname LIKE '%' || $2 || '%'`,
        [testDatabasePrefix, runId],
      );
      for (const { datname } of stale.rows) {
        await admin.query(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(datname)} WITH (FORCE)`);
      }
    }
    await admin?.end();
    admin = null;
    await database?.stop();
    database = null;
    await rm(workDir, { recursive: true, force: true });
  };

  try {
    database = await startTestDatabase({ runFolder: workDir });
    process.stdout.write(`${database.description}\n`);
    const adminUrl = database.adminUrl;
    admin = new pg.Client({ connectionString: adminUrl });
    try {
      await admin.connect();
    } catch (error) {
      throw new Error(
        `cannot connect to the test database (${database.description}): ${error instanceof Error ? error.message : String(error)}\n` +
          'Set TEST_DATABASE_URL to a superuser connection, or TEST_DATABASE=embedded to run an embedded PostgreSQL.',
        { cause: error },
      );
    }
    await admin.query(`CREATE DATABASE ${pg.escapeIdentifier(templateDatabase)}`);
    const pool = createPool({ connectionString: databaseUrl(adminUrl, templateDatabase), max: 1, applicationName: 'test-setup' });
    try {
      await applyMigrations(pool);
    } finally {
      await pool.end();
    }

    const cli = await resolveTemporalCli({
      configured: process.env.TEMPORAL_CLI,
      allowBuild: true,
      progress: (line) => process.stderr.write(`${line}\n`),
    });
    if (cli === null) throw new Error(temporalCliHelp);
    devServer = await startTemporalDevServer({
      cliPath: cli.path,
      ip: '127.0.0.1',
      port: await freePort(),
      uiPort: null,
      dbFilename: null,
      namespace: 'default',
      startTimeoutMs: 30_000,
      log: () => {},
    });

    const bundle = await bundleWorkflowCode({ workflowsPath, logger: undefined });
    const workflowBundlePath = path.join(workDir, 'workflow-bundle.js');
    await writeFile(workflowBundlePath, bundle.code);

    project.provide('adminDatabaseUrl', adminUrl);
    project.provide('templateDatabase', templateDatabase);
    project.provide('temporalAddress', devServer.address);
    project.provide('workflowBundlePath', workflowBundlePath);
  } catch (error) {
    await teardown();
    throw error;
  }
  return teardown;
}
