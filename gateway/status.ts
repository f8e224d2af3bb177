/**
 * Status ordering of gateway charges and payouts: a status is applied only when it moves
 * forward, and a final one never moves. Plain data and functions with no dependency beyond the
 * gateway's vocabulary (types.ts), so deterministic workflow code can use them without pulling the
 * client or zod into its bundle.
 */
import type { AsaasBillStatus, BillPaymentEvent, BillPaymentStatus, PaymentEvent, PaymentStatus, TransferEvent, TransferStatus } from './types.ts';

/**
 * Payment status ranks. A charge only ever moves to a higher rank; a webhook or a read that
 * reports a lower rank than the one we hold is stale and is ignored. The order is the path a Pix
 * or Boleto charge takes: pending, possibly overdue (a Boleto can still be paid after its due
 * date), paid (RECEIVED, then CONFIRMED in this gateway's model), then refunded. DELETED and
 * REFUNDED are final. Card-only statuses (chargebacks) are ranked after CONFIRMED so that reading
 * them never fails, but this service creates no card charges.
 */
export const paymentStatusRanks: Readonly<Record<PaymentStatus, number>> = {
  PENDING: 0,
  UNKNOWN: 0,
  AWAITING_RISK_ANALYSIS: 0,
  OVERDUE: 1,
  DUNNING_REQUESTED: 2,
  RECEIVED: 3,
  RECEIVED_IN_CASH: 3,
  DUNNING_RECEIVED: 3,
  CONFIRMED: 4,
  CHARGEBACK_REQUESTED: 5,
  CHARGEBACK_DISPUTE: 6,
  AWAITING_CHARGEBACK_REVERSAL: 7,
  REFUND_REQUESTED: 8,
  REFUND_IN_PROGRESS: 9,
  REFUNDED: 10,
  DELETED: 10,
};

export function paymentStatusRank(status: PaymentStatus): number {
  return paymentStatusRanks[status];
}

/** Statuses with no way out: REFUNDED and DELETED. */
export function isFinalPaymentStatus(status: PaymentStatus): boolean {
  return status === 'REFUNDED' || status === 'DELETED';
}

/** The money arrived: the charge can be settled. */
export function isPaidPaymentStatus(status: PaymentStatus): boolean {
  return status === 'RECEIVED' || status === 'CONFIRMED' || status === 'RECEIVED_IN_CASH' || status === 'DUNNING_RECEIVED';
}

/**
 * The charge will not be paid, per the spec's reconcile rule (OVERDUE or REFUNDED fail a
 * redemption) plus a deleted charge. Note OVERDUE is not final: a late Boleto payment still moves
 * it to RECEIVED, and callers that fail on OVERDUE should cancel the charge first.
 */
export function isFailedPaymentStatus(status: PaymentStatus): boolean {
  return status === 'OVERDUE' || status === 'REFUNDED' || status === 'DELETED';
}

/** Whether a charge we hold at `current` should move to `next`: only forward, never out of a final status. */
export function shouldApplyPaymentStatus(current: PaymentStatus, next: PaymentStatus): boolean {
  if (isFinalPaymentStatus(current)) return false;
  return paymentStatusRank(next) > paymentStatusRank(current);
}

/**
 * The status each payment event announces (the payment object inside the event is the authority),
 * for every event Asaas documents; null for an event that announces no status of its own (a view,
 * an update of the due date, a split, a card-only step, a restore): the payment's own status then
 * stands for the event.
 */
