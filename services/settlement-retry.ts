import { randomUUID } from 'node:crypto';
import { WithStartWorkflowOperation, WorkflowNotFoundError, type Client } from '@temporalio/client';
import type { Pool } from '../db/pool.ts';
import { finishRetry, getRedemption, insertRetry, type RedemptionRow } from '../db/redemptions.ts';
import type { Config } from '../infra/config.ts';
import { DomainError, isDomainError } from '../src/errors.ts';
import { retryability } from '../src/settlement/retry.ts';
import { workflowIds } from '../workflows/ids.ts';
import type { redemptionWorkflow } from '../workflows/redemption.ts';
import { retrySettlementUpdate, type RetrySettlementResult } from '../workflows/redemption-messages.ts';
import { bearerIdKey, businessStatusKey, tokenIdKey } from '../workflows/search-attributes.ts';
import { withDomainErrors } from './temporal.ts';

/**
 * An operator's retry of one settlement (docs/operations-console.md, "Retrying a settlement"):
 * checks the redemption may be retried, records the request (who, why), and hands it to the
 * redemption's own workflow as the update `retrySettlement`, with update-with-start: a running
 * workflow takes it as a step of its run; one that has ended is started again with `resume`
 * (the path the pending-transfers tool restarts ended redemptions by), never a second workflow
 * beside a running one. Every retry, refused or not, ends with its outcome recorded.
 */

export interface RetryRequest {
  redemptionId: string;
  reason: string;
  admin: { id: string; username: string };
}

export interface RetryAnswer {
  retryId: string;
  result: RetrySettlementResult;
  redemption: RedemptionRow;
}

export function createSettlementRetry(deps: { pool: Pool; temporal: Client; config: Config; now?: () => number }) {
  const { pool, temporal, config } = deps;
  const now = deps.now ?? Date.now;

  async function workflowRunning(workflowId: string): Promise<boolean> {
    try {
      return (await temporal.workflow.getHandle(workflowId).describe()).status.name === 'RUNNING';
    } catch (error) {
      if (error instanceof WorkflowNotFoundError) return false;
      throw error;
    }
  }

  return {
    async retry(request: RetryRequest): Promise<RetryAnswer> {
      const row = await getRedemption(pool, request.redemptionId);
      if (row === null) throw new DomainError('REDEMPTION_NOT_FOUND', 'no such redemption');
      const workflowId = workflowIds.redemption(row.id);
      const verdict = retryability(
        { status: row.status, payoutError: row.payout_error, attemptStartedAtMs: (row.payout_started_at ?? row.created_at).getTime() },
        {
          workflowRunning: row.status === 'PENDING_PAYMENT' ? await workflowRunning(workflowId) : false,
          nowMs: now(),
          stalledAfterMs: config.SETTLEMENT_RETRY_STALLED_AFTER_MS,
        },
      );
      const retryId = randomUUID();
      await insertRetry(pool, { id: retryId, redemptionId: row.id, requestedBy: request.admin.username, requestedById: request.admin.id, reason: request.reason });
      if (!verdict.retryable) {
        await finishRetry(pool, retryId, { outcome: 'REFUSED', detail: `${verdict.code}: ${verdict.message}`, attempt: row.payout_attempt, gatewayStatus: row.gateway_status });
        throw new DomainError(verdict.code, verdict.message, {
          retry_id: retryId,
          status: row.status,
          ...(verdict.retryableAtMs === undefined ? {} : { retryable_at: new Date(verdict.retryableAtMs).toISOString() }),
        });
      }
      let result: RetrySettlementResult;
      try {
        result = await withDomainErrors(() =>
          temporal.workflow.executeUpdateWithStart(retrySettlementUpdate, {
            args: [{ retryId, requestedBy: request.admin.username, reason: request.reason }],
            startWorkflowOperation: new WithStartWorkflowOperation<typeof redemptionWorkflow>('redemptionWorkflow', {
              workflowId,
              taskQueue: config.TEMPORAL_TASK_QUEUE,
              args: [
                {
                  redemptionId: row.id,
                  tokenId: row.token_id,
                  webhookWaitMs: config.REDEMPTION_WEBHOOK_WAIT_MS,
                  operatorWaitMs: config.REDEMPTION_OPERATOR_WAIT_MS,
                  resume: true,
                },
              ],
              // The redemption's own workflow: the running one takes the update; an ended one runs again.
              workflowIdConflictPolicy: 'USE_EXISTING',
              typedSearchAttributes: [
                { key: tokenIdKey, value: row.token_id },
                { key: bearerIdKey, value: row.bearer_pubkey },
                { key: businessStatusKey, value: 'RESUMING' },
              ],
            }),
          }),
        );
      } catch (error) {
        const refused = isDomainError(error);
        await finishRetry(pool, retryId, {
          outcome: refused ? 'REFUSED' : 'ERROR',
          detail: refused ? `${error.code}: ${error.message}` : `the workflow could not take the retry: ${error instanceof Error ? error.message : String(error)}`,
          attempt: row.payout_attempt,
          gatewayStatus: row.gateway_status,
        });
        if (refused) throw new DomainError(error.code, error.message, { ...error.details, retry_id: retryId });
        throw error;
      }
      // The workflow's activity recorded the outcome; an answer given without it (already final) is recorded here.
      await finishRetry(pool, retryId, { outcome: result.outcome, detail: result.detail, attempt: result.attempt, gatewayStatus: result.gatewayStatus });
      const after = (await getRedemption(pool, row.id)) ?? row;
      if (result.outcome === 'ALREADY_SETTLED') {
        throw new DomainError('REDEMPTION_ALREADY_SETTLED', 'the redemption is SETTLED: nothing to retry', { retry_id: retryId, status: after.status });
      }
      if (result.outcome === 'ALREADY_FAILED') {
        throw new DomainError('REDEMPTION_FAILED_FINAL', 'the redemption FAILED for good', { retry_id: retryId, status: after.status });
      }
      if (result.outcome === 'GATEWAY_UNAVAILABLE') {
        throw new DomainError('GATEWAY_UNAVAILABLE', `the gateway did not answer; nothing changed: ${result.detail}`, { retry_id: retryId });
      }
      return { retryId, result, redemption: after };
    },
  };
}

export type SettlementRetry = ReturnType<typeof createSettlementRetry>;
