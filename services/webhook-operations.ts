import { randomUUID } from 'node:crypto';
import { WorkflowExecutionAlreadyStartedError, WorkflowFailedError, type Client } from '@temporalio/client';
import { claimDeadEvents, inboxStats, listUnfinishedEvents, providerDiagnostics, recentEventsByEndpoint, type ClaimedInboxEvent, type InboxEventRow } from '../db/inbox-admin.ts';
import { finishOperation, operationCountsSince, startOperation } from '../db/operation-log.ts';
import { withTransaction, type Pool } from '../db/pool.ts';
import {
  activeCooldowns,
  appendPenaltyLog,
  latestMonitorRun,
  listRemovalQueue,
  penaltyCountsSince,
  webhookAuthRefusalsSince,
  type MonitorRunRow,
  type PenaltySource,
} from '../db/webhook-monitor.ts';
import { needsRemoval, requestBackoffRemoval } from './webhook-cooldown.ts';
import { gatewayFailureKind, isGatewayError, webhookEvents, type GatewayClient, type GatewayWebhook } from '../gateway/index.ts';
import { gatewayWebhookUrl, webhookAutoHealEnabled, type Config } from '../infra/config.ts';
import { DomainError } from '../src/errors.ts';
import { workflowIds } from '../workflows/ids.ts';
import { referenceIdKey } from '../workflows/search-attributes.ts';
import type { BackoffRemovalResult, WebhookMonitorInput, WebhookMonitorReport } from '../workflows/webhook-messages.ts';
import { toDomainError, withTemporalDeadline } from './temporal.ts';

/**
 * The gateway's webhooks and our inbox as operators run them (docs/settlement.md, "Operators"):
 * the routes under /api/v1/redemption/webhook/ and /api/v1/admin/monitor/ call this service and
 * answer. Reads join the gateway's view (through the one gateway client) with our records;
 * every removal goes through `webhook-cooldown-<id>`; monitor runs are workflows.
 */

export interface WebhookOperationsDeps {
  config: Config;
  pool: Pool;
  temporal: Client;
  gateway: GatewayClient;
}

/** Our webhook endpoints, by the path a gateway webhook's URL ends with, as the inbox names them. */
const endpointsByPath: readonly [string, string][] = [
  ['/api/v1/redemption/webhook/gateway', 'redemption/gateway'],
  ['/api/v1/webhooks/payment/pix', 'payment/pix'],
  ['/api/v1/webhooks/payment/boleto', 'payment/boleto'],
];

export function inboxEndpointOf(url: string): string | null {
  let path: string;
  try {
    path = new URL(url).pathname.replace(/\/+$/, '');
  } catch {
    return null;
  }
  return endpointsByPath.find(([suffix]) => path.endsWith(suffix))?.[1] ?? null;
}

export interface RecentEvent {
  event_id: string;
  event_type: string | null;
  status: string;
  received_at: string;
}

export interface WebhookView {
  id: string;
  name: string;
  url: string;
  /** Which of our endpoints it delivers to (`redemption/gateway`, `payment/pix`, `payment/boleto`), or null when not ours. */
  endpoint: string | null;
  enabled: boolean;
  interrupted: boolean;
  penalized_requests_count: number;
  events: string[];
  subscribed_to_all: boolean;
  missing_events: string[];
  has_auth_token: boolean | null;
  send_type: string | null;
  queued_for_removal: boolean;
  /** Time left before the next removal is allowed; 0 when one is allowed now. */
  cooldown_remaining_ms: number;
  cooldown_until: string | null;
  recent_events: RecentEvent[];
  last_event_at: string | null;
}

export type ReactivationOutcome =
  | { webhook_id: string; outcome: 'removed'; cooldown_until: string }
  | { webhook_id: string; outcome: 'refused'; retry_after_ms: number; cooldown_until: string; reason: 'cooldown' | 'gateway_cooldown' }
  | { webhook_id: string; outcome: 'failed'; error_code: string; error: string }
  | { webhook_id: string; outcome: 'not_needed' };

export interface InboxRepairOutcome {
  event_id: string;
  inbox_id: string;
  provider: 'gateway' | 'supabase';
  workflow_id: string;
  outcome: 'started' | 'running' | 'not_started';
  error?: string;
}

