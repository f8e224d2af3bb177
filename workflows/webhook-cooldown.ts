import {
  ActivityFailure,
  allHandlersFinished,
  ApplicationFailure,
  condition,
  proxyLocalActivities,
  setHandler,
  sleep,
} from '@temporalio/workflow';
import type { WebhookMonitorActivities } from '../activities/webhook-monitor.ts';
import { failureType } from './failure-type.ts';
import { cooldownQuery, removeBackoffUpdate, type BackoffRemovalResult, type WebhookCooldownInput } from './webhook-messages.ts';

/**
 * The cooldown between two backoff removals of one gateway webhook (`webhook-cooldown-<id>`, the
 * spec's Limits: at least 5 minutes per webhook). Every removal, an operator's or the monitor's,
 * is an update of this workflow, sent with update-with-start (conflict policy USE_EXISTING): all
 * requests for one webhook land on one execution, whose handlers decide one at a time, so two
 * operators pressing at once cause one gateway call and one refusal.
 *
 * A request within the cooldown is refused with the time left and the gateway is not called.
 * Otherwise the cooldown starts before the gateway call (a second request arriving during the
 * call is refused); the call is a local activity. If it fails (unknown webhook, gateway down), no
 * removal happened, or none we can be sure of, so the cooldown is released and the update fails
 * with the domain code; the gateway's own refusal (429) becomes our cooldown for its Retry-After.
 * The execution ends once its cooldown has passed and no request is being handled; the next
 * removal starts a new one.
 */
const { removeWebhookBackoff } = proxyLocalActivities<WebhookMonitorActivities>({
  // A person may be waiting on the answer: a few quick attempts, each bounded by the client's timeout.
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '500 milliseconds', maximumInterval: '2 seconds', backoffCoefficient: 2, maximumAttempts: 3 },
});

export async function webhookCooldownWorkflow(input: WebhookCooldownInput): Promise<{ removals: number; refusals: number }> {
  let untilMs = 0;
  let requests = 0;
  let removals = 0;
  let refusals = 0;

  setHandler(cooldownQuery, () => ({ cooldownUntilMs: untilMs }));

  setHandler(removeBackoffUpdate, async (request): Promise<BackoffRemovalResult> => {
    requests += 1;
    const now = Date.now();
    if (now < untilMs) {
      refusals += 1;
      return { kind: 'refused', webhookId: input.webhookId, reason: 'cooldown', retryAfterMs: untilMs - now, cooldownUntil: new Date(untilMs).toISOString() };
    }
    // Claimed before the first await: a request handled meanwhile sees the cooldown.
    const previous = untilMs;
    untilMs = now + input.cooldownMs;
    const cooldownUntil = new Date(untilMs).toISOString();
    try {
      const outcome = await removeWebhookBackoff({ webhookId: input.webhookId, cooldownUntil, requestedBy: request.requestedBy, source: request.source });
      if (outcome.kind === 'too_soon') {
        untilMs = Date.now() + outcome.retryAfterMs;
        refusals += 1;
        return {
          kind: 'refused',
          webhookId: input.webhookId,
          reason: 'gateway_cooldown',
          retryAfterMs: outcome.retryAfterMs,
          cooldownUntil: new Date(untilMs).toISOString(),
        };
      }
      removals += 1;
      return { kind: 'removed', webhookId: input.webhookId, cooldownUntil, webhook: outcome.webhook };
    } catch (error) {
      untilMs = previous;
      const message = error instanceof ActivityFailure ? (error.cause?.message ?? error.message) : String(error);
      throw ApplicationFailure.create({ type: failureType(error), message, nonRetryable: true });
    }
  });

  // Started by update-with-start: the first request comes with the start.
  await condition(() => requests > 0, input.cooldownMs);
  for (;;) {
    const leftMs = untilMs - Date.now();
    if (leftMs > 0) {
      await sleep(leftMs);
      continue;
    }
    await condition(allHandlersFinished);
    if (untilMs <= Date.now()) break;
  }
  return { removals, refusals };
}
