import { execFile } from 'node:child_process';
import { createHmac } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../api/app.ts';
import { tokenLifetimeProblem } from '../../api/plugins/auth.ts';
import { ensureAdminUser } from '../../db/admin-users.ts';
import { createGatewayClient } from '../../gateway/index.ts';
import { hashPassword } from '../../infra/passwords.ts';
import { createTestApp, type TestApp } from '../support/app.ts';

/**
 * Admin logins (issue 17, item 5): a per-account throttle counted in PostgreSQL (growing delays,
 * then a lockout an operator lifts with `npm run admin -- unlock`), and a cap on the lifetime of
 * an access token however correctly it is signed.
 */
const password = 'correct horse battery staple';
const policy = {
  ADMIN_LOGIN_FREE_ATTEMPTS: '3',
  // Longer than any burst or pause of a busy test machine; the test moves an account's wait
  // forward in the database instead of sleeping through it.
  ADMIN_LOGIN_DELAY_BASE_MS: '10000',
  ADMIN_LOGIN_LOCKOUT_FAILURES: '6',
  ADMIN_LOGIN_LOCKOUT_MS: '600000',
};
const adminScript = fileURLToPath(new URL('../../scripts/admin.ts', import.meta.url));

let t: TestApp;
/** Two more API replicas on the same database. */
let replicas: FastifyInstance[] = [];

beforeAll(async () => {
  t = await createTestApp({ ...policy, LOGIN_RATE_LIMIT_PER_MINUTE: '10' });
  const gateway = createGatewayClient({ baseUrl: t.config.GATEWAY_BASE_URL, apiKey: t.config.GATEWAY_API_KEY, timeoutMs: 1000 });
  replicas = await Promise.all([0, 1].map(() => buildApp({ deps: { config: t.config, pool: t.db.pool, temporal: t.temporal, gateway }, logger: false })));
});
afterAll(async () => {
  for (const replica of replicas) await replica.close();
  await t?.close();
});

async function newAdmin(name: string): Promise<string> {
  await ensureAdminUser(t.db.pool, { username: name, passwordHash: await hashPassword(password), role: 'super_admin' });
  return name;
}

let address = 0;
/** A login from its own client address (the per-address limit never applies). */
function login(username: string, pw: string, app: FastifyInstance | undefined = t.app) {
  if (app === undefined) throw new Error('no such replica');
  address += 1;
  return app.inject({
    method: 'POST',
    url: '/api/v1/auth/login',
    payload: { username, password: pw },
    remoteAddress: `10.${(address >> 16) & 255}.${(address >> 8) & 255}.${address & 255}`,
  });
}

async function throttleOf(username: string) {
  const { rows } = await t.db.pool.query<{ failures: number; locked: boolean; delay_ms: number }>(
    `SELECT failures, locked, round(extract(epoch FROM next_attempt_at - last_attempt_at) * 1000)::int AS delay_ms
       FROM admin_login_throttle WHERE username = $1`,
    [username],
  );
  return rows[0] ?? null;
}

function runAdmin(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [adminScript, ...args], { env: { PATH: process.env.PATH, DATABASE_URL: t.db.url }, timeout: 30_000 }, (error, stdout, stderr) => {
      resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : -1, stdout, stderr });
    });
  });
}

/** The account's wait, passed: what the delay's end would do, without sleeping through it. */
async function passWait(username: string): Promise<void> {
  await t.db.pool.query(
    `UPDATE admin_login_throttle SET next_attempt_at = clock_timestamp() - interval '1 millisecond' WHERE username = $1`,
    [username],
  );
}

