import type { DatabaseError } from 'pg';
import { z } from 'zod';
import { DomainError } from '../src/errors.ts';
import { increaseRequestRoute } from '../src/limits/progressive.ts';
import { moneyModel } from '../src/ledger/money-model.ts';
import { plcStatuses, type PlcStatus } from '../src/plc/lifecycle.ts';
import type { Currency } from '../src/money/currency.ts';
import type { KnownRecord, RegistrationDecision } from '../src/plc/register-transfers.ts';
import { bookFor, postingLegs, toLedgerError } from './ledger.ts';
import { keyBlockedError } from './blocklist.ts';
import { createGroupCommit } from './group-commit.ts';
import { withTransaction, type Pool, type PoolClient, type Queryable } from './pool.ts';
import { many, maybeOne, one } from './sql.ts';
import { reportCommitted } from './committed.ts';
import { ledgerKeys } from '../src/ledger/keys.ts';

/**
 * PLC rows and their transfer chains. Every state transition is one guarded UPDATE inside a
 * transaction that also books its ledger movement, so a PLC's status and its money never
 * disagree, and two paths (expiry and cancel, two forks) can never both win.
 */

export const plcRow = z.object({
  token_id: z.string().uuid(),
  version: z.literal('2.0'),
  issuer_pubkey: z.string(),
  issuer_owner_id: z.string(),
  amount_minor: z.bigint(),
  currency: z.enum(['BRL', 'USD', 'EUR']),
  created_at: z.date(),
  created_at_ms: z.bigint(),
  expires_at: z.date(),
  expires_at_ms: z.bigint(),
  nonce: z.string(),
  commitment_hash: z.string(),
  signature: z.string(),
  status: z.enum(plcStatuses),
  chain_length: z.number().int(),
  head_hash: z.string(),
  bearer_pubkey: z.string(),
  device_id: z.string(),
  redemption_id: z.string().uuid().nullable(),
  issue_tx_id: z.string().uuid(),
  final_tx_id: z.string().uuid().nullable(),
  settlement_tx_id: z.string().uuid().nullable(),
  registered_at: z.date(),
  status_changed_at: z.date(),
  /** When the PLC falls due for expiry (migration 35); null for a PLC expired by its own `plc-<token_id>` workflow (issued before). */
  expiry_due_at: z.date().nullable().optional(),
});
export type PlcRow = z.infer<typeof plcRow>;

export const transferRow = z.object({
  token_id: z.string().uuid(),
  position: z.number().int(),
  sender_pubkey: z.string(),
  recipient_pubkey: z.string(),
  timestamp_ms: z.bigint(),
  nonce: z.string(),
  prev_hash: z.string(),
  signature: z.string(),
  record_hash: z.string(),
  device_id: z.string(),
  registered_at: z.date(),
});
export type TransferRow = z.infer<typeof transferRow>;

/** The columns `plc_issue` (migration 11) returns: every column of a PLC but its expiry due time. */
const plcIssueColumns = `token_id, version, issuer_pubkey, issuer_owner_id, amount_minor, currency, created_at, created_at_ms,
  expires_at, expires_at_ms, nonce, commitment_hash, signature, status, chain_length, head_hash, bearer_pubkey, device_id,
  redemption_id, issue_tx_id, final_tx_id, settlement_tx_id, registered_at, status_changed_at`;

const plcColumns = `token_id, version, issuer_pubkey, issuer_owner_id, amount_minor, currency, created_at, created_at_ms,
  expires_at, expires_at_ms, nonce, commitment_hash, signature, status, chain_length, head_hash, bearer_pubkey, device_id,
  redemption_id, issue_tx_id, final_tx_id, settlement_tx_id, registered_at, status_changed_at, expiry_due_at`;

export function getPlc(db: Queryable, tokenId: string): Promise<PlcRow | null> {
  return maybeOne(db, plcRow, {
    name: 'plc-get',
    text: `SELECT ${plcColumns} FROM plcs WHERE token_id = $1`,
    values: [tokenId],
  });
}

async function lockPlc(client: PoolClient, tokenId: string): Promise<PlcRow | null> {
  return maybeOne(client, plcRow, {
    name: 'plc-lock',
    text: `SELECT ${plcColumns} FROM plcs WHERE token_id = $1 FOR UPDATE`,
    values: [tokenId],
  });
}

