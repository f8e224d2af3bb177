import { WithStartWorkflowOperation, WorkflowNotFoundError, type Client } from '@temporalio/client';
import type { GatewayWebhook } from '../gateway/index.ts';
import { workflowIds } from '../workflows/ids.ts';
import { removeBackoffUpdate, type BackoffRemovalResult, type BackoffRemovalSource, type WebhookCooldownInput } from '../workflows/webhook-messages.ts';
import { referenceIdKey } from '../workflows/search-attributes.ts';

/**
 * The gateway webhooks' backoff removal as the monitor's activities and the operators' API ask
 * for it: one `webhook-cooldown-<id>` execution decides, whoever asks.
 */

/** A queue needs a removal when the gateway holds a penalty against it or has interrupted it. */
export function needsRemoval(webhook: GatewayWebhook): boolean {
  return webhook.interrupted || (webhook.penalizedRequestsCount ?? 0) > 0;
}

/**
 * Asks `webhook-cooldown-<id>` for one backoff removal, starting it when it is not running
 * (update-with-start, conflict policy USE_EXISTING): however many callers ask at once, they land
 * on one execution, which decides one request at a time. An update that reaches an execution in
 * the moment it completes is tried again (a new run then answers).
 */
export async function requestBackoffRemoval(
  temporal: Pick<Client, 'workflow'>,
  input: { taskQueue: string; cooldownMs: number; webhookId: string; requestedBy: string; source: BackoffRemovalSource },
): Promise<BackoffRemovalResult> {
  const workflowId = workflowIds.webhookCooldown(input.webhookId);
  const args: [WebhookCooldownInput] = [{ webhookId: input.webhookId, cooldownMs: input.cooldownMs }];
  for (let attempt = 1; ; attempt += 1) {
    const startWorkflowOperation = new WithStartWorkflowOperation('webhookCooldownWorkflow', {
      workflowId,
      taskQueue: input.taskQueue,
      args,
      workflowIdConflictPolicy: 'USE_EXISTING',
      // An operator finds a webhook's cooldowns in the Temporal UI with ReferenceId = "<webhook_id>".
      typedSearchAttributes: [{ key: referenceIdKey, value: input.webhookId }],
    });
    try {
      return await temporal.workflow.executeUpdateWithStart(removeBackoffUpdate, {
        startWorkflowOperation,
        args: [{ requestedBy: input.requestedBy, source: input.source }],
      });
    } catch (error) {
      const completedMeanwhile = error instanceof WorkflowNotFoundError || (error instanceof Error && /already completed/i.test(error.message));
      if (!completedMeanwhile || attempt >= 3) throw error;
    }
  }
}
