import { defineSignal, defineUpdate } from '@temporalio/workflow';
import type { OpenRedemptionInput, RedemptionState, RetryPayoutResult } from '../activities/redemption.ts';
import type { ReportedTransferStatus } from '../gateway/status.ts';

/**
 * Messages of the redemption workflow (`redemption-<id>`) that the API sends without importing
 * the workflow's code. `retrySettlement`: an operator's retry, a step of the redemption's own
 * workflow (docs/operations-console.md, "Retrying a settlement"); the workflow takes retries one
 * at a time and answers once the retry's outcome is booked (or known not to be final).
 */
export interface RetrySettlementRequest {
  retryId: string;
  /** The admin who asked, and why: in the workflow's history as in `redemption_retries`. */
  requestedBy: string;
  reason: string;
}

export type RetrySettlementResult = RetryPayoutResult & {
  /** The redemption's status once the retry's step is over. */
  status: 'PENDING_PAYMENT' | 'SETTLED' | 'FAILED';
};

export const openRedemptionUpdate = defineUpdate<{ created: boolean; state: RedemptionState }, [OpenRedemptionInput]>('openRedemption');
/** A transfer event from the gateway's webhook (delivered possibly late, twice or out of order). */
export const transferEventSignal = defineSignal<[{ eventId: string; transferId: string; status: ReportedTransferStatus; failReason: string | null }]>(
  'transferEvent',
);

export const retrySettlementUpdate = defineUpdate<RetrySettlementResult, [RetrySettlementRequest]>('retrySettlement');
