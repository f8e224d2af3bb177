/** Every workflow the worker runs; one file per business process. */
export { chargeWorkflow } from './charge.ts';
export { depositWorkflow } from './deposit.ts';
export { expireTokensWorkflow } from './expire-sweep.ts';
export { ledgerCheckWorkflow } from './ledger-check.ts';
export { limitReviewWorkflow } from './limit-review.ts';
export { pinResetEmailWorkflow } from './pin-reset-email.ts';
export { plcWorkflow } from './plc.ts';
export { plcExpiryBucketWorkflow, plcExpirySweepWorkflow } from './plc-expiry.ts';
export { issuePlcUpdate, cancelPlcUpdate, plcTransferredSignal, plcRedemptionFinishedSignal } from './plc-messages.ts';
export { reconciliationWorkflow } from './reconciliation.ts';
export { scheduledReconcileWorkflow } from './scheduled-reconcile.ts';
export { redemptionWorkflow } from './redemption.ts';
export { openRedemptionUpdate, transferEventSignal } from './redemption-messages.ts';
export { webhookEventWorkflow } from './webhook-event.ts';
export { webhookCooldownWorkflow } from './webhook-cooldown.ts';
export { webhookMonitorWorkflow } from './webhook-monitor.ts';
