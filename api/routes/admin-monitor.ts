import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { listInboxEvents, type InboxEventRow } from '../../db/inbox-admin.ts';
import { listOperations } from '../../db/operation-log.ts';
import { listPenaltyLog } from '../../db/webhook-monitor.ts';
import { guardEveryRoute } from '../plugins/auth.ts';
import { createWebhookOperations, type InboxRepairOutcome } from '../../services/webhook-operations.ts';
import { webhookRemovalRateLimit } from './redemption-webhooks.ts';
import { adminErrors, errorResponse, monitorPageQuery, pageQuery } from '../schemas/common.ts';
import { examplePubkeys } from '../schemas/examples.ts';
import {
  backoffRemovedAnswer,
  backoffRemovedResponse,
  dashboardResponse,
  diagnosticsResponse,
  inboxEventItem,
  inboxEventsFilter,
  inboxRepairResponse,
  inboxStatsResponse,
  monitorRunResponse,
  operationItem,
  operationsFilter,
  penaltyLogFilter,
  penaltyLogItem,
  webhookIdParams,
} from '../schemas/webhooks.ts';

/**
 * Administration of webhooks: the events received (`/webhooks`), their diagnostics, and the
 * monitor (`/monitor/*`: penalty log, operation log, dashboard, manual penalty removal, checks,
 * the removal queue, the inbox). Lists are newest first and bounded: monitor lists up to 500
 * (default 100), `/webhooks` up to 200 (default 50), reprocess-dead up to 50 (default 10).
 */
const gatewayErrors = { 502: errorResponse, 503: errorResponse, 504: errorResponse } as const;

function toInboxEventItem(row: InboxEventRow): z.infer<typeof inboxEventItem> {
  return { ...row, received_at: row.received_at.toISOString(), processed_at: row.processed_at?.toISOString() ?? null };
}

function repairResponse(events: InboxRepairOutcome[], more: boolean): z.infer<typeof inboxRepairResponse> {
  return { events, started: events.filter((e) => e.outcome === 'started').length, more };
}

