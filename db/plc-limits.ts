import { z } from 'zod';
import { DomainError } from '../src/errors.ts';
import { reputationTierNames, type ReputationTier } from '../src/reputation/rules.ts';
import { isUniqueViolation } from './plcs.ts';
import { withTransaction, type Pool, type Queryable } from './pool.ts';
import { exec, many, maybeOne, one } from './sql.ts';

/**
 * Progressive limits (migration 25_plc_limits): what the create path reads to compute a device's limits,
 * the increase requests and the overrides an approval grants.
 */

const limitFactsRow = z.object({
  tier: z.enum(reputationTierNames).nullable(),
  score: z.number().int().nullable(),
  settled_volume_minor: z.bigint().nullable(),
  override_max_amount_minor: z.bigint().nullable(),
  override_daily_limit_minor: z.bigint().nullable(),
  override_ends_at: z.date().nullable(),
  override_request_id: z.string().uuid().nullable(),
});

export interface LimitFacts {
  /** The owner's tier: STANDARD (score 500) for an owner without any event yet. */
  tier: ReputationTier;
  score: number;
  settledVolumeMinor: bigint;
  override: { maxAmountMinor: bigint; dailyLimitMinor: bigint; endsAt: Date; requestId: string } | null;
}

/** One round trip: the owner's tier and volume and the active override of this device and owner. */
/** `ownerId` null: no owner's row, the defaults of an owner without any history. */
export async function readLimitFacts(db: Queryable, ownerId: string | null, deviceId: string): Promise<LimitFacts> {
  const row = await one(db, limitFactsRow, {
    name: 'plc-limit-facts',
    prepare: true,
    // The tier the owner holds now: the decay due applied and the tier's gates met (reputation_current).
    text: `SELECT c.tier, c.score, s.settled_volume_minor,
                  o.max_amount_minor AS override_max_amount_minor, o.daily_limit_minor AS override_daily_limit_minor,
                  o.ends_at AS override_ends_at, o.request_id AS override_request_id
             FROM (SELECT 1) AS one
             LEFT JOIN reputation_scores s ON s.owner_id = $1
             LEFT JOIN LATERAL reputation_current($1) c ON true
             LEFT JOIN plc_limit_overrides o ON o.owner_id = $1 AND o.device_id = $2 AND o.ends_at > now()`,
    values: [ownerId, deviceId],
  });
  return {
    tier: row.tier ?? 'STANDARD',
    score: row.score ?? 500,
    settledVolumeMinor: row.settled_volume_minor ?? 0n,
    override:
      row.override_max_amount_minor === null || row.override_daily_limit_minor === null || row.override_ends_at === null || row.override_request_id === null
        ? null
        : {
            maxAmountMinor: row.override_max_amount_minor,
            dailyLimitMinor: row.override_daily_limit_minor,
            endsAt: row.override_ends_at,
            requestId: row.override_request_id,
          },
  };
}

const deviceOwnerRow = z.object({ owner_id: z.string(), plcs: z.bigint(), last_registered_at: z.date() });
export type DeviceOwnerRow = z.infer<typeof deviceOwnerRow>;

/** The owners a device registered PLCs for, latest first (at most `limit`). */
export function listDeviceOwners(db: Queryable, deviceId: string, limit: number): Promise<DeviceOwnerRow[]> {
  return many(db, deviceOwnerRow, {
    name: 'plc-device-owners',
    text: `SELECT issuer_owner_id AS owner_id, count(*) AS plcs, max(registered_at) AS last_registered_at
             FROM plcs WHERE device_id = $1
            GROUP BY issuer_owner_id ORDER BY max(registered_at) DESC, issuer_owner_id LIMIT $2`,
    values: [deviceId, limit],
  });
}

const issuedRow = z.object({ currency: z.enum(['BRL', 'USD', 'EUR']), issued_minor: z.bigint() });

/** What the owner promised in the last 24 hours, per currency (the sum the daily limit checks). */
export function issuedLast24h(db: Queryable, ownerId: string): Promise<z.infer<typeof issuedRow>[]> {
  return many(db, issuedRow, {
    name: 'plc-issued-24h',
    text: `SELECT currency, sum(amount_minor)::bigint AS issued_minor FROM plcs
            WHERE issuer_owner_id = $1 AND registered_at > now() - interval '24 hours'
            GROUP BY currency ORDER BY currency`,
    values: [ownerId],
  });
}

