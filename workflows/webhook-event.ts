import { ActivityFailure, getExternalWorkflowHandle, patched, proxyActivities, proxyLocalActivities } from '@temporalio/workflow';
import type { WebhookActivities } from '../activities/webhooks.ts';
import { paymentEventSignal } from './charge-signals.ts';
import { transferEventSignal } from './redemption-messages.ts';

/**
 * Processing of one stored webhook (`webhook-<provider>-<event_id>`; the id makes a duplicate
 * delivery start nothing). Route it (which checks it against the gateway), signal the workflow it
 * is about with the gateway's status, record the outcome. When routing keeps failing (the gateway
 * cannot be read, the database is down), the event ends DEAD in the inbox, from where an operator
 * reprocesses it.
 */
const routeOptions = {
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', maximumInterval: '30 seconds', backoffCoefficient: 2, maximumAttempts: 8 },
} as const;
const finishOptions = {
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', maximumInterval: '30 seconds', maximumAttempts: 20 },
} as const;
const remote = {
  routeInboxEvent: proxyActivities<WebhookActivities>(routeOptions).routeInboxEvent,
  finishInboxEvent: proxyActivities<WebhookActivities>(finishOptions).finishInboxEvent,
};
/**
 * Since patch `webhook-event-local-activities` both steps are local activities (same retries,
 * same dead-letter end): routing runs in the workflow's first task and the outcome is recorded
 * in the task that sees the signal delivered, two workflow tasks per event instead of four.
 */
const local = {
  routeInboxEvent: proxyLocalActivities<WebhookActivities>(routeOptions).routeInboxEvent,
  finishInboxEvent: proxyLocalActivities<WebhookActivities>(finishOptions).finishInboxEvent,
};

export async function webhookEventWorkflow(input: { inboxId: string }): Promise<string> {
  const { routeInboxEvent, finishInboxEvent } = patched('webhook-event-local-activities') ? local : remote;
  let route;
  try {
    route = await routeInboxEvent({ inboxId: input.inboxId });
  } catch (error) {
    const message = error instanceof ActivityFailure ? (error.cause?.message ?? error.message) : String(error);
    await finishInboxEvent({ inboxId: input.inboxId, status: 'DEAD', error: message });
    return 'DEAD';
  }
  // Since patch `webhook-gateway-word`, routing reads the transfer or payment back from the
  // gateway (services/gateway-word.ts); an event the gateway contradicts is recorded
  // CONTRADICTED with the gateway's answer, whatever else happens to it. Histories recorded before
  // carry no contradiction and never reach the patch.
  const contradicted = route.contradiction !== undefined && patched('webhook-gateway-word');
  if (route.kind === 'ignore') {
    if (contradicted) {
      await finishInboxEvent({ inboxId: input.inboxId, status: 'CONTRADICTED', result: { reason: route.reason, contradiction: route.contradiction } });
      return 'CONTRADICTED';
    }
    await finishInboxEvent({ inboxId: input.inboxId, status: 'IGNORED', result: { reason: route.reason } });
    return 'IGNORED';
  }
  try {
    const handle = getExternalWorkflowHandle(route.workflowId);
    if (route.signal === 'transferEvent') await handle.signal(transferEventSignal, route.payload);
    else await handle.signal(paymentEventSignal, route.payload);
  } catch {
    // The target has finished: its outcome is final and this late event cannot move it.
    if (contradicted) {
      await finishInboxEvent({
        inboxId: input.inboxId,
        status: 'CONTRADICTED',
        result: { reason: `${route.workflowId} has finished`, contradiction: route.contradiction, route },
      });
      return 'CONTRADICTED';
    }
    await finishInboxEvent({ inboxId: input.inboxId, status: 'IGNORED', result: { reason: `${route.workflowId} has finished`, route } });
    return 'IGNORED';
  }
  if (contradicted) {
    // The owner heard the gateway's own status, not the event's.
    await finishInboxEvent({
      inboxId: input.inboxId,
      status: 'CONTRADICTED',
      result: { contradiction: route.contradiction, signalled: route.workflowId, signal: route.signal, status: route.payload.status },
    });
    return 'CONTRADICTED';
  }
  await finishInboxEvent({ inboxId: input.inboxId, status: 'PROCESSED', result: { signalled: route.workflowId, signal: route.signal } });
  return 'PROCESSED';
}