export function listTransfers(db: Queryable, tokenId: string): Promise<TransferRow[]> {
  return many(db, transferRow, {
    name: 'plc-transfers',
    text: `SELECT token_id, position, sender_pubkey, recipient_pubkey, timestamp_ms, nonce, prev_hash, signature,
                  record_hash, device_id, registered_at
             FROM plc_transfers WHERE token_id = $1 ORDER BY position`,
    values: [tokenId],
  });
}

export interface NewPlc {
  tokenId: string;
  issuerPubkey: string;
  amountMinor: bigint;
  currency: Currency;
  createdAtMs: number;
  expiresAtMs: number;
  nonce: string;
  commitmentHash: string;
  signature: string;
  deviceId: string;
}

export interface IssueLimits {
  amountMaxMinor: bigint;
  dailyLimitMinor: bigint;
}

export type IssueResult = { plc: PlcRow; created: boolean };

// Row schemas live at module level: zod compiles a schema's parser on its first use, so a schema
// built inside a function is compiled again on every call.
const issueRow = plcRow.extend({ created: z.boolean() });
const tokenIdRow = z.object({ token_id: z.string().uuid() });

function detailJson(error: Partial<DatabaseError>): Record<string, unknown> {
  try {
    return JSON.parse(error.detail ?? '{}') as Record<string, unknown>;
  } catch {
    return {};
  }
}

/** What is left of a daily limit, as a decimal string of minor units (never negative). */
function remainingMinor(limit: unknown, issued: unknown): string {
  try {
    const left = BigInt(String(limit)) - BigInt(String(issued));
    return (left > 0n ? left : 0n).toString();
  } catch {
    return '0';
  }
}

/** Maps `plc_issue`'s refusals (migration 11) to domain errors; the ledger's own go through toLedgerError. */
function toIssueError(error: unknown, tokenId: string): unknown {
  const pgError = error as Partial<DatabaseError>;
  // Migration 28: the issuer's key is blocked.
  const blocked = keyBlockedError(error);
  if (blocked !== null) return blocked;
  switch (pgError.code) {
    case 'PL101':
      return new DomainError('PLC_ALREADY_EXISTS', 'another PLC with this token id exists', { token_id: tokenId });
    case 'PL102': {
      const details = detailJson(pgError);
      return new DomainError(
        'PLC_AMOUNT_ABOVE_MAXIMUM',
        `a PLC of this device may carry at most ${String(details.amount_max_minor)} minor units; ask for more with ${increaseRequestRoute}`,
        { field: 'amount', limit: 'max_amount', amount_max_minor: details.amount_max_minor, increase_request: increaseRequestRoute },
      );
    }
    case 'PL103':
      return new DomainError('ACCOUNT_FROZEN', 'the issuer account is frozen: it can receive but not spend', { owner_id: pgError.detail });
    case 'PL104': {
      const details = detailJson(pgError);
      const remaining = remainingMinor(details.daily_limit_minor, details.issued_last_24h_minor);
      return new DomainError(
        'PLC_DAILY_LIMIT_EXCEEDED',
        `this PLC would exceed the issuer's daily limit of ${String(details.daily_limit_minor)} minor units (${remaining} left in the last 24 hours); ask for more with ${increaseRequestRoute}`,
        {
          limit: 'daily_limit',
          daily_limit_minor: details.daily_limit_minor,
          issued_last_24h_minor: details.issued_last_24h_minor,
          remaining_minor: remaining,
          increase_request: increaseRequestRoute,
        },
      );
    }
    default:
      return toLedgerError(error);
  }
}

/**
 * Stores the PLC as ISSUED and books issuer AVAILABLE -> PROMISED in one transaction: one call
 * of `plc_issue` (migration 11), which reads an existing PLC, checks the maximum, locks the
 * issuer's account, checks it is active and the daily limit under that lock, posts through
 * `ledger_post_legs` and inserts the row, in one round trip and one implicit transaction. A retry
 * of the same PLC answers the stored row (created=false); another PLC under the same token id is
 * a conflict. Refusals (frozen account, limits, funds) leave nothing behind.
 */
