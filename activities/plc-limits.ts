import { decideLimitRequest, expireLimitRequest, insertLimitRequest, type LimitRequestRow } from '../db/plc-limits.ts';
import type { Pool } from '../db/pool.ts';
import { DomainError } from '../src/errors.ts';
import type { ReputationTier } from '../src/reputation/rules.ts';
import { refusalsAsFailures } from './failures.ts';

/**
 * The limit-review workflow's activities (`limit-review-<request_id>`): open the request, record
 * the admin's decision (and the override of an approval), expire it at its deadline. Each is one
 * guarded statement or transaction, idempotent by the request id.
 */

export interface OpenLimitRequestInput {
  requestId: string;
  deviceId: string;
  ownerId: string;
  requestedMaxAmountMinor: string;
  requestedDailyLimitMinor: string;
  currentMaxAmountMinor: string;
  currentDailyLimitMinor: string;
  tier: ReputationTier;
  reason: string;
}

export interface LimitDecisionInput {
  decision: 'APPROVE' | 'REJECT';
  /** Granted amounts (approval), minor units as strings. */
  grantedMaxAmountMinor?: string;
  grantedDailyLimitMinor?: string;
  /** How long the override lasts (approval), in days. */
  validDays?: number;
  decidedBy: string;
  note: string | null;
}

/** What the workflow and the API need of a request; amounts as strings, times in ms (payloads are JSON). */
export interface LimitRequestState {
  requestId: string;
  deviceId: string;
  ownerId: string;
  status: LimitRequestRow['status'];
  requestedMaxAmountMinor: string;
  requestedDailyLimitMinor: string;
  reviewDeadlineAtMs: number;
  decidedBy: string | null;
  grantedMaxAmountMinor: string | null;
  grantedDailyLimitMinor: string | null;
  overrideEndsAtMs: number | null;
}

export function toLimitRequestState(row: LimitRequestRow): LimitRequestState {
  return {
    requestId: row.request_id,
    deviceId: row.device_id,
    ownerId: row.owner_id,
    status: row.status,
    requestedMaxAmountMinor: row.requested_max_amount_minor.toString(),
    requestedDailyLimitMinor: row.requested_daily_limit_minor.toString(),
    reviewDeadlineAtMs: row.review_deadline_at.getTime(),
    decidedBy: row.decided_by,
    grantedMaxAmountMinor: row.granted_max_amount_minor?.toString() ?? null,
    grantedDailyLimitMinor: row.granted_daily_limit_minor?.toString() ?? null,
    overrideEndsAtMs: row.override_ends_at?.getTime() ?? null,
  };
}

export function createLimitReviewActivities(deps: { pool: Pool }) {
  return {
    async openLimitRequest(input: OpenLimitRequestInput & { workflowId: string; reviewTimeoutMs: number }): Promise<LimitRequestState> {
      return refusalsAsFailures(async () =>
        toLimitRequestState(
          await insertLimitRequest(deps.pool, {
            requestId: input.requestId,
            deviceId: input.deviceId,
            ownerId: input.ownerId,
            requestedMaxAmountMinor: BigInt(input.requestedMaxAmountMinor),
            requestedDailyLimitMinor: BigInt(input.requestedDailyLimitMinor),
            currentMaxAmountMinor: BigInt(input.currentMaxAmountMinor),
            currentDailyLimitMinor: BigInt(input.currentDailyLimitMinor),
            tier: input.tier,
            reason: input.reason,
            workflowId: input.workflowId,
            reviewTimeoutMs: input.reviewTimeoutMs,
          }),
        ),
      );
    },

    async decideLimitRequest(input: LimitDecisionInput & { requestId: string }): Promise<LimitRequestState> {
      return refusalsAsFailures(async () => {
        const row =
          input.decision === 'APPROVE'
            ? await decideLimitRequest(deps.pool, input.requestId, {
                decision: 'APPROVE',
                grantedMaxAmountMinor: BigInt(input.grantedMaxAmountMinor ?? '0'),
                grantedDailyLimitMinor: BigInt(input.grantedDailyLimitMinor ?? '0'),
                validDays: input.validDays ?? 30,
                decidedBy: input.decidedBy,
                note: input.note,
              })
            : await decideLimitRequest(deps.pool, input.requestId, { decision: 'REJECT', decidedBy: input.decidedBy, note: input.note });
        return toLimitRequestState(row);
      });
    },

    async expireLimitRequest(input: { requestId: string }): Promise<LimitRequestState> {
      const row = await expireLimitRequest(deps.pool, input.requestId);
      if (row === null) throw new DomainError('LIMIT_REQUEST_NOT_FOUND', `no limit request ${input.requestId}`);
      return toLimitRequestState(row);
    },
  };
}

export type LimitReviewActivities = ReturnType<typeof createLimitReviewActivities>;
