import { allHandlersFinished, ApplicationFailure, condition, proxyActivities, setHandler, upsertSearchAttributes } from '@temporalio/workflow';
import type { LimitRequestState, LimitReviewActivities } from '../activities/plc-limits.ts';
import { failureType } from './failure-type.ts';
import { decideLimitRequestUpdate, openLimitRequestUpdate } from './limit-review-messages.ts';
import { businessStatusKey } from './search-attributes.ts';

/**
 * A PLC limit increase request under review (`limit-review-<request_id>`, docs/limits-and-fees.md).
 * `POST /api/v1/plc/limits/increase-request` starts it with update-with-start: the first update
 * stores the request (PENDING; one open request per device, refused otherwise) and answers. The
 * workflow then waits for the admin's decision, sent by `POST /api/v1/admin/plc-limits/requests/
 * {request_id}/decide` as the `decideLimitRequest` update, or for the review deadline (an input,
 * 72 hours by default), after which the request expires. A decision after the first, or after
 * the deadline, is refused (LIMIT_REQUEST_NOT_PENDING). BusinessStatus follows the request:
 * PENDING, then APPROVED, REJECTED or EXPIRED (REFUSED when it was never opened). The workflow is
 * started with DeviceId, OwnerId and ReferenceId (the request id), so the UI finds it by each.
 */

const { openLimitRequest, decideLimitRequest, expireLimitRequest } = proxyActivities<LimitReviewActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', maximumInterval: '1 minute', backoffCoefficient: 2, maximumAttempts: 20 },
});

export const defaultReviewTimeoutMs = 72 * 60 * 60 * 1000;

export interface LimitReviewInput {
  requestId: string;
  /** How long the admin has to decide; 72 hours when absent (seconds in tests). */
  reviewTimeoutMs?: number;
}


export type LimitReviewResult = { status: 'REFUSED'; code: string } | { status: 'APPROVED' | 'REJECTED' | 'EXPIRED'; request: LimitRequestState };

export async function limitReviewWorkflow(input: LimitReviewInput): Promise<LimitReviewResult> {
  const reviewTimeoutMs = input.reviewTimeoutMs ?? defaultReviewTimeoutMs;
  let opening: Promise<LimitRequestState> | undefined;
  let opened: LimitRequestState | undefined;
  let refusedCode: string | undefined;
  let deciding = false;
  let decided: LimitRequestState | undefined;
  let closed = false;

  const setStatus = (status: string): void => {
    upsertSearchAttributes([{ key: businessStatusKey, value: status }]);
  };

  setHandler(
    openLimitRequestUpdate,
    async (request) => {
      opening ??= openLimitRequest({ ...request, workflowId: `limit-review-${input.requestId}`, reviewTimeoutMs });
      try {
        opened = await opening;
        return opened;
      } catch (error) {
        refusedCode ??= failureType(error);
        throw error;
      }
    },
    {
      validator: (request) => {
        if (request.requestId !== input.requestId) throw new Error('the update does not belong to this request');
      },
    },
  );

  setHandler(
    decideLimitRequestUpdate,
    async (decision) => {
      deciding = true;
      try {
        decided = await decideLimitRequest({ ...decision, requestId: input.requestId });
        return decided;
      } catch (error) {
        deciding = false;
        throw error;
      }
    },
    {
      validator: (decision) => {
        if (decision.decision === 'APPROVE' && (decision.grantedMaxAmountMinor === undefined || decision.grantedDailyLimitMinor === undefined)) {
          throw new Error('an approval names the granted amounts');
        }
        if (opened === undefined) throw ApplicationFailure.nonRetryable('the request is not open', 'LIMIT_REQUEST_NOT_FOUND');
        if (deciding || decided !== undefined || closed) {
          throw ApplicationFailure.nonRetryable('the request was already decided or has expired', 'LIMIT_REQUEST_NOT_PENDING', {
            request_id: input.requestId,
            status: decided?.status ?? (closed ? 'EXPIRED' : 'DECIDING'),
          });
        }
      },
    },
  );

  // The request's route answers within seconds; a workflow whose update never came ends on its own.
  if (!(await condition(() => opened !== undefined || refusedCode !== undefined, '5 minutes'))) refusedCode = 'NO_OPEN_UPDATE';
  if (opened === undefined) {
    setStatus('REFUSED');
    await condition(allHandlersFinished);
    return { status: 'REFUSED', code: refusedCode ?? 'UNKNOWN' };
  }

  const decidedInTime = await condition(() => decided !== undefined, reviewTimeoutMs);
  // A decision that was running when the deadline came stands if it succeeds.
  if (!decidedInTime) await condition(() => decided !== undefined || !deciding);
  if (decided === undefined) {
    closed = true;
    const expired = await expireLimitRequest({ requestId: input.requestId });
    setStatus(expired.status);
    await condition(allHandlersFinished);
    return { status: finalStatus(expired.status), request: expired };
  }
  setStatus(decided.status);
  await condition(allHandlersFinished);
  return { status: finalStatus(decided.status), request: decided };
}

/** A request the workflow closed is never PENDING in the database; EXPIRED names the one case that could say so. */
function finalStatus(status: LimitRequestState['status']): 'APPROVED' | 'REJECTED' | 'EXPIRED' {
  return status === 'PENDING' ? 'EXPIRED' : status;
}
