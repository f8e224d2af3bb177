import { createHmac, randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ensureAdminUser } from '../../db/admin-users.ts';
import { hashPassword } from '../../infra/passwords.ts';
import { createTestApp, type TestApp } from '../support/app.ts';

let t: TestApp;
const password = 'correct horse battery staple';
beforeAll(async () => {
  t = await createTestApp({ LOGIN_RATE_LIMIT_PER_MINUTE: '1000' });
  await ensureAdminUser(t.db.pool, { username: 'root', passwordHash: await hashPassword(password), role: 'super_admin' });
});
afterAll(async () => {
  await t?.close();
});

const login = (username: string, pw: string) =>
  t.app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { username, password: pw } });

function base64url(value: object | Buffer): string {
  return (Buffer.isBuffer(value) ? value : Buffer.from(JSON.stringify(value))).toString('base64url');
}

/** A token signed with `secret`, for the forged and expired cases. */
function signToken(secret: string, claims: Record<string, unknown>): string {
  const head = base64url({ alg: 'HS256', typ: 'JWT' });
  const body = base64url(claims);
  const signature = createHmac('sha256', secret).update(`${head}.${body}`).digest();
  return `${head}.${body}.${base64url(signature)}`;
}

describe('POST /api/v1/auth/login', () => {
  it('answers a bearer JWT valid 15 minutes for the right password', async () => {
    const response = await login('root', password);
    expect(response.statusCode).toBe(200);
    const body = response.json();
    expect(body).toMatchObject({ token_type: 'bearer', expires_in: 900 });
    expect(body.access_token.split('.')).toHaveLength(3);
    const verify = await t.app.inject({
      method: 'GET',
      url: '/api/v1/auth/verify',
      headers: { authorization: `Bearer ${body.access_token}` },
    });
    expect(verify.statusCode).toBe(200);
    expect(verify.json()).toMatchObject({ valid: true, username: 'root', role: 'super_admin' });
    const expiresAt = Date.parse(verify.json().expires_at);
    expect(expiresAt - Date.now()).toBeGreaterThan(14 * 60 * 1000);
    expect(expiresAt - Date.now()).toBeLessThanOrEqual(15 * 60 * 1000);
  });

  it('answers the same 401 for an unknown user and for a wrong password', async () => {
    const unknown = await login('nobody', password);
    const wrong = await login('root', 'not the password');
    expect(unknown.statusCode).toBe(401);
    expect(wrong.statusCode).toBe(401);
    expect(unknown.json()).toEqual(wrong.json());
    expect(unknown.json()).toMatchObject({ code: 'INVALID_CREDENTIALS' });
  });
});

describe('the admin guard', () => {
  const url = '/api/v1/admin/ledger/stats';

  it.each([
    ['no header', undefined],
    ['not a bearer', 'Basic abc'],
    ['malformed token', 'Bearer not-a-jwt'],
    ['empty bearer', 'Bearer '],
  ])('answers 401 for %s', async (_name, authorization) => {
    const response = await t.app.inject({ method: 'GET', url, headers: authorization === undefined ? {} : { authorization } });
    expect(response.statusCode).toBe(401);
    expect(response.json()).toMatchObject({ code: 'UNAUTHENTICATED' });
  });

  it('answers 401 for a token signed with another key, and for an expired one', async () => {
    const valid = (await login('root', password)).json().access_token as string;
    const claims = JSON.parse(Buffer.from(valid.split('.')[1] ?? '', 'base64url').toString()) as Record<string, unknown>;
    const forged = signToken(randomBytes(32).toString('hex'), claims);
    expect((await t.app.inject({ method: 'GET', url, headers: { authorization: `Bearer ${forged}` } })).statusCode).toBe(401);
    const nowS = Math.floor(Date.now() / 1000);
    const expired = signToken(t.config.JWT_SECRET ?? '', { ...claims, iat: nowS - 3600, exp: nowS - 60 });
    expect((await t.app.inject({ method: 'GET', url, headers: { authorization: `Bearer ${expired}` } })).statusCode).toBe(401);
    const noneAlg = `${base64url({ alg: 'none', typ: 'JWT' })}.${base64url(claims)}.`;
    expect((await t.app.inject({ method: 'GET', url, headers: { authorization: `Bearer ${noneAlg}` } })).statusCode).toBe(401);
  });

  it('answers 401 before validating anything else', async () => {
    const response = await t.app.inject({ method: 'GET', url: '/api/v1/admin/ledger/transactions?limit=9999' });
    expect(response.statusCode).toBe(401);
  });

  it('answers 403 for a valid token without the role an operation needs', async () => {
    const headers = await t.adminHeaders('admin');
    const allowed = await t.app.inject({ method: 'GET', url, headers });
    expect(allowed.statusCode).toBe(200);
    // The acquisition dashboard is the spec's super_admin-only operation; until it exists the
    // guard is checked on a route registered here with the same guard.
    const probe = await createTestApp();
    try {
      probe.app.get(
        '/probe/super',
        { onRequest: probe.app.requireAdmin(['super_admin']), schema: { response: { 200: z.object({ ok: z.boolean() }) } } },
        async () => ({ ok: true }),
      );
      const adminOnly = await probe.adminHeaders('admin');
      const superAdmin = await probe.adminHeaders('super_admin');
      expect((await probe.app.inject({ method: 'GET', url: '/probe/super', headers: adminOnly })).statusCode).toBe(403);
      expect((await probe.app.inject({ method: 'GET', url: '/probe/super', headers: superAdmin })).statusCode).toBe(200);
    } finally {
      await probe.close();
    }
  });

  it('stops accepting the token of a user since disabled', async () => {
    const headers = await t.adminHeaders('admin');
    await t.db.pool.query(`UPDATE admin_users SET disabled = true WHERE role = 'admin'`);
    expect((await t.app.inject({ method: 'GET', url, headers })).statusCode).toBe(401);
  });
});

describe('login rate limit', () => {
  it('answers 429 with Retry-After once the limit is spent, counted in PostgreSQL', async () => {
    const limited = await createTestApp({ LOGIN_RATE_LIMIT_PER_MINUTE: '3' });
    try {
      const statuses: number[] = [];
      let last;
      for (let i = 0; i < 5; i += 1) {
        last = await limited.app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { username: 'x', password: 'y' } });
        statuses.push(last.statusCode);
      }
      expect(statuses).toEqual([401, 401, 401, 429, 429]);
      expect(Number(last?.headers['retry-after'])).toBeGreaterThan(0);
      expect(last?.json()).toMatchObject({ code: 'RATE_LIMITED' });
      const counters = await limited.db.pool.query('SELECT hits FROM rate_limit_counters');
      expect(counters.rows[0]?.hits).toBe(5);
    } finally {
      await limited.close();
    }
  });
});