describe('the per-account login throttle', () => {
  it('evaluates only the free attempts of 30 wrong passwords sent at once from 30 addresses through two replicas', async () => {
    const username = await newAdmin('burst-root');
    const responses = await Promise.all(Array.from({ length: 30 }, (_, i) => login(username, `guess-${i}`, replicas[i % 2])));
    const statuses = responses.map((response) => response.statusCode);
    expect(statuses.filter((status) => status === 401)).toHaveLength(3);
    expect(statuses.filter((status) => status === 429)).toHaveLength(27);
    for (const response of responses.filter((r) => r.statusCode === 429)) {
      expect(response.json()).toMatchObject({ code: 'LOGIN_THROTTLED', details: { locked: false, retry_after_s: expect.any(Number) } });
      const retryAfterS = Number(response.headers['retry-after']);
      expect(retryAfterS).toBe(response.json().details.retry_after_s);
      expect(retryAfterS).toBeGreaterThanOrEqual(1);
      expect(retryAfterS).toBeLessThanOrEqual(10);
    }
    expect(await throttleOf(username)).toMatchObject({ failures: 3, locked: false, delay_ms: 10_000 });
    // The right password now is refused too, unevaluated: the wait is the account's, not the guess's.
    expect((await login(username, password, replicas[0])).statusCode).toBe(429);
  });

  it('throttles an unknown username exactly like a known one', async () => {
    const responses = await Promise.all(Array.from({ length: 30 }, (_, i) => login('nobody-here', `guess-${i}`, replicas[i % 2])));
    expect(responses.filter((r) => r.statusCode === 401)).toHaveLength(3);
    expect(responses.filter((r) => r.statusCode === 429)).toHaveLength(27);
  });

  it('grows the delay with each failure, then locks the account; the lockout holds for the right password until an operator lifts it', async () => {
    const username = await newAdmin('slow-root');
    const delays: number[] = [];
    for (let failure = 1; failure <= 6; failure += 1) {
      const before = await throttleOf(username);
      if (before !== null && before.delay_ms > 0) {
        // Too early: refused without evaluation, and nothing counted.
        const early = await login(username, 'still wrong');
        expect(early.statusCode).toBe(429);
        expect((await throttleOf(username))?.failures).toBe(before.failures);
        await passWait(username);
      }
      expect((await login(username, 'wrong')).statusCode).toBe(401);
      const after = await throttleOf(username);
      expect(after?.failures).toBe(failure);
      delays.push(after?.delay_ms ?? -1);
    }
    expect(delays).toEqual([0, 0, 10_000, 20_000, 40_000, 600_000]);
    expect(await throttleOf(username)).toMatchObject({ locked: true });
    const locked = await login(username, password);
    expect(locked.statusCode).toBe(429);
    expect(locked.json()).toMatchObject({ code: 'LOGIN_THROTTLED', details: { locked: true } });
    expect(Number(locked.headers['retry-after'])).toBeGreaterThan(590);

    const listed = await runAdmin(['lockouts']);
    expect(listed.code).toBe(0);
    expect(listed.stdout).toMatch(/slow-root: locked, 6 consecutive failed login\(s\), \d+ s left/);
    const unlocked = await runAdmin(['unlock', username]);
    expect(unlocked).toMatchObject({ code: 0 });
    expect(unlocked.stdout).toContain('unlocked slow-root: locked, 6 consecutive failed login(s)');
    expect(await throttleOf(username)).toBeNull();
    const ok = await login(username, password);
    expect(ok.statusCode).toBe(200);
    expect((await runAdmin(['unlock', username])).stdout).toContain('slow-root: no failed logins recorded');
  });

  it('forgets the failures once the right password is given', async () => {
    const username = await newAdmin('forgetful-root');
    expect((await login(username, 'wrong')).statusCode).toBe(401);
    expect((await login(username, 'wrong')).statusCode).toBe(401);
    expect((await login(username, password)).statusCode).toBe(200);
    expect(await throttleOf(username)).toBeNull();
    expect((await login(username, 'wrong')).statusCode).toBe(401);
    expect(await throttleOf(username)).toMatchObject({ failures: 1 });
  });

  it('the admin command refuses bad usage with exit 2', async () => {
    expect((await runAdmin([])).code).toBe(2);
    expect((await runAdmin(['frobnicate'])).stderr).toContain('usage: npm run admin');
    expect((await runAdmin(['unlock'])).code).toBe(2);
    expect((await runAdmin(['unlock', 'a', 'b'])).code).toBe(2);
  });

  it('the delay rule: none for the free attempts, doubling after, the lockout at the threshold', async () => {
    const { rows } = await t.db.pool.query<{ n: number; ms: string }>(
      `SELECT n, admin_login_delay_ms(n, 3, 1000, 10, 900000)::text AS ms FROM generate_series(1, 12) AS n ORDER BY n`,
    );
    expect(rows.map((row) => Number(row.ms))).toEqual([0, 0, 1000, 2000, 4000, 8000, 16000, 32000, 64000, 900000, 900000, 900000]);
    const capped = await t.db.pool.query<{ ms: string }>(`SELECT admin_login_delay_ms(99, 1, 1000, 100, 900000)::text AS ms`);
    expect(capped.rows[0]?.ms).toBe('900000');
  });
});