/** A removal the worker has not answered within this long answers 503 DEPENDENCY_TIMEOUT; it may still happen. */
export const operationWaitMs = 60_000;
/** How long check-webhooks and process-queue wait for their run before answering 202 with its id. */
export const monitorRunWaitMs = 45_000;
/** The Temporal deadline of the workflow starts of reprocess-dead and process-now (up to 100 starts). */
export const inboxStartsWaitMs = 30_000;
/** Events process-now starts per call. */
export const processNowBatchMax = 100;
/** The window of the diagnostics' rates and the dashboard's counts. */
export const statsWindowMs = 24 * 3_600_000;

/** A gateway failure as the domain error the API answers: 404, 502 or 504, each with its stable code. */
export function gatewayDomainError(error: unknown): unknown {
  if (!isGatewayError(error)) return error;
  switch (gatewayFailureKind(error)) {
    case 'timeout':
      return new DomainError('GATEWAY_TIMEOUT', 'the gateway did not answer in time', { gateway_operation: error.operation });
    case 'not_found':
      return new DomainError('WEBHOOK_NOT_FOUND', 'the gateway has no such webhook', { gateway_operation: error.operation });
    case 'refused':
      return new DomainError('GATEWAY_REFUSED', `the gateway refused the request (${error.code})`, {
        gateway_operation: error.operation,
        gateway_status: error.status,
        gateway_code: error.code,
      });
    case 'too_soon':
    case 'unavailable':
      return new DomainError('GATEWAY_ERROR', `the gateway failed (${error.code})`, { gateway_operation: error.operation, gateway_status: error.status });
  }
}

/**
 * Runs `work` with its own Temporal deadline, longer than the request's (api/plugins/deadlines.ts):
 * a removal waits for its gateway call, a monitor run for its report. Past it the error handler
 * answers 503 DEPENDENCY_TIMEOUT (the removal or run may still complete: the penalty log and the
 * monitor runs show it). Domain refusals carried by workflow failures come back as domain errors.
 */
async function withinMs<T>(temporal: Client, ms: number, work: () => Promise<T>): Promise<T> {
  try {
    return await withTemporalDeadline(temporal, Date.now() + ms, work);
  } catch (error) {
    throw toDomainError(error instanceof WorkflowFailedError ? error.cause : error);
  }
}

function toRecent(row: InboxEventRow): RecentEvent {
  return { event_id: row.event_id, event_type: row.event_type, status: row.status, received_at: row.received_at.toISOString() };
}

/** A monitor run as the dashboard shows it: the row but its run id, its time as an ISO string. */
function monitorRunView({ run_id: _runId, ...run }: MonitorRunRow) {
  return { ...run, checked_at: run.checked_at.toISOString() };
}