export async function issuePlc(pool: Pool, input: NewPlc, limits: IssueLimits): Promise<IssueResult> {
  const ownerId = input.issuerPubkey;
  const posting = moneyModel.plcIssued({ issuerId: ownerId, currency: input.currency, amountMinor: input.amountMinor });
  const legs = postingLegs(posting.entries);
  try {
    const { created, ...plc } = await one(pool, issueRow, {
      name: 'plc-issue',
      prepare: true,
      text: `SELECT created, ${plcIssueColumns}
               FROM plc_issue($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14::text[], $15::text[], $16::text[], $17::bigint[])`,
      values: [
        input.tokenId,
        input.issuerPubkey,
        input.amountMinor.toString(),
        input.currency,
        input.createdAtMs,
        input.expiresAtMs,
        input.nonce,
        input.commitmentHash,
        input.signature,
        input.deviceId,
        limits.amountMaxMinor.toString(),
        limits.dailyLimitMinor.toString(),
        posting.txType,
        legs.owners,
        legs.buckets,
        legs.currencies,
        legs.amounts,
      ],
    });
    if (created) {
      // plc_issue posts through ledger_post_legs itself, in the same statement.
      reportCommitted(pool, { kind: 'ledger_posting', txType: posting.txType });
      reportCommitted(pool, { kind: 'plc', event: 'created', count: 1 });
    }
    return { plc, created };
  } catch (error) {
    throw toIssueError(error, input.tokenId);
  }
}

/** What `issuePlcBucketed` keeps beside the PLC: its expiry due time and its issue receipt. */
export interface IssueExtras {
  expiryDueAt: Date;
  /** The receipt signed before the call (services/issue-receipt.ts), kept only if the reservation is booked. */
  receipt: string;
  receiptPubkey: string;
  receiptIssuedAt: Date;
  /** The PLC's expiry bucket [start, end) (`expiryBucketOf`). */
  bucketStart: Date;
  bucketEnd: Date;
}

export type BucketedIssueResult = IssueResult & {
  /** The receipt kept for the PLC: this call's, or the one a first create kept. */
  receipt: string;
  /** The bucket of expiry time the PLC belongs to (`plc-expiry-<bucket>`). */
  bucketStart: Date;
  bucketEnd: Date;
  /** True when this create inserted the bucket's row: its caller starts the bucket's workflow. */
  bucketNew: boolean;
};

const bucketedIssueRow = issueRow.extend({ receipt: z.string(), bucket_new: z.boolean() });

/**
 * A PLC create in one statement (migration 35, `plc_issue_bucketed`): what `issuePlc` does, and in
 * the same implicit transaction the PLC's expiry due time, its issue receipt and its expiry
 * bucket's row. The request path's only write; no Temporal call (docs/plc.md, "Expiry by time
 * buckets"). Refusals as `issuePlc`'s.
 */
export async function issuePlcBucketed(pool: Pool, input: NewPlc, limits: IssueLimits, extras: IssueExtras): Promise<BucketedIssueResult> {
  const ownerId = input.issuerPubkey;
  const posting = moneyModel.plcIssued({ issuerId: ownerId, currency: input.currency, amountMinor: input.amountMinor });
  const legs = postingLegs(posting.entries);
  try {
    const { created, receipt, bucket_new: bucketNew, ...plc } = await one(pool, bucketedIssueRow, {
      name: 'plc-issue-bucketed',
      prepare: true,
      text: `SELECT created, ${plcColumns}, receipt, bucket_new
               FROM plc_issue_bucketed($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14::text[], $15::text[], $16::text[], $17::bigint[],
                                       $18, $19, $20, $21, $22, $23)`,
      values: [
        input.tokenId,
        input.issuerPubkey,
        input.amountMinor.toString(),
        input.currency,
        input.createdAtMs,
        input.expiresAtMs,
        input.nonce,
        input.commitmentHash,
        input.signature,
        input.deviceId,
        limits.amountMaxMinor.toString(),
        limits.dailyLimitMinor.toString(),
        posting.txType,
        legs.owners,
        legs.buckets,
        legs.currencies,
        legs.amounts,
        extras.expiryDueAt,
        extras.receipt,
        extras.receiptPubkey,
        extras.receiptIssuedAt,
        extras.bucketStart,
        extras.bucketEnd,
      ],
    });
    if (created) {
      reportCommitted(pool, { kind: 'ledger_posting', txType: posting.txType });
      reportCommitted(pool, { kind: 'plc', event: 'created', count: 1 });
    }
    return { plc, created, receipt, bucketNew, bucketStart: extras.bucketStart, bucketEnd: extras.bucketEnd };
  } catch (error) {
    throw toIssueError(error, input.tokenId);
  }
}