describe('the access token lifetime cap', () => {
  function base64url(value: object | Buffer): string {
    return (Buffer.isBuffer(value) ? value : Buffer.from(JSON.stringify(value))).toString('base64url');
  }
  function signToken(claims: Record<string, unknown>): string {
    const head = base64url({ alg: 'HS256', typ: 'JWT' });
    const body = base64url(claims);
    return `${head}.${body}.${base64url(createHmac('sha256', t.config.JWT_SECRET ?? '').update(`${head}.${body}`).digest())}`;
  }
  const verify = (token: string) => t.app.inject({ method: 'GET', url: '/api/v1/auth/verify', headers: { authorization: `Bearer ${token}` } });

  it('refuses a correctly signed token valid for 10 years, one without exp, and one issued in the future; accepts one of the configured lifetime', async () => {
    const username = await newAdmin('token-root');
    const issued = (await login(username, password)).json().access_token as string;
    const claims = JSON.parse(Buffer.from(issued.split('.')[1] ?? '', 'base64url').toString()) as Record<string, unknown>;
    const nowS = Math.floor(Date.now() / 1000);
    expect((await verify(signToken({ ...claims, iat: nowS, exp: nowS + 900 }))).statusCode).toBe(200);

    const tenYears = await verify(signToken({ ...claims, iat: nowS, exp: nowS + 10 * 365 * 86_400 }));
    expect(tenYears.statusCode).toBe(401);
    expect(tenYears.json()).toMatchObject({ code: 'UNAUTHENTICATED', message: expect.stringContaining('longer than the 900 s allowed') });
    const { exp: _exp, ...withoutExp } = claims;
    const noExp = await verify(signToken({ ...withoutExp, iat: nowS }));
    expect(noExp.statusCode).toBe(401);
    expect(noExp.json().message).toContain('has no expiry');
    const future = await verify(signToken({ ...claims, iat: nowS + 9 * 365 * 86_400, exp: nowS + 9 * 365 * 86_400 + 900 }));
    expect(future.statusCode).toBe(401);
    expect(future.json().message).toContain('issued in the future');
  });

  it.each([
    ['a token of the allowed lifetime', { iat: 1000, exp: 1900 }, null],
    ['no exp', { iat: 1000 }, 'has no expiry (exp)'],
    ['no iat', { exp: 1900 }, 'has no issue time (iat)'],
    ['a fractional exp', { iat: 1000, exp: 1900.5 }, 'has no expiry (exp)'],
    ['an iat beyond the skew', { iat: 1031, exp: 1100 }, 'is issued in the future'],
    ['an iat within the skew', { iat: 1030, exp: 1100 }, null],
    ['exp before iat', { iat: 1000, exp: 999 }, 'expires before it was issued'],
    ['one second too long', { iat: 1000, exp: 1901 }, 'lives 901 s, longer than the 900 s allowed'],
  ])('tokenLifetimeProblem: %s', (_, claims, expected) => {
    expect(tokenLifetimeProblem(claims, 1000, 900)).toBe(expected);
  });
});
