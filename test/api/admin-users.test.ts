import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { finishOperation, operationTypes, startOperation } from '../../db/operation-log.ts';
import { createTestApp, type TestApp } from '../support/app.ts';

/**
 * Administrators through the super_admin routes (`/api/v1/admin/users`), against real PostgreSQL:
 * who may call them, what each change does to logins and tokens, the idempotent answers, the
 * last active super_admin kept, the operation-log entry of every change, and bounded lists.
 */
let t: TestApp;
let root: Record<string, string>;
let rootName: string;

beforeAll(async () => {
  // Many logins from one address: the per-address login limit (10 a minute) is not under test here.
  t = await createTestApp({ LOGIN_RATE_LIMIT_PER_MINUTE: '1000' });
  root = await t.adminHeaders('super_admin');
  rootName = (await t.app.inject({ method: 'GET', url: '/api/v1/auth/verify', headers: root })).json().username as string;
});
afterAll(async () => {
  await t?.close();
});

const get = (url: string, headers = root) => t.app.inject({ method: 'GET', url, headers });
const post = (url: string, payload?: object, headers = root) => t.app.inject({ method: 'POST', url, headers, ...(payload === undefined ? {} : { payload }) });
const login = (username: string, password: string) => t.app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { username, password } });
const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
/** Tokens carry whole seconds: a change must fall in a later second than the token it ends. */
const nextSecond = () => new Promise((resolve) => setTimeout(resolve, 1100));

async function entries(username: string): Promise<{ step: string; status: string; actor: string | null; error_code: string | null }[]> {
  const answer = await get(`/api/v1/admin/monitor/operations?operation_type=ADMIN_USER&reference_id=${encodeURIComponent(`admin:${username}`)}`);
  expect(answer.statusCode).toBe(200);
  return answer.json();
}

