import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../api/app.ts';
import { createSecurityService } from '../../api/services/security.ts';
import { loadConfig } from '../../infra/config.ts';
import { createTestApp, type TestApp } from '../support/app.ts';

/**
 * The PIN operations against a real PostgreSQL: registration, overwrite, verification and its
 * lockout (with a short lock so that its end is seen), status, the recovery e-mail, and every
 * malformed input. The concurrent lockout is test/api/security-lockout.test.ts; the reset by
 * e-mail is test/api/security-reset.test.ts.
 */

// Long enough that the checks made while locked finish inside the lock on a busy machine.
const lockoutMs = 2500;
let t: TestApp;

beforeAll(async () => {
  t = await createTestApp({ RATE_LIMIT_SECURITY_PER_MINUTE: '100000', PIN_LOCKOUT_MS: String(lockoutMs), PIN_LOCKOUT_MAX_MS: String(4 * lockoutMs) });
});
afterAll(async () => {
  await t?.close();
});

const hex = (bytes: number): string => randomBytes(bytes).toString('hex');
let ownerCounter = 0;
const newOwner = (): string => `owner-${Date.now().toString(36)}-${(ownerCounter += 1)}`;

function post(url: string, payload: unknown) {
  return t.app.inject({ method: 'POST', url: `/api/v1/security${url}`, payload: payload as Record<string, unknown> });
}

async function register(ownerId: string, pinHash: string, extra: Record<string, unknown> = {}) {
  return post('/pin/register', { owner_id: ownerId, pin_hash: pinHash, salt: hex(16), ...extra });
}

async function verify(ownerId: string, pinHash: string) {
  return post('/pin/verify', { owner_id: ownerId, pin_hash: pinHash });
}

async function status(ownerId: string) {
  const response = await post('/pin/status', { owner_id: ownerId });
  expect(response.statusCode).toBe(200);
  return response.json();
}

async function row(ownerId: string) {
  const result = await t.db.pool.query('SELECT * FROM pin_records WHERE owner_id = $1', [ownerId]);
  return result.rows[0] as Record<string, unknown> | undefined;
}

