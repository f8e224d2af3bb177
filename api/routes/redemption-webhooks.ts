import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { guardEveryRoute } from '../plugins/auth.ts';
import { createWebhookOperations } from '../../services/webhook-operations.ts';
import { adminErrors, errorResponse } from '../schemas/common.ts';
import { backoffRemovedAnswer, backoffRemovedResponse, reactivateAllResponse, webhookHealthResponse, webhookIdParams, webhookView } from '../schemas/webhooks.ts';

/**
 * The gateway's webhooks (the spec's "Redemption through the payment gateway": webhook list,
 * remove-backoff, reactivate-all, health, configure). They read or change the gateway's webhook
 * configuration, so they need an admin bearer token: the spec marks only token-check and the
 * transfer status as public, and a public remove-backoff would let anyone spend our cooldown.
 * Gateway failures answer 502 GATEWAY_ERROR / GATEWAY_REFUSED or 504 GATEWAY_TIMEOUT.
 */
const gatewayErrors = { 502: errorResponse, 503: errorResponse, 504: errorResponse } as const;

/**
 * The rate limit of the two backoff removals (remove-backoff here, remove-penalty in
 * admin-monitor.ts), one count per client address for both, checked before the admin guard
 * (`guardEveryRoute`). A removal refused by its cooldown still costs a Temporal update on the
 * cooldown workflow, so a client retrying in a loop, with or without a valid token, is slowed;
 * and a 429 on these routes always means "too soon, see Retry-After": the address's rate
 * (`RATE_LIMITED`) or the webhook's cooldown (`WEBHOOK_COOLDOWN`).
 */
export function webhookRemovalRateLimit(max: number) {
  return { rateLimit: { max, timeWindow: 60_000, groupId: 'webhook-removal' } };
}

export async function redemptionWebhookRoutes(app: FastifyInstance): Promise<void> {
  const routes = app.withTypeProvider<ZodTypeProvider>();
  const operations = createWebhookOperations(app.deps);
  guardEveryRoute(app);
  const security = [{ bearer: [] }];
  const tags = ['redemption: webhooks'];
  const actor = (request: { admin: { username: string } | null }): string => request.admin?.username ?? 'unknown';

  routes.get(
    '/list',
    {
      schema: {
        tags,
        summary: 'The webhooks configured at the gateway, with their penalties, cooldowns and the newest events we received through each',
        description:
          "Reads the gateway's webhooks (through the one gateway client) and joins each with our records: which of our endpoints it delivers to, whether it is enabled or interrupted, its penalty count, the events it is subscribed to and those it misses, whether the monitor queued it for a backoff removal, the cooldown left before the next removal, and the newest 5 events our endpoint received through it. Nothing is changed. Gateway failures: 502 `GATEWAY_ERROR`, `GATEWAY_REFUSED`; 504 `GATEWAY_TIMEOUT`.",
        security,
        response: { 200: z.array(webhookView), ...gatewayErrors, ...adminErrors },
      },
    },
    async () => operations.listWebhooks(5),
  );

  routes.get(
    '/health',
    {
      schema: {
        tags,
        summary: 'State of every webhook queue (enabled, interrupted, penalties, cooldowns, recent events) and of the monitor',
        description:
          "The list's view with 10 recent events per webhook, summed up in one status: `down` when a queue is interrupted (the gateway sends nothing; redemptions wait for transfer events that do not come), `degraded` when one is penalised, disabled or misses events, `ok` otherwise; with the monitor's interval, whether it removes penalties itself, the cooldown and its last check. Nothing is changed. Gateway failures: 502 `GATEWAY_ERROR`, `GATEWAY_REFUSED`; 504 `GATEWAY_TIMEOUT`.",
        security,
        response: { 200: webhookHealthResponse, ...gatewayErrors, ...adminErrors },
      },
    },
    async () => operations.health(),
  );

  routes.post(
    '/remove-backoff/:webhook_id',
    {
      schema: {
        tags,
        summary: 'Remove the penalty and reactivate the queue of a webhook; at most once per cooldown (5 minutes) per webhook',
        description:
          'Goes through the workflow webhook-cooldown-<webhook_id>: within the cooldown the answer is 429 WEBHOOK_COOLDOWN with Retry-After and the gateway is not called; two requests at once make one gateway call.',
        security,
        params: webhookIdParams,
        response: { 200: backoffRemovedResponse, 404: errorResponse, 429: errorResponse, ...gatewayErrors, ...adminErrors },
      },
      config: webhookRemovalRateLimit(app.deps.config.RATE_LIMIT_WEBHOOK_REMOVAL_PER_MINUTE),
    },
    async (request) => {
      const removed = await operations.removeBackoff(request.params.webhook_id, actor(request), 'api');
      request.log.info({ webhook_id: removed.webhookId, admin: actor(request) }, 'webhook backoff removed');
      return backoffRemovedAnswer(removed);
    },
  );

  routes.post(
    '/reactivate-all',
    {
      schema: {
        tags,
        summary: 'Remove the backoff of every interrupted or penalised webhook, each as its cooldown allows; answers per webhook',
        description:
          "Reads the gateway's webhooks and sends a backoff removal through `webhook-cooldown-<webhook_id>` for each one that is interrupted or penalised, one after the other. Each webhook's outcome is in the answer: `removed` (with the cooldown it started), `refused` (its cooldown, ours or the gateway's, has `retry_after_ms` left), `failed` (with the gateway's error code) or `not_needed`; the counts sum them up. A refusal or failure of one webhook does not stop the others. The list itself failing answers 502 `GATEWAY_ERROR`, `GATEWAY_REFUSED` or 504 `GATEWAY_TIMEOUT`.",
        security,
        response: { 200: reactivateAllResponse, ...gatewayErrors, ...adminErrors },
      },
    },
    async (request) => {
      const results = await operations.reactivateAll(actor(request));
      request.log.info({ admin: actor(request), results: results.map((r) => `${r.webhook_id}:${r.outcome}`) }, 'webhooks reactivated');
      return {
        results,
        removed: results.filter((r) => r.outcome === 'removed').length,
        refused: results.filter((r) => r.outcome === 'refused').length,
        failed: results.filter((r) => r.outcome === 'failed').length,
      };
    },
  );

  routes.put(
    '/configure/:webhook_id',
    {
      schema: {
        tags,
        summary: "Subscribe a webhook to every event the service reads (Asaas's PAYMENT_*, TRANSFER_* and BILL_* names), with our URL and token, enabled and not interrupted",
        description:
          'Sets GATEWAY_WEBHOOK_URL and the webhook token (never returned) on the webhook. Unlike a backoff removal, the gateway resumes a queue set not interrupted at once and keeps its penalty count until a delivery succeeds.',
        security,
        params: webhookIdParams,
        response: { 200: webhookView, 404: errorResponse, ...gatewayErrors, ...adminErrors },
      },
    },
    async (request) => {
      const view = await operations.configure(request.params.webhook_id, actor(request));
      request.log.info({ webhook_id: view.id, admin: actor(request) }, 'webhook configured');
      return view;
    },
  );
}