/** The expiry bucket a due time falls in: [start, end), `widthMs` wide, aligned on the epoch. */
export function expiryBucketOf(dueAt: Date, widthMs: number): { start: Date; end: Date } {
  const startMs = Math.floor(dueAt.getTime() / widthMs) * widthMs;
  return { start: new Date(startMs), end: new Date(startMs + widthMs) };
}

export type ReleaseKind = 'CANCELLED' | 'EXPIRED';

export type ReleaseResult = { released: true; plc: PlcRow } | { released: false; plc: PlcRow | null };

/**
 * Cancel (only ISSUED with no hop) or expire (any live status, no redemption in flight): one
 * guarded UPDATE plus PROMISED -> AVAILABLE in one transaction. Whichever path comes first wins;
 * the other finds nothing to do.
 */
export async function releasePlc(pool: Pool, tokenId: string, kind: ReleaseKind): Promise<ReleaseResult> {
  return withTransaction(pool, async (client) => {
    const plc = await lockPlc(client, tokenId);
    if (plc === null) return { released: false, plc: null };
    const allowed =
      kind === 'CANCELLED'
        ? plc.status === 'ISSUED' && plc.chain_length === 0
        : (plc.status === 'ISSUED' || plc.status === 'TRANSFERRED') && plc.redemption_id === null;
    if (!allowed) return { released: false, plc };
    const posting =
      kind === 'CANCELLED'
        ? moneyModel.plcCancelled({ issuerId: plc.issuer_owner_id, currency: plc.currency, amountMinor: plc.amount_minor })
        : moneyModel.plcExpired({ issuerId: plc.issuer_owner_id, currency: plc.currency, amountMinor: plc.amount_minor });
    const booked = await bookFor(client, { type: 'plc', id: tokenId }, ledgerKeys.plcRelease.of(tokenId), posting);
    const updated = await one(client, plcRow, {
      name: 'plc-release',
      text: `UPDATE plcs SET status = $2, final_tx_id = $3, status_changed_at = now() WHERE token_id = $1
             RETURNING ${plcColumns}`,
      values: [tokenId, kind, booked.transactionId],
    });
    reportCommitted(client, { kind: 'plc', event: kind === 'CANCELLED' ? 'cancelled' : 'expired', count: 1 });
    return { released: true, plc: updated };
  });
}

export function toKnownRecord(row: TransferRow): KnownRecord {
  return {
    senderPubkey: row.sender_pubkey,
    recipientPubkey: row.recipient_pubkey,
    timestampMs: Number(row.timestamp_ms),
    nonce: row.nonce,
    prevHash: row.prev_hash,
    signature: row.signature,
    recordHash: row.record_hash,
  };
}

/** A PLC with its registered chain, read in one round trip (the transfer route's first step). */
export interface PlcWithChain {
  plc: PlcRow;
  known: KnownRecord[];
}

const chainJson = z.array(
  z.object({
    sender_pubkey: z.string(),
    recipient_pubkey: z.string(),
    timestamp_ms: z.number().int(),
    nonce: z.string(),
    prev_hash: z.string(),
    signature: z.string(),
    record_hash: z.string(),
  }),
);

// Built once: zod compiles a schema's parser on first use, so a schema made per call costs a compile per call.
const plcWithChainRow = plcRow.extend({ chain: chainJson });

export async function getPlcWithChain(db: Queryable, tokenId: string): Promise<PlcWithChain | null> {
  return getPlcWithChainFrom(db, tokenId, 0);
}

/**
 * The PLC's row and its records from `fromPosition` on (0: the whole chain): a process that
 * already holds the chain's first `fromPosition` records (registered records never change) reads
 * only what was appended since, as one query.
 */
