import { ApplicationFailure, CancelledFailure } from '@temporalio/common';
import type { ActivityInterceptorsFactory } from '@temporalio/worker';
import type { Pool } from '../db/pool.ts';
import { recordActivityAttempt, type OperationType } from '../db/operation-log.ts';
import { errorCodes } from '../src/errors.ts';

/**
 * The operation log, written in one place: an activity inbound interceptor on the worker records
 * every attempt of every activity that moves money or calls the gateway (docs/architecture.md,
 * "The operation log"). The entry is written after the activity's own work and before its
 * completion is reported to Temporal; if the process dies in between, Temporal never heard of
 * the completion and runs the (idempotent) activity again, whose attempt writes the entry. A
 * failed write fails the attempt for the same reason: no completion without its entry.
 *
 * One entry per activity execution (workflow id, run id, activity id), updated by each attempt:
 * its status is the latest attempt's, `attempts` how many ran, `retryable` whether Temporal will
 * try again after a failure.
 *
 * Every activity the worker registers is named below, logged or not; a test fails when one is
 * missing, so a new activity is classified when it is added. One that slipped through is logged
 * as UNCLASSIFIED rather than not at all.
 */

export interface OperationLogSpec {
  /** The operation's type, as `/api/v1/admin/monitor/operations?operation_type=` filters it. */
  type: string;
  /** The input field that names the business reference (token, redemption, charge, run, webhook...). */
  reference: string;
}


/** Activities that move money or call the gateway. */
export const loggedActivities: Record<string, OperationLogSpec & { type: OperationType }> = {
  bookDeposit: { type: 'DEPOSIT', reference: 'idempotencyKey' },
  issuePlc: { type: 'PLC_CREATE', reference: 'tokenId' },
  cancelPlc: { type: 'PLC_CANCEL', reference: 'tokenId' },
  expirePlc: { type: 'PLC_EXPIRE', reference: 'tokenId' },
  expireOverdueBatch: { type: 'PLC_EXPIRE', reference: 'runId' },
  // The expiry buckets (workflows/plc-expiry.ts): a batch of a bucket, the sweep.
  expireBucketBatch: { type: 'PLC_EXPIRE', reference: 'bucket' },
  sweepPlcExpiry: { type: 'PLC_EXPIRE', reference: 'scheduleId' },
  openRedemption: { type: 'REDEMPTION', reference: 'redemptionId' },
  createPayout: { type: 'REDEMPTION', reference: 'redemptionId' },
  readPayoutStatus: { type: 'REDEMPTION', reference: 'redemptionId' },
  finishRedemption: { type: 'REDEMPTION', reference: 'redemptionId' },
  settleRedemption: { type: 'REDEMPTION', reference: 'redemptionId' },
  // An operator's retry asks the gateway and may create a payout attempt.
  retryPayout: { type: 'REDEMPTION', reference: 'redemptionId' },
  openCharge: { type: 'CHARGE', reference: 'chargeId' },
  setupGatewayCharge: { type: 'CHARGE', reference: 'chargeId' },
  abandonGatewayCharge: { type: 'CHARGE', reference: 'chargeId' },
  readChargePaymentStatus: { type: 'CHARGE', reference: 'chargeId' },
  cancelGatewayCharge: { type: 'CHARGE', reference: 'chargeId' },
  settleCharge: { type: 'CHARGE', reference: 'chargeId' },
  failCharge: { type: 'CHARGE', reference: 'chargeId' },
  routeInboxEvent: { type: 'WEBHOOK_ROUTING', reference: 'inboxId' },
  removeWebhookBackoff: { type: 'PENALTY_REMOVAL', reference: 'webhookId' },
  checkWebhooks: { type: 'WEBHOOK_CHECK', reference: 'mode' },
  reconcileBatch: { type: 'RECONCILIATION', reference: 'runId' },
  prepareGatewayBatch: { type: 'RECONCILIATION', reference: 'runId' },
  settleGatewayBatch: { type: 'RECONCILIATION', reference: 'runId' },
};