export const paymentStatusByEvent: Readonly<Record<PaymentEvent, PaymentStatus | null>> = {
  PAYMENT_CREATED: 'PENDING',
  PAYMENT_AWAITING_RISK_ANALYSIS: 'AWAITING_RISK_ANALYSIS',
  PAYMENT_APPROVED_BY_RISK_ANALYSIS: null,
  PAYMENT_REPROVED_BY_RISK_ANALYSIS: null,
  PAYMENT_AUTHORIZED: null,
  PAYMENT_UPDATED: null,
  PAYMENT_CONFIRMED: 'CONFIRMED',
  PAYMENT_RECEIVED: 'RECEIVED',
  PAYMENT_CREDIT_CARD_CAPTURE_REFUSED: null,
  PAYMENT_ANTICIPATED: null,
  PAYMENT_OVERDUE: 'OVERDUE',
  PAYMENT_DELETED: 'DELETED',
  PAYMENT_RESTORED: null,
  PAYMENT_REFUNDED: 'REFUNDED',
  PAYMENT_PARTIALLY_REFUNDED: null,
  PAYMENT_REFUND_IN_PROGRESS: 'REFUND_IN_PROGRESS',
  PAYMENT_RECEIVED_IN_CASH_UNDONE: null,
  PAYMENT_CHARGEBACK_REQUESTED: 'CHARGEBACK_REQUESTED',
  PAYMENT_CHARGEBACK_DISPUTE: 'CHARGEBACK_DISPUTE',
  PAYMENT_AWAITING_CHARGEBACK_REVERSAL: 'AWAITING_CHARGEBACK_REVERSAL',
  PAYMENT_DUNNING_RECEIVED: 'DUNNING_RECEIVED',
  PAYMENT_DUNNING_REQUESTED: 'DUNNING_REQUESTED',
  PAYMENT_BANK_SLIP_VIEWED: null,
  PAYMENT_CHECKOUT_VIEWED: null,
  PAYMENT_SPLIT_CANCELLED: null,
  PAYMENT_SPLIT_DIVERGENCE_BLOCK: null,
  PAYMENT_SPLIT_DIVERGENCE_BLOCK_FINISHED: null,
};

/**
 * Transfer status ranks: PENDING (and UNKNOWN, a status the adapter does not know: open), then
 * BANK_PROCESSING or BLOCKED (held by the gateway for review), then one of the three final statuses.
 */
export const transferStatusRanks: Readonly<Record<TransferStatus, number>> = {
  PENDING: 0,
  UNKNOWN: 0,
  BANK_PROCESSING: 1,
  BLOCKED: 1,
  DONE: 2,
  FAILED: 2,
  CANCELLED: 2,
};

export function transferStatusRank(status: TransferStatus): number {
  return transferStatusRanks[status];
}

export function isFinalTransferStatus(status: TransferStatus): boolean {
  return status === 'DONE' || status === 'FAILED' || status === 'CANCELLED';
}

/** Whether a transfer we hold at `current` should move to `next`: only forward, never out of a final status. */
export function shouldApplyTransferStatus(current: TransferStatus, next: TransferStatus): boolean {
  if (isFinalTransferStatus(current)) return false;
  return transferStatusRank(next) > transferStatusRank(current);
}

export const transferStatusByEvent: Readonly<Record<TransferEvent, TransferStatus>> = {
  TRANSFER_CREATED: 'PENDING',
  TRANSFER_PENDING: 'PENDING',
  TRANSFER_IN_BANK_PROCESSING: 'BANK_PROCESSING',
  TRANSFER_BLOCKED: 'BLOCKED',
  TRANSFER_DONE: 'DONE',
  TRANSFER_FAILED: 'FAILED',
  TRANSFER_CANCELLED: 'CANCELLED',
};

/** The status each bill payment event announces (the `bill` inside the event is the authority). */
export const billPaymentStatusByEvent: Readonly<Record<BillPaymentEvent, BillPaymentStatus>> = {
  BILL_CREATED: 'PENDING',
  BILL_PENDING: 'PENDING',
  BILL_BANK_PROCESSING: 'BANK_PROCESSING',
  BILL_PAID: 'DONE',
  BILL_CANCELLED: 'CANCELLED',
  BILL_FAILED: 'FAILED',
  // The money came back to the account: the boleto was not paid by us after all.
  BILL_REFUNDED: 'FAILED',
};

/**
 * A bill payment's status as Asaas sends it, in the one payout vocabulary: PAID is DONE (paid),
 * REFUNDED is FAILED (the money came back), the risk analysis wait is PENDING, FAILED and
 * CANCELLED are themselves; anything else is UNKNOWN (open, flagged where it is read).
 */
