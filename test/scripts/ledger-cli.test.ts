import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postTransaction } from '../../db/ledger.ts';
import { moneyModel } from '../../src/ledger/money-model.ts';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';
import { setSnapshot, snapshotOf } from '../support/ledger.ts';

/**
 * `npm run ledger -- verify|stats` as an operator runs it: a separate Node process on a
 * database of its own, judged by its exit code and output.
 */
const script = fileURLToPath(new URL('../../scripts/ledger.ts', import.meta.url));

interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

function runCli(args: string[], env: Record<string, string | undefined>): Promise<CliResult> {
  return new Promise((resolve) => {
    execFile(process.execPath, [script, ...args], { env: { PATH: process.env.PATH, ...env }, timeout: 30_000 }, (error, stdout, stderr) => {
      const code = error === null ? 0 : typeof error.code === 'number' ? error.code : -1;
      resolve({ code, stdout, stderr });
    });
  });
}

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
  for (const [index, ownerId] of ['cli-alice', 'cli-bob'].entries()) {
    const posting = moneyModel.deposit({ ownerId, currency: 'BRL', amountMinor: 1000n + BigInt(index) });
    await postTransaction(db.pool, { idempotencyKey: `cli-deposit-${ownerId}`, txType: posting.txType, entries: posting.entries });
  }
});
afterAll(async () => {
  await db?.drop();
});

describe('ledger CLI', () => {
  it('verify exits 0 and says ok on a consistent ledger', async () => {
    const result = await runCli(['verify'], { DATABASE_URL: db.url });
    expect(result).toMatchObject({ code: 0 });
    expect(result.stdout).toContain('ok: every ledger invariant holds');
    expect(result.stderr).toMatch(/checking every invariant over \d+ accounts, 2 transactions/);
  });

  it('stats exits 0 and prints totals and transaction counts', async () => {
    const result = await runCli(['stats'], { DATABASE_URL: db.url });
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/BRL AVAILABLE\s+20\.01 \|\s+-20\.01/);
    expect(result.stdout).toMatch(/DEPOSIT\s+2/);
    expect(result.stdout).toContain('accounts: 2 user, 0 frozen');
  });

  it('verify exits 1 and lists each violation once a snapshot is corrupted', async () => {
    const world = (await snapshotOf(db.pool, 'system:world', 'AVAILABLE')) ?? 0n;
    await setSnapshot(db.pool, 'system:world', 'AVAILABLE', 'BRL', world + 5n);
    const result = await runCli(['verify'], { DATABASE_URL: db.url });
    expect(result.code).toBe(1);
    expect(result.stdout).toContain('1 violation(s):');
    expect(result.stdout).toContain('snapshot_mismatch  system:world/AVAILABLE/BRL  snapshot -1996, entries -2001');
    const limited = await runCli(['verify', '--limit', '1'], { DATABASE_URL: db.url });
    expect(limited.code).toBe(1);
  });

  it('exits 2 with the usage when DATABASE_URL is missing or the command is unknown', async () => {
    const missing = await runCli(['verify'], { DATABASE_URL: undefined });
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('DATABASE_URL is not set');
    const unknown = await runCli(['frobnicate'], { DATABASE_URL: db.url });
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('usage: npm run ledger');
    const badLimit = await runCli(['verify', '--limit', '0'], { DATABASE_URL: db.url });
    expect(badLimit.code).toBe(2);
  });
});
