import { z } from 'zod';
import type { Queryable } from './pool.ts';
import { maybeOne } from './sql.ts';

/**
 * PIN records and reset tokens (migration 17_security_pins, docs/security.md). Every state change is one
 * statement whose WHERE clause is its guard, so API replicas need no lock of their own:
 *
 * - `reservePinAttempt` counts an attempt as failed BEFORE the slow hash is compared, and only
 *   while fewer than 5 are counted or the lock has ended. 50 concurrent attempts through any
 *   number of processes: PostgreSQL serialises the UPDATEs on the row and re-checks the WHERE
 *   against the row each one finds, so at most 5 are reserved, and only a reserved attempt is
 *   evaluated.
 * - A success (`recordPinSuccess`, a PIN change, a reset) clears the count and the lock, guarded
 *   by `credential_version` so that a success computed against a PIN that has since changed
 *   changes nothing.
 */

const buffer = z.instanceof(Buffer);

export const pinCredentialRow = z.object({
  owner_id: z.string(),
  client_salt: z.string(),
  verifier: buffer,
  server_salt: buffer,
  scrypt_log2_n: z.number().int(),
  scrypt_r: z.number().int(),
  scrypt_p: z.number().int(),
  credential_version: z.bigint(),
  failed_attempts: z.number().int(),
  locked_until: z.date().nullable(),
});
export type PinCredentialRow = z.infer<typeof pinCredentialRow>;

export const pinStatusRow = z.object({
  owner_id: z.string(),
  client_salt: z.string(),
  recovery_email_set: z.boolean(),
  pepper_id: z.string(),
  failed_attempts: z.number().int(),
  locked_until: z.date().nullable(),
  locked: z.boolean(),
  registered_at: z.date(),
  updated_at: z.date(),
});
export type PinStatusRow = z.infer<typeof pinStatusRow>;

const credentialColumns = `owner_id, client_salt, verifier, server_salt, scrypt_log2_n, scrypt_r, scrypt_p, credential_version,
  failed_attempts, locked_until`;
const statusColumns = `owner_id, client_salt, recovery_email IS NOT NULL AS recovery_email_set, pepper_id, failed_attempts,
  locked_until, coalesce(locked_until > now(), false) AS locked, registered_at, updated_at`;

export interface NewPinCredential {
  readonly ownerId: string;
  readonly clientSalt: string;
  readonly verifier: Buffer;
  readonly serverSalt: Buffer;
  readonly log2N: number;
  readonly r: number;
  readonly p: number;
  readonly pepperId: string;
}

function credentialValues(credential: NewPinCredential): unknown[] {
  return [
    credential.ownerId,
    credential.clientSalt,
    credential.verifier,
    credential.serverSalt,
    credential.log2N,
    credential.r,
    credential.p,
    credential.pepperId,
  ];
}

export function findPinStatus(db: Queryable, ownerId: string): Promise<PinStatusRow | null> {
  return maybeOne(db, pinStatusRow, {
    name: 'pin-status',
    text: `SELECT ${statusColumns} FROM pin_records WHERE owner_id = $1`,
    values: [ownerId],
  });
}

/** The first registration: a row, or null when the owner already has one (someone else won). */
export function insertPinRecord(db: Queryable, credential: NewPinCredential, email: string | null): Promise<PinStatusRow | null> {
  return maybeOne(db, pinStatusRow, {
    name: 'pin-insert',
    text: `INSERT INTO pin_records (owner_id, client_salt, verifier, server_salt, scrypt_log2_n, scrypt_r, scrypt_p, pepper_id, recovery_email)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
           ON CONFLICT (owner_id) DO NOTHING
           RETURNING ${statusColumns}`,
    values: [...credentialValues(credential), email],
  });
}

/**
 * Reserves one PIN attempt: counts it as a failure now, before it is evaluated. Refused (null)
 * when the owner has no record, when the record was made under another pepper, or while 5
 * failures are counted and the lock has not ended. The fifth reservation starts the lock, with
 * the duration `lockoutScheduleMs` gives for the lockouts before it; the first reservation after
 * a lock has ended starts a new count at 1.
 */