export function createWebhookOperations(deps: WebhookOperationsDeps) {
  const { config, pool, temporal, gateway } = deps;

  async function gatewayWebhooks(timeoutMs?: number): Promise<GatewayWebhook[]> {
    try {
      return await gateway.listWebhooks(timeoutMs === undefined ? undefined : { signal: AbortSignal.timeout(timeoutMs) });
    } catch (error) {
      throw gatewayDomainError(error);
    }
  }

  async function views(webhooks: GatewayWebhook[], recentPerWebhook: number): Promise<WebhookView[]> {
    const endpoints = [...new Set(webhooks.map((webhook) => inboxEndpointOf(webhook.url)).filter((e): e is string => e !== null))];
    const [cooldowns, queue, recent] = await Promise.all([
      activeCooldowns(pool),
      listRemovalQueue(pool, { dueOnly: false, limit: 1000 }),
      endpoints.length === 0 || recentPerWebhook === 0 ? Promise.resolve([]) : recentEventsByEndpoint(pool, endpoints, recentPerWebhook),
    ]);
    const queued = new Set(queue.map((row) => row.webhook_id));
    const now = Date.now();
    return webhooks.map((webhook) => {
      const endpoint = inboxEndpointOf(webhook.url);
      const cooldownUntil = cooldowns.get(webhook.id) ?? null;
      const missing = webhookEvents.filter((event) => !webhook.events.includes(event));
      const recentEvents = endpoint === null ? [] : recent.filter((row) => row.endpoint === endpoint).map(toRecent);
      return {
        id: webhook.id,
        name: webhook.name,
        url: webhook.url,
        endpoint,
        enabled: webhook.enabled,
        interrupted: webhook.interrupted,
        penalized_requests_count: webhook.penalizedRequestsCount ?? 0,
        events: webhook.events,
        subscribed_to_all: missing.length === 0,
        missing_events: missing,
        has_auth_token: webhook.hasAuthToken,
        send_type: webhook.sendType,
        queued_for_removal: queued.has(webhook.id),
        cooldown_remaining_ms: cooldownUntil === null ? 0 : Math.max(0, cooldownUntil.getTime() - now),
        cooldown_until: cooldownUntil?.toISOString() ?? null,
        recent_events: recentEvents,
        last_event_at: recentEvents[0]?.received_at ?? null,
      };
    });
  }

  async function removeBackoff(webhookId: string, requestedBy: string, source: PenaltySource): Promise<Extract<BackoffRemovalResult, { kind: 'removed' }>> {
    const result = await withinMs(temporal, operationWaitMs, () =>
      requestBackoffRemoval(temporal, {
        taskQueue: config.TEMPORAL_TASK_QUEUE,
        cooldownMs: config.WEBHOOK_BACKOFF_COOLDOWN_MS,
        webhookId,
        requestedBy,
        source,
      }),
    );
    if (result.kind === 'refused') {
      const seconds = Math.max(1, Math.ceil(result.retryAfterMs / 1000));
      throw new DomainError(
        'WEBHOOK_COOLDOWN',
        result.reason === 'cooldown'
          ? `the backoff of ${webhookId} was removed less than the cooldown ago; retry in ${seconds} s`
          : `the gateway refused the removal for ${webhookId} (its own cooldown); retry in ${seconds} s`,
        { retry_after_s: seconds, retry_after_ms: result.retryAfterMs, cooldown_until: result.cooldownUntil, reason: result.reason },
      );
    }
    return result;
  }

  async function startInboxWorkflows(events: ClaimedInboxEvent[]): Promise<InboxRepairOutcome[]> {
    const outcomes: InboxRepairOutcome[] = [];
    for (const event of events) {
      const workflowId = workflowIds.webhookEvent(event.provider, event.event_id);
      const base = { event_id: event.event_id, inbox_id: event.id, provider: event.provider, workflow_id: workflowId };
      try {
        await temporal.workflow.start('webhookEventWorkflow', {
          workflowId,
          taskQueue: config.TEMPORAL_TASK_QUEUE,
          args: [{ inboxId: event.id }],
          typedSearchAttributes: [{ key: referenceIdKey, value: event.event_id }],
        });
        outcomes.push({ ...base, outcome: 'started' });
      } catch (error) {
        if (error instanceof WorkflowExecutionAlreadyStartedError) outcomes.push({ ...base, outcome: 'running' });
        // The row waits as RECEIVED: process-now (or the gateway's next delivery) starts it.
        else outcomes.push({ ...base, outcome: 'not_started', error: error instanceof Error ? error.message.slice(0, 200) : 'failed' });
      }
    }
    return outcomes;
  }

  return {
    /** Every webhook at the gateway with our records of it; `recentPerWebhook` newest events each. */
    async listWebhooks(recentPerWebhook: number): Promise<WebhookView[]> {
      return views(await gatewayWebhooks(), recentPerWebhook);
    },

    async health() {
      const webhooks = await views(await gatewayWebhooks(), 10);
      const lastRun = await latestMonitorRun(pool);
      const interrupted = webhooks.filter((w) => w.interrupted).length;
      const penalized = webhooks.filter((w) => !w.interrupted && w.penalized_requests_count > 0).length;
      const misconfigured = webhooks.filter((w) => !w.enabled || !w.subscribed_to_all).length;
      return {
        status: interrupted > 0 ? ('down' as const) : penalized > 0 || misconfigured > 0 ? ('degraded' as const) : ('ok' as const),
        checked_at: new Date().toISOString(),
        webhooks,
        interrupted,
        penalized,
        misconfigured,
        queued_for_removal: webhooks.filter((w) => w.queued_for_removal).length,
        monitor: {
          interval_ms: config.WEBHOOK_MONITOR_INTERVAL_MS,
          auto_heal: webhookAutoHealEnabled(config),
          cooldown_ms: config.WEBHOOK_BACKOFF_COOLDOWN_MS,
          last_check_at: lastRun?.checked_at.toISOString() ?? null,
          last_check_error: lastRun?.error ?? null,
        },
      };
    },

    /**
     * Subscribes a webhook to every event the service reads (gateway/types.ts `webhookEvents`: payment, transfer and bill events, each a name Asaas documents), with our URL and token, enabled and
     * not interrupted. A gateway write made here rather than in an activity: its operation-log
     * entry is opened before the call and closed after, so a crash leaves it STARTED, not missing.
     */
    async configure(webhookId: string, actor: string): Promise<WebhookView> {
      const url = gatewayWebhookUrl(config);
      if (url === null) throw new DomainError('SERVICE_UNAVAILABLE', 'GATEWAY_WEBHOOK_URL is not configured: the gateway would not know where to deliver');
      const operation = await startOperation(pool, { operationType: 'WEBHOOK_CONFIGURE', step: 'updateWebhook', ownerId: null, referenceId: webhookId });
      let webhook: GatewayWebhook;
      try {
        webhook = await gateway.updateWebhook(webhookId, {
          url,
          enabled: true,
          interrupted: false,
          events: webhookEvents,
          authToken: config.GATEWAY_WEBHOOK_TOKEN,
        });
      } catch (error) {
        const domain = gatewayDomainError(error);
        const code = domain instanceof DomainError ? domain.code : 'INTERNAL';
        await finishOperation(pool, operation, {
          status: code === 'WEBHOOK_NOT_FOUND' || code === 'GATEWAY_REFUSED' ? 'REFUSED' : 'FAILED',
          errorCode: code,
          error: error instanceof Error ? error.message : String(error),
        });
        throw domain;
      }
      await withTransaction(pool, async (client) => {
        await appendPenaltyLog(client, {
          webhookId,
          action: 'CONFIGURED',
          penalizedRequestsCount: webhook.penalizedRequestsCount,
          interrupted: webhook.interrupted,
          source: 'admin',
          actor,
          detail: { url: webhook.url, events: webhook.events.length },
        });
        await finishOperation(client, operation, { status: 'SUCCEEDED' });
      });
      const [view] = await views([webhook], 5);
      return view as WebhookView;
    },

    removeBackoff,

    /** A removal for every interrupted or penalised webhook, each through its cooldown; per webhook: removed, refused with the time left, or failed. */
    async reactivateAll(actor: string): Promise<ReactivationOutcome[]> {
      const webhooks = await gatewayWebhooks();
      const outcomes: ReactivationOutcome[] = [];
      for (const webhook of webhooks) {
        if (!needsRemoval(webhook)) {
          outcomes.push({ webhook_id: webhook.id, outcome: 'not_needed' });
          continue;
        }
        try {
          const removed = await removeBackoff(webhook.id, actor, 'api');
          outcomes.push({ webhook_id: webhook.id, outcome: 'removed', cooldown_until: removed.cooldownUntil });
        } catch (error) {
          if (!(error instanceof DomainError)) throw error;
          if (error.code === 'WEBHOOK_COOLDOWN') {
            outcomes.push({
              webhook_id: webhook.id,
              outcome: 'refused',
              retry_after_ms: Number(error.details?.retry_after_ms ?? 0),
              cooldown_until: String(error.details?.cooldown_until ?? ''),
              reason: error.details?.reason === 'gateway_cooldown' ? 'gateway_cooldown' : 'cooldown',
            });
          } else {
            outcomes.push({ webhook_id: webhook.id, outcome: 'failed', error_code: error.code, error: error.message });
          }
        }
      }
      return outcomes;
    },

    /** One monitor run now (`check`: check-webhooks; `process`: process-queue); 202 with its id when it takes longer than monitorRunWaitMs. */
    async runMonitor(mode: 'check' | 'process'): Promise<{ workflowId: string; report: WebhookMonitorReport | null }> {
      const workflowId = workflowIds.webhookMonitorRun(mode, randomUUID());
      const input: WebhookMonitorInput = { mode, autoHeal: webhookAutoHealEnabled(config), cooldownMs: config.WEBHOOK_BACKOFF_COOLDOWN_MS };
      const handle = await temporal.workflow.start('webhookMonitorWorkflow', { workflowId, taskQueue: config.TEMPORAL_TASK_QUEUE, args: [input] });
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<null>((resolve) => {
        timer = setTimeout(() => resolve(null), monitorRunWaitMs);
      });
      try {
        // A deliberate wait longer than the request's Temporal deadline: its own, past the race's end.
        const result = withinMs(temporal, monitorRunWaitMs + 1000, () => handle.result() as Promise<WebhookMonitorReport>);
        result.catch(() => {});
        const report = (await Promise.race([result, timeout])) ?? null;
        return { workflowId, report };
      } finally {
        clearTimeout(timer);
      }
    },

    /** Up to `limit` DEAD events, each through a new run of its workflow; two callers at once take disjoint events. */
    async reprocessDead(limit: number): Promise<InboxRepairOutcome[]> {
      const claimed = await claimDeadEvents(pool, limit);
      return withTemporalDeadline(temporal, Date.now() + inboxStartsWaitMs, () => startInboxWorkflows(claimed));
    },

    /** Events stored but not finished (a worker outage, a crash before the start), started now, oldest first. */
    async processNow(): Promise<{ events: InboxRepairOutcome[]; more: boolean }> {
      const events = await listUnfinishedEvents(pool, { olderThanMs: 0, limit: processNowBatchMax + 1 });
      const started = await withTemporalDeadline(temporal, Date.now() + inboxStartsWaitMs, () => startInboxWorkflows(events.slice(0, processNowBatchMax)));
      return { events: started, more: events.length > processNowBatchMax };
    },

    async inboxStats() {
      return inboxStats(pool);
    },

    async diagnostics() {
      const since = new Date(Date.now() - statsWindowMs);
      const [rows, refusals] = await Promise.all([providerDiagnostics(pool, since), webhookAuthRefusalsSince(pool, since)]);
      const rate = (part: number, whole: number): number => (whole === 0 ? 0 : Math.round((part / whole) * 10_000) / 10_000);
      return {
        window_hours: statsWindowMs / 3_600_000,
        providers: rows.map((row) => {
          const refused = refusals.get(row.provider);
          return {
            provider: row.provider,
            token_configured: row.provider === 'gateway' ? config.GATEWAY_WEBHOOK_TOKEN.length > 0 : config.SUPABASE_WEBHOOK_TOKEN !== undefined,
            last_delivered_at: row.last_received_at?.toISOString() ?? null,
            events_total: row.total,
            received_in_window: row.window_total,
            failed_in_window: row.window_failed,
            dead_in_window: row.window_dead,
            failure_rate: rate(row.window_failed, row.window_total),
            dead_rate: rate(row.window_dead, row.window_total),
            waiting: row.waiting,
            refused_bad_token: refused?.refused ?? 0,
            last_refused_at: refused?.lastRefusedAt.toISOString() ?? null,
          };
        }),
      };
    },

    async dashboard() {
      const since = new Date(Date.now() - statsWindowMs);
      const gatewayView = gatewayWebhooks(Math.min(config.GATEWAY_TIMEOUT_MS, 3000)).then(
        (webhooks) => ({
          available: true as const,
          total: webhooks.length,
          enabled: webhooks.filter((w) => w.enabled).length,
          penalized: webhooks.filter((w) => !w.interrupted && (w.penalizedRequestsCount ?? 0) > 0).length,
          interrupted: webhooks.filter((w) => w.interrupted).length,
          missing_events: webhooks.filter((w) => webhookEvents.some((event) => !w.events.includes(event))).length,
        }),
        (error: unknown) => ({ available: false as const, error_code: error instanceof DomainError ? error.code : 'GATEWAY_ERROR' }),
      );
      const [webhooks, penalties, queue, cooldowns, lastRun, operations, inbox] = await Promise.all([
        gatewayView,
        penaltyCountsSince(pool, since),
        listRemovalQueue(pool, { dueOnly: false, limit: 1000 }),
        activeCooldowns(pool),
        latestMonitorRun(pool),
        operationCountsSince(pool, since),
        inboxStats(pool),
      ]);
      const byStatus: Record<string, number> = {};
      for (const row of operations) byStatus[row.status] = (byStatus[row.status] ?? 0) + row.n;
      return {
        generated_at: new Date().toISOString(),
        window_hours: statsWindowMs / 3_600_000,
        webhooks,
        penalties: { by_action: penalties, queued_for_removal: queue.length, cooldowns_active: cooldowns.size },
        monitor: {
          interval_ms: config.WEBHOOK_MONITOR_INTERVAL_MS,
          auto_heal: webhookAutoHealEnabled(config),
          last_run: lastRun === null ? null : monitorRunView(lastRun),
        },
        operations: {
          total: operations.reduce((sum, row) => sum + row.n, 0),
          by_status: byStatus,
          by_type: operations.map((row) => ({
            operation_type: row.operation_type,
            status: row.status,
            count: row.n,
            mean_duration_ms: row.mean_duration_ms === null ? null : Math.round(row.mean_duration_ms),
          })),
        },
        inbox: { total: inbox.total, waiting: inbox.waiting, dead: inbox.dead, oldest_waiting_ms: inbox.oldest_waiting_ms === null ? null : Math.round(inbox.oldest_waiting_ms) },
      };
    },
  };
}

export type WebhookOperations = ReturnType<typeof createWebhookOperations>;
