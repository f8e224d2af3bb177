import { z } from 'zod';
import type { Queryable } from './pool.ts';
import { exec, many, maybeOne, one } from './sql.ts';

/**
 * Key backups and the key operations already accepted (migration 18_key_backups, docs/security.md). The
 * service decides inside one transaction that first takes `lockKeyBackups` for the public key,
 * so two writers of one key (two devices, two replicas) decide one after the other.
 */

export const keyBackupRow = z.object({
  public_key: z.string(),
  device_id: z.string(),
  encrypted_seed: z.instanceof(Buffer),
  created_at: z.date(),
  updated_at: z.date(),
});
export type KeyBackupRow = z.infer<typeof keyBackupRow>;

export const keyBackupSummaryRow = z.object({ device_id: z.string(), created_at: z.date(), updated_at: z.date() });
export type KeyBackupSummaryRow = z.infer<typeof keyBackupSummaryRow>;

/** Serialises every write of one public key's backups until the transaction ends. */
export async function lockKeyBackups(db: Queryable, publicKey: string): Promise<void> {
  await one(db, z.object({ locked: z.literal(true) }), {
    name: 'key-backup-lock',
    text: `SELECT true AS locked FROM pg_advisory_xact_lock(hashtextextended('key-backup:' || $1, 0))`,
    values: [publicKey],
  });
}

/** The devices holding a backup of the key, newest first; `limit` bounds the list. */
export function listKeyBackups(db: Queryable, publicKey: string, limit: number): Promise<KeyBackupSummaryRow[]> {
  return many(db, keyBackupSummaryRow, {
    name: 'key-backup-list',
    text: `SELECT device_id, created_at, updated_at FROM key_backups WHERE public_key = $1 ORDER BY updated_at DESC, device_id LIMIT $2`,
    values: [publicKey, limit],
  });
}

export function findKeyBackup(db: Queryable, publicKey: string, deviceId: string): Promise<KeyBackupRow | null> {
  return maybeOne(db, keyBackupRow, {
    name: 'key-backup-find',
    text: `SELECT public_key, device_id, encrypted_seed, created_at, updated_at FROM key_backups WHERE public_key = $1 AND device_id = $2`,
    values: [publicKey, deviceId],
  });
}

/** Writes the device's backup of the key, first or again. */
export function upsertKeyBackup(db: Queryable, backup: { publicKey: string; deviceId: string; encryptedSeed: Buffer }): Promise<KeyBackupRow> {
  return one(db, keyBackupRow, {
    name: 'key-backup-upsert',
    text: `INSERT INTO key_backups (public_key, device_id, encrypted_seed) VALUES ($1, $2, $3)
           ON CONFLICT (public_key, device_id) DO UPDATE SET encrypted_seed = EXCLUDED.encrypted_seed, updated_at = now()
           RETURNING public_key, device_id, encrypted_seed, created_at, updated_at`,
    values: [backup.publicKey, backup.deviceId, backup.encryptedSeed],
  });
}

/**
 * Records a signed key operation as accepted. False when its message was accepted before: the
 * primary key decides, so of two identical operations arriving together exactly one is recorded.
 */
export async function recordKeyAuthorization(
  db: Queryable,
  authorization: { messageHash: Buffer; operation: 'backup' | 'recover'; publicKey: string; deviceId: string; forgetAfterMs: number },
): Promise<boolean> {
  const inserted = await exec(db, {
    name: 'key-authorization-record',
    text: `INSERT INTO key_operation_authorizations (message_hash, operation, public_key, device_id, forget_after)
           VALUES ($1, $2, $3, $4, to_timestamp($5 / 1000.0))
           ON CONFLICT (message_hash) DO NOTHING`,
    values: [authorization.messageHash, authorization.operation, authorization.publicKey, authorization.deviceId, authorization.forgetAfterMs],
  });
  return inserted === 1;
}

/** Drops a bounded batch of records whose messages can no longer pass the freshness check. */
export function pruneKeyAuthorizations(db: Queryable, batchMax: number): Promise<number> {
  return exec(db, {
    name: 'key-authorization-prune',
    text: `DELETE FROM key_operation_authorizations WHERE message_hash IN (
             SELECT message_hash FROM key_operation_authorizations WHERE forget_after < now() ORDER BY forget_after LIMIT $1)`,
    values: [batchMax],
  });
}
