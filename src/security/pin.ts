/**
 * The PIN's rules (docs/security.md), as data and pure functions: what a client's PIN hash and
 * salt look like, how many consecutive failures lock a PIN, how long each lock lasts, and what a
 * reset token looks like. The guarded SQL in `db/security-pins.ts` applies the lockout schedule
 * made here; nothing else decides it.
 */

/** The spec's Limits row "PIN attempts before lockout". Also the CHECK of pin_records.failed_attempts. */
export const pinAttemptsMax = 5;

/** The client's hash of the PIN: 32 bytes, 64 lowercase hex digits (its own KDF's output). */
export const pinHashPattern = /^[0-9a-f]{64}$/;
/** The client's salt: 16 to 64 bytes, lowercase hex. Returned by status so a second device derives the same hash. */
export const clientSaltPattern = /^(?:[0-9a-f]{2}){16,64}$/;

/** A recovery e-mail address: at most 254 characters (RFC 5321's path limit less the brackets). */
export const emailCharsMax = 254;

/**
 * A reset token: 32 random bytes in base64url without padding (43 characters), at least the 128
 * bits the design asks for. Only its SHA-256 is stored.
 */
export const resetTokenBytes = 32;
export const resetTokenPattern = /^[A-Za-z0-9_-]{43}$/;

export const lockoutBaseMsDefault = 15 * 60_000;
export const lockoutMaxMsDefault = 24 * 3_600_000;

/** Schedules longer than this are cut: the cap is reached long before (15 min doubles to 24 h in 7 steps). */
const lockoutStepsMax = 32;

/**
 * How long each lockout lasts, by how many lockouts came before it since the last success: the
 * base, doubling each time, never above the cap. `[15 min, 30 min, 1 h, ..., 16 h, 24 h]` with the
 * defaults; every later lockout lasts the last entry. The SQL indexes this list with the row's
 * `lockouts` counter, so the rule lives here only.
 */
export function lockoutScheduleMs(baseMs: number = lockoutBaseMsDefault, maxMs: number = lockoutMaxMsDefault): number[] {
  if (!Number.isSafeInteger(baseMs) || baseMs < 1) throw new RangeError('the lockout base must be a positive integer of ms');
  if (!Number.isSafeInteger(maxMs) || maxMs < baseMs) throw new RangeError('the lockout cap must be an integer of ms at least the base');
  const schedule: number[] = [];
  let durationMs = baseMs;
  while (schedule.length < lockoutStepsMax) {
    schedule.push(Math.min(durationMs, maxMs));
    if (durationMs >= maxMs) break;
    durationMs *= 2;
  }
  return schedule;
}

/** The duration of the lockout that starts after `lockoutsBefore` earlier ones (since the last success). */
export function lockoutDurationMs(lockoutsBefore: number, schedule: readonly number[]): number {
  if (schedule.length === 0) throw new RangeError('empty lockout schedule');
  const index = Math.min(Math.max(0, lockoutsBefore), schedule.length - 1);
  return schedule[index] as number;
}

/**
 * Attempts left before the lock, as answered to the client: none while locked; the full count
 * once a lock has ended (the next attempt starts a new count); otherwise what the failures since
 * the last success leave.
 */
export function attemptsRemaining(failedAttempts: number, locked: boolean): number {
  if (locked) return 0;
  return failedAttempts >= pinAttemptsMax ? pinAttemptsMax : pinAttemptsMax - failedAttempts;
}

/**
 * The e-mail address as stored and compared: trimmed, and compared without regard to case (the
 * local part is case-sensitive in theory, in practice no provider treats it so, and a user who
 * types capitals must still get the reset).
 */
export function normalizeEmail(email: string): string {
  return email.trim().toLowerCase();
}

/** Decides what a malformed reset token is, before any database lookup. */
export function isResetTokenShaped(token: string): boolean {
  return resetTokenPattern.test(token);
}
