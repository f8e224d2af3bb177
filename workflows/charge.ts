import {
  allHandlersFinished,
  ApplicationFailure,
  condition,
  proxyActivities,
  proxyLocalActivities,
  setHandler,
  upsertSearchAttributes,
} from '@temporalio/workflow';
import type { ChargeActivities, ChargeState } from '../activities/charges.ts';
import { paymentStatuses, type PaymentStatus } from '../gateway/types.ts';
import { isFinalPaymentStatus, isPaidPaymentStatus, shouldApplyPaymentStatus } from '../gateway/status.ts';
import { createChargeUpdate, paymentEventSignal } from './charge-signals.ts';
import { failureType } from './failure-type.ts';
import { businessStatusKey, referenceIdKey } from './search-attributes.ts';

/**
 * A charge (`charge-<charge_id>`, docs/charges.md): cash-in over Pix or Boleto. The API starts it
 * with update-with-start and answers from the update, which
 *
 * 1. opens the charge in a local activity (row PENDING + CHARGE_CREATED: world PENDING -> owner
 *    PENDING), and
 * 2. sets it up at the gateway in a regular activity (customer, charge, Pix QR code or Boleto
 *    lines), because the caller's answer is those payment instructions. A few quick attempts
 *    only: the caller is waiting. A refusal fails the charge before the update answers (502); a
 *    gateway still unavailable answers 503 and the workflow keeps retrying in the background
 *    with a longer backoff, then fails the charge if the gateway never comes back.
 *
 * Then it waits for payment events (signal `paymentEvent`, possibly late, duplicated or out of
 * order: a status applies only when it moves forward) until the end of the due date plus a grace
 * (or `waitOverrideMs` in tests), asks the gateway when the wait ends, and settles (paid) or fails
 * (overdue, deleted, refunded, or never paid: the gateway charge is cancelled first, so nobody can
 * pay it after). A settled charge keeps listening until the same deadline and records a later
 * refund's status; no money moves for it (clawback is out of scope).
 */

const local = proxyLocalActivities<ChargeActivities>({
  startToCloseTimeout: '10 seconds',
  retry: { maximumAttempts: 5, initialInterval: '100 milliseconds', maximumInterval: '2 seconds' },
});
/** The gateway setup inside the update: a caller is waiting, so a few quick attempts. */
const inUpdate = proxyActivities<ChargeActivities>({
  startToCloseTimeout: '20 seconds',
  scheduleToCloseTimeout: '30 seconds',
  retry: { maximumAttempts: 3, initialInterval: '250 milliseconds', backoffCoefficient: 2, maximumInterval: '1 second' },
});
/**
 * The same setup in the background after the update gave up: about 8 minutes of retries, at most
 * 10 per series (so a charge is ready or failed well within the reconcile tools' 30-minute setup
 * window, src/reconciliation/gateway.ts).
 */
const background = proxyActivities<ChargeActivities>({
  startToCloseTimeout: '30 seconds',
  scheduleToCloseTimeout: '10 minutes',
  retry: { maximumAttempts: 12, initialInterval: '2 seconds', backoffCoefficient: 2, maximumInterval: '1 minute' },
});
const activities = proxyActivities<ChargeActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { maximumAttempts: 10, initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute' },
});
/** Bookings: PostgreSQL must come back; bounded all the same (about 45 minutes). */
const bookings = proxyActivities<ChargeActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { maximumAttempts: 50, initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute' },
});


export interface ChargeWorkflowInput {
  chargeId: string;
  ownerId: string;
  billingType: 'PIX' | 'BOLETO';
  /** Testing only (CHARGE_WAIT_OVERRIDE_MS): wait this long for the payment instead of until the due date. */
  waitOverrideMs?: number;
}

export type ChargeWorkflowResult =
  | { status: 'REFUSED'; code: string }
  | { status: 'SETTLED' | 'FAILED' | 'PENDING_STALLED'; state: ChargeState };

const dayMs = 86_400_000;
/** After the end of the due date: a Pix is instant; a Boleto paid on its due date clears in 1-3 business days. */
const graceMs = { PIX: 3_600_000, BOLETO: 3 * dayMs } as const;
/** When the gateway cannot be reached after the wait: ask again this often, this many times. */
const retryWaitMs = 15 * 60_000;
const pollRoundsMax = 24;
/** Background setup series after the update's quick attempts failed: each about 8 minutes. */
const backgroundSeriesMax = 2;
/** Statuses only move forward, so a settled charge can record at most this many later ones. */
const laterStatusesMax = 16;