describe('POST /api/v1/security/pin/register', () => {
  it('stores a first PIN with no proof; status answers the client salt and nothing secret; the table holds only a slow hash', async () => {
    const owner = newOwner();
    const pin = hex(32);
    const salt = hex(16);
    const response = await post('/pin/register', { owner_id: owner, pin_hash: pin, salt, email: 'Alice@Example.com' });
    expect(response.statusCode, response.body).toBe(200);
    expect(response.json()).toMatchObject({ owner_id: owner, registered: true, created: true, recovery_email_set: true });
    expect(response.body).not.toContain(pin);

    expect(await status(owner)).toEqual({
      owner_id: owner,
      registered: true,
      salt,
      recovery_email_set: true,
      locked: false,
      locked_until: null,
      attempts_remaining: 5,
    });
    const stored = await row(owner);
    expect(stored).toMatchObject({ client_salt: salt, failed_attempts: 0, locked_until: null, scrypt_log2_n: 15, scrypt_r: 8, scrypt_p: 1, recovery_email: 'alice@example.com' });
    const verifier = stored?.verifier as Buffer;
    expect(verifier).toHaveLength(32);
    expect(verifier.toString('hex')).not.toBe(pin);
    const columns = Object.values(stored ?? {}).map((value) => (Buffer.isBuffer(value) ? value.toString('hex') : String(value)));
    expect(columns.join('|')).not.toContain(pin);
  });

  it('refuses a second registration without current_pin_hash, and an overwrite with a wrong one (counted); a right one replaces the PIN', async () => {
    const owner = newOwner();
    const [first, second, wrong] = [hex(32), hex(32), hex(32)];
    expect((await register(owner, first)).statusCode).toBe(200);

    const again = await register(owner, second);
    expect(again.statusCode).toBe(409);
    expect(again.json()).toMatchObject({ code: 'PIN_ALREADY_REGISTERED' });

    const bad = await register(owner, second, { current_pin_hash: wrong });
    expect(bad.statusCode).toBe(403);
    expect(bad.json()).toMatchObject({ code: 'PIN_INCORRECT', details: { attempts_remaining: 4, locked_until: null } });
    expect((await verify(owner, first)).json()).toMatchObject({ valid: true });

    const salt = hex(20);
    const changed = await post('/pin/register', { owner_id: owner, pin_hash: second, salt, current_pin_hash: first, email: 'New@Example.com' });
    expect(changed.statusCode, changed.body).toBe(200);
    expect(changed.json()).toMatchObject({ created: false, recovery_email_set: true });
    expect(await row(owner)).toMatchObject({ recovery_email: 'new@example.com', credential_version: 2n, failed_attempts: 0 });
    expect((await verify(owner, first)).json()).toMatchObject({ valid: false });
    expect((await verify(owner, second)).json()).toMatchObject({ valid: true, attempts_remaining: 5 });
    expect((await status(owner)).salt).toBe(salt);
  });

  it('refuses an overwrite for an owner with no PIN', async () => {
    const response = await register(newOwner(), hex(32), { current_pin_hash: hex(32) });
    expect(response.statusCode).toBe(404);
    expect(response.json()).toMatchObject({ code: 'PIN_NOT_REGISTERED' });
  });

  it.each([
    ['a short PIN hash', { pin_hash: 'ab'.repeat(31) }, 'pin_hash'],
    ['an uppercase PIN hash', { pin_hash: 'AB'.repeat(32) }, 'pin_hash'],
    ['a PIN hash that is not hex', { pin_hash: 'zz'.repeat(32) }, 'pin_hash'],
    ['a salt of 15 bytes', { salt: 'ab'.repeat(15) }, 'salt'],
    ['a salt of odd length', { salt: 'a'.repeat(33) }, 'salt'],
    ['a salt over 64 bytes', { salt: 'ab'.repeat(65) }, 'salt'],
    ['an e-mail that is not an address', { email: 'not-an-address' }, 'email'],
    ['an e-mail with two @', { email: 'a@b@example.com' }, 'email'],
    ['an owner id with a colon', { owner_id: 'system:world' }, 'owner_id'],
    ['an unknown field', { pin: '1234' }, ''],
    ['a number where a string is due', { pin_hash: 1234 }, 'pin_hash'],
  ])('answers 422 for %s and stores nothing', async (_name, change, field) => {
    const owner = newOwner();
    const response = await post('/pin/register', { owner_id: owner, pin_hash: hex(32), salt: hex(16), ...change });
    expect(response.statusCode).toBe(422);
    const detail = response.json().detail as { loc: (string | number)[] }[];
    if (field !== '') expect(detail.some((item) => item.loc.includes(field))).toBe(true);
    expect(await row(owner)).toBeUndefined();
  });
});

