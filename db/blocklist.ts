import type { DatabaseError } from 'pg';
import { z } from 'zod';
import { DomainError } from '../src/errors.ts';
import { withTransaction, type Pool, type PoolClient, type Queryable } from './pool.ts';
import { exec, many, maybeOne, one } from './sql.ts';

/**
 * The blocklist of keys proven to cheat (migration 27_key_blocklist): blocks, lifts, the list's versions, and
 * the refusal the database raises when a blocked key issues, signs a hop or redeems.
 */

/** Why a key is blocked: a proven fork, a proven double issue, a proven cancel after a transfer (migration 30). */
export const keyBlockReasons = ['DOUBLE_SPEND_FORK', 'ISSUER_DOUBLE_ISSUE', 'CANCEL_AFTER_TRANSFER'] as const;
export type KeyBlockReason = (typeof keyBlockReasons)[number];

export const keyBlockRow = z.object({
  id: z.string().uuid(),
  pubkey: z.string(),
  owner_id: z.string(),
  reason: z.enum(keyBlockReasons),
  risk_flag_id: z.string().uuid(),
  token_id: z.string().uuid().nullable(),
  route: z.string(),
  blocked_at: z.date(),
  blocked_in_version: z.coerce.number().int(),
  lifted_at: z.date().nullable(),
  lifted_by: z.string().nullable(),
  lift_reason: z.string().nullable(),
  lifted_in_version: z.coerce.number().int().nullable(),
});
export type KeyBlockRow = z.infer<typeof keyBlockRow>;

const columns = `id, pubkey, owner_id, reason, risk_flag_id, token_id, route, blocked_at, blocked_in_version, lifted_at, lifted_by,
  lift_reason, lifted_in_version`;

const stateRow = z.object({ version: z.coerce.number().int(), published_at: z.date() });
export type BlocklistVersion = z.infer<typeof stateRow>;

/** Takes the list's lock (every change is serialised on it) and answers the current version. */
function lockState(tx: PoolClient): Promise<BlocklistVersion> {
  return one(tx, stateRow, { name: 'blocklist-lock', text: `SELECT version, published_at FROM blocklist_state FOR UPDATE` });
}

/** The next version, made now (to the ms, never before the previous one). Call under lockState. */
function bumpVersion(tx: PoolClient): Promise<BlocklistVersion> {
  return one(tx, stateRow, {
    name: 'blocklist-bump',
    text: `UPDATE blocklist_state
              SET version = version + 1,
                  published_at = greatest(date_trunc('milliseconds', clock_timestamp()), published_at + interval '1 millisecond')
            RETURNING version, published_at`,
  });
}

export interface BlockRequest {
  pubkey: string;
  ownerId: string;
  riskFlagId: string;
  tokenId: string | null;
  route: string;
  /** DOUBLE_SPEND_FORK when left out. */
  reason?: KeyBlockReason;
}

/**
 * Blocks `pubkey` for the fork behind `riskFlagId`, inside the caller's transaction (the one that
 * raised the flag). Nothing changes when the key is already blocked, or when this same fork
 * blocked it before and an admin lifted that block: `created` says whether a block was made.
 */
export async function blockKey(tx: PoolClient, request: BlockRequest): Promise<{ created: boolean; entry: KeyBlockRow }> {
  await lockState(tx);
  const existing = await maybeOne(tx, keyBlockRow, {
    name: 'blocklist-existing',
    text: `SELECT ${columns} FROM key_blocks WHERE pubkey = $1 AND (lifted_at IS NULL OR risk_flag_id = $2)
            ORDER BY lifted_at IS NULL DESC, blocked_at DESC LIMIT 1`,
    values: [request.pubkey, request.riskFlagId],
  });
  if (existing !== null) return { created: false, entry: existing };
  const version = await bumpVersion(tx);
  const entry = await one(tx, keyBlockRow, {
    name: 'blocklist-insert',
    text: `INSERT INTO key_blocks (pubkey, owner_id, reason, risk_flag_id, token_id, route, blocked_at, blocked_in_version)
           VALUES ($1, $2, $8, $3, $4, $5, $6, $7) RETURNING ${columns}`,
    values: [request.pubkey, request.ownerId, request.riskFlagId, request.tokenId, request.route, version.published_at, version.version, request.reason ?? 'DOUBLE_SPEND_FORK'],
  });
  return { created: true, entry };
}

/** Lifts the key's block in force, recording who and why, as the next version; null when none is in force. */
export async function liftBlock(tx: PoolClient, pubkey: string, lift: { liftedBy: string; reason: string }): Promise<KeyBlockRow | null> {
  await lockState(tx);
  const active = await maybeOne(tx, keyBlockRow, {
    name: 'blocklist-active',
    text: `SELECT ${columns} FROM key_blocks WHERE pubkey = $1 AND lifted_at IS NULL`,
    values: [pubkey],
  });
  if (active === null) return null;
  const version = await bumpVersion(tx);
  return one(tx, keyBlockRow, {
    name: 'blocklist-lift',
    text: `UPDATE key_blocks SET lifted_at = $2, lifted_by = $3, lift_reason = $4, lifted_in_version = $5
            WHERE id = $1 RETURNING ${columns}`,
    values: [active.id, version.published_at, lift.liftedBy, lift.reason, version.version],
  });
}

