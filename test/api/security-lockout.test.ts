import { randomBytes } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../api/app.ts';
import { createSecurityService } from '../../services/security.ts';
import { createPool, type Pool } from '../../db/pool.ts';
import { createPinHasher, type PinHasher } from '../../infra/pin-hasher.ts';
import { createTestApp, type TestApp } from '../support/app.ts';

/**
 * The lockout under concurrency: two API replicas (two apps, each with its own pool and service,
 * on one database) take 50 wrong attempts at once. The guarded statement lets at most 5 be
 * evaluated: the slow hash runs at most 5 times in the two processes together, 5 answers say
 * "wrong PIN" and every other one is refused as locked; then the right PIN is refused too, until
 * the lock ends, and accepted after it.
 */

// Long enough that the right PIN is tried inside the lock even on a busy machine.
const lockoutMs = 6000;
let t: TestApp;
let replicaPool: Pool;
const apps: FastifyInstance[] = [];
let comparisons = 0;

/** The real hasher, counting the comparisons it evaluates. */
function counting(hasher: PinHasher): PinHasher {
  return {
    ...hasher,
    async matches(ownerId, pinHash, stored) {
      comparisons += 1;
      return hasher.matches(ownerId, pinHash, stored);
    },
  };
}

beforeAll(async () => {
  t = await createTestApp({ RATE_LIMIT_SECURITY_PER_MINUTE: '100000', PIN_LOCKOUT_MS: String(lockoutMs) });
  replicaPool = createPool({ connectionString: t.db.url, max: 10, applicationName: 'test-replica' });
  const pepper = t.config.PIN_PEPPER as string;
  for (const pool of [t.db.pool, replicaPool]) {
    const security = createSecurityService({ pool, temporal: t.temporal, config: t.config, hasher: counting(createPinHasher(pepper)) });
    apps.push(await buildApp({ deps: { ...t.app.deps, pool, security }, logger: false }));
  }
});
afterAll(async () => {
  for (const app of apps) await app.close();
  await replicaPool?.end();
  await t?.close();
});

describe('PIN lockout across two API replicas', () => {
  it('50 concurrent wrong attempts: at most 5 evaluated, the rest refused as locked; the right PIN refused until the lock ends, accepted after', async () => {
    const owner = `race-${randomBytes(6).toString('hex')}`;
    const pin = randomBytes(32).toString('hex');
    const registered = await apps[0]!.inject({ method: 'POST', url: '/api/v1/security/pin/register', payload: { owner_id: owner, pin_hash: pin, salt: randomBytes(16).toString('hex') } });
    expect(registered.statusCode).toBe(200);

    comparisons = 0;
    const answers = await Promise.all(
      Array.from({ length: 50 }, (_, index) =>
        apps[index % 2]!.inject({ method: 'POST', url: '/api/v1/security/pin/verify', payload: { owner_id: owner, pin_hash: randomBytes(32).toString('hex') } }),
      ),
    );
    const evaluated = answers.filter((answer) => answer.statusCode === 200);
    const locked = answers.filter((answer) => answer.statusCode === 423);
    expect(evaluated.length + locked.length, answers.map((answer) => answer.body).join('\n')).toBe(50);
    expect(evaluated.length).toBeLessThanOrEqual(5);
    // Every reservation was evaluated and failed: exactly the five the lock allows.
    expect(evaluated.length).toBe(5);
    expect(comparisons).toBe(5);
    for (const answer of evaluated) expect(answer.json()).toMatchObject({ valid: false });
    expect(evaluated.map((answer) => answer.json().attempts_remaining).sort()).toEqual([0, 1, 2, 3, 4]);
    const lockedUntil = evaluated.find((answer) => answer.json().attempts_remaining === 0)!.json().locked_until as string;
    for (const answer of locked) expect(answer.json()).toMatchObject({ code: 'PIN_LOCKED', details: { locked_until: lockedUntil } });

    const stored = await t.db.pool.query('SELECT failed_attempts, locked_until, lockouts FROM pin_records WHERE owner_id = $1', [owner]);
    expect(stored.rows[0]).toMatchObject({ failed_attempts: 5, lockouts: 1 });
    expect((stored.rows[0] as { locked_until: Date }).locked_until.toISOString()).toBe(lockedUntil);

    // The right PIN, through both replicas: refused, and not even evaluated.
    for (const app of apps) {
      const right = await app.inject({ method: 'POST', url: '/api/v1/security/pin/verify', payload: { owner_id: owner, pin_hash: pin } });
      expect(right.statusCode).toBe(423);
    }
    expect(comparisons).toBe(5);

    await new Promise((resolve) => setTimeout(resolve, Date.parse(lockedUntil) - Date.now() + 100));
    const after = await apps[1]!.inject({ method: 'POST', url: '/api/v1/security/pin/verify', payload: { owner_id: owner, pin_hash: pin } });
    expect(after.statusCode).toBe(200);
    expect(after.json()).toMatchObject({ valid: true, attempts_remaining: 5, locked_until: null });
  });
});