export async function getPlcWithChainFrom(db: Queryable, tokenId: string, fromPosition: number): Promise<PlcWithChain | null> {
  const row = await maybeOne(db, plcWithChainRow, {
    name: 'plc-get-with-chain-from',
    prepare: true,
    text: `SELECT ${plcColumns},
                  (SELECT coalesce(json_agg(json_build_object('sender_pubkey', t.sender_pubkey, 'recipient_pubkey', t.recipient_pubkey,
                                            'timestamp_ms', t.timestamp_ms, 'nonce', t.nonce, 'prev_hash', t.prev_hash,
                                            'signature', t.signature, 'record_hash', t.record_hash) ORDER BY t.position), '[]')
                     FROM plc_transfers t WHERE t.token_id = p.token_id AND t.position >= $2) AS chain
             FROM plcs p WHERE p.token_id = $1`,
    values: [tokenId, fromPosition],
  });
  if (row === null) return null;
  const { chain, ...plc } = row;
  return {
    plc,
    known: chain.map((record) => ({
      senderPubkey: record.sender_pubkey,
      recipientPubkey: record.recipient_pubkey,
      timestampMs: record.timestamp_ms,
      nonce: record.nonce,
      prevHash: record.prev_hash,
      signature: record.signature,
      recordHash: record.record_hash,
    })),
  };
}

/** What an append changes: the PLC's head after it (the transfer route's answer). */
export const plcHeadRow = z.object({
  token_id: z.string().uuid(),
  status: z.enum(plcStatuses),
  chain_length: z.number().int(),
  head_hash: z.string(),
  bearer_pubkey: z.string(),
});
export type PlcHead = z.infer<typeof plcHeadRow>;

/** One PLC's append in a batch: the head it was decided against, and the decision. */
export interface PendingAppend {
  read: { token_id: string; status: PlcStatus; chain_length: number; head_hash: string };
  decision: Extract<RegistrationDecision, { kind: 'extend' }>;
  deviceId: string;
  /**
   * For an append decided without reading the PLC (services/transfer.ts, "the last hop"): what the
   * presented PLC claims the registered one to be, checked in the same statement. The stored
   * commitment hash and issuer signature must equal these, and the stored records' signatures, in
   * position order and concatenated, must equal `prefixSignatures`; with the head's hash equal
   * to `read.head_hash` (hash-linked records) the presented records before the new ones are then
   * byte for byte the registered, verified ones. Absent when the caller read or remembered them.
   */
  presented?: { commitmentHash: string; issuerSignature: string; prefixSignatures: string };
}

/**
 * Appends the records of `extend` decisions, for one PLC or several, in one statement (group
 * commit, see db/group-commit.ts). Each PLC advances only if it is still where it was read (the
 * same chain length and head, transferable, no redemption in flight): a compare-and-set under
 * its row lock, with its records stored in the same statement. A first hop (ISSUED ->
 * TRANSFERRED) of a PLC issued before migration 35 also queues the status for the PLC's own
 * workflow in `plc_status_outbox`, so the workflow's search attribute follows without a Temporal
 * call on the request path; a PLC issued since has no workflow of its own and queues nothing.
 *
 * Answers per item, in order: the new head, or null where the PLC was not as read (another
 * registration, a cancel, an expiry or a redemption got there first: read again and decide
 * again). The items must name distinct PLCs. A constraint violation by any item (a competing
 * fork or nonce got in first) fails the whole statement: the group commit then splits the batch
 * to tell which (createTransferAppender). PLC rows are locked in token order, so two batches that share PLCs cannot
 * deadlock.
 */
