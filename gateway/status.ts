/**
 * Status ordering of gateway charges and payouts: a status is applied only when it moves
 * forward, and a final one never moves. Plain data and functions with no dependency beyond the
 * gateway's vocabulary (types.ts), so deterministic workflow code can use them without pulling the
 * client or zod into its bundle.
 */
import type { PaymentEvent, PaymentStatus, TransferEvent, TransferStatus } from './types.ts';

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

/** The status each payment event announces (the payment object inside the event is the authority). */
export const paymentStatusByEvent: Readonly<Record<PaymentEvent, PaymentStatus>> = {
  PAYMENT_CREATED: 'PENDING',
  PAYMENT_RECEIVED: 'RECEIVED',
  PAYMENT_CONFIRMED: 'CONFIRMED',
  PAYMENT_OVERDUE: 'OVERDUE',
  PAYMENT_REFUNDED: 'REFUNDED',
  PAYMENT_DELETED: 'DELETED',
};

/** Transfer status ranks: PENDING, then BANK_PROCESSING, then one of the three final statuses. */
export const transferStatusRanks: Readonly<Record<TransferStatus, number>> = {
  PENDING: 0,
  BANK_PROCESSING: 1,
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
  TRANSFER_DONE: 'DONE',
  TRANSFER_FAILED: 'FAILED',
  TRANSFER_CANCELLED: 'CANCELLED',
};