const billStatusesFromWire: Readonly<Record<AsaasBillStatus, BillPaymentStatus>> = {
  PENDING: 'PENDING',
  AWAITING_CHECKOUT_RISK_ANALYSIS_REQUEST: 'PENDING',
  BANK_PROCESSING: 'BANK_PROCESSING',
  PAID: 'DONE',
  FAILED: 'FAILED',
  CANCELLED: 'CANCELLED',
  REFUNDED: 'FAILED',
};

export function billPaymentStatusFromWire(status: string): BillPaymentStatus {
  return Object.hasOwn(billStatusesFromWire, status) ? billStatusesFromWire[status as AsaasBillStatus] : 'UNKNOWN';
}

/** A transfer's status as Asaas sends it: a documented one as it is, anything else UNKNOWN (open, flagged where it is read). */
export function transferStatusFromWire(status: string): TransferStatus {
  return Object.hasOwn(transferStatusRanks, status) && status !== 'UNKNOWN' ? (status as TransferStatus) : 'UNKNOWN';
}

/**
 * What a gateway status means for the money that waits on it, decided here once: `paid` (the
 * payout went out; the charge's money came in), `failed` (it will not: the redemption fails and
 * the PLC is reverted; the charge fails, an OVERDUE one once cancelled at the gateway), `open`
 * (not decided yet). Anything this adapter does not know is `open`: it never moves money.
 */
export type GatewayOutcome = 'paid' | 'failed' | 'open';

/**
 * A payout's status as this service reports it to the redemption's workflow: the gateway's own
 * (`TransferStatus`), `NOT_CREATED` when no transfer exists yet, `UNKNOWN` when the gateway
 * refused to say. Only the gateway's final statuses decide anything (`payoutOutcome`).
 */
export type ReportedTransferStatus = TransferStatus | 'NOT_CREATED' | 'UNKNOWN';

/** `status` as a `ReportedTransferStatus`: a status this adapter does not know is `UNKNOWN` (open). */
export function reportedTransferStatus(status: string): ReportedTransferStatus {
  return Object.hasOwn(transferStatusRanks, status) || status === 'NOT_CREATED' ? (status as ReportedTransferStatus) : 'UNKNOWN';
}

/**
 * A payout (a transfer, or a bill payment: one vocabulary): DONE is paid; FAILED and CANCELLED
 * are failed; PENDING, BANK_PROCESSING open. The one place a payout status is judged: the redemption workflow (its webhook signal),
 * its activities (the payout's creation and reads), the reconcile tools and the audit ask here.
 */
export function payoutOutcome(status: string): GatewayOutcome {
  if (status === 'DONE') return 'paid';
  if (status === 'FAILED' || status === 'CANCELLED') return 'failed';
  return 'open';
}

/**
 * A charge (payment): RECEIVED, CONFIRMED, RECEIVED_IN_CASH, DUNNING_RECEIVED are paid; OVERDUE,
 * REFUNDED, DELETED failed (the spec's reconcile rule, OVERDUE or REFUNDED, plus a cancelled
 * charge); the rest open.
 */
export function paymentOutcome(status: string): GatewayOutcome {
  if (isKnownPaymentStatus(status) && isPaidPaymentStatus(status)) return 'paid';
  if (isKnownPaymentStatus(status) && isFailedPaymentStatus(status)) return 'failed';
  return 'open';
}

function isKnownPaymentStatus(status: string): status is PaymentStatus {
  return Object.hasOwn(paymentStatusRanks, status);
}

/**
 * Where a charge stands on its path: `open` (waiting), `overdue` (not paid by its due date; a
 * Boleto can still be paid), `paid` (the money came in: received, confirmed, and the card-only and
 * refund-in-progress statuses that follow a payment), `refunded`, `deleted` (cancelled unpaid).
 * A charge moves open -> overdue -> paid -> refunded, or open/overdue -> deleted.
 */
type PaymentStage = 'open' | 'overdue' | 'paid' | 'refunded' | 'deleted';

