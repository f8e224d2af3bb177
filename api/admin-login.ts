import { claimLoginAttempt, clearLoginFailures, forgetIdleLoginThrottles, type LoginThrottlePolicy } from '../db/admin-login-throttle.ts';
import { findAdminUserByUsername, recordAdminLogin, type AdminUserRow } from '../db/admin-users.ts';
import type { Pool } from '../db/pool.ts';
import { decoyPasswordHash, verifyPassword } from '../infra/passwords.ts';
import { DomainError } from '../src/errors.ts';

/**
 * An administrator's login: the per-account throttle first (db/admin-login-throttle.ts), then
 * the password. The attempt is counted before the password is checked, so a burst of wrong
 * passwords from any number of addresses gets at most the throttle's budget evaluated; the
 * rest are refused with LOGIN_THROTTLED (429, Retry-After) without looking at the password,
 * right or wrong. Unknown user, disabled user and wrong password are one answer, at one cost.
 */
export interface AdminLogin {
  /** The user, once the password is right; throws LOGIN_THROTTLED or INVALID_CREDENTIALS. */
  login(username: string, password: string): Promise<AdminUserRow>;
}

/** Idle rows are forgotten now and then: once per this many attempts, in a bounded batch. */
const forgetEveryAttempts = 200;
const forgetBatchMax = 1000;

export function createAdminLogin(deps: { pool: Pool; policy: LoginThrottlePolicy; warn: (object: object, message: string) => void }): AdminLogin {
  let attempts = 0;
  return {
    async login(username, password) {
      const claim = await claimLoginAttempt(deps.pool, username, deps.policy);
      if (!claim.allowed) {
        const retryAfterS = Math.ceil(claim.retryAfterMs / 1000);
        throw new DomainError(
          'LOGIN_THROTTLED',
          claim.locked
            ? `too many failed logins: this account is locked for ${retryAfterS} s, or until an operator unlocks it`
            : `too many failed logins for this account; retry in ${retryAfterS} s`,
          { retry_after_s: retryAfterS, locked: claim.locked },
        );
      }
      attempts += 1;
      if (attempts % forgetEveryAttempts === 0) {
        void forgetIdleLoginThrottles(deps.pool, deps.policy.forgetAfterMs, forgetBatchMax).catch(() => {});
      }
      const user = await findAdminUserByUsername(deps.pool, username);
      // The same scrypt work whether or not the user exists: unknown user and wrong password are
      // indistinguishable, in the answer and in its timing.
      const passwordOk = await verifyPassword(password, user?.password_hash ?? decoyPasswordHash);
      if (user === null || user.disabled || !passwordOk) {
        if (claim.failures >= deps.policy.lockoutFailures) deps.warn({ failures: claim.failures }, 'admin login failed on a locked-out account');
        throw new DomainError('INVALID_CREDENTIALS', 'invalid username or password');
      }
      await clearLoginFailures(deps.pool, username);
      await recordAdminLogin(deps.pool, user.id);
      return user;
    },
  };
}