export function reservePinAttempt(
  db: Queryable,
  input: { ownerId: string; pepperId: string; attemptsMax: number; lockoutScheduleMs: readonly number[] },
): Promise<PinCredentialRow | null> {
  return maybeOne(db, pinCredentialRow, {
    name: 'pin-reserve-attempt',
    text: `UPDATE pin_records SET
             failed_attempts = CASE WHEN locked_until <= now() THEN 1 ELSE failed_attempts + 1 END,
             locked_until = CASE WHEN locked_until IS NULL AND failed_attempts + 1 >= $3
                                 THEN now() + ($4::bigint[])[least(lockouts + 1, cardinality($4::bigint[]))] * interval '1 millisecond'
                                 ELSE NULL END,
             lockouts = lockouts + CASE WHEN locked_until IS NULL AND failed_attempts + 1 >= $3 THEN 1 ELSE 0 END
           WHERE owner_id = $1 AND pepper_id = $2 AND (failed_attempts < $3 OR locked_until <= now())
           RETURNING ${credentialColumns}`,
    values: [input.ownerId, input.pepperId, input.attemptsMax, input.lockoutScheduleMs],
    prepare: true,
  });
}

/** A verified attempt: the count, the lock and the lockout history clear. False when the PIN changed meanwhile. */
export async function recordPinSuccess(db: Queryable, ownerId: string, credentialVersion: bigint): Promise<boolean> {
  const row = await maybeOne(db, z.object({ owner_id: z.string() }), {
    name: 'pin-success',
    text: `UPDATE pin_records SET failed_attempts = 0, locked_until = NULL, lockouts = 0
           WHERE owner_id = $1 AND credential_version = $2
           RETURNING owner_id`,
    values: [ownerId, credentialVersion],
    prepare: true,
  });
  return row !== null;
}

/**
 * Replaces the PIN after the current one was verified (a success: the count and lock clear), and
 * voids any reset token, in one statement. `email` undefined keeps the recovery e-mail. Null when
 * the PIN changed since it was verified.
 */
export function replacePinCredential(
  db: Queryable,
  credential: NewPinCredential,
  expectedVersion: bigint,
  email: string | undefined,
): Promise<PinStatusRow | null> {
  return maybeOne(db, pinStatusRow, {
    name: 'pin-replace',
    text: `WITH updated AS (
             UPDATE pin_records SET client_salt = $2, verifier = $3, server_salt = $4, scrypt_log2_n = $5, scrypt_r = $6,
                    scrypt_p = $7, pepper_id = $8, recovery_email = CASE WHEN $10 THEN $11 ELSE recovery_email END,
                    credential_version = credential_version + 1, failed_attempts = 0, locked_until = NULL, lockouts = 0,
                    updated_at = now()
              WHERE owner_id = $1 AND credential_version = $9
             RETURNING *
           ), voided AS (
             DELETE FROM pin_reset_tokens t USING updated u WHERE t.owner_id = u.owner_id
           )
           SELECT ${statusColumns} FROM updated`,
    values: [...credentialValues(credential), expectedVersion, email !== undefined, email ?? null],
  });
}

/** Sets the recovery e-mail after the current PIN was verified (a success), voiding any reset token. */
export function updateRecoveryEmail(db: Queryable, ownerId: string, expectedVersion: bigint, email: string): Promise<PinStatusRow | null> {
  return maybeOne(db, pinStatusRow, {
    name: 'pin-update-email',
    text: `WITH updated AS (
             UPDATE pin_records SET recovery_email = $3, failed_attempts = 0, locked_until = NULL, lockouts = 0, updated_at = now()
              WHERE owner_id = $1 AND credential_version = $2
             RETURNING *
           ), voided AS (
             DELETE FROM pin_reset_tokens t USING updated u WHERE t.owner_id = u.owner_id
           )
           SELECT ${statusColumns} FROM updated`,
    values: [ownerId, expectedVersion, email],
  });
}