export const limitRequestStatuses = ['PENDING', 'APPROVED', 'REJECTED', 'EXPIRED'] as const;

export const limitRequestRow = z.object({
  request_id: z.string().uuid(),
  device_id: z.string(),
  owner_id: z.string(),
  requested_max_amount_minor: z.bigint(),
  requested_daily_limit_minor: z.bigint(),
  current_max_amount_minor: z.bigint(),
  current_daily_limit_minor: z.bigint(),
  tier: z.enum(reputationTierNames),
  reason: z.string(),
  status: z.enum(limitRequestStatuses),
  workflow_id: z.string(),
  created_at: z.date(),
  review_deadline_at: z.date(),
  decided_at: z.date().nullable(),
  decided_by: z.string().nullable(),
  decision_note: z.string().nullable(),
  granted_max_amount_minor: z.bigint().nullable(),
  granted_daily_limit_minor: z.bigint().nullable(),
  override_ends_at: z.date().nullable(),
});
export type LimitRequestRow = z.infer<typeof limitRequestRow>;

const requestColumns = `request_id, device_id, owner_id, requested_max_amount_minor, requested_daily_limit_minor, current_max_amount_minor,
  current_daily_limit_minor, tier, reason, status, workflow_id, created_at, review_deadline_at, decided_at, decided_by, decision_note,
  granted_max_amount_minor, granted_daily_limit_minor, override_ends_at`;

export interface NewLimitRequest {
  requestId: string;
  deviceId: string;
  ownerId: string;
  requestedMaxAmountMinor: bigint;
  requestedDailyLimitMinor: bigint;
  currentMaxAmountMinor: bigint;
  currentDailyLimitMinor: bigint;
  tier: ReputationTier;
  reason: string;
  workflowId: string;
  reviewTimeoutMs: number;
}

/**
 * Stores a PENDING request. The same request id again answers the stored row (a retry); a second
 * open request of the same device and owner is refused with the open one's id (another owner's
 * open request on the same device does not count: migration 33).
 */
export async function insertLimitRequest(db: Queryable, input: NewLimitRequest): Promise<LimitRequestRow> {
  try {
    const inserted = await maybeOne(db, limitRequestRow, {
      name: 'plc-limit-request-insert',
      text: `INSERT INTO plc_limit_requests (request_id, device_id, owner_id, requested_max_amount_minor, requested_daily_limit_minor,
                                             current_max_amount_minor, current_daily_limit_minor, tier, reason, workflow_id, review_deadline_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, now() + $11 * interval '1 millisecond')
             ON CONFLICT (request_id) DO NOTHING
             RETURNING ${requestColumns}`,
      values: [
        input.requestId,
        input.deviceId,
        input.ownerId,
        input.requestedMaxAmountMinor.toString(),
        input.requestedDailyLimitMinor.toString(),
        input.currentMaxAmountMinor.toString(),
        input.currentDailyLimitMinor.toString(),
        input.tier,
        input.reason,
        input.workflowId,
        input.reviewTimeoutMs,
      ],
    });
    if (inserted !== null) return inserted;
    const existing = await getLimitRequest(db, input.requestId);
    if (existing === null) throw new Error(`limit request ${input.requestId} conflicted but is not stored`);
    return existing;
  } catch (error) {
    if (!isUniqueViolation(error, 'plc_limit_requests_one_open')) throw error;
    const open = await maybeOne(db, z.object({ request_id: z.string().uuid() }), {
      name: 'plc-limit-request-open',
      text: `SELECT request_id FROM plc_limit_requests WHERE device_id = $1 AND owner_id = $2 AND status = 'PENDING'`,
      values: [input.deviceId, input.ownerId],
    });
    throw new DomainError('LIMIT_REQUEST_ALREADY_OPEN', 'this owner already has an open increase request for this device', {
      device_id: input.deviceId,
      owner_id: input.ownerId,
      open_request_id: open?.request_id ?? null,
    });
  }
}

export function getLimitRequest(db: Queryable, requestId: string): Promise<LimitRequestRow | null> {
  return maybeOne(db, limitRequestRow, {
    name: 'plc-limit-request-get',
    text: `SELECT ${requestColumns} FROM plc_limit_requests WHERE request_id = $1`,
    values: [requestId],
  });
}

