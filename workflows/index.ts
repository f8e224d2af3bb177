/** Every workflow the worker runs; one file per business process. */
export { chargeWorkflow, createChargeUpdate } from './charge.ts';
export { depositWorkflow, bookDepositUpdate } from './deposit.ts';
export { expireTokensWorkflow } from './expire-sweep.ts';
export { ledgerCheckWorkflow } from './ledger-check.ts';
export { limitReviewWorkflow, openLimitRequestUpdate, decideLimitRequestUpdate } from './limit-review.ts';
export { pinResetEmailWorkflow } from './pin-reset-email.ts';
export { plcWorkflow, issuePlcUpdate, cancelPlcUpdate, plcTransferredSignal, plcRedemptionFinishedSignal } from './plc.ts';
export { reconciliationWorkflow } from './reconciliation.ts';
export { scheduledReconcileWorkflow } from './scheduled-reconcile.ts';
export { redemptionWorkflow, openRedemptionUpdate, transferEventSignal } from './redemption.ts';
export { webhookEventWorkflow } from './webhook-event.ts';
export { webhookCooldownWorkflow } from './webhook-cooldown.ts';
export { webhookMonitorWorkflow } from './webhook-monitor.ts';