/** The current version and every key blocked in it, read in one statement (one snapshot). */
export async function currentBlocklist(db: Queryable): Promise<BlocklistVersion & { keys: string[]; receipt_keys: string }> {
  return one(db, stateRow.extend({ keys: z.array(z.string()), receipt_keys: z.string() }), {
    name: 'blocklist-current',
    text: `SELECT s.version, s.published_at, s.receipt_keys,
                  array(SELECT b.pubkey FROM key_blocks b WHERE b.lifted_at IS NULL ORDER BY b.pubkey COLLATE "C") AS keys
             FROM blocklist_state s`,
  });
}

/** The receipt keys the current version publishes, as canonical JSON ('' before any). */
export async function currentReceiptKeys(db: Queryable): Promise<string> {
  return (await one(db, z.object({ receipt_keys: z.string() }), { name: 'blocklist-receipt-keys', text: 'SELECT receipt_keys FROM blocklist_state' })).receipt_keys;
}

/**
 * Makes `receiptKeys` (canonical JSON) the receipt keys of the list: a new version when they
 * differ from the current one's, except at their first publication (no list carried any before).
 * Answers whether a new version was made.
 */
export async function publishReceiptKeys(pool: Pool, receiptKeys: string): Promise<boolean> {
  if ((await currentReceiptKeys(pool)) === receiptKeys) return false;
  return withTransaction(pool, async (tx) => {
    await lockState(tx);
    const current = await currentReceiptKeys(tx);
    if (current === receiptKeys) return false;
    const bumped = current !== '';
    if (bumped) await bumpVersion(tx);
    await exec(tx, { name: 'blocklist-set-receipt-keys', text: 'UPDATE blocklist_state SET receipt_keys = $1', values: [receiptKeys] });
    return bumped;
  });
}

export function blocklistVersion(db: Queryable): Promise<BlocklistVersion> {
  return one(db, stateRow, { name: 'blocklist-version', text: `SELECT version, published_at FROM blocklist_state` });
}

export type BlockStatusFilter = 'active' | 'lifted' | 'all';

/** Blocks, newest first, a page at a time. */
export function listBlocks(db: Queryable, filter: { status: BlockStatusFilter; pubkey?: string | undefined }, page: { limit: number; offset: number }): Promise<KeyBlockRow[]> {
  return many(db, keyBlockRow, {
    name: 'blocklist-list',
    text: `SELECT ${columns} FROM key_blocks
            WHERE ($1 = 'all' OR ($1 = 'active') = (lifted_at IS NULL)) AND ($2::text IS NULL OR pubkey = $2)
            ORDER BY blocked_at DESC, id LIMIT $3 OFFSET $4`,
    values: [filter.status, filter.pubkey ?? null, page.limit, page.offset],
  });
}

/** The latest block of a key, in force or lifted; null when it was never blocked. */
export function latestBlock(db: Queryable, pubkey: string): Promise<KeyBlockRow | null> {
  return maybeOne(db, keyBlockRow, {
    name: 'blocklist-latest',
    text: `SELECT ${columns} FROM key_blocks WHERE pubkey = $1 ORDER BY blocked_at DESC, id LIMIT 1`,
    values: [pubkey],
  });
}

/** The role a blocked key was refused in (migration 27_key_blocklist's triggers). */
export type BlockedRole = 'issuer' | 'signer' | 'bearer';

/** The refusal for `pubkey` in `role`, as the triggers' refusal maps (keyBlockedError). */
export function keyBlockedRefusal(pubkey: string, role: BlockedRole, blockId: string): DomainError {
  return new DomainError('KEY_BLOCKED', `this key is blocked: a fork proved it spent a PLC twice (refused as ${role})`, {
    pubkey,
    role,
    block_id: blockId,
    blocklist_url: '/api/v1/blocklist',
  });
}

/** The block in force of a key, if any (one index lookup). */
export function activeBlock(db: Queryable, pubkey: string): Promise<KeyBlockRow | null> {
  return maybeOne(db, keyBlockRow, {
    name: 'blocklist-active-of',
    text: `SELECT ${columns} FROM key_blocks WHERE pubkey = $1 AND lifted_at IS NULL`,
    values: [pubkey],
  });
}

/** SQLSTATE of migration 27_key_blocklist's refusal (class 23: one item's fault). */
export const keyBlockedSqlState = '23K01';

/**
 * The domain refusal KEY_BLOCKED when `error` is migration 27_key_blocklist's (a blocked key as issuer, hop
 * signer or bearer); null for any other error.
 */
export function keyBlockedError(error: unknown): DomainError | null {
  const pgError = error as Partial<DatabaseError> | null;
  if (pgError?.code !== keyBlockedSqlState) return null;
  let detail: { pubkey?: unknown; role?: unknown; block_id?: unknown } = {};
  try {
    detail = JSON.parse(pgError.detail ?? '{}') as typeof detail;
  } catch {
    // The message alone still names the refusal.
  }
  const role = detail.role === 'issuer' || detail.role === 'bearer' ? detail.role : 'signer';
  return keyBlockedRefusal(String(detail.pubkey), role, String(detail.block_id));
}
