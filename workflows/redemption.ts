import {
  allHandlersFinished,
  condition,
  defineSignal,
  defineUpdate,
  getExternalWorkflowHandle,
  patched,
  proxyActivities,
  proxyLocalActivities,
  setHandler,
  upsertSearchAttributes,
} from '@temporalio/workflow';
import type { OpenRedemptionInput, PayoutStatus, RedemptionActivities, RedemptionState } from '../activities/redemption.ts';
import { failureType } from './failure-type.ts';
import { plcRedemptionFinishedSignal } from './plc.ts';
import { businessStatusKey, referenceIdKey } from './search-attributes.ts';

/**
 * A redemption (`redemption-<id>`): the payout of a PLC to its bearer. The API starts it with
 * update-with-start; the first update opens the redemption (the double-spend guard and issuer
 * PROMISED -> bearer PENDING) in a local activity and answers. Then the workflow creates the Pix
 * payout at the gateway (idempotent by the redemption id, so a retry or an operator's re-run
 * never pays twice), waits for the transfer's webhook (a signal), asks the gateway itself when
 * none comes in time, and settles (PENDING -> world, fees) or fails (PENDING -> issuer PROMISED,
 * the PLC redeemable again). It tells the PLC's workflow either way.
 */

const local = proxyLocalActivities<RedemptionActivities>({
  startToCloseTimeout: '10 seconds',
  retry: { maximumAttempts: 5, initialInterval: '100 milliseconds', maximumInterval: '2 seconds' },
});
const activities = proxyActivities<RedemptionActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', maximumInterval: '1 minute', backoffCoefficient: 2, maximumAttempts: 20 },
});

/**
 * Since patch `redemption-finish-local`, the settle-or-fail booking is a local activity that also
 * tells the PLC's workflow (`settleRedemption`): it runs inside the workflow task that receives the
 * final transfer event, so final event -> booking -> PLC told -> closed is one workflow task instead
 * of three (the activity round trip and the external signal's round trip). Retried as patiently as
 * the activity it replaces (the booking is idempotent); a long backoff waits on a durable timer.
 */
const localFinish = proxyLocalActivities<RedemptionActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', maximumInterval: '1 minute', backoffCoefficient: 2, maximumAttempts: 20 },
});

export const openRedemptionUpdate = defineUpdate<{ created: boolean; state: RedemptionState }, [OpenRedemptionInput]>('openRedemption');
/** A transfer event from the gateway's webhook (delivered possibly late, twice or out of order). */
export const transferEventSignal = defineSignal<[{ eventId: string; transferId: string; status: string; failReason: string | null }]>(
  'transferEvent',
);

export interface RedemptionWorkflowInput {
  redemptionId: string;
  tokenId: string;
  /** How long to wait for a webhook before asking the gateway. */
  webhookWaitMs: number;
  /**
   * Set by an operator's retry (pending-transfers reconciliation): the redemption row exists
   * already, so the workflow loads it instead of waiting for the opening update. The payout's
   * idempotency key is the redemption id, so a resumed run never pays twice.
   */
  resume?: boolean;
}

export type RedemptionWorkflowResult = { status: 'REFUSED'; code: string } | { status: 'SETTLED' | 'FAILED'; state: RedemptionState };

/** Bound on wait-then-ask rounds: with the default 10-minute wait, about 8 hours. */
const pollRoundsMax = 48;

export async function redemptionWorkflow(input: RedemptionWorkflowInput): Promise<RedemptionWorkflowResult> {
  let opening: Promise<{ created: boolean; state: RedemptionState }> | undefined;
  let opened: RedemptionState | undefined;
  let refusedCode: string | undefined;
  let outcome: Extract<PayoutStatus, { final: true }> | undefined;

  const setStatus = (status: string): void => upsertSearchAttributes([{ key: businessStatusKey, value: status }]);

  setHandler(
    openRedemptionUpdate,
    async (request) => {
      opening ??= local.openRedemption(request);
      try {
        const result = await opening;
        opened = result.state;
        return result;
      } catch (error) {
        refusedCode ??= failureType(error);
        throw error;
      }
    },
    {
      validator: (request) => {
        if (request.redemptionId !== input.redemptionId || request.tokenId !== input.tokenId) {
          throw new Error('the update does not belong to this redemption');
        }
      },
    },
  );

  setHandler(transferEventSignal, (event) => {
    // Only a final status counts, and the first final status wins: a late PENDING or a
    // duplicated event never moves the outcome backwards.
    if (outcome !== undefined) return;
    if (event.status === 'DONE') outcome = { final: true, done: true, gatewayStatus: 'DONE', failReason: null };
    else if (event.status === 'FAILED' || event.status === 'CANCELLED') {
      outcome = { final: true, done: false, gatewayStatus: event.status, failReason: event.failReason ?? event.status };
    }
  });

  if (input.resume === true) {
    const loaded = await activities.loadRedemption({ redemptionId: input.redemptionId });
    if (loaded === null) refusedCode = 'NOT_FOUND';
    else opened = loaded;
  } else if (!(await condition(() => opened !== undefined || refusedCode !== undefined, '5 minutes'))) {
    refusedCode = 'NO_OPEN_UPDATE';
  }
  if (opened === undefined) {
    await condition(allHandlersFinished);
    return { status: 'REFUSED', code: refusedCode ?? 'UNKNOWN' };
  }
  setStatus(opened.status);

  if (opened.status === 'PENDING_PAYMENT') {
    const created = await activities.createPayout({ redemptionId: input.redemptionId });
    if (created.transferId !== null) upsertSearchAttributes([{ key: referenceIdKey, value: created.transferId }]);
    if (created.status.final) outcome ??= created.status;
    for (let round = 0; round < pollRoundsMax && outcome === undefined; round += 1) {
      if (await condition(() => outcome !== undefined, input.webhookWaitMs)) break;
      const status = await activities.readPayoutStatus({ redemptionId: input.redemptionId });
      if (status.final) outcome ??= status;
    }
  } else {
    outcome = {
      final: true,
      done: opened.status === 'SETTLED',
      gatewayStatus: opened.gatewayStatus ?? opened.status,
      failReason: opened.failureReason,
    };
  }
  if (outcome === undefined) {
    // No answer from the gateway in all that time: leave the money in PENDING for the operator
    // (pending-transfers reconciliation) rather than guess.
    setStatus('PENDING_PAYMENT_STALLED');
    await condition(allHandlersFinished);
    return { status: 'FAILED', state: opened };
  }
  const finishInput = { redemptionId: input.redemptionId, done: outcome.done, gatewayStatus: outcome.gatewayStatus, failReason: outcome.failReason };
  let state: RedemptionState;
  if (patched('redemption-finish-local')) {
    // One workflow task from the final event to the end: the booking and the PLC workflow's
    // signal (sent by the activity) in a local activity, then the workflow completes.
    state = await localFinish.settleRedemption({ ...finishInput, tokenId: input.tokenId });
    setStatus(state.status);
  } else {
    state = await activities.finishRedemption(finishInput);
    setStatus(state.status);
    try {
      await getExternalWorkflowHandle(`plc-${input.tokenId}`).signal(plcRedemptionFinishedSignal, {
        status: state.status === 'SETTLED' ? 'REDEEMED' : 'REVERTED',
      });
    } catch {
      // The PLC's workflow has ended (its expiry ran first, or it was never kept): nothing to tell.
    }
  }
  await condition(allHandlersFinished);
  return { status: state.status === 'SETTLED' ? 'SETTLED' : 'FAILED', state };
}
