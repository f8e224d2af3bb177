import { proxyActivities, upsertSearchAttributes } from '@temporalio/workflow';
import type { PinResetEmailInput, PinResetEmailResult, SecurityActivities } from '../activities/security.ts';
import { businessStatusKey } from './search-attributes.ts';

/**
 * A PIN reset e-mail (`pin-reset-email-<request_id>`), started by POST /api/v1/security/pin/request-reset
 * for every request, matching or not, so that the answer and its timing say nothing about whether
 * the owner and the address match. The one activity makes the token and sends the mail; an SMTP
 * server that is down is retried with backoff for up to 15 minutes, half the token's default life.
 * BusinessStatus ends SENT or NO_MATCH.
 */
const { sendPinResetEmail } = proxyActivities<SecurityActivities>({
  startToCloseTimeout: '1 minute',
  scheduleToCloseTimeout: '15 minutes',
  retry: {
    initialInterval: '2 seconds',
    backoffCoefficient: 2,
    maximumInterval: '1 minute',
    nonRetryableErrorTypes: ['PIN_RESET_EMAIL_UNAVAILABLE'],
  },
});

export async function pinResetEmailWorkflow(input: PinResetEmailInput): Promise<PinResetEmailResult> {
  const result = await sendPinResetEmail(input);
  upsertSearchAttributes([{ key: businessStatusKey, value: result.status }]);
  return result;
}
