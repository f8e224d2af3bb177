import { z } from 'zod';
import type { Queryable } from './pool.ts';
import { exec, many, maybeOne } from './sql.ts';

/**
 * The per-account throttle of admin logins (table `admin_login_throttle`, and the delay rule
 * `admin_login_delay_ms`, in their migration): counted in PostgreSQL, so the budget holds
 * across API replicas. An attempt claims its slot before the password is checked,
 * in one guarded statement: it counts as a failure at once, and no slot is given while the
 * account's next attempt is not yet due. However many wrong passwords arrive at once, from
 * however many addresses, the statements queue on the account's row and each sees the count
 * the one before it left, so no more than the budget are ever evaluated. A correct password
 * clears the row (`clearLoginFailures`), and an operator can (`npm run admin -- unlock`).
 */

export interface LoginThrottlePolicy {
  /** Consecutive failures answered without delay; the next attempt after the last of them waits `delayBaseMs`. */
  freeAttempts: number;
  /** The first delay; it doubles with each further failure (capped at `lockoutMs`). */
  delayBaseMs: number;
  /** At this many consecutive failures the account is locked for `lockoutMs`, and again after each failure past it. */
  lockoutFailures: number;
  lockoutMs: number;
  /** A row idle this long (and not waiting) is forgotten, so the table stays bounded. */
  forgetAfterMs: number;
}

export type LoginClaim =
  | { allowed: true; failures: number }
  | { allowed: false; failures: number; locked: boolean; retryAfterMs: number };

const claimedRow = z.object({ failures: z.number().int() });
const throttleRow = z.object({
  username: z.string(),
  failures: z.number().int(),
  locked: z.boolean(),
  next_attempt_at: z.date(),
  last_attempt_at: z.date(),
  wait_ms: z.coerce.number().int(),
});
export type LoginThrottleRow = z.infer<typeof throttleRow>;

const throttleColumns = `username, failures, locked, next_attempt_at, last_attempt_at,
  greatest(0, ceil(extract(epoch FROM next_attempt_at - clock_timestamp()) * 1000))::bigint AS wait_ms`;

/**
 * Claims a login attempt for `username`, counted as a failure until the password proves right.
 * Refused while the account's next attempt is not due: the answer says how long to wait and
 * whether the account is locked. clock_timestamp(), not now(): a statement that waited for the
 * row's lock compares against the time it got it.
 */
export async function claimLoginAttempt(db: Queryable, username: string, policy: LoginThrottlePolicy): Promise<LoginClaim> {
  for (let attempt = 0; attempt < 2; attempt += 1) {
    const claimed = await maybeOne(db, claimedRow, {
      name: 'admin-login-claim',
      prepare: true,
      // One clock reading for the whole statement: the wait is exactly the policy's delay.
      text: `INSERT INTO admin_login_throttle AS t (username, failures, next_attempt_at, locked, last_attempt_at)
             SELECT $1, 1, c.now + make_interval(secs => admin_login_delay_ms(1, $2, $3, $4, $5) / 1000.0), 1 >= $4, c.now
               FROM (SELECT clock_timestamp() AS now) c
             ON CONFLICT (username) DO UPDATE SET
               failures = t.failures + 1,
               next_attempt_at = EXCLUDED.last_attempt_at + make_interval(secs => admin_login_delay_ms(t.failures + 1, $2, $3, $4, $5) / 1000.0),
               locked = t.failures + 1 >= $4,
               last_attempt_at = EXCLUDED.last_attempt_at
             WHERE t.next_attempt_at <= EXCLUDED.last_attempt_at
             RETURNING failures`,
      values: [username, policy.freeAttempts, policy.delayBaseMs, policy.lockoutFailures, policy.lockoutMs],
    });
    if (claimed !== null) return { allowed: true, failures: claimed.failures };
    const row = await findLoginThrottle(db, username);
    // Cleared between the two statements (a success, an unlock): claim again, once.
    if (row !== null) return { allowed: false, failures: row.failures, locked: row.locked, retryAfterMs: Math.max(1, row.wait_ms) };
  }
  return { allowed: false, failures: 0, locked: false, retryAfterMs: policy.delayBaseMs };
}

export function findLoginThrottle(db: Queryable, username: string): Promise<LoginThrottleRow | null> {
  return maybeOne(db, throttleRow, {
    name: 'admin-login-throttle-get',
    text: `SELECT ${throttleColumns} FROM admin_login_throttle WHERE username = $1`,
    values: [username],
  });
}

/** A correct password: the account's failures are forgotten. */
export async function clearLoginFailures(db: Queryable, username: string): Promise<void> {
  await exec(db, { name: 'admin-login-clear', text: 'DELETE FROM admin_login_throttle WHERE username = $1', values: [username] });
}

/** The operator's unlock: the account's throttle or lockout is lifted; answers what it was, or null if there was none. */
export function unlockLogin(db: Queryable, username: string): Promise<LoginThrottleRow | null> {
  return maybeOne(db, throttleRow, {
    name: 'admin-login-unlock',
    text: `DELETE FROM admin_login_throttle WHERE username = $1 RETURNING ${throttleColumns}`,
    values: [username],
  });
}

/** Accounts locked or waiting now, most recent attempt first, at most `limit`. */
export function listLoginLockouts(db: Queryable, limit: number): Promise<LoginThrottleRow[]> {
  return many(db, throttleRow, {
    name: 'admin-login-lockouts',
    text: `SELECT ${throttleColumns} FROM admin_login_throttle
            WHERE next_attempt_at > clock_timestamp() ORDER BY last_attempt_at DESC LIMIT $1`,
    values: [limit],
  });
}

/** Forgets at most `limit` rows idle for `forgetAfterMs` whose wait is over; answers how many. */
export function forgetIdleLoginThrottles(db: Queryable, forgetAfterMs: number, limit: number): Promise<number> {
  return exec(db, {
    name: 'admin-login-forget',
    text: `DELETE FROM admin_login_throttle WHERE username IN (
             SELECT username FROM admin_login_throttle
              WHERE last_attempt_at < clock_timestamp() - make_interval(secs => $1 / 1000.0) AND next_attempt_at <= clock_timestamp()
              ORDER BY last_attempt_at LIMIT $2)`,
    values: [forgetAfterMs, limit],
  });
}
