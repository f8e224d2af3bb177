/**
 * The payment gateway adapter's public surface. Everything the rest of the system needs comes
 * from here; the wire shapes in `wire.ts` are the adapter's own business (the simulator, which
 * speaks the same wire, is the one other reader).
 */
export { createGatewayClient, gatewayIdempotencyKey, paymentPageLimitMax, transferPageLimitMax } from './client.ts';
export type { GatewayClient, GatewayClientOptions } from './client.ts';
export { GatewayError, gatewayClientErrorCodes, gatewayFailureKind, isGatewayError } from './errors.ts';
export type { GatewayErrorDetail, GatewayFailureKind } from './errors.ts';
export { formatWireDecimal, minorFromWireValue, wireAmountMinorMax, wireValueFromMinor } from './money.ts';
export * from './types.ts';
export { classifyGatewayWebhook, classifyGatewayWebhookText, transferValidationAnswerSchema } from './webhooks.ts';
export type { GatewayWebhookClassification, TransferValidationAnswer } from './webhooks.ts';
export {
  billPaymentStatusByEvent,
  isFailedPaymentStatus,
  isFinalPaymentStatus,
  isFinalTransferStatus,
  isPaidPaymentStatus,
  paymentEventContradicts,
  paymentOutcome,
  paymentStatusByEvent,
  paymentStatusDecides,
  paymentStatusRank,
  paymentStatusRanks,
  payoutEventContradicts,
  payoutOutcome,
  shouldApplyPaymentStatus,
  shouldApplyTransferStatus,
  transferStatusByEvent,
  transferStatusRank,
  transferStatusRanks,
} from './status.ts';
export type { GatewayOutcome, ReportedTransferStatus } from './status.ts';
export { wireHeaders } from './wire.ts';