export const issuedResetTokenRow = z.object({ owner_id: z.string(), recovery_email: z.string(), expires_at: z.date() });
export type IssuedResetToken = z.infer<typeof issuedResetTokenRow>;

/**
 * Stores a new reset token's hash for the owner when `emailSha256` is the SHA-256 of the owner's
 * (normalised) recovery e-mail, replacing any older token: a new request voids the old one. Null
 * when the owner or the e-mail does not match, and nothing is written.
 */
export function issuePinResetToken(
  db: Queryable,
  input: { ownerId: string; emailSha256: Buffer; tokenHash: Buffer; requestId: string; ttlMs: number },
): Promise<IssuedResetToken | null> {
  return maybeOne(db, issuedResetTokenRow, {
    name: 'pin-reset-token-issue',
    text: `WITH target AS (
             SELECT owner_id, recovery_email FROM pin_records
              WHERE owner_id = $1 AND recovery_email IS NOT NULL AND sha256(convert_to(recovery_email, 'UTF8')) = $2
           ), issued AS (
             INSERT INTO pin_reset_tokens (owner_id, token_hash, request_id, issued_at, expires_at)
             SELECT owner_id, $3, $4, now(), now() + $5 * interval '1 millisecond' FROM target
             ON CONFLICT (owner_id) DO UPDATE SET token_hash = EXCLUDED.token_hash, request_id = EXCLUDED.request_id,
                    issued_at = EXCLUDED.issued_at, expires_at = EXCLUDED.expires_at, consumed_at = NULL
             RETURNING owner_id, expires_at
           )
           SELECT i.owner_id, t.recovery_email, i.expires_at FROM issued i JOIN target t USING (owner_id)`,
    values: [input.ownerId, input.emailSha256, input.tokenHash, input.requestId, input.ttlMs],
  });
}

/**
 * Consumes the owner's reset token and sets the new PIN in one statement: only a token that is
 * the owner's, unused and unexpired is consumed, and only then is the PIN replaced (a success:
 * the lock ends). Two concurrent resets with one token: the second finds it consumed. Null when
 * the token is not accepted; `findPinResetToken` then says why.
 */
export function resetPinWithToken(db: Queryable, credential: NewPinCredential, tokenHash: Buffer): Promise<PinStatusRow | null> {
  return maybeOne(db, pinStatusRow, {
    name: 'pin-reset-with-token',
    text: `WITH consumed AS (
             UPDATE pin_reset_tokens SET consumed_at = now()
              WHERE owner_id = $1 AND token_hash = $9 AND consumed_at IS NULL AND expires_at > now()
             RETURNING owner_id
           ), updated AS (
             UPDATE pin_records p SET client_salt = $2, verifier = $3, server_salt = $4, scrypt_log2_n = $5, scrypt_r = $6,
                    scrypt_p = $7, pepper_id = $8, credential_version = credential_version + 1, failed_attempts = 0,
                    locked_until = NULL, lockouts = 0, updated_at = now()
               FROM consumed c WHERE p.owner_id = c.owner_id
             RETURNING p.*
           )
           SELECT ${statusColumns} FROM updated`,
    values: [...credentialValues(credential), tokenHash],
  });
}

export const resetTokenRow = z.object({ token_hash: buffer, consumed: z.boolean(), expired: z.boolean() });

export function findPinResetToken(db: Queryable, ownerId: string): Promise<z.infer<typeof resetTokenRow> | null> {
  return maybeOne(db, resetTokenRow, {
    name: 'pin-reset-token-find',
    text: `SELECT token_hash, consumed_at IS NOT NULL AS consumed, expires_at <= now() AS expired FROM pin_reset_tokens WHERE owner_id = $1`,
    values: [ownerId],
  });
}