export async function adminMonitorRoutes(app: FastifyInstance): Promise<void> {
  const routes = app.withTypeProvider<ZodTypeProvider>();
  const { pool } = app.deps;
  const operations = createWebhookOperations(app.deps);
  guardEveryRoute(app);
  const security = [{ bearer: [] }];
  const tags = ['admin: monitor'];
  const actor = (request: { admin: { username: string } | null }): string => request.admin?.username ?? 'unknown';

  routes.get(
    '/webhooks',
    {
      schema: {
        tags,
        summary: 'Webhook events received, newest first, optionally by provider (payloads are not listed)',
        description:
          "The inbox of every webhook delivery we accepted (gateway and Supabase), newest first, a page at a time (at most 200): provider, endpoint, the provider's event id and type, status (RECEIVED, PROCESSING, PROCESSED, IGNORED, DEAD), attempts, the last error, duplicates received and when it was received and processed. Payloads are never listed: they may carry personal data.",
        security,
        querystring: pageQuery.extend({ provider: z.enum(['gateway', 'supabase']).optional() }),
        requestExample: { querystring: { provider: 'gateway', limit: 50, offset: 0 } },
        response: { 200: z.array(inboxEventItem), ...adminErrors },
      },
    },
    async (request) => {
      const { provider, limit, offset } = request.query;
      return (await listInboxEvents(pool, { provider }, { limit, offset })).map(toInboxEventItem);
    },
  );

  routes.get(
    '/webhooks/diagnostics',
    {
      schema: {
        tags,
        summary: "Per provider: whether its token is configured (never the value), its last delivery, deliveries refused for a bad token, failure and dead rates",
        description:
          "For each webhook provider (the gateway, Supabase), over the last 24 hours: whether its webhook token is configured (never the token), when it last delivered, events received, failed and dead with their rates, events still waiting, and deliveries refused for a missing or wrong token with the last such refusal. Answers from our records alone; the gateway is not called.",
        security,
        response: { 200: diagnosticsResponse, ...adminErrors },
      },
    },
    async () => operations.diagnostics(),
  );

  routes.get(
    '/monitor/penalty-logs',
    {
      schema: {
        tags,
        summary: 'The penalty log: penalties and interruptions the monitor found, removals, refusals, configures; newest first',
        description:
          "Every entry the webhook monitor and the operators wrote, newest first, a page at a time (at most 500), optionally for one webhook or one action: PENALIZED and INTERRUPTED (found by a monitor check), QUEUED (for a removal), RECOVERED (healthy again before one), REMOVED (with the cooldown it started), REMOVAL_REFUSED (the gateway's own cooldown), CONFIGURED; with the penalty count seen, who acted (`monitor`, `api`, `admin`, and the operator) and the cooldown.",
        security,
        querystring: monitorPageQuery.extend(penaltyLogFilter.shape),
        requestExample: { querystring: { webhook_id: 'wh_transfer', action: 'REMOVED', limit: 100, offset: 0 } },
        response: { 200: z.array(penaltyLogItem), ...adminErrors },
      },
    },
    async (request) => {
      const { webhook_id: webhookId, action, limit, offset } = request.query;
      const rows = await listPenaltyLog(pool, { webhookId, action }, { limit, offset });
      return rows.map((row) => ({
        ...row,
        id: row.id.toString(),
        cooldown_until: row.cooldown_until?.toISOString() ?? null,
        created_at: row.created_at.toISOString(),
      }));
    },
  );

  routes.get(
    '/monitor/operations',
    {
      schema: {
        tags,
        summary: "The operation log: every operation that moved money or called the gateway, and every operator's decision, newest first",
        description:
          "One entry per activity execution that moved money or called the gateway (written by the worker's interceptor before the activity's completion is reported: docs/architecture.md, \"The operation log\"), newest first, a page at a time (at most 500), optionally by operation type, status (STARTED, SUCCEEDED, FAILED, REFUSED), owner and reference: its step, reference, workflow and activity ids, attempts, duration, error, and for an operator's decision (LIMIT_DECISION, BUSINESS_DECISION, KEY_BLOCK_LIFT, ADMIN_USER, written by the route that takes it) the admin who made it (`actor`).",
        security,
        querystring: monitorPageQuery.extend(operationsFilter.shape),
        requestExample: { querystring: { operation_type: 'REDEMPTION', status: 'FAILED', owner_id: examplePubkeys.bob, reference_id: 'a7c1e1a4-55a8-4d7e-9a61-3c1f0a2b9d10', limit: 100, offset: 0 } },
        response: { 200: z.array(operationItem), ...adminErrors },
      },
    },
    async (request) => {
      const { operation_type: operationType, status, owner_id: ownerId, reference_id: referenceId, limit, offset } = request.query;
      const rows = await listOperations(pool, { operationType, status, ownerId, referenceId }, { limit, offset });
      return rows.map(({ run_id: _runId, ...row }) => ({
        ...row,
        id: row.id.toString(),
        started_at: row.started_at.toISOString(),
        finished_at: row.finished_at?.toISOString() ?? null,
      }));
    },
  );

  routes.get(
    '/monitor/dashboard',
    {
      schema: {
        tags,
        summary: 'Webhook queues (live from the gateway when it answers), penalties, the monitor, operations and the inbox over 24 hours',
        description:
          "One page for an operator: the gateway's webhooks counted by state (asked live with a 3 s bound; `available: false` with the error code when the gateway does not answer, and the rest of the page still comes), penalty log entries by action over 24 hours, the removal queue and active cooldowns, the monitor's last run, operations by type and status with their mean duration, and the inbox (waiting, dead, the oldest waiting).",
        security,
        response: { 200: dashboardResponse, ...adminErrors },
      },
    },
    async () => operations.dashboard(),
  );

  routes.post(
    '/monitor/remove-penalty/:webhook_id',
    {
      schema: {
        tags,
        summary: 'Remove the backoff of a webhook by hand; at most once per cooldown per webhook (429 with Retry-After, the gateway not called)',
        description:
          "The operator's form of `POST /api/v1/redemption/webhook/remove-backoff/{webhook_id}`, logged with source `admin`: an update of the workflow `webhook-cooldown-<webhook_id>`, which claims the cooldown (`WEBHOOK_BACKOFF_COOLDOWN_MS`) and calls the gateway once; of two operators at once, one calls and the other gets 429 `WEBHOOK_COOLDOWN` with `Retry-After`. 404 `WEBHOOK_NOT_FOUND`; 502 `GATEWAY_ERROR`, `GATEWAY_REFUSED`; 504 `GATEWAY_TIMEOUT`; 503 `DEPENDENCY_TIMEOUT` when the worker has not answered within 60 s (the removal may still happen: the penalty log will show it).",
        security,
        params: webhookIdParams,
        response: { 200: backoffRemovedResponse, 404: errorResponse, 429: errorResponse, ...gatewayErrors, ...adminErrors },
      },
      config: webhookRemovalRateLimit(app.deps.config.RATE_LIMIT_WEBHOOK_REMOVAL_PER_MINUTE),
    },
    async (request) => {
      const removed = await operations.removeBackoff(request.params.webhook_id, actor(request), 'admin');
      request.log.info({ webhook_id: removed.webhookId, admin: actor(request) }, 'webhook penalty removed');
      return backoffRemovedAnswer(removed);
    },
  );

  for (const [path, mode, summary] of [
    ['/monitor/check-webhooks', 'check', 'Check the gateway\'s webhook queues now: log penalties, queue penalised and interrupted webhooks for removal'],
    ['/monitor/process-queue', 'process', 'Process the removal queue now (after a fresh check): remove what the cooldowns allow'],
  ] as const) {
    routes.post(
      path,
      {
        schema: {
          tags,
          summary,
          description: `Runs the webhook monitor workflow (webhook-monitor-${mode}-<id>) and answers its report; 202 with the workflow id if it takes longer than 45 s.`,
          security,
          response: { 200: monitorRunResponse, 202: monitorRunResponse, ...gatewayErrors, ...adminErrors },
        },
      },
      async (request, reply) => {
        const { workflowId, report } = await operations.runMonitor(mode);
        request.log.info({ workflow_id: workflowId, admin: actor(request) }, `webhook monitor ${mode} run`);
        if (report === null) return reply.code(202).send({ workflow_id: workflowId, status: 'RUNNING' as const, report: null });
        return { workflow_id: workflowId, status: 'COMPLETED' as const, report };
      },
    );
  }

  routes.get(
    '/monitor/inbox/stats',
    {
      schema: {
        tags,
        summary: 'Inbox statistics: counts by status and event type, the oldest event waiting, dead events',
        description:
          'Counts over the whole webhook inbox: by status, by event type and status, events waiting (received but not finished), dead ones, the age and id of the oldest waiting event, and duplicate deliveries. A growing `oldest_waiting_ms` says the worker is not taking events: see `process-now`.',
        security,
        response: { 200: inboxStatsResponse, ...adminErrors },
      },
    },
    async () => {
      const stats = await operations.inboxStats();
      return {
        total: stats.total,
        by_status: stats.by_status,
        by_event_type: stats.by_event_type.map((row) => ({ event_type: row.event_type, status: row.status, count: row.n })),
        waiting: stats.waiting,
        dead: stats.dead,
        oldest_waiting_ms: stats.oldest_waiting_ms === null ? null : Math.max(0, Math.round(stats.oldest_waiting_ms)),
        oldest_waiting_event_id: stats.oldest_waiting_event_id,
        duplicates: stats.duplicates,
      };
    },
  );

  routes.get(
    '/monitor/inbox/events',
    {
      schema: {
        tags,
        summary: 'Inbox events, newest first, by status and event type (payloads are not listed)',
        description:
          "The inbox's events, newest first, a page at a time (at most 500), optionally only one status (RECEIVED, PROCESSING, PROCESSED, IGNORED, DEAD) or one event type (the provider's, e.g. `TRANSFER_DONE`): ids, attempts, last error, duplicates and times. Payloads are never listed.",
        security,
        querystring: monitorPageQuery.extend(inboxEventsFilter.shape),
        requestExample: { querystring: { status: 'DEAD', event_type: 'TRANSFER_DONE', limit: 100, offset: 0 } },
        response: { 200: z.array(inboxEventItem), ...adminErrors },
      },
    },
    async (request) => {
      const { status, event_type: eventType, limit, offset } = request.query;
      return (await listInboxEvents(pool, { status, eventType }, { limit, offset })).map(toInboxEventItem);
    },
  );

  routes.post(
    '/monitor/inbox/reprocess-dead',
    {
      schema: {
        tags,
        summary: 'Send up to `limit` dead events (oldest first) through a new run of their webhook workflow, each once',
        description: 'Two operators pressing together take disjoint events: each dead event is reprocessed once.',
        security,
        querystring: z.object({ limit: z.coerce.number().int().min(1).max(50).default(10) }),
        requestExample: { querystring: { limit: 10 } },
        response: { 200: inboxRepairResponse, ...adminErrors },
      },
    },
    async (request) => {
      const events = await operations.reprocessDead(request.query.limit);
      request.log.info({ admin: actor(request), events: events.length }, 'dead inbox events reprocessed');
      return repairResponse(events, false);
    },
  );

  routes.post(
    '/monitor/inbox/process-now',
    {
      schema: {
        tags,
        summary: 'Start the workflow of every event received but not finished (after a worker outage, a crash before the start); at most 100 a call',
        description:
          "For each inbox event stored but not finished, oldest first, starts its workflow `webhook-<provider>-<event_id>` (the id makes a second start of a running one harmless: it answers `running`); each event's outcome is in the answer (`started`, `running`, `not_started` with the error), and `more: true` when over 100 were waiting (call again).",
        security,
        response: { 200: inboxRepairResponse, ...adminErrors },
      },
    },
    async (request) => {
      const { events, more } = await operations.processNow();
      request.log.info({ admin: actor(request), events: events.length, more }, 'inbox processed now');
      return repairResponse(events, more);
    },
  );
}
