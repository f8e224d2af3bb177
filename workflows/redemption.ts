import {
  ActivityFailure,
  allHandlersFinished,
  CancelledFailure,
  TemporalFailure,
  ApplicationFailure,
  condition,
  getExternalWorkflowHandle,
  patched,
  proxyActivities,
  proxyLocalActivities,
  setHandler,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { PayoutStatus, RedemptionActivities, RedemptionState, RetryPayoutResult } from '../activities/redemption.ts';
import { isTransientPayoutRefusal, payoutOutcome } from '../gateway/status.ts';
import { failureType } from './failure-type.ts';
import { openRedemptionUpdate, retrySettlementUpdate, transferEventSignal, type RetrySettlementRequest, type RetrySettlementResult } from './redemption-messages.ts';
import { plcRedemptionFinishedSignal } from './plc-messages.ts';
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

/**
 * Since patch `redemption-lean-history` (issue 38), the payout is created in a local activity in
 * the workflow task that opened the redemption: no activity task, no workflow task of its own (it
 * is made once, by the intent recorded first and the gateway's idempotency key, so retrying the
 * whole is cheap). The opening update's answer leaves with that workflow task, so the local
 * attempt is one, bounded at 2 seconds: a gateway that is slow or down delays the redeem's answer
 * by 2 s at most, and the regular activity takes over with its full retries, as before the patch.
 */
const localPayout = proxyLocalActivities<RedemptionActivities>({
  startToCloseTimeout: '2 seconds',
  retry: { maximumAttempts: 1 },
});

/** An operator's retry runs its gateway calls as one activity, whose own errors it reports as an outcome. */
const retryActivities = proxyActivities<RedemptionActivities>({
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '1 second', maximumInterval: '10 seconds', maximumAttempts: 5 },
});


export interface RedemptionWorkflowInput {
  redemptionId: string;
  tokenId: string;
  /** How long to wait for a webhook before asking the gateway. */
  webhookWaitMs: number;
  /**
   * Set by an operator's retry (pending-transfers reconciliation, or the retry route when the
   * workflow has ended): the redemption row exists already, so the workflow loads it instead of
   * waiting for the opening update. The payout's idempotency key is the redemption id and attempt,
   * so a resumed run never pays twice.
   */
  resume?: boolean;
  /**
   * How long a payout that is stuck (refused for a transient cause, the gateway unreachable) or
   * stalled (no final answer after every poll) waits for an operator's retry before the run ends;
   * default `operatorWaitMsDefault`. A refused payout is then failed (nothing exists at the
   * gateway); one whose fate is unknown is left PENDING for the operator.
   */
  operatorWaitMs?: number;
  /** How long a run started without `resume` waits for its opening update; default 5 minutes. */
  openWaitMs?: number;
}

/** Seven days: a stuck payout waits this long for an operator by default. */
export const operatorWaitMsDefault = 7 * 24 * 3_600_000;

export type RedemptionWorkflowResult = { status: 'REFUSED'; code: string } | { status: 'SETTLED' | 'FAILED'; state: RedemptionState };

/** Bound on wait-then-ask rounds: with the default 10-minute wait, about 8 hours. */
const pollRoundsMax = 48;