const paymentStages: Readonly<Record<PaymentStatus, PaymentStage>> = {
  PENDING: 'open',
  UNKNOWN: 'open',
  AWAITING_RISK_ANALYSIS: 'open',
  OVERDUE: 'overdue',
  DUNNING_REQUESTED: 'overdue',
  RECEIVED: 'paid',
  RECEIVED_IN_CASH: 'paid',
  DUNNING_RECEIVED: 'paid',
  CONFIRMED: 'paid',
  CHARGEBACK_REQUESTED: 'paid',
  CHARGEBACK_DISPUTE: 'paid',
  AWAITING_CHARGEBACK_REVERSAL: 'paid',
  REFUND_REQUESTED: 'paid',
  REFUND_IN_PROGRESS: 'paid',
  REFUNDED: 'refunded',
  DELETED: 'deleted',
};

const stagesAfter: Readonly<Record<PaymentStage, readonly PaymentStage[]>> = {
  open: ['open', 'overdue', 'paid', 'refunded', 'deleted'],
  overdue: ['overdue', 'paid', 'refunded', 'deleted'],
  paid: ['paid', 'refunded'],
  refunded: ['refunded'],
  deleted: ['deleted'],
};

/** Whether a payment status says anything a charge could act on: anything past PENDING (and any status this adapter does not know, read back before anything moves). */
export function paymentStatusDecides(status: string): boolean {
  return !isKnownPaymentStatus(status) || status === 'UNKNOWN' || paymentStages[status] !== 'open';
}

/** A charge status as Asaas sends it: a documented one as it is, anything else UNKNOWN (open). */
export function paymentStatusFromWire(status: string): PaymentStatus {
  return Object.hasOwn(paymentStatusRanks, status) ? (status as PaymentStatus) : 'UNKNOWN';
}

/**
 * Whether an event that announced `eventStatus` contradicts what the gateway says now
 * (`gatewayStatus`, read after the event arrived). The gateway's status may have moved on since
 * the event (a RECEIVED event read back as CONFIRMED or REFUNDED, an OVERDUE Boleto paid late):
 * that is no contradiction. A status the charge cannot reach from the event's (a PAYMENT_RECEIVED
 * whose charge the gateway holds PENDING or DELETED, a PAYMENT_DELETED the gateway still holds
 * PENDING) is one: the event is false, whoever sent it.
 */
export function paymentEventContradicts(eventStatus: string, gatewayStatus: string): boolean {
  if (!isKnownPaymentStatus(eventStatus) || !isKnownPaymentStatus(gatewayStatus)) return eventStatus !== gatewayStatus;
  return !stagesAfter[paymentStages[eventStatus]].includes(paymentStages[gatewayStatus]);
}

/**
 * Whether a transfer event's final status contradicts the gateway's current status of the
 * transfer: a final status never moves, so the two must mean the same (FAILED and CANCELLED both
 * mean failed). A final event about a transfer the gateway still holds open contradicts it too.
 */
export function payoutEventContradicts(eventStatus: string, gatewayStatus: string): boolean {
  return payoutOutcome(eventStatus) !== payoutOutcome(gatewayStatus);
}

/**
 * Refusals of a payout's creation that a retry can fix once the cause is dealt with: the
 * platform's own account at the gateway does not cover the payout (`insufficient_balance`: fund
 * it, then retry). Any other refusal (an invalid Pix key, a validation error) is final. The
 * redemption workflow records a refusal as `REFUSED:<code>` (activities/redemption.ts).
 */
export const transientPayoutRefusalCodes: readonly string[] = ['insufficient_balance'];

export const payoutRefusalPrefix = 'REFUSED:';

/** Whether a payout refused with this recorded status (`REFUSED:<code>`) may be retried. */
export function isTransientPayoutRefusal(gatewayStatus: string): boolean {
  return gatewayStatus.startsWith(payoutRefusalPrefix) && transientPayoutRefusalCodes.includes(gatewayStatus.slice(payoutRefusalPrefix.length));
}
