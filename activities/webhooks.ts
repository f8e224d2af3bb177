import { finishInboxEvent, type InboxFinalStatus } from '../db/inbox.ts';
import type { Pool } from '../db/pool.ts';
import type { GatewayReader } from '../services/gateway-word.ts';
import { routeInboxEvent, type InboxRoute } from '../services/webhook-routing.ts';

export type { InboxRoute } from '../services/webhook-routing.ts';

/**
 * The webhook workflow's steps (workflows/webhook-event.ts), thin over services/webhook-routing.ts,
 * which the API also runs in the webhook's request (docs/settlement.md, "Webhooks").
 */
export function createWebhookActivities(deps: { pool: Pool; gateway: GatewayReader }) {
  const { pool } = deps;
  return {
    /** Routes one stored event (services/webhook-routing.ts `routeInboxEvent`). */
    async routeInboxEvent(input: { inboxId: string }): Promise<InboxRoute> {
      return routeInboxEvent(deps, input);
    },

    async finishInboxEvent(input: { inboxId: string; status: InboxFinalStatus | 'DEAD'; result?: unknown; error?: string }): Promise<void> {
      await finishInboxEvent(pool, input.inboxId, input);
    },
  };
}

export type WebhookActivities = ReturnType<typeof createWebhookActivities>;
