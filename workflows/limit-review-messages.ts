import { defineUpdate } from '@temporalio/workflow';
import type { LimitDecisionInput, LimitRequestState, OpenLimitRequestInput } from '../activities/plc-limits.ts';

/**
 * The updates of a limit review workflow (`limit-review-<request_id>`, workflows/limit-review.ts):
 * what the API sends, importable without the workflow's code.
 */
export const openLimitRequestUpdate = defineUpdate<LimitRequestState, [OpenLimitRequestInput]>('openLimitRequest');
export const decideLimitRequestUpdate = defineUpdate<LimitRequestState, [LimitDecisionInput]>('decideLimitRequest');