function asPaymentStatus(value: string | null | undefined): PaymentStatus | null {
  return value !== null && value !== undefined && (paymentStatuses as readonly string[]).includes(value) ? (value as PaymentStatus) : null;
}

/** The end of the due date in the gateway's time zone (America/Sao_Paulo, UTC-3, no daylight saving since 2019). */
export function dueDateEndMs(dueDate: string): number {
  return Date.parse(`${dueDate}T03:00:00Z`) + dayMs;
}

export async function chargeWorkflow(input: ChargeWorkflowInput): Promise<ChargeWorkflowResult> {
  let opening: Promise<{ created: boolean; state: ChargeState }> | undefined;
  let firstRequestHash: string | undefined;
  let state: ChargeState | undefined;
  let refusedCode: string | undefined;
  let setupRunning = false;
  // Widened on purpose: the signal handler moves it between awaits.
  let gatewayStatus = 'PENDING' as PaymentStatus;
  let paymentId: string | null = null;
  let referenceSet = false;

  const setStatus = (status: string): void => upsertSearchAttributes([{ key: businessStatusKey, value: status }]);

  /** Applies a gateway status only when it moves forward: late, duplicated and reordered events change nothing. */
  const applyStatus = (value: string | null | undefined): void => {
    const next = asPaymentStatus(value);
    if (next !== null && shouldApplyPaymentStatus(gatewayStatus, next)) gatewayStatus = next;
  };

  const adopt = (next: ChargeState): void => {
    state = next;
    applyStatus(next.gatewayStatus);
    if (next.gatewayPaymentId !== null) {
      paymentId = next.gatewayPaymentId;
      if (!referenceSet) {
        referenceSet = true;
        upsertSearchAttributes([{ key: referenceIdKey, value: next.gatewayPaymentId }]);
      }
    }
  };

  const needsSetup = (): boolean => state !== undefined && state.status === 'PENDING' && !state.ready;

  /** One setup attempt series (quick in the update, long in the background); a refusal fails the charge. */
  async function runSetup(proxy: typeof inUpdate): Promise<void> {
    setupRunning = true;
    try {
      const result = await proxy.setupGatewayCharge({ chargeId: input.chargeId });
      if (result.kind === 'done') adopt(result.state);
      else {
        adopt(await local.failCharge({ chargeId: input.chargeId, gatewayStatus: result.gatewayStatus, reason: `GATEWAY_REFUSED ${result.reason}` }));
        setStatus('FAILED');
      }
    } catch {
      // Still unavailable after this series of attempts: the caller decides what is next.
    } finally {
      setupRunning = false;
    }
  }

  setHandler(paymentEventSignal, (event) => {
    // An event about another gateway charge carrying our reference is not about this charge.
    if (paymentId !== null && event.paymentId !== paymentId) return;
    applyStatus(event.status);
  });

  setHandler(
    createChargeUpdate,
    async (request) => {
      if (firstRequestHash !== undefined && request.requestHash !== firstRequestHash) {
        throw ApplicationFailure.create({
          type: 'IDEMPOTENCY_KEY_REUSED',
          message: 'this Idempotency-Key already made a charge with another request',
          details: [{ location: 'header', field: 'idempotency-key' }],
          nonRetryable: true,
        });
      }
      firstRequestHash ??= request.requestHash;
      // Concurrent retries of the same request share one opening.
      opening ??= local.openCharge(request);
      let opened: { created: boolean; state: ChargeState };
      try {
        opened = await opening;
      } catch (error) {
        refusedCode ??= failureType(error);
        throw error;
      }
      if (state === undefined) {
        adopt(opened.state);
        setStatus(opened.state.status);
      }
      if (needsSetup()) {
        // Start the quick setup, or wait for the one already running (possibly the background one).
        if (!setupRunning) void runSetup(inUpdate);
        await condition(() => !setupRunning, '30 seconds');
        if (needsSetup()) {
          throw ApplicationFailure.create({
            type: 'GATEWAY_UNAVAILABLE',
            message: 'the payment gateway is unavailable; the charge is retried in the background: repeat the request with the same Idempotency-Key',
            details: [{ charge_id: input.chargeId }],
            nonRetryable: true,
          });
        }
      }
      return state as ChargeState;
    },
    {
      validator: (request) => {
        // Owner, amount or rail differing from the first request are refused by the handler
        // (IDEMPOTENCY_KEY_REUSED, a 422 the API can name); only a foreign charge id is rejected here.
        if (request.chargeId !== input.chargeId) throw new Error('the update does not belong to this charge');
      },
    },
  );

  if (!(await condition(() => state !== undefined || refusedCode !== undefined, '5 minutes'))) refusedCode = 'NO_CREATE_UPDATE';
  if (state === undefined) {
    await condition(allHandlersFinished);
    return { status: 'REFUSED', code: refusedCode ?? 'UNKNOWN' };
  }

  // The update's quick attempts first; then up to two background series (a retried request waits for them).
  let backgroundSeries = 0;
  for (let step = 0; step < 10 && needsSetup() && backgroundSeries < backgroundSeriesMax; step += 1) {
    if (setupRunning) await condition(() => !setupRunning);
    else {
      backgroundSeries += 1;
      await runSetup(background);
    }
  }
  if (needsSetup()) {
    // Nobody ever got payment instructions: cancel whatever the gateway may have made, then fail.
    try {
      await inUpdate.abandonGatewayCharge({ chargeId: input.chargeId });
    } catch {
      // Still unreachable: a charge nobody can pay (its QR code or line was never handed out).
    }
    adopt(await bookings.failCharge({ chargeId: input.chargeId, gatewayStatus: null, reason: 'GATEWAY_UNAVAILABLE: the gateway could not be reached' }));
    setStatus('FAILED');
  }

  let current = state as ChargeState;
  const deadlineMs = input.waitOverrideMs !== undefined ? Date.now() + input.waitOverrideMs : dueDateEndMs(current.dueDate) + graceMs[input.billingType];
  if (current.status === 'PENDING') {
    setStatus('PENDING');
    const decided = (): boolean => gatewayStatus !== 'PENDING' && gatewayStatus !== 'AWAITING_RISK_ANALYSIS';
    let outcome: { settle: true; gatewayStatus: string } | { settle: false; gatewayStatus: string; reason: string } | undefined;
    for (let round = 0; round < pollRoundsMax && outcome === undefined; round += 1) {
      const waitMs = round === 0 ? deadlineMs - Date.now() : (input.waitOverrideMs ?? retryWaitMs);
      if (waitMs > 0) await condition(decided, waitMs);
      try {
        if (!decided()) applyStatus((await activities.readChargePaymentStatus({ chargeId: input.chargeId })).status);
        if (isPaidPaymentStatus(gatewayStatus)) {
          outcome = { settle: true, gatewayStatus };
        } else if (gatewayStatus === 'REFUNDED' || gatewayStatus === 'DELETED') {
          outcome = { settle: false, gatewayStatus, reason: `the gateway charge is ${gatewayStatus}` };
        } else {
          // OVERDUE, or still unpaid when the wait ended: cancel first, so nobody can pay it after.
          const reason =
            gatewayStatus === 'OVERDUE'
              ? 'the charge is overdue'
              : decided()
                ? `the gateway charge is ${gatewayStatus}`
                : 'the due date passed unpaid';
          applyStatus((await activities.cancelGatewayCharge({ chargeId: input.chargeId })).status);
          // The gateway refuses to cancel a charge paid meanwhile: then it settles after all.
          outcome = isPaidPaymentStatus(gatewayStatus) ? { settle: true, gatewayStatus } : { settle: false, gatewayStatus, reason };
        }
      } catch {
        // The gateway is unreachable even after the activity's retries: ask again after a wait.
      }
    }
    if (outcome === undefined) {
      // No answer from the gateway in all that time: the money stays in PENDING for the operator.
      setStatus('PENDING_STALLED');
      await condition(allHandlersFinished);
      return { status: 'PENDING_STALLED', state: current };
    }
    current = outcome.settle
      ? await bookings.settleCharge({ chargeId: input.chargeId, gatewayStatus: outcome.gatewayStatus })
      : await bookings.failCharge({ chargeId: input.chargeId, gatewayStatus: outcome.gatewayStatus, reason: outcome.reason });
    adopt(current);
    setStatus(current.status);
  }

  if (current.status === 'SETTLED') {
    // Until the deadline, record later statuses (CONFIRMED, a refund). No money moves for them.
    let recorded = asPaymentStatus(current.gatewayStatus) ?? gatewayStatus;
    for (let i = 0; i < laterStatusesMax && !isFinalPaymentStatus(recorded); i += 1) {
      const remainingMs = deadlineMs - Date.now();
      if (remainingMs <= 0 || !(await condition(() => gatewayStatus !== recorded, remainingMs))) break;
      recorded = gatewayStatus;
      current = await bookings.recordChargeGatewayStatus({ chargeId: input.chargeId, gatewayStatus: recorded });
      if (recorded === 'REFUNDED') setStatus('SETTLED_REFUNDED');
    }
  }
  await condition(allHandlersFinished);
  return { status: current.status === 'SETTLED' ? 'SETTLED' : 'FAILED', state: current };
}
