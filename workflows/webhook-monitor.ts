import { proxyActivities } from '@temporalio/workflow';
import type { WebhookMonitorActivities } from '../activities/webhook-monitor.ts';
import type { WebhookMonitorInput, WebhookMonitorReport } from './webhook-messages.ts';

/**
 * The webhook monitor: one run reads the gateway's webhook queues, logs every penalty and
 * interruption it finds and queues those webhooks for removal (`checkWebhooks`), then, when
 * asked, removes what the cooldowns allow (`processRemovalQueue`, each removal through
 * `webhook-cooldown-<id>`). The Temporal Schedule `webhook-monitor` starts a `scheduled` run every
 * WEBHOOK_MONITOR_INTERVAL_MS, processing the queue when WEBHOOK_AUTO_HEAL is on; an operator's
 * check-webhooks starts a `check` run, process-queue a `process` run (a check, then the queue).
 */
const { checkWebhooks } = proxyActivities<WebhookMonitorActivities>({
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '1 second', maximumInterval: '10 seconds', backoffCoefficient: 2, maximumAttempts: 3 },
});
const { processRemovalQueue } = proxyActivities<WebhookMonitorActivities>({
  // Each removal waits for its cooldown workflow (a gateway call of at most a few attempts).
  startToCloseTimeout: '10 minutes',
  heartbeatTimeout: '2 minutes',
  retry: { initialInterval: '1 second', maximumInterval: '30 seconds', backoffCoefficient: 2, maximumAttempts: 3 },
});

export async function webhookMonitorWorkflow(input: WebhookMonitorInput): Promise<WebhookMonitorReport> {
  const check = await checkWebhooks({ mode: input.mode });
  const process = input.mode === 'process' || (input.mode === 'scheduled' && input.autoHeal);
  const removals = process ? await processRemovalQueue({ cooldownMs: input.cooldownMs }) : null;
  return { mode: input.mode, check, removals };
}
