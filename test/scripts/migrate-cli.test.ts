import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { countMigrationFiles } from '../../db/migrate.ts';

/** `npm run migrate` as an operator runs it, on an empty database of its own. */
const script = fileURLToPath(new URL('../../scripts/migrate.ts', import.meta.url));

function runMigrate(env: Record<string, string | undefined>): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [script], { env: { PATH: process.env.PATH, ...env }, timeout: 60_000 }, (error, stdout, stderr) => {
      resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : -1, stdout, stderr });
    });
  });
}

const adminUrl = inject('adminDatabaseUrl');
const name = `${inject('templateDatabase').replace('_tpl_', '_mig_')}_${randomBytes(4).toString('hex')}`;
const url = new URL(adminUrl);
url.pathname = `/${name}`;

async function admin(sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

beforeAll(async () => {
  await admin(`CREATE DATABASE ${pg.escapeIdentifier(name)}`);
});
afterAll(async () => {
  await admin(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(name)} WITH (FORCE)`);
});

describe('npm run migrate', () => {
  it('applies every migration to an empty database, then finds nothing to do', async () => {
    const first = await runMigrate({ DATABASE_URL: url.toString() });
    expect(first.code).toBe(0);
    expect(first.stderr).toContain(`0 of ${await countMigrationFiles()} migrations applied`);
    expect(first.stdout).toMatch(/^applied: 0_create-migrations-table\.sql, 1_foundation\.sql, .*12_ledger_movements\.sql/);
    const second = await runMigrate({ DATABASE_URL: url.toString() });
    expect(second.code).toBe(0);
    expect(second.stdout).toBe('up to date: nothing to apply\n');
  });

  it('exits 2 without DATABASE_URL, and 1 when the database cannot be reached', async () => {
    expect((await runMigrate({ DATABASE_URL: undefined })).code).toBe(2);
    const unreachable = await runMigrate({ DATABASE_URL: 'postgres://postgres@127.0.0.1:1/none' });
    expect(unreachable.code).toBe(1);
    expect(unreachable.stderr).toContain('migrate: failed');
  });
});