export async function redemptionWorkflow(input: RedemptionWorkflowInput): Promise<RedemptionWorkflowResult> {
  // Decided before any handler runs. Since `redemption-lean-history` (issue 38) one patch marks the
  // run's shape, with operators' retries and the local finish of the patches before it (their
  // markers are no longer written: two events each); a run recorded before keeps its own.
  const lean = patched('redemption-lean-history');
  // A run started before operators' retries existed keeps the shape it had (replayed histories)
  // and refuses a retry.
  const retriesSupported = lean || patched('redemption-operator-retry');
  /** Retries waiting for the main loop, which runs them one at a time between its waits. */
  const retryQueue: { request: RetrySettlementRequest; answer: (result: RetrySettlementResult) => void }[] = [];
  /** Retries whose outcome is final: answered once it is booked. */
  const answeredAfterBooking: { result: RetryPayoutResult; answer: (result: RetrySettlementResult) => void }[] = [];
  /** Transfers of payout attempts a retry closed: their late events move nothing. */
  const closedTransfers = new Set<string>();
  let finalState: RedemptionState | undefined = undefined;
  let opening: Promise<{ created: boolean; state: RedemptionState }> | undefined;
  let opened: RedemptionState | undefined;
  let refusedCode: string | undefined;
  let outcome: Extract<PayoutStatus, { final: true }> | undefined;

  const setStatus = (status: string): void => upsertSearchAttributes([{ key: businessStatusKey, value: status }]);
  /**
   * Lean runs hold the payout's transfer id back and write it with the next status change (one
   * upsert event instead of two): at the end, or when the webhook is late and the run polls.
   */
  let referenceHeld: string | undefined;
  const setReference = (transferId: string): void => {
    if (lean) referenceHeld = transferId;
    else upsertSearchAttributes([{ key: referenceIdKey, value: transferId }]);
  };
  const setStatusWithReference = (status: string): void => {
    const held = referenceHeld;
    referenceHeld = undefined;
    upsertSearchAttributes([{ key: businessStatusKey, value: status }, ...(held === undefined ? [] : [{ key: referenceIdKey, value: held }])]);
  };

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
    if (retriesSupported && closedTransfers.has(event.transferId)) return;
    const judged = payoutOutcome(event.status);
    if (judged === 'paid') outcome = { final: true, done: true, gatewayStatus: event.status, failReason: null };
    else if (judged === 'failed') outcome = { final: true, done: false, gatewayStatus: event.status, failReason: event.failReason ?? event.status };
  });

  setHandler(
    retrySettlementUpdate,
    (request) => {
      if (finalState !== undefined) return Promise.resolve(alreadyFinal(request.retryId, finalState));
      return new Promise<RetrySettlementResult>((answer) => retryQueue.push({ request, answer }));
    },
    {
      validator: (_request) => {
        if (!retriesSupported) {
          throw ApplicationFailure.nonRetryable(
            'this redemption\'s workflow started before operators\' retries existed: use POST /api/v1/admin/reconcile/pending-transfers',
            'RETRY_NOT_SUPPORTED',
          );
        }
      },
    },
  );

  if (input.resume === true) {
    const loaded = await activities.loadRedemption({ redemptionId: input.redemptionId });
    if (loaded === null) refusedCode = 'NOT_FOUND';
    else opened = loaded;
  } else if (!(await condition(() => opened !== undefined || refusedCode !== undefined, input.openWaitMs ?? '5 minutes'))) {
    // No opening update came. Its local activity may still have committed the row: an update whose
    // workflow task timed out (a worker stalled past the task timeout) and whose caller had given up
    // is not delivered again, so the row (the bearer's money in PENDING) would be left with no
    // workflow to pay or revert it. Such a row is adopted; without one the run is refused.
    if (patched('redemption-adopt-unacknowledged-open')) {
      const loaded = await activities.loadRedemption({ redemptionId: input.redemptionId });
      if (opened === undefined && loaded !== null) opened = loaded;
    }
    if (opened === undefined) refusedCode ??= 'NO_OPEN_UPDATE';
  }
  if (opened === undefined) {
    if (lean) setStatus('REFUSED');
    await condition(allHandlersFinished);
    return { status: 'REFUSED', code: refusedCode ?? 'UNKNOWN' };
  }
  // A lean run is started PENDING_PAYMENT by the API (services/redemption.ts): the upsert only
  // when the row says otherwise (a resumed run, an adopted row, a run started by an older API).
  if (!lean || workflowInfo().typedSearchAttributes.get(businessStatusKey) !== opened.status) setStatus(opened.status);

  let lastStatus = opened.status as string;
  const setStatusOnce = (status: string): void => {
    if (status === lastStatus) return;
    lastStatus = status;
    setStatusWithReference(status);
  };
  let payoutProblem: { kind: 'refused' | 'unknown'; text: string } | null = null;

  /** One operator's retry: the gateway's word on the current attempt, and what follows from it. */
  const runRetry = async (entry: (typeof retryQueue)[number]): Promise<void> => {
    const result = await retryActivities.retryPayout({ redemptionId: input.redemptionId, retryId: entry.request.retryId });
    if (result.closedTransferId !== null) closedTransfers.add(result.closedTransferId);
    if (result.transferId !== null) setReference(result.transferId);
    if (result.final !== null) outcome ??= result.final;
    else if (result.outcome !== 'GATEWAY_UNAVAILABLE') {
      payoutProblem =
        result.problem === null ? null : { kind: result.gatewayStatus !== null && isTransientPayoutRefusal(result.gatewayStatus) ? 'refused' : 'unknown', text: result.problem };
    }
    if (outcome !== undefined) answeredAfterBooking.push({ result, answer: entry.answer });
    else entry.answer({ ...result, status: 'PENDING_PAYMENT' });
  };

  if (opened.status === 'PENDING_PAYMENT' && retriesSupported) {
    setStatusOnce('PENDING_PAYMENT');
    try {
      let created;
      if (lean) {
        try {
          created = await localPayout.createPayout({ redemptionId: input.redemptionId });
        } catch (error) {
          // A local activity's failure reaches the workflow as the activity's own failure (an
          // ApplicationFailure), its timeout as a TimeoutFailure: any failure but a cancellation.
          if (!(error instanceof TemporalFailure) || error instanceof CancelledFailure) throw error;
          // The quick attempt failed: the regular activity, with its full retries.
          created = await activities.createPayout({ redemptionId: input.redemptionId });
        }
      } else created = await activities.createPayout({ redemptionId: input.redemptionId });
      if (created.transferId !== null) setReference(created.transferId);
      if (created.status.final && !created.status.done && isTransientPayoutRefusal(created.status.gatewayStatus)) {
        payoutProblem = { kind: 'refused', text: `${created.status.gatewayStatus}: ${created.status.failReason ?? ''}` };
      } else if (created.status.final) outcome ??= created.status;
    } catch (error) {
      if (!(error instanceof ActivityFailure)) throw error;
      // Every attempt to reach the gateway failed: whether the transfer was made is unknown. A
      // retry asks again under the same key (it finds it, or makes it): never a second transfer.
      payoutProblem = { kind: 'unknown', text: `the gateway could not be reached: ${error.cause?.message ?? error.message}`.slice(0, 400) };
      await local.notePayoutProblem({ redemptionId: input.redemptionId, problem: payoutProblem.text });
    }
    const operatorWaitMs = input.operatorWaitMs ?? operatorWaitMsDefault;
    let round = 0;
    while (outcome === undefined) {
      const next = retryQueue.shift();
      if (next !== undefined) {
        await runRetry(next);
        round = 0;
        continue;
      }
      if (payoutProblem === null && round < pollRoundsMax) {
        setStatusOnce('PENDING_PAYMENT');
        if (await condition(() => outcome !== undefined || retryQueue.length > 0, input.webhookWaitMs)) continue;
        round += 1;
        // The webhook is late: the transfer id goes to the UI now (a lean run held it back).
        if (referenceHeld !== undefined) setStatusWithReference('PENDING_PAYMENT');
        try {
          const status = await activities.readPayoutStatus({ redemptionId: input.redemptionId });
          if (status.final) outcome ??= status;
        } catch (error) {
          if (!(error instanceof ActivityFailure)) throw error;
          // The gateway did not answer this round: the next round asks again.
        }
        continue;
      }
      // Stuck or stalled: wait for an operator's retry (the console's main job).
      setStatusOnce(payoutProblem === null ? 'PENDING_PAYMENT_STALLED' : 'PAYOUT_RETRYABLE');
      if (await condition(() => outcome !== undefined || retryQueue.length > 0, operatorWaitMs)) continue;
      const problem: { kind: 'refused' | 'unknown'; text: string } | null = payoutProblem;
      if (problem !== null && problem.kind === 'refused') {
        // Nothing exists at the gateway and nobody retried: fail it, the PLC redeemable again.
        outcome = { final: true, done: false, gatewayStatus: 'NOT_CREATED', failReason: `${problem.text}; no retry within ${Math.round(operatorWaitMs / 60_000)} minutes` };
      }
      break;
    }
  } else if (opened.status === 'PENDING_PAYMENT') {
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
    if (!retriesSupported || lastStatus !== 'PENDING_PAYMENT_STALLED' || referenceHeld !== undefined) setStatusWithReference('PENDING_PAYMENT_STALLED');
    for (const entry of retryQueue.splice(0)) entry.answer(notFinished(entry.request.retryId, opened));
    await condition(allHandlersFinished);
    return { status: 'FAILED', state: opened };
  }
  const finishInput = { redemptionId: input.redemptionId, done: outcome.done, gatewayStatus: outcome.gatewayStatus, failReason: outcome.failReason };
  let state: RedemptionState;
  if (lean || patched('redemption-finish-local')) {
    // One workflow task from the final event to the end: the booking and the PLC workflow's
    // signal (sent by the activity) in a local activity, then the workflow completes.
    state = await localFinish.settleRedemption({ ...finishInput, tokenId: input.tokenId });
    setStatusWithReference(state.status);
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
  finalState = state;
  for (const { result, answer } of answeredAfterBooking.splice(0)) answer({ ...result, status: state.status });
  for (const entry of retryQueue.splice(0)) entry.answer(alreadyFinal(entry.request.retryId, state));
  await condition(allHandlersFinished);
  return { status: state.status === 'SETTLED' ? 'SETTLED' : 'FAILED', state };
}

/** The answer to a retry that arrives once the redemption is final. */
function alreadyFinal(retryId: string, state: RedemptionState): RetrySettlementResult {
  return tookNoStep(retryId, state, state.status === 'SETTLED' ? 'ALREADY_SETTLED' : 'ALREADY_FAILED', `the redemption is already ${state.status}`, state.status);
}

/** The answer to a retry still queued when a run ends without a final answer (its next run takes the next retry). */
function notFinished(retryId: string, state: RedemptionState): RetrySettlementResult {
  return tookNoStep(
    retryId,
    state,
    'STILL_PENDING',
    'the workflow run ended without a final answer before it could take this retry; retry again to resume it',
    'PENDING_PAYMENT',
  );
}

/** A retry's answer when it took no step: the payout attempt as it stands. */
function tookNoStep(
  retryId: string,
  state: RedemptionState,
  outcome: RetrySettlementResult['outcome'],
  detail: string,
  status: RetrySettlementResult['status'],
): RetrySettlementResult {
  return {
    retryId,
    outcome,
    detail,
    attempt: state.payoutAttempt ?? 1,
    transferId: state.gatewayTransferId,
    gatewayStatus: state.gatewayStatus,
    final: null,
    problem: null,
    closedTransferId: null,
    status,
  };
}