export async function appendTransfersBatch(db: Queryable, items: readonly PendingAppend[]): Promise<(PlcHead | null)[]> {
  const records = items.flatMap((item) => item.decision.records.map((record) => ({ tokenId: item.read.token_id, deviceId: item.deviceId, record })));
  const heads = await many(db, plcHeadRow, {
    name: 'plc-transfer-append-batch',
    prepare: true,
    text: `WITH wanted AS (
             SELECT * FROM unnest($1::uuid[], $2::int[], $3::text[], $4::int[], $5::text[], $6::text[], $7::boolean[], $18::text[], $19::text[], $20::text[])
                      AS w(token_id, read_length, read_head, chain_length, head_hash, bearer_pubkey, first_hop,
                           claimed_commitment_hash, claimed_signature, claimed_prefix_signatures)
           ), locked AS (
             -- Each PLC looked up by its key, item by item in token order (the LATERAL ... LIMIT is a
             -- fence the planner cannot flatten into a join: with stale statistics a join once chose
             -- to scan every live PLC by status, 100 ms a batch, where the key finds the one row).
             SELECT l.token_id
               FROM (SELECT * FROM wanted ORDER BY token_id) w
              CROSS JOIN LATERAL (
                SELECT p.token_id FROM plcs p
                 WHERE p.token_id = w.token_id AND p.chain_length = w.read_length AND p.head_hash = w.read_head
                   AND p.status IN ('ISSUED', 'TRANSFERRED') AND p.redemption_id IS NULL
                   AND (w.claimed_commitment_hash IS NULL OR (
                         p.commitment_hash = w.claimed_commitment_hash AND p.signature = w.claimed_signature
                     AND w.claimed_prefix_signatures = coalesce((SELECT string_agg(t.signature, '' ORDER BY t.position) FROM plc_transfers t
                                                                 WHERE t.token_id = p.token_id), '')))
                 LIMIT 1
                   FOR UPDATE OF p
              ) l
           ), advanced AS (
             -- The rows locked above, still as checked there (this statement holds their locks).
             UPDATE plcs p SET status = 'TRANSFERRED', chain_length = w.chain_length, head_hash = w.head_hash, bearer_pubkey = w.bearer_pubkey,
                    status_changed_at = CASE WHEN p.status = 'TRANSFERRED' THEN p.status_changed_at ELSE now() END
               FROM wanted w JOIN locked l USING (token_id)
              WHERE p.token_id = l.token_id
             -- Only a PLC with a workflow of its own (issued before migration 35) is owed a status signal.
             RETURNING p.token_id, p.status, p.chain_length, p.head_hash, p.bearer_pubkey, w.first_hop AND p.expiry_due_at IS NULL AS first_hop
           ), stored AS (
             INSERT INTO plc_transfers (token_id, position, sender_pubkey, recipient_pubkey, timestamp_ms, nonce, prev_hash,
                                        signature, record_hash, device_id)
             SELECT r.token_id, r.position, r.sender, r.recipient, r.ts, r.nonce, r.prev, r.sig, r.hash, r.device_id
               FROM unnest($8::uuid[], $9::int[], $10::text[], $11::text[], $12::bigint[], $13::text[], $14::text[], $15::text[], $16::text[], $17::text[])
                      AS r(token_id, position, sender, recipient, ts, nonce, prev, sig, hash, device_id)
               JOIN advanced a USING (token_id)
           ), queued AS (
             INSERT INTO plc_status_outbox (token_id, status, chain_length)
             SELECT a.token_id, a.status, a.chain_length FROM advanced a WHERE a.first_hop
             ON CONFLICT (token_id) DO UPDATE SET status = EXCLUDED.status, chain_length = EXCLUDED.chain_length,
                                                  enqueued_at = now(), revision = plc_status_outbox.revision + 1,
                                                  attempts = 0, next_attempt_at = now()
           )
           SELECT token_id, status, chain_length, head_hash, bearer_pubkey FROM advanced`,
    values: [
      items.map((item) => item.read.token_id),
      items.map((item) => item.read.chain_length),
      items.map((item) => item.read.head_hash),
      items.map((item) => item.decision.chainLength),
      items.map((item) => item.decision.headHash),
      items.map((item) => item.decision.bearerPubkey),
      items.map((item) => item.read.status === 'ISSUED'),
      records.map((r) => r.tokenId),
      records.map((r) => r.record.position),
      records.map((r) => r.record.senderPubkey),
      records.map((r) => r.record.recipientPubkey),
      records.map((r) => r.record.timestampMs),
      records.map((r) => r.record.nonce),
      records.map((r) => r.record.prevHash),
      records.map((r) => r.record.signature),
      records.map((r) => r.record.recordHash),
      records.map((r) => r.deviceId),
      items.map((item) => item.presented?.commitmentHash ?? null),
      items.map((item) => item.presented?.issuerSignature ?? null),
      items.map((item) => item.presented?.prefixSignatures ?? null),
    ],
  });
  const byToken = new Map(heads.map((head) => [head.token_id, head]));
  const answers = items.map((item) => byToken.get(item.read.token_id) ?? null);
  // Hops registered: the records of the items whose PLC advanced (the others wrote nothing).
  const hops = items.reduce((sum, item, at) => sum + (answers[at] === null ? 0 : item.decision.records.length), 0);
  if (hops > 0) reportCommitted(db, { kind: 'plc', event: 'transferred', count: hops });
  return answers;
}