describe('administrators: /api/v1/admin/users', () => {
  it('is for a super_admin only: an admin gets 403 FORBIDDEN, no token 401', async () => {
    const admin = await t.adminHeaders('admin');
    expect((await get('/api/v1/admin/users', admin)).statusCode).toBe(403);
    expect((await post('/api/v1/admin/users', { username: 'by-an-admin', password: 'long-enough-password', role: 'admin' }, admin)).json()).toMatchObject({ code: 'FORBIDDEN' });
    expect((await post('/api/v1/admin/users/by-an-admin/disable', undefined, admin)).statusCode).toBe(403);
    expect((await t.app.inject({ method: 'GET', url: '/api/v1/admin/users' })).statusCode).toBe(401);
  });

  it('creates an administrator who can log in with its role; a taken name is 409 with its role; the password is never answered', async () => {
    const password = 'a-first-password-0123';
    const created = await post('/api/v1/admin/users', { username: 'ops-alice', password, role: 'admin' });
    expect(created.statusCode).toBe(201);
    expect(created.json()).toMatchObject({ username: 'ops-alice', role: 'admin', disabled: false, last_login_at: null });
    expect(created.body).not.toContain(password);
    expect(created.body).not.toContain('scrypt');
    const session = await login('ops-alice', password);
    expect(session.statusCode).toBe(200);
    const verified = await t.app.inject({ method: 'GET', url: '/api/v1/auth/verify', headers: bearer(session.json().access_token) });
    expect(verified.json()).toMatchObject({ username: 'ops-alice', role: 'admin' });

    const again = await post('/api/v1/admin/users', { username: 'ops-alice', password: 'another-password-4567', role: 'super_admin' });
    expect(again.statusCode).toBe(409);
    expect(again.json()).toMatchObject({ code: 'ADMIN_USER_EXISTS', details: { username: 'ops-alice', role: 'admin', disabled: false } });
    // The first password still works: the refused create changed nothing.
    expect((await login('ops-alice', password)).statusCode).toBe(200);
    expect((await entries('ops-alice')).map((entry) => [entry.step, entry.status, entry.actor, entry.error_code])).toEqual([
      ['create', 'REFUSED', rootName, 'ADMIN_USER_EXISTS'],
      ['create', 'SUCCEEDED', rootName, null],
    ]);
  });

  it('refuses bad input with 422 naming the field', async () => {
    const cases: [object, string][] = [
      [{ username: 'x', password: 'long-enough-password', role: 'admin' }, 'username'],
      [{ username: 'has space', password: 'long-enough-password', role: 'admin' }, 'username'],
      [{ username: 'ops-short', password: 'short', role: 'admin' }, 'password'],
      [{ username: 'ops-root', password: 'long-enough-password', role: 'root' }, 'role'],
      [{ username: 'ops-extra', password: 'long-enough-password', role: 'admin', note: 'x' }, ''],
    ];
    for (const [payload, field] of cases) {
      const answer = await post('/api/v1/admin/users', payload);
      expect(answer.statusCode, JSON.stringify(payload)).toBe(422);
      expect(JSON.stringify(answer.json().detail)).toContain(field);
    }
    expect((await post('/api/v1/admin/users/ops-alice/role', { role: 'owner' })).statusCode).toBe(422);
    expect((await post('/api/v1/admin/users/a/disable')).statusCode).toBe(422);
    expect((await post('/api/v1/admin/users/ops-alice/password', { password: 'short' })).statusCode).toBe(422);
    expect((await get('/api/v1/admin/users?limit=201')).statusCode).toBe(422);
    expect((await get('/api/v1/admin/users?limit=0')).statusCode).toBe(422);
  });

  it('changes a role at once and answers changed: false for the role it holds; an unknown user is 404', async () => {
    expect((await post('/api/v1/admin/users', { username: 'ops-bob', password: 'bobs-password-0123', role: 'admin' })).statusCode).toBe(201);
    const token = (await login('ops-bob', 'bobs-password-0123')).json().access_token as string;
    expect((await get('/api/v1/admin/users', bearer(token))).statusCode).toBe(403);
    const promoted = await post('/api/v1/admin/users/ops-bob/role', { role: 'super_admin' });
    expect(promoted.json()).toMatchObject({ changed: true, user: { username: 'ops-bob', role: 'super_admin' } });
    // The guard reads the role on every request: the same token now may.
    expect((await get('/api/v1/admin/users', bearer(token))).statusCode).toBe(200);
    const again = await post('/api/v1/admin/users/ops-bob/role', { role: 'super_admin' });
    expect(again.statusCode).toBe(200);
    expect(again.json()).toMatchObject({ changed: false, user: { role: 'super_admin' } });
    const unknown = await post('/api/v1/admin/users/nobody-here/role', { role: 'admin' });
    expect(unknown.statusCode).toBe(404);
    expect(unknown.json()).toMatchObject({ code: 'ADMIN_USER_NOT_FOUND', details: { username: 'nobody-here' } });
    expect((await entries('ops-bob')).map((entry) => [entry.step, entry.status])).toEqual([
      ['role super_admin', 'SUCCEEDED'],
      ['role super_admin', 'SUCCEEDED'],
      ['create', 'SUCCEEDED'],
    ]);
  });

  it('disable ends logins and tokens, a second disable changes nothing, enable lets the user log in again', async () => {
    const password = 'carols-password-0123';
    expect((await post('/api/v1/admin/users', { username: 'ops-carol', password, role: 'admin' })).statusCode).toBe(201);
    const token = (await login('ops-carol', password)).json().access_token as string;
    await nextSecond();
    const disabled = await post('/api/v1/admin/users/ops-carol/disable');
    expect(disabled.json()).toMatchObject({ changed: true, user: { disabled: true } });
    expect((await t.app.inject({ method: 'GET', url: '/api/v1/auth/verify', headers: bearer(token) })).statusCode).toBe(401);
    expect((await login('ops-carol', password)).statusCode).toBe(401);
    const twice = await post('/api/v1/admin/users/ops-carol/disable');
    expect(twice.json()).toMatchObject({ changed: false, user: { disabled: true } });

    const enabled = await post('/api/v1/admin/users/ops-carol/enable');
    expect(enabled.json()).toMatchObject({ changed: true, user: { disabled: false } });
    await nextSecond();
    const fresh = (await login('ops-carol', password)).json().access_token as string;
    // A second enable is no change: it does not end the token just issued.
    expect((await post('/api/v1/admin/users/ops-carol/enable')).json()).toMatchObject({ changed: false });
    expect((await t.app.inject({ method: 'GET', url: '/api/v1/auth/verify', headers: bearer(fresh) })).statusCode).toBe(200);
  });

  it('sets a password: the old one and its tokens stop working', async () => {
    const [first, second] = ['daves-first-password', 'daves-second-password'];
    expect((await post('/api/v1/admin/users', { username: 'ops-dave', password: first, role: 'admin' })).statusCode).toBe(201);
    const token = (await login('ops-dave', first)).json().access_token as string;
    await nextSecond();
    const changed = await post('/api/v1/admin/users/ops-dave/password', { password: second });
    expect(changed.statusCode).toBe(200);
    expect(changed.body).not.toContain(second);
    expect((await t.app.inject({ method: 'GET', url: '/api/v1/auth/verify', headers: bearer(token) })).statusCode).toBe(401);
    expect((await login('ops-dave', first)).statusCode).toBe(401);
    await nextSecond();
    expect((await login('ops-dave', second)).statusCode).toBe(200);
    expect((await post('/api/v1/admin/users/nobody-here/password', { password: second })).json()).toMatchObject({ code: 'ADMIN_USER_NOT_FOUND' });
    expect((await entries('ops-dave'))[0]).toMatchObject({ step: 'password', status: 'SUCCEEDED', actor: rootName });
  });

  it('never leaves the service without an active super_admin, even when two are demoted at once', async () => {
    const database = await createTestApp();
    try {
      const only = await database.adminHeaders('super_admin');
      const onlyName = (await database.app.inject({ method: 'GET', url: '/api/v1/auth/verify', headers: only })).json().username as string;
      const send = (url: string, payload?: object) => database.app.inject({ method: 'POST', url, headers: only, ...(payload === undefined ? {} : { payload }) });
      // The test app's own deposit admin is an admin, not a super_admin: this one is the last.
      await database.db.pool.query(`UPDATE admin_users SET disabled = true WHERE role = 'super_admin' AND username <> $1`, [onlyName]);
      const demoted = await send(`/api/v1/admin/users/${onlyName}/role`, { role: 'admin' });
      expect(demoted.statusCode).toBe(409);
      expect(demoted.json()).toMatchObject({ code: 'LAST_SUPER_ADMIN', details: { username: onlyName } });
      expect((await send(`/api/v1/admin/users/${onlyName}/disable`)).json()).toMatchObject({ code: 'LAST_SUPER_ADMIN' });

      expect((await send('/api/v1/admin/users', { username: 'ops-second', password: 'second-password-0123', role: 'super_admin' })).statusCode).toBe(201);
      const both = await Promise.all([send(`/api/v1/admin/users/${onlyName}/role`, { role: 'admin' }), send('/api/v1/admin/users/ops-second/disable')]);
      // One wins. The other is refused: 409 LAST_SUPER_ADMIN when its check sees the winner's change,
      // or 403 when the winner was the caller's own demotion and the caller is no longer a super_admin.
      const [won, lost] = both.map((answer) => answer.statusCode).sort();
      expect(won).toBe(200);
      expect([403, 409]).toContain(lost);
      const active = await database.db.pool.query(`SELECT count(*)::int AS n FROM admin_users WHERE role = 'super_admin' AND NOT disabled`);
      expect(active.rows[0].n).toBe(1);
    } finally {
      await database.close();
    }
  });

  it("every operation type, the operators' decisions among them, is one the operation log's table accepts", async () => {
    for (const operationType of operationTypes) {
      const id = await startOperation(t.db.pool, { operationType, step: 'probe', ownerId: null, referenceId: `probe:${operationType}`, actor: rootName });
      await finishOperation(t.db.pool, id, { status: 'SUCCEEDED' });
    }
    const stored = await t.db.pool.query(`SELECT count(*)::int AS n FROM operation_log WHERE step = 'probe' AND status = 'SUCCEEDED'`);
    expect(stored.rows[0].n).toBe(operationTypes.length);
  });

  it('lists administrators by name a page at a time with the total, never a password hash', async () => {
    const first = await get('/api/v1/admin/users?limit=2&offset=0');
    expect(first.statusCode).toBe(200);
    const page = first.json() as { users: { username: string }[]; total: number };
    expect(page.users).toHaveLength(2);
    expect(page.total).toBeGreaterThanOrEqual(6);
    const all = (await get('/api/v1/admin/users?limit=200')).json() as { users: { username: string }[] };
    const names = all.users.map((user) => user.username);
    expect(names).toEqual([...names].sort());
    expect(names).toEqual(expect.arrayContaining(['ops-alice', 'ops-bob', 'ops-carol', 'ops-dave', rootName]));
    const second = (await get('/api/v1/admin/users?limit=2&offset=2')).json() as { users: { username: string }[] };
    expect(second.users.map((user) => user.username)).toEqual(names.slice(2, 4));
    expect(JSON.stringify(all)).not.toContain('scrypt');
  });
});