/** Pending requests, oldest first (the review queue). */
export function listPendingLimitRequests(db: Queryable, limit: number): Promise<LimitRequestRow[]> {
  return many(db, limitRequestRow, {
    name: 'plc-limit-requests-pending',
    text: `SELECT ${requestColumns} FROM plc_limit_requests WHERE status = 'PENDING' ORDER BY created_at, request_id LIMIT $1`,
    values: [limit],
  });
}

/** A device's requests, newest first. */
export function listDeviceLimitRequests(db: Queryable, deviceId: string, limit: number): Promise<LimitRequestRow[]> {
  return many(db, limitRequestRow, {
    name: 'plc-limit-requests-device',
    text: `SELECT ${requestColumns} FROM plc_limit_requests WHERE device_id = $1 ORDER BY created_at DESC, request_id LIMIT $2`,
    values: [deviceId, limit],
  });
}

export type LimitDecision =
  | { decision: 'APPROVE'; grantedMaxAmountMinor: bigint; grantedDailyLimitMinor: bigint; validDays: number; decidedBy: string; note: string | null }
  | { decision: 'REJECT'; decidedBy: string; note: string | null };

/**
 * Decides a PENDING request: one guarded UPDATE and, for an approval, the override of the
 * request's device and owner, in one transaction. A request no longer pending is refused 409.
 */
export async function decideLimitRequest(pool: Pool, requestId: string, decision: LimitDecision): Promise<LimitRequestRow> {
  return withTransaction(pool, async (client) => {
    const approve = decision.decision === 'APPROVE';
    const decided = await maybeOne(client, limitRequestRow, {
      name: 'plc-limit-request-decide',
      text: `UPDATE plc_limit_requests
                SET status = $2, decided_at = now(), decided_by = $3, decision_note = $4,
                    granted_max_amount_minor = $5, granted_daily_limit_minor = $6,
                    override_ends_at = CASE WHEN $2 = 'APPROVED' THEN now() + $7 * interval '1 day' END
              WHERE request_id = $1 AND status = 'PENDING'
              RETURNING ${requestColumns}`,
      values: [
        requestId,
        approve ? 'APPROVED' : 'REJECTED',
        decision.decidedBy,
        decision.note,
        approve ? decision.grantedMaxAmountMinor.toString() : null,
        approve ? decision.grantedDailyLimitMinor.toString() : null,
        approve ? decision.validDays : 0,
      ],
    });
    if (decided === null) {
      const current = await getLimitRequest(client, requestId);
      if (current === null) throw new DomainError('LIMIT_REQUEST_NOT_FOUND', 'no such limit increase request', { request_id: requestId });
      throw new DomainError('LIMIT_REQUEST_NOT_PENDING', `the request is ${current.status}: it can no longer be decided`, {
        request_id: requestId,
        status: current.status,
      });
    }
    if (approve) {
      await exec(client, {
        prepare: true,
        name: 'plc-limit-override-upsert',
        text: `INSERT INTO plc_limit_overrides (device_id, owner_id, request_id, max_amount_minor, daily_limit_minor, ends_at)
               VALUES ($1, $2, $3, $4, $5, $6)
               ON CONFLICT (device_id, owner_id) DO UPDATE
                 SET request_id = EXCLUDED.request_id, max_amount_minor = EXCLUDED.max_amount_minor,
                     daily_limit_minor = EXCLUDED.daily_limit_minor, starts_at = now(), ends_at = EXCLUDED.ends_at`,
        values: [
          decided.device_id,
          decided.owner_id,
          decided.request_id,
          decision.grantedMaxAmountMinor.toString(),
          decision.grantedDailyLimitMinor.toString(),
          decided.override_ends_at,
        ],
      });
    }
    return decided;
  });
}

/** Expires a request still PENDING at its deadline; answers the row as it is either way. */
export async function expireLimitRequest(db: Queryable, requestId: string): Promise<LimitRequestRow | null> {
  const expired = await maybeOne(db, limitRequestRow, {
    name: 'plc-limit-request-expire',
    text: `UPDATE plc_limit_requests SET status = 'EXPIRED', decided_at = now(), decided_by = 'review deadline'
            WHERE request_id = $1 AND status = 'PENDING' RETURNING ${requestColumns}`,
    values: [requestId],
  });
  return expired ?? getLimitRequest(db, requestId);
}