describe('POST /api/v1/security/pin/verify and the lockout', () => {
  it('counts consecutive failures, locks at the fifth, refuses the right PIN while locked (423, until when), and accepts it after', async () => {
    const owner = newOwner();
    const pin = hex(32);
    expect((await register(owner, pin)).statusCode).toBe(200);
    for (let attempt = 1; attempt <= 4; attempt += 1) {
      expect((await verify(owner, hex(32))).json()).toEqual({ owner_id: owner, valid: false, attempts_remaining: 5 - attempt, locked_until: null });
    }
    const fifth = await verify(owner, hex(32));
    expect(fifth.statusCode).toBe(200);
    const lockedUntil = fifth.json().locked_until as string;
    expect(fifth.json()).toMatchObject({ valid: false, attempts_remaining: 0 });
    expect(Date.parse(lockedUntil)).toBeGreaterThan(Date.now());

    const refused = await verify(owner, pin);
    expect(refused.statusCode).toBe(423);
    expect(refused.json()).toMatchObject({ code: 'PIN_LOCKED', details: { locked_until: lockedUntil } });
    expect(Number(refused.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(await status(owner)).toMatchObject({ locked: true, locked_until: lockedUntil, attempts_remaining: 0 });
    expect(await row(owner)).toMatchObject({ failed_attempts: 5, lockouts: 1 });

    await new Promise((resolve) => setTimeout(resolve, Date.parse(lockedUntil) - Date.now() + 100));
    expect(await status(owner)).toMatchObject({ locked: false, locked_until: null, attempts_remaining: 5 });
    expect((await verify(owner, pin)).json()).toEqual({ owner_id: owner, valid: true, attempts_remaining: 5, locked_until: null });
    expect(await row(owner)).toMatchObject({ failed_attempts: 0, locked_until: null, lockouts: 0 });
  });

  it('doubles a repeated lockout: after a lock ends, five more failures lock twice as long', async () => {
    const owner = newOwner();
    expect((await register(owner, hex(32))).statusCode).toBe(200);
    /** Five failures; answers how long the lock they start lasts, measured from just before the fifth. */
    const lockOnce = async (): Promise<{ endMs: number; durationMs: number }> => {
      for (let attempt = 1; attempt <= 4; attempt += 1) await verify(owner, hex(32));
      const beforeFifthMs = Date.now();
      const fifth = await verify(owner, hex(32));
      const endMs = Date.parse(fifth.json().locked_until as string);
      return { endMs, durationMs: endMs - beforeFifthMs };
    };
    const first = await lockOnce();
    // From just before the fifth request to the lock's end: the lock's duration, plus the request's way to the database.
    expect(first.durationMs).toBeGreaterThan(lockoutMs - 200);
    expect(first.durationMs).toBeLessThan(lockoutMs + 1500);
    await new Promise((resolve) => setTimeout(resolve, first.endMs - Date.now() + 100));
    const second = await lockOnce();
    expect(second.durationMs).toBeGreaterThan(2 * lockoutMs - 200);
    expect(second.durationMs).toBeLessThan(2 * lockoutMs + 1500);
    expect(await row(owner)).toMatchObject({ lockouts: 2 });
  });

  it('answers 404 for an owner without a PIN, and 422 for a malformed hash (nothing counted)', async () => {
    const missing = await verify(newOwner(), hex(32));
    expect(missing.statusCode).toBe(404);
    expect(missing.json()).toMatchObject({ code: 'PIN_NOT_REGISTERED' });
    const owner = newOwner();
    expect((await register(owner, hex(32))).statusCode).toBe(200);
    expect((await verify(owner, 'x')).statusCode).toBe(422);
    expect((await post('/pin/verify', { owner_id: owner })).statusCode).toBe(422);
    expect(await row(owner)).toMatchObject({ failed_attempts: 0 });
  });

  it('answers status for an unknown owner as not registered', async () => {
    const owner = newOwner();
    expect(await status(owner)).toEqual({ owner_id: owner, registered: false, salt: null, recovery_email_set: false, locked: false, locked_until: null, attempts_remaining: 0 });
  });
});

describe('POST /api/v1/security/email/update', () => {
  it('needs the current PIN (a wrong one counts), sets the normalised address, and refuses one that is not an address', async () => {
    const owner = newOwner();
    const pin = hex(32);
    expect((await register(owner, pin)).statusCode).toBe(200);
    const wrong = await post('/email/update', { owner_id: owner, current_pin_hash: hex(32), email: 'bob@example.com' });
    expect(wrong.statusCode).toBe(403);
    expect(wrong.json()).toMatchObject({ code: 'PIN_INCORRECT', details: { attempts_remaining: 4 } });
    expect(await row(owner)).toMatchObject({ recovery_email: null, failed_attempts: 1 });

    expect((await post('/email/update', { owner_id: owner, current_pin_hash: pin, email: 'bob at example.com' })).statusCode).toBe(422);
    const updated = await post('/email/update', { owner_id: owner, current_pin_hash: pin, email: 'Bob@Example.COM' });
    expect(updated.statusCode, updated.body).toBe(200);
    expect(updated.json()).toMatchObject({ owner_id: owner, registered: true, created: false, recovery_email_set: true });
    expect(await row(owner)).toMatchObject({ recovery_email: 'bob@example.com', failed_attempts: 0 });
  });

  it('is refused while the PIN is locked', async () => {
    const owner = newOwner();
    const pin = hex(32);
    expect((await register(owner, pin)).statusCode).toBe(200);
    for (let attempt = 0; attempt < 5; attempt += 1) await verify(owner, hex(32));
    const response = await post('/email/update', { owner_id: owner, current_pin_hash: pin, email: 'eve@example.com' });
    expect(response.statusCode).toBe(423);
    expect(await row(owner)).toMatchObject({ recovery_email: null });
  });
});

describe('configuration', () => {
  it('answers 501 PIN_RESET_EMAIL_UNAVAILABLE for a reset request when no SMTP server is configured: no simulated success', async () => {
    const owner = newOwner();
    expect((await register(owner, hex(32), { email: 'carol@example.com' })).statusCode).toBe(200);
    const response = await post('/pin/request-reset', { owner_id: owner, email: 'carol@example.com' });
    expect(response.statusCode).toBe(501);
    expect(response.json()).toMatchObject({ code: 'PIN_RESET_EMAIL_UNAVAILABLE' });
  });

  it('answers 503 without a PIN_PEPPER, and refuses to evaluate (counting nothing) under another pepper', async () => {
    const owner = newOwner();
    const pin = hex(32);
    expect((await register(owner, pin)).statusCode).toBe(200);
    const base = { ...t.config };
    const withoutPepper = await buildApp({
      deps: { ...t.app.deps, security: createSecurityService({ pool: t.db.pool, temporal: t.temporal, config: { ...base, PIN_PEPPER: undefined } }) },
      logger: false,
    });
    const otherPepper = await buildApp({
      deps: { ...t.app.deps, security: createSecurityService({ pool: t.db.pool, temporal: t.temporal, config: { ...base, PIN_PEPPER: hex(32) } }) },
      logger: false,
    });
    try {
      const none = await withoutPepper.inject({ method: 'POST', url: '/api/v1/security/pin/verify', payload: { owner_id: owner, pin_hash: pin } });
      expect(none.statusCode).toBe(503);
      expect(none.json()).toMatchObject({ code: 'SERVICE_UNAVAILABLE' });
      const other = await otherPepper.inject({ method: 'POST', url: '/api/v1/security/pin/verify', payload: { owner_id: owner, pin_hash: pin } });
      expect(other.statusCode).toBe(503);
      expect(other.json().message).toMatch(/another PIN_PEPPER/);
      expect(await row(owner)).toMatchObject({ failed_attempts: 0 });
    } finally {
      await withoutPepper.close();
      await otherPepper.close();
    }
    expect((await verify(owner, pin)).json()).toMatchObject({ valid: true });
  });

  it('requires PIN_PEPPER in production and keeps it out of every log line', () => {
    const production = {
      APP_ENV: 'production',
      DATABASE_URL: 'postgres://x@127.0.0.1/x',
      TEMPORAL_ADDRESS: '127.0.0.1:7233',
      JWT_SECRET: 'j'.repeat(32),
      GATEWAY_API_KEY: 'real-key',
      GATEWAY_WEBHOOK_TOKEN: 'real-webhook-token',
      BLOCKLIST_SIGNING_SEED: 'b'.repeat(64),
    };
    expect(() => loadConfig(production)).toThrow(/PIN_PEPPER: is required when APP_ENV=production/);
    expect(() => loadConfig({ ...production, PIN_PEPPER: 'short' })).toThrow(/PIN_PEPPER: must be at least 32 characters/);
    expect(loadConfig({ ...production, PIN_PEPPER: 'p'.repeat(32) }).PIN_PEPPER).toBe('p'.repeat(32));
    expect(() => loadConfig({ APP_ENV: 'test', PIN_LOCKOUT_MS: '60000', PIN_LOCKOUT_MAX_MS: '1000' })).toThrow(/PIN_LOCKOUT_MAX_MS/);
    expect(() => loadConfig({ APP_ENV: 'test', SMTP_URL: 'http://mail.example.com' })).toThrow(/SMTP_URL/);
  });
});
