import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { stateFileName } from '../../infra/dev-state.ts';

/**
 * `npm run reset` (scripts/reset.ts) as a person runs it, on data folders of its own: it wipes
 * what npm start keeps, asks first (or takes --yes), and refuses while npm start, or anything it
 * left, still uses the folder, or when the folder is not one npm start made.
 */
const root = fileURLToPath(new URL('../../', import.meta.url));
const scratch = mkdtempSync(path.join(tmpdir(), 'reset-cli-'));
const children: ChildProcess[] = [];

function reset(dataDir: string, ...args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    // stdin closed: not a terminal, as in a script.
    const child = spawn(process.execPath, [path.join(root, 'scripts/reset.ts'), ...args], {
      cwd: scratch,
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', DATA_DIR: dataDir },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    child.once('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

/** A data folder as npm start leaves it after a stop. */
function stoppedDataDir(name: string): string {
  const dir = path.join(scratch, name);
  mkdirSync(path.join(dir, 'postgres', 'base'), { recursive: true });
  mkdirSync(path.join(dir, 'mail'), { recursive: true });
  for (const file of ['postgres-password', 'postgres.log', 'temporal.sqlite', 'temporal.sqlite-wal', 'gateway-simulator.sqlite', 'jwt-secret', 'admin-password', 'pin-pepper']) {
    writeFileSync(path.join(dir, file), 'x');
  }
  return dir;
}

/** A live process whose command line says dev.ts, as npm start's supervisor's does. */
function fakeSupervisor(): number {
  const child = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 120000)', 'scripts/dev.ts'], { stdio: 'ignore' });
  children.push(child);
  return child.pid!;
}

afterAll(() => {
  for (const child of children) child.kill('SIGKILL');
  rmSync(scratch, { recursive: true, force: true });
});

describe('npm run reset', () => {
  it('--help says what it wipes and how to confirm', async () => {
    const run = await reset(path.join(scratch, 'none'), '--help');
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('usage: npm run reset -- [--yes] [--wallets]');
    const bad = await reset(path.join(scratch, 'none'), '--force');
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("Unknown option '--force'");
  });

  it('off a terminal refuses without --yes, and wipes the folder with it', async () => {
    const dir = stoppedDataDir('stopped');
    const asked = await reset(dir);
    expect(asked.code).toBe(2);
    expect(asked.stdout).toContain(`this removes ${dir} (admin-password, gateway-simulator.sqlite, jwt-secret, mail/`);
    expect(asked.stderr).toContain('run it again with --yes');
    expect(readdirSync(dir)).toHaveLength(10);
    const done = await reset(dir, '--yes');
    expect(done.code, done.stderr).toBe(0);
    expect(done.stdout).toContain('the next npm start begins from nothing');
    expect(readdirSync(dir)).toEqual([]);
    const again = await reset(dir, '--yes');
    expect(again.stdout).toContain(`nothing to reset: ${dir} is empty`);
  });

  it('refuses while npm start runs on the folder, or left a process running', async () => {
    const dir = stoppedDataDir('running');
    const pid = fakeSupervisor();
    writeFileSync(path.join(dir, stateFileName), JSON.stringify({ pid, startedAt: '2026-12-07T00:00:00.000Z', dataDir: dir, endpoints: [], processes: {} }));
    const running = await reset(dir, '--yes');
    expect(running.code).toBe(1);
    expect(running.stderr).toContain(`npm start is running with this data folder (pid ${pid}`);
    expect(running.stderr).toContain('Nothing was removed');
    expect(existsSync(path.join(dir, 'postgres'))).toBe(true);
    // The supervisor gone, a process it started still alive.
    writeFileSync(path.join(dir, stateFileName), JSON.stringify({ pid: 2 ** 22 + 1, startedAt: '2026-12-07T00:00:00.000Z', dataDir: dir, endpoints: [], processes: { temporal: pid, api: null } }));
    const left = await reset(dir, '--yes');
    expect(left.code).toBe(1);
    expect(left.stderr).toContain(`left temporal (pid ${pid}) running`);
    expect(existsSync(path.join(dir, 'postgres'))).toBe(true);
  });

  it('refuses while a PostgreSQL still serves the cluster', async () => {
    const dir = stoppedDataDir('postgres-left');
    writeFileSync(path.join(dir, 'postgres', 'postmaster.pid'), `${fakeSupervisor()}\n${dir}/postgres\n`);
    const run = await reset(dir, '--yes');
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/a PostgreSQL \(pid \d+\) still serves/);
  });

  it('refuses a folder npm start did not make', async () => {
    const dir = stoppedDataDir('foreign');
    writeFileSync(path.join(dir, 'thesis.tex'), 'years of work');
    const run = await reset(dir, '--yes');
    expect(run.code).toBe(1);
    expect(run.stderr).toContain('holds thesis.tex, which npm start never writes');
    expect(existsSync(path.join(dir, 'thesis.tex'))).toBe(true);
    expect(existsSync(path.join(dir, 'jwt-secret'))).toBe(true);
  });
});
