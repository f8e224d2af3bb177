import { classifyGatewayWebhookText, isFinalTransferStatus, transferStatusByEvent, type GatewayWebhookClassification, type TransferStatus } from '../gateway/index.ts';

/**
 * Why a stored gateway event needs no processing, judged by its content alone, or undefined when
 * it may need some: a transfer event with a status that is not final (only DONE, FAILED and
 * CANCELLED move a redemption, which ignores the others), a body that is not a notification we
 * act on. Payment events always go to their processing (the charge workflow keeps their order).
 */
export function settledOnArrival(rawBody: string): { status: 'IGNORED'; result: { reason: string } } | undefined {
  const reason = noActionReason(classifyGatewayWebhookText(rawBody));
  return reason === undefined ? undefined : { status: 'IGNORED', result: { reason } };
}

export function transferEventStatus(event: Extract<GatewayWebhookClassification, { kind: 'transfer_event' }>): TransferStatus {
  return transferStatusByEvent[event.event] ?? event.transfer.status;
}

export function noActionReason(event: GatewayWebhookClassification): string | undefined {
  if (event.kind === 'transfer_event') {
    const status = transferEventStatus(event);
    return isFinalTransferStatus(status) ? undefined : `transfer ${event.transfer.id} is ${status}: only a final status acts`;
  }
  if (event.kind === 'unknown') return event.reason;
  if (event.kind === 'transfer_validation') return `${event.kind} is answered synchronously`;
  return undefined;
}
