import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { getRedemption, listPayoutAttempts, listRetries, retryOutcomes, type RetryRow } from '../../db/redemptions.ts';
import { DomainError } from '../../src/errors.ts';
import { adminErrors, errorResponse } from '../schemas/common.ts';
import { redemptionResponse } from '../schemas/redemption.ts';
import { toRedemptionResponse } from './redeem.ts';

/**
 * One redemption for an operator (routes beyond the spec, api/extensions.ts): its detail with its
 * payout attempts and retries, and the retry of its settlement (docs/operations-console.md,
 * "Retrying a settlement").
 */

const redemptionIdParam = z.object({ redemption_id: z.string().uuid() });

const retryItem = z.object({
  retry_id: z.string().uuid(),
  requested_by: z.string(),
  reason: z.string(),
  requested_at: z.string(),
  outcome: z.enum(retryOutcomes).nullable().describe('null while the retry runs'),
  detail: z.string().nullable(),
  attempt: z.number().int().nullable(),
  gateway_status: z.string().nullable(),
  finished_at: z.string().nullable(),
});

function toRetryItem(row: RetryRow): z.infer<typeof retryItem> {
  return {
    retry_id: row.id,
    requested_by: row.requested_by,
    reason: row.reason,
    requested_at: row.requested_at.toISOString(),
    outcome: row.outcome,
    detail: row.detail,
    attempt: row.attempt,
    gateway_status: row.gateway_status,
    finished_at: row.finished_at?.toISOString() ?? null,
  };
}

const redemptionDetail = redemptionResponse
  .extend({
    payout_attempt: z.number().int().describe('The current payout attempt (a retry starts another only when the last is known dead)'),
    payout_error: z.string().nullable().describe('Why the payout is stuck for a reason a retry can fix'),
    attempts: z.array(
      z.object({
        attempt: z.number().int(),
        gateway_transfer_id: z.string().nullable(),
        gateway_status: z.string().nullable(),
        closed_reason: z.string(),
        retry_id: z.string().uuid(),
        closed_at: z.string(),
      }),
    ),
    retries: z.array(retryItem),
  })
  .meta({ id: 'AdminRedemptionDetail' });

const retryResponse = z
  .object({
    retry_id: z.string().uuid(),
    outcome: z.enum(['SETTLED', 'FAILED', 'NEW_ATTEMPT', 'STILL_PENDING']),
    detail: z.string(),
    attempt: z.number().int(),
    gateway_status: z.string().nullable(),
    redemption: redemptionResponse,
  })
  .meta({ id: 'RetrySettlementResponse' });

export async function adminRedemptionRoutes(app: FastifyInstance): Promise<void> {
  const routes = app.withTypeProvider<ZodTypeProvider>();
  const { pool } = app.deps;
  app.addHook('onRequest', app.requireAdmin());
  const security = [{ bearer: [] }];

  routes.get(
    '/redemptions/:redemption_id',
    {
      schema: {
        tags: ['admin: redemption'],
        summary: 'One redemption with its payout attempts and every retry an operator asked for (beyond the spec)',
        description:
          'The redemption as the admin list shows it, plus its current payout attempt, why it is stuck if it is, the payout attempts a ' +
          'retry closed (their transfers and why), and every retry asked for with the admin, the reason and the outcome, newest first.',
        security,
        params: redemptionIdParam,
        requestExample: { params: { redemption_id: '9c1d2e3f-4a5b-4c6d-8e7f-0a1b2c3d4e5f' } },
        response: { 200: redemptionDetail, 404: errorResponse, ...adminErrors },
      },
    },
    async (request) => {
      const row = await getRedemption(pool, request.params.redemption_id);
      if (row === null) throw new DomainError('REDEMPTION_NOT_FOUND', 'no such redemption');
      const [attempts, retries] = await Promise.all([listPayoutAttempts(pool, row.id), listRetries(pool, row.id)]);
      return {
        ...toRedemptionResponse(row),
        payout_attempt: row.payout_attempt,
        payout_error: row.payout_error,
        attempts: attempts.map((attempt) => ({
          attempt: attempt.attempt,
          gateway_transfer_id: attempt.gateway_transfer_id,
          gateway_status: attempt.gateway_status,
          closed_reason: attempt.closed_reason,
          retry_id: attempt.retry_id,
          closed_at: attempt.closed_at.toISOString(),
        })),
        retries: retries.map(toRetryItem),
      };
    },
  );

  routes.post(
    '/redemptions/:redemption_id/retry',
    {
      schema: {
        tags: ['admin: redemption'],
        summary: 'Retry a stalled or stuck settlement, as a step of the redemption\'s own workflow (beyond the spec)',
        description:
          'Asks the gateway for the payout\'s real status: a final one is booked (SETTLED, or FAILED with the PLC reverted); a payout ' +
          'refused for a transient cause gets a new attempt under a new idempotency key; one still in process is left to finish. ' +
          '409 for a SETTLED redemption, one FAILED for good, or one still within its normal wait; 503 when the gateway does not answer. ' +
          'Every retry is recorded with the admin, the reason and the outcome.',
        security,
        params: redemptionIdParam,
        body: z.strictObject({ reason: z.string().trim().min(3).max(500).describe('why: recorded with the retry') }),
        requestExample: {
          params: { redemption_id: '9c1d2e3f-4a5b-4c6d-8e7f-0a1b2c3d4e5f' },
          body: { reason: 'no transfer webhook after 40 minutes; the gateway was down this morning' },
        },
        response: { 200: retryResponse, 404: errorResponse, 409: errorResponse, 503: errorResponse, ...adminErrors },
      },
    },
    async (request) => {
      const admin = request.admin;
      if (admin === null) throw new DomainError('UNAUTHENTICATED', 'a bearer token is required');
      const answer = await app.services.settlementRetry.retry({
        redemptionId: request.params.redemption_id,
        reason: request.body.reason,
        admin: { id: admin.sub, username: admin.username },
      });
      request.log.info(
        { redemption_id: request.params.redemption_id, retry_id: answer.retryId, outcome: answer.result.outcome, admin: admin.username },
        'settlement retry',
      );
      return {
        retry_id: answer.retryId,
        outcome: answer.result.outcome as 'SETTLED' | 'FAILED' | 'NEW_ATTEMPT' | 'STILL_PENDING',
        detail: answer.result.detail,
        attempt: answer.result.attempt,
        gateway_status: answer.result.gatewayStatus,
        redemption: toRedemptionResponse(answer.redemption),
      };
    },
  );
}
