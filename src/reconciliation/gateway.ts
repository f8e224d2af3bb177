import { paymentOutcome, payoutOutcome, type GatewayOutcome } from '../../gateway/status.ts';
import type { Currency } from '../money/currency.ts';

/**
 * The gateway reconcile tools' rules, as pure code (docs/reconciliation.md, "Gateway tools"):
 * what a gateway status means for the redemption or charge that waits on it, and the shapes a
 * run hands from finding (a batch activity) to handing over (the workflow) to recording (another
 * activity). Nothing here books money: every booking is made by the workflow that owns the
 * redemption or charge, or, for a charge whose workflow has ended, by the charge's own database
 * function under the charge's own idempotency keys.
 */

/** What the gateway's status means for the row waiting on it. */
export type Verdict = 'SETTLE' | 'FAIL' | 'OPEN';

const verdicts: Readonly<Record<GatewayOutcome, Verdict>> = { paid: 'SETTLE', failed: 'FAIL', open: 'OPEN' };

/**
 * A transfer (payout) status, as the gateway adapter judges it (`payoutOutcome`): DONE settles;
 * FAILED and CANCELLED fail (the redemption fails and the PLC is reverted); anything else is open.
 */
export function transferVerdict(status: string): Verdict {
  return verdicts[payoutOutcome(status)];
}

/**
 * A payment status, as the gateway adapter judges it (`paymentOutcome`): paid settles; OVERDUE,
 * REFUNDED, DELETED fail (OVERDUE is not final at the gateway: a Boleto can still be paid late,
 * so whoever fails a charge on OVERDUE cancels it there first); anything else is open.
 */
export function paymentVerdict(status: string): Verdict {
  return verdicts[paymentOutcome(status)];
}

/** A status this service gives a charge or a redemption whose gateway resource was never created. */
export const notCreatedStatus = 'NOT_CREATED';

/**
 * A charge with no gateway payment is still being set up by its workflow for this long (the
 * update's quick attempts plus two background series of about 8 minutes each); after that, and
 * with no payment found at the gateway under its reference, nobody can pay it.
 */
export const chargeSetupWindowMs = 30 * 60_000;

/**
 * How long after the end of its due date a PENDING charge counts as stale: the charge workflow's
 * own grace (a Pix is instant; a Boleto paid on its due date clears in 1 to 3 business days), so
 * cancel-stale-charges never cancels a charge its workflow would still wait for.
 */
export const chargeStaleGraceMs = { PIX: 3_600_000, BOLETO: 3 * 86_400_000 } as const;

/**
 * The part of the gateway client the tools use. `GatewayClient` (gateway/index.ts) satisfies it;
 * its errors carry `retryable` (false: a refusal, such as an unknown id or a charge that can no
 * longer be cancelled).
 */
export interface GatewayPort {
  getTransfer(transferId: string): Promise<{ id: string; status: string; failReason: string | null }>;
  /** A boleto payout (bill payment): the same status vocabulary as a transfer. */
  getBillPayment(billPaymentId: string): Promise<{ id: string; status: string; failReason: string | null }>;
  getPayment(paymentId: string): Promise<{ id: string; status: string }>;
  listPayments(input: { externalReference: string; limit: number }): Promise<{ items: { id: string; status: string }[] }>;
  cancelPayment(paymentId: string): Promise<unknown>;
}

/** A gateway error that says "this request will never succeed" rather than "try again". */
export function isGatewayRefusal(error: unknown): boolean {
  return typeof error === 'object' && error !== null && (error as { retryable?: unknown }).retryable === false;
}

/**
 * What a gateway tool found about one PENDING_PAYMENT redemption or PENDING charge: the gateway's
 * word on it and what its owner workflow should hear. Crosses the Temporal boundary as JSON:
 * amounts are decimal strings of minor units.
 */
export interface Handover {
  /** `redemption/<id>` or `charge/<id>`: the item key. */
  key: string;
  subject: 'redemption' | 'charge';
  subjectId: string;
  /** `redemption-<id>` or `charge-<id>`. */
  workflowId: string;
  /** Redemptions: what a resumed `redemption-<id>` needs and is found by in the UI. */
  tokenId: string | null;
  bearerPubkey: string | null;
  /** The transfer or payment id, null when none was created (or found). */
  gatewayId: string | null;
  /** The gateway's status, or NOT_CREATED. */
  gatewayStatus: string;
  failReason: string | null;
  /** What the owner workflow does when it hears `signalStatus` (OPEN: nothing yet). */
  ownerVerdict: Verdict;
  /** The status sent to a running owner workflow. */
  signalStatus: string;
  /** What this run books for a charge whose workflow has ended (OPEN: nothing). */
  bookVerdict: Verdict;
  /** This run cancelled the gateway charge (cancel tools) before handing it over. */
  cancelled: boolean;
  /** The user whose PENDING the owner's booking takes the amount out of: the bearer, or the charge's owner. */
  ownerId: string;
  /** Redemptions: the issuer, whose PROMISED a failure restores. */
  issuerOwnerId: string | null;
  currency: Currency;
  amountMinor: string;
  /** Redemptions: the fee the settlement books to the fees account. */
  feeMinor: string;
  snapshotMinor: string;
  computedMinor: string;
  /** The booking the owner's settlement or failure completes (REDEEM_REQUESTED, CHARGE_CREATED). */
  referenceTransactionId: string | null;
  /** Why the item cannot be handed over (an answer from the gateway that needs a person). */
  problem: string | null;
  /** What else the finding step learnt (a cancel the gateway refused, a payment found by reference). */
  note: string | null;
}

/**
 * How a handover reached its owner: SIGNALLED (the workflow runs and got the status),
 * RESTARTED (a redemption whose workflow had ended, started again with `resume: true`),
 * ALREADY_RUNNING (someone restarted it first), OWNER_ENDED (a charge whose workflow has ended:
 * the run books the outcome through the charge's database function), NONE (not handed over).
 */
export type Dispatch = 'SIGNALLED' | 'RESTARTED' | 'ALREADY_RUNNING' | 'OWNER_ENDED' | 'NONE';

export interface DispatchedHandover {
  handover: Handover;
  dispatch: Dispatch;
}

/** Whether a handover calls for an item: a running owner told of a status it cannot act on yet is not one. */
export function needsItem(handover: Handover, dispatch: Dispatch): boolean {
  if (handover.problem !== null) return true;
  if (dispatch === 'SIGNALLED') return handover.ownerVerdict !== 'OPEN';
  return true;
}

/** The sentence that says what the gateway said, for an item's detail. */
export function gatewayFacts(handover: Handover): string {
  const what = handover.subject === 'redemption' ? 'transfer' : 'payment';
  const facts =
    handover.gatewayId === null
      ? `no gateway ${what}`
      : `gateway ${what} ${handover.gatewayId} ${handover.gatewayStatus}${handover.failReason === null ? '' : ` (${handover.failReason})`}`;
  const cancelled = handover.cancelled ? '; cancelled at the gateway by this run' : '';
  return `${facts}${cancelled}${handover.note === null ? '' : `; ${handover.note}`}`;
}