export interface TransferAppender {
  /**
   * The new head, or null when the PLC was not as read; a hop signed by a blocked key is thrown as
   * KEY_BLOCKED, any other constraint violation as it came.
   */
  append(item: PendingAppend): Promise<PlcHead | null>;
}

/**
 * The transfer route's writes, group-committed: appends that arrive together go in one
 * `appendTransfersBatch` statement. Two appends for one PLC never share a statement (the second
 * goes after the first, alone). A batch that fails on one item's fault (a constraint, a bad
 * value, a deadlock) is split by the group commit down to that item, which alone gets the error;
 * the others are appended (db/group-commit.ts).
 */
export function createTransferAppender(pool: Pool, options: { maxBatch: number; inFlightMax: number }): TransferAppender {
  const group = createGroupCommit<PendingAppend, PlcHead | null>(
    async (items) => {
      const seen = new Set<string>();
      const first: number[] = [];
      const later: number[] = [];
      items.forEach((item, index) => {
        if (seen.has(item.read.token_id)) later.push(index);
        else {
          seen.add(item.read.token_id);
          first.push(index);
        }
      });
      const answers: (PlcHead | null | Error)[] = new Array(items.length);
      const heads = await appendTransfersBatch(pool, first.map((index) => items[index] as PendingAppend));
      first.forEach((index, k) => (answers[index] = heads[k] ?? null));
      for (const index of later) {
        try {
          answers[index] = (await appendTransfersBatch(pool, [items[index] as PendingAppend]))[0] ?? null;
        } catch (error) {
          answers[index] = error instanceof Error ? error : new Error(String(error));
        }
      }
      return answers;
    },
    { name: 'transfer-append', ...options },
  );
  // A hop signed by a blocked key (migration 27_key_blocklist) is that item's refusal: KEY_BLOCKED.
  return {
    append: (item) =>
      group.submit(item).catch((error: unknown) => {
        throw keyBlockedError(error) ?? error;
      }),
  };
}

export function isUniqueViolation(error: unknown, constraint?: string): boolean {
  const pgError = error as Partial<DatabaseError>;
  return pgError.code === '23505' && (constraint === undefined || pgError.constraint === constraint);
}

export function listIssuerActive(db: Queryable, issuerPubkey: string, limit: number): Promise<PlcRow[]> {
  return many(db, plcRow, {
    name: 'plc-issuer-active',
    text: `SELECT ${plcColumns} FROM plcs WHERE issuer_pubkey = $1 AND status IN ('ISSUED', 'TRANSFERRED')
            ORDER BY created_at DESC LIMIT $2`,
    values: [issuerPubkey, limit],
  });
}

export function listPlcs(
  db: Queryable,
  filter: {
    status?: PlcStatus | undefined;
    issuerOwnerId?: string | undefined;
    issuerPubkey?: string | undefined;
    bearerPubkey?: string | undefined;
  },
  page: { limit: number; offset: number },
): Promise<PlcRow[]> {
  return many(db, plcRow, {
    name: 'plc-list',
    text: `SELECT ${plcColumns} FROM plcs
            WHERE ($1::text IS NULL OR status = $1) AND ($2::text IS NULL OR issuer_owner_id = $2)
              AND ($5::text IS NULL OR issuer_pubkey = $5) AND ($6::text IS NULL OR bearer_pubkey = $6)
            ORDER BY registered_at DESC, token_id LIMIT $3 OFFSET $4`,
    values: [filter.status ?? null, filter.issuerOwnerId ?? null, page.limit, page.offset, filter.issuerPubkey ?? null, filter.bearerPubkey ?? null],
  });
}

/** Live PLCs whose expiry (plus grace) has passed: what the sweep and the workflows expire. */
export function listOverdue(db: Queryable, graceMs: number, limit: number): Promise<{ token_id: string }[]> {
  return many(db, tokenIdRow, {
    name: 'plc-overdue',
    text: `SELECT token_id FROM plcs
            WHERE status IN ('ISSUED', 'TRANSFERRED') AND redemption_id IS NULL
              AND expires_at + make_interval(secs => $1::double precision / 1000) < now()
            ORDER BY expires_at LIMIT $2`,
    values: [graceMs, limit],
  });
}
