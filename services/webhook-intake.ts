import {
  billPaymentStatusByEvent,
  classifyGatewayWebhookText,
  isFinalTransferStatus,
  transferStatusByEvent,
  type GatewayWebhookClassification,
  type TransferStatus,
} from '../gateway/index.ts';

/**
 * Why a stored gateway event needs no processing, judged by its content alone, or undefined when
 * it may need some: a payout event (a Pix transfer's or a bill payment's) with a status that is
 * not final (only DONE, FAILED and CANCELLED move a redemption, which ignores the others), a body
 * that is not a notification we act on. Payment events always go to their processing (the charge
 * workflow keeps their order).
 */
export function settledOnArrival(rawBody: string): { status: 'IGNORED'; result: { reason: string } } | undefined {
  const reason = noActionReason(classifyGatewayWebhookText(rawBody));
  return reason === undefined ? undefined : { status: 'IGNORED', result: { reason } };
}

export function transferEventStatus(event: Extract<GatewayWebhookClassification, { kind: 'transfer_event' }>): TransferStatus {
  return transferStatusByEvent[event.event] ?? event.transfer.status;
}

export function billPaymentEventStatus(event: Extract<GatewayWebhookClassification, { kind: 'bill_payment_event' }>): TransferStatus {
  return billPaymentStatusByEvent[event.event] ?? event.billPayment.status;
}

/** A payout event of either rail: a Pix transfer's, or a bill payment's (a boleto redemption's payout). */
export function payoutEvent(event: GatewayWebhookClassification) {
  if (event.kind === 'transfer_event') {
    return { rail: 'pix' as const, what: 'transfer', payout: event.transfer, status: transferEventStatus(event), eventId: event.eventId };
  }
  if (event.kind === 'bill_payment_event') {
    return { rail: 'boleto' as const, what: 'bill payment', payout: event.billPayment, status: billPaymentEventStatus(event), eventId: event.eventId };
  }
  return null;
}

export function noActionReason(event: GatewayWebhookClassification): string | undefined {
  const payout = payoutEvent(event);
  if (payout !== null) {
    return isFinalTransferStatus(payout.status) ? undefined : `${payout.what} ${payout.payout.id} is ${payout.status}: only a final status acts`;
  }
  if (event.kind === 'unknown') return event.reason;
  if (event.kind === 'transfer_validation') return `${event.kind} is answered synchronously`;
  return undefined;
}
