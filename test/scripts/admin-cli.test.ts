import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../support/app.ts';

/**
 * `npm run admin -- ...` as an operator runs it: a separate process, the password on standard
 * input, judged by exit code, output and what the API then lets the user do.
 */
const script = fileURLToPath(new URL('../../scripts/admin.ts', import.meta.url));

interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

function runCli(args: string[], input: string, env: Record<string, string | undefined>): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [script, ...args], { env: { PATH: process.env.PATH, ...env }, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => (stdout += String(chunk)));
    child.stderr.on('data', (chunk) => (stderr += String(chunk)));
    const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code: code ?? -1, stdout, stderr });
    });
    child.stdin.end(input);
  });
}

let t: TestApp;
let env: Record<string, string>;
beforeAll(async () => {
  t = await createTestApp();
  env = { DATABASE_URL: t.db.url };
});
afterAll(async () => {
  await t?.close();
});

const login = (username: string, password: string) =>
  t.app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { username, password } });
const verify = (token: string) => t.app.inject({ method: 'GET', url: '/api/v1/auth/verify', headers: { authorization: `Bearer ${token}` } });

describe('admin CLI', () => {
  it('creates an admin whose role the API enforces, refuses a taken name, and never echoes the password', async () => {
    const password = 'first-password-0123';
    const created = await runCli(['create', 'cli-operator', '--role', 'admin'], `${password}\n`, env);
    expect(created).toMatchObject({ code: 0 });
    expect(created.stdout).toContain('created admin cli-operator');
    expect(created.stdout + created.stderr).not.toContain(password);
    const taken = await runCli(['create', 'cli-operator', '--role', 'super_admin'], `${password}\n`, env);
    expect(taken.code).toBe(1);
    expect(taken.stderr).toContain('exists already');
    const session = await login('cli-operator', password);
    expect(session.statusCode).toBe(200);
    const token = session.json().access_token as string;
    expect((await verify(token)).json()).toMatchObject({ username: 'cli-operator', role: 'admin' });
    const stored = await t.db.pool.query(`SELECT password_hash FROM admin_users WHERE username = 'cli-operator'`);
    expect(stored.rows[0].password_hash).toMatch(/^scrypt\$/);
    const acquisition = await t.app.inject({ method: 'GET', url: '/api/v1/admin/acquisition', headers: { authorization: `Bearer ${token}` } });
    expect(acquisition.statusCode).toBe(403);
  });

  it('passwd changes the password and ends earlier tokens; disable ends logins and tokens; enable lets the user back', async () => {
    const first = 'passwd-first-0123';
    const second = 'passwd-second-4567';
    expect((await runCli(['create', 'cli-rotating', '--role', 'super_admin'], `${first}\n`, env)).code).toBe(0);
    const before = (await login('cli-rotating', first)).json().access_token as string;
    expect((await verify(before)).statusCode).toBe(200);
    // Tokens carry whole seconds: wait for the next one so the change is strictly after the token.
    await new Promise((resolve) => setTimeout(resolve, 1100));
    const changed = await runCli(['passwd', 'cli-rotating'], `${second}\n`, env);
    expect(changed).toMatchObject({ code: 0 });
    expect((await verify(before)).statusCode).toBe(401);
    expect((await login('cli-rotating', first)).statusCode).toBe(401);
    await new Promise((resolve) => setTimeout(resolve, 1100));
    const after = (await login('cli-rotating', second)).json().access_token as string;
    expect((await verify(after)).statusCode).toBe(200);

    await new Promise((resolve) => setTimeout(resolve, 1100));
    // The last active super_admin is kept (services/admin-users.ts, the rules the console's routes share).
    await t.db.pool.query(`UPDATE admin_users SET disabled = true WHERE role = 'super_admin' AND username <> 'cli-rotating'`);
    const last = await runCli(['disable', 'cli-rotating'], '', env);
    expect(last.code).toBe(1);
    expect(last.stderr).toContain('last active super_admin');
    expect((await runCli(['role', 'cli-rotating', 'admin'], '', env)).code).toBe(1);
    expect((await runCli(['create', 'cli-keeper', '--role', 'super_admin'], 'keeper-password-0123\n', env)).code).toBe(0);
    expect((await runCli(['disable', 'cli-rotating'], '', env)).code).toBe(0);
    expect((await runCli(['disable', 'cli-rotating'], '', env)).stdout).toContain('disabled already: nothing changed');
    const logged = await t.db.pool.query(
      `SELECT step, status, actor FROM operation_log WHERE operation_type = 'ADMIN_USER' AND reference_id = 'admin:cli-rotating' ORDER BY id`,
    );
    expect(logged.rows.map((row: { step: string; status: string }) => `${row.step} ${row.status}`)).toEqual([
      'create SUCCEEDED',
      'password SUCCEEDED',
      'disable REFUSED',
      'role admin REFUSED',
      'disable SUCCEEDED',
      'disable SUCCEEDED',
    ]);
    expect(logged.rows[0].actor).toMatch(/^cli/);
    expect((await verify(after)).statusCode).toBe(401);
    expect((await login('cli-rotating', second)).statusCode).toBe(401);
    expect((await runCli(['enable', 'cli-rotating'], '', env)).code).toBe(0);
    await new Promise((resolve) => setTimeout(resolve, 1100));
    expect((await login('cli-rotating', second)).statusCode).toBe(200);
    const listed = await runCli(['list'], '', env);
    expect(listed.stdout).toMatch(/cli-rotating\s+super_admin\s+active/);
  });

  it('refuses bad input with exit 2 and a usage line, and an unknown user with exit 1', async () => {
    expect((await runCli(['create', 'x', '--role', 'admin'], 'long-enough-password\n', env)).code).toBe(2);
    expect((await runCli(['create', 'cli-someone', '--role', 'root'], 'long-enough-password\n', env)).code).toBe(2);
    const short = await runCli(['create', 'cli-someone', '--role', 'admin'], 'short\n', env);
    expect(short.code).toBe(2);
    expect(short.stderr).toContain('12 to 256 characters');
    expect((await runCli(['passwd', 'nobody-here'], 'long-enough-password\n', env)).code).toBe(1);
    expect((await runCli(['disable', 'nobody-here'], '', env)).code).toBe(1);
    const unknown = await runCli(['frobnicate'], '', env);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('usage: npm run admin');
    expect((await runCli(['list'], '', {})).code).toBe(2);
  });

  it('flag set creates and changes a canary flag that the canary dashboard then shows', async () => {
    const created = await runCli(['flag', 'set', 'cli_flag', '--description', 'made by the test', '--enabled', 'true', '--percent', '12.5'], '', env);
    expect(created).toMatchObject({ code: 0 });
    expect(created.stdout).toContain('cli_flag  enabled');
    expect(created.stdout).toContain('12.50% of devices');
    const changed = await runCli(['flag', 'set', 'cli_flag', '--percent', '100', '--min-tier', 'silver'], '', env);
    expect(changed.stdout).toContain('100.00% of devices  (min tier silver)');
    expect((await runCli(['flag', 'set', 'new_flag_without_text'], '', env)).code).toBe(2);
    expect((await runCli(['flag', 'set', 'cli_flag', '--percent', '101'], '', env)).code).toBe(2);
    const admin = await t.adminHeaders();
    const status = (await t.app.inject({ method: 'GET', url: '/api/v1/admin/canary/status?device_id=some-device-1', headers: admin })).json();
    expect(status.flags.find((flag: { name: string }) => flag.name === 'cli_flag')).toMatchObject({ rollout_percent: '100.00', status: 'full', eligible: false });
    expect((await runCli(['flag', 'list'], '', env)).stdout).toContain('cli_flag');
  });
});