/**
 * Activities that neither move money nor call the gateway: reads of our own rows and
 * bookkeeping of a process whose money-moving steps are logged above (a removal the queue asks
 * for is logged by `removeWebhookBackoff` in its cooldown workflow).
 */
export const unloggedActivities: readonly string[] = [
  'readPlcState',
  'loadRedemption',
  'finishInboxEvent',
  'recordChargeGatewayStatus',
  'beginReconciliationRun',
  // Records a scheduled run of a reconcile tool (its batches are logged as reconcileBatch).
  'claimScheduledReconcileRun',
  'finishReconciliationRun',
  'failReconciliationRun',
  'processRemovalQueue',
  // The review of a PLC limit increase (workflows/limit-review.ts): rows of the request, no money, no gateway.
  'openLimitRequest',
  'decideLimitRequest',
  'expireLimitRequest',
  // Sends a PIN reset e-mail: no money and no gateway.
  'sendPinResetEmail',
  // Records why a payout is stuck (a column of the redemption); no money, no gateway.
  'notePayoutProblem',
  // Reads the whole ledger and records the check; moves nothing.
  'checkLedger',
];

/** Field names that carry the owner of the money, in order of preference. */
const ownerFields = ['ownerId', 'bearerOwnerId', 'issuerOwnerId', 'bearerPubkey', 'issuerPubkey'] as const;

function stringField(source: unknown, field: string): string | null {
  if (typeof source !== 'object' || source === null) return null;
  const value = (source as Record<string, unknown>)[field];
  return typeof value === 'string' && value.length > 0 ? value : null;
}

function ownerOf(input: unknown, result: unknown): string | null {
  for (const source of [input, result, stateOf(result)]) {
    for (const field of ownerFields) {
      const value = stringField(source, field);
      if (value !== null) return value;
    }
  }
  return null;
}

/** Activities answer `{ created, state }` or the state itself. */
function stateOf(result: unknown): unknown {
  return typeof result === 'object' && result !== null ? (result as { state?: unknown }).state : undefined;
}

export function classifyFailure(error: unknown): { status: 'FAILED' | 'REFUSED'; retryable: boolean; code: string | null; message: string } {
  const message = error instanceof Error ? error.message : String(error);
  if (error instanceof CancelledFailure) return { status: 'FAILED', retryable: false, code: 'CANCELLED', message };
  if (error instanceof ApplicationFailure) {
    const code = error.type ?? null;
    const refusal = error.nonRetryable && code !== null && (errorCodes as readonly string[]).includes(code);
    return { status: refusal ? 'REFUSED' : 'FAILED', retryable: !error.nonRetryable, code, message };
  }
  return { status: 'FAILED', retryable: true, code: error instanceof Error ? error.name : null, message };
}

export function operationLogInterceptor(pool: Pool): ActivityInterceptorsFactory {
  return (ctx) => ({
    inbound: {
      async execute(input, next) {
        const info = ctx.info;
        if (unloggedActivities.includes(info.activityType) || info.workflowExecution === undefined) return next(input);
        const spec = loggedActivities[info.activityType] ?? { type: 'UNCLASSIFIED', reference: '' };
        const execution = info.workflowExecution;
        const startedAt = new Date();
        const began = performance.now();
        const first = input.args[0];
        const base = {
          operationType: spec.type,
          step: info.activityType,
          referenceId: spec.reference === '' ? null : stringField(first, spec.reference),
          workflowId: execution.workflowId,
          runId: execution.runId,
          activityId: info.activityId,
          attempt: info.attempt,
          startedAt,
        };
        let result: unknown;
        try {
          result = await next(input);
        } catch (error) {
          const failure = classifyFailure(error);
          await recordActivityAttempt(pool, {
            ...base,
            status: failure.status,
            ownerId: ownerOf(first, undefined),
            retryable: failure.retryable,
            durationMs: performance.now() - began,
            errorCode: failure.code,
            error: failure.message,
          });
          throw error;
        }
        await recordActivityAttempt(pool, {
          ...base,
          status: 'SUCCEEDED',
          ownerId: ownerOf(first, result),
          retryable: false,
          durationMs: performance.now() - began,
          errorCode: null,
          error: null,
        });
        return result;
      },
    },
  });
}
