import { transferVerdict } from '../reconciliation/gateway.ts';

/**
 * An operator's retry of a settlement (docs/operations-console.md, "Retrying a settlement"), as
 * pure rules: when a redemption may be retried, and what the gateway's answer about its current
 * payout attempt makes of it. The gateway's statuses mean here what they mean to the
 * pending-transfers reconcile tool (`transferVerdict`).
 */

export type RetryRefusal = 'REDEMPTION_ALREADY_SETTLED' | 'REDEMPTION_FAILED_FINAL' | 'REDEMPTION_NOT_STALLED';

export interface RetryCandidate {
  status: 'PENDING_PAYMENT' | 'SETTLED' | 'FAILED';
  /** Why the current attempt is stuck for a reason a retry can fix; null when none. */
  payoutError: string | null;
  /** When the current payout attempt began. */
  attemptStartedAtMs: number;
}

export type Retryability = { retryable: true; why: string } | { retryable: false; code: RetryRefusal; message: string; retryableAtMs?: number };

/**
 * SETTLED and FAILED are final (a failure was booked and the PLC reverted: its bearer can redeem
 * it again). A PENDING_PAYMENT redemption may be retried when its payout is stuck for a reason a
 * retry can fix, when its workflow has ended without a final answer, or when no final answer
 * came `stalledAfterMs` after its attempt began; before that it is waiting normally.
 */
export function retryability(candidate: RetryCandidate, context: { workflowRunning: boolean; nowMs: number; stalledAfterMs: number }): Retryability {
  if (candidate.status === 'SETTLED') return { retryable: false, code: 'REDEMPTION_ALREADY_SETTLED', message: 'the redemption is SETTLED: nothing to retry' };
  if (candidate.status === 'FAILED') {
    return {
      retryable: false,
      code: 'REDEMPTION_FAILED_FINAL',
      message: 'the redemption FAILED for good (its failure was booked and the PLC reverted; the bearer can redeem it again)',
    };
  }
  if (candidate.payoutError !== null) return { retryable: true, why: `the payout is stuck: ${candidate.payoutError}` };
  if (!context.workflowRunning) return { retryable: true, why: 'its workflow has ended without a final answer' };
  const stalledAtMs = candidate.attemptStartedAtMs + context.stalledAfterMs;
  if (context.nowMs >= stalledAtMs) return { retryable: true, why: `no final answer from the gateway in ${Math.round((context.nowMs - candidate.attemptStartedAtMs) / 1000)} s` };
  return {
    retryable: false,
    code: 'REDEMPTION_NOT_STALLED',
    message: 'the payout is still within its normal wait for the gateway',
    retryableAtMs: stalledAtMs,
  };
}

/** What the gateway says about the current payout attempt. */
export type PayoutProbe =
  | { kind: 'transfer'; transferId: string; status: string; failReason: string | null }
  /** Creating the attempt's transfer was refused (`REFUSED:<code>`): nothing exists at the gateway. */
  | { kind: 'refused'; gatewayStatus: string; message: string }
  /** The gateway did not answer (timeouts, 5xx, 429). */
  | { kind: 'unavailable'; message: string };

export type RetryDecision =
  | { action: 'SETTLE'; gatewayStatus: string }
  | { action: 'FAIL'; gatewayStatus: string; reason: string }
  /** The attempt is known dead and its cause transient: a new attempt, under a new idempotency key. */
  | { action: 'NEW_ATTEMPT'; reason: string }
  /** The gateway still processes the transfer: never a second one beside it; keep waiting for it. */
  | { action: 'STILL_PENDING'; gatewayStatus: string }
  | { action: 'GATEWAY_UNAVAILABLE'; reason: string };

export function decideRetry(probe: PayoutProbe, isTransientRefusal: (gatewayStatus: string) => boolean): RetryDecision {
  switch (probe.kind) {
    case 'unavailable':
      return { action: 'GATEWAY_UNAVAILABLE', reason: probe.message };
    case 'refused':
      return isTransientRefusal(probe.gatewayStatus)
        ? { action: 'NEW_ATTEMPT', reason: `the gateway refused the payout for a transient cause (${probe.gatewayStatus}: ${probe.message})` }
        : { action: 'FAIL', gatewayStatus: probe.gatewayStatus, reason: probe.message };
    case 'transfer': {
      const verdict = transferVerdict(probe.status);
      if (verdict === 'SETTLE') return { action: 'SETTLE', gatewayStatus: probe.status };
      if (verdict === 'FAIL') return { action: 'FAIL', gatewayStatus: probe.status, reason: probe.failReason ?? probe.status };
      return { action: 'STILL_PENDING', gatewayStatus: probe.status };
    }
  }
}

/** The gateway idempotency key of a payout attempt: attempt 1 keeps the key every redemption had before retries. */
export function payoutIdempotencyKey(redemptionId: string, attempt: number): string {
  if (!Number.isInteger(attempt) || attempt < 1) throw new RangeError(`attempt ${attempt}`);
  return attempt === 1 ? redemptionId : `${redemptionId}:attempt-${attempt}`;
}