describe('admin CLI: fees-publish', () => {
  it('publishes the next fee schedule version from a JSON file, the API shows it current; a malformed file publishes nothing', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'fees-publish-'));
    const good = join(dir, 'v2.json');
    writeFileSync(
      good,
      JSON.stringify({
        description: 'Pix charged for Basic',
        rules: [
          { rail: 'PIX', tier: null, fixed_minor: 10, rate_bps: 100, min_minor: 20, max_minor: 500 },
          { rail: 'PIX', tier: 'PREMIUM', fixed_minor: 0, rate_bps: 0, min_minor: 0, max_minor: null },
        ],
      }),
    );
    const bad = join(dir, 'bad.json');
    writeFileSync(bad, JSON.stringify({ description: 'twice', rules: [{ rail: 'PIX', tier: null, fixed_minor: 1, rate_bps: 0, min_minor: 0, max_minor: null }, { rail: 'PIX', tier: null, fixed_minor: 2, rate_bps: 0, min_minor: 0, max_minor: null }] }));
    const refused = await runCli(['fees-publish', bad], '', env);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('two rules for PIX/*');
    const unknownRail = join(dir, 'rail.json');
    writeFileSync(unknownRail, JSON.stringify({ description: 'ted', rules: [{ rail: 'TED', tier: null, fixed_minor: 1, rate_bps: 0, min_minor: 0, max_minor: null }] }));
    expect((await runCli(['fees-publish', unknownRail], '', env)).code).toBe(2);
    expect((await t.app.inject({ method: 'GET', url: '/api/v1/fees/schedule' })).json()).toMatchObject({ current_version: 1 });

    const published = await runCli(['fees-publish', good], '', env);
    expect(published).toMatchObject({ code: 0 });
    expect(published.stdout).toContain('published fee schedule version 2');
    const schedule = (await t.app.inject({ method: 'GET', url: '/api/v1/fees/schedule' })).json();
    expect(schedule).toMatchObject({
      version: 2,
      description: 'Pix charged for Basic',
      rules: [
        { rail: 'pix', tier: null, fixed: '0.10', rate_bps: 100, min: '0.20', max: '5.00' },
        { rail: 'pix', tier: 'PREMIUM', fixed: '0.00' },
      ],
    });
  });
});
