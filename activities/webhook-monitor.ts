import { Context } from '@temporalio/activity';
import type { Client } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { withTransaction, type Pool } from '../db/pool.ts';
import { causesOf } from '../src/errors.ts';
import {
  appendPenaltyLog,
  deferRemoval,
  dequeueRemoval,
  listRemovalQueue,
  pruneMonitorRuns,
  queueForRemoval,
  recordMonitorCheck,
  recordMonitorRemovals,
  type PenaltyAction,
} from '../db/webhook-monitor.ts';
import { gatewayFailureKind, isGatewayError, type GatewayClient, type GatewayWebhook } from '../gateway/index.ts';
import { needsRemoval, requestBackoffRemoval } from '../services/webhook-cooldown.ts';
import {
  type RemovalQueueOutcome,
  type WebhookCheckSummary,
  type BackoffRemovalSource,
  type WebhookMonitorMode,
} from '../workflows/webhook-messages.ts';

/**
 * The side effects of the webhook workflows: the gateway's webhook calls and what we record of
 * them. `removeWebhookBackoff` runs inside `webhook-cooldown-<id>` (the only caller of the
 * gateway's removeBackoff), `checkWebhooks` and `processRemovalQueue` inside the monitor.
 */

/** Removals tried per processing of the queue: the gateway has a handful of webhooks. */
export const removalQueueBatchMax = 50;
/** How long a webhook waits before the queue tries it again after a failed removal. */
export const removalRetryAfterFailureMs = 60_000;
/** Monitor runs kept for the dashboard's history. */
export const monitorRunsKeepDays = 30;

/**
 * A gateway failure as the non-retryable or retryable ApplicationFailure a workflow (and then the
 * API) reads: its type is the domain error code (src/errors.ts). Timeouts and a failing gateway
 * are retried by the activity's policy; a 404 or another refusal is not.
 */
export function gatewayFailure(error: unknown, notFoundCode: 'WEBHOOK_NOT_FOUND'): unknown {
  if (!isGatewayError(error)) return error;
  const kind = gatewayFailureKind(error);
  const details = [{ gateway_status: error.status, gateway_code: error.code }];
  switch (kind) {
    case 'timeout':
      return ApplicationFailure.create({ type: 'GATEWAY_TIMEOUT', message: `the gateway did not answer in time (${error.operation})`, details });
    case 'unavailable':
      return ApplicationFailure.create({ type: 'GATEWAY_ERROR', message: `the gateway failed (${error.operation}: ${error.code})`, details });
    case 'not_found':
      return ApplicationFailure.create({ type: notFoundCode, message: 'the gateway has no such webhook', details, nonRetryable: true });
    case 'too_soon':
      return ApplicationFailure.create({ type: 'GATEWAY_ERROR', message: `the gateway is limiting our calls (${error.operation})`, details });
    case 'refused':
      return ApplicationFailure.create({
        type: 'GATEWAY_REFUSED',
        message: `the gateway refused ${error.operation} (${error.status ?? ''} ${error.code})`,
        details,
        nonRetryable: true,
      });
  }
}

function summaryOf(webhook: GatewayWebhook, queued: boolean): WebhookCheckSummary['webhooks'][number] {
  return {
    id: webhook.id,
    enabled: webhook.enabled,
    interrupted: webhook.interrupted,
    penalizedRequestsCount: webhook.penalizedRequestsCount ?? 0,
    queued,
  };
}

export function createWebhookMonitorActivities(deps: { pool: Pool; gateway: GatewayClient; temporal: Pick<Client, 'workflow'> }) {
  const { pool, gateway, temporal } = deps;

  return {
    /**
     * The one call of the gateway's removeBackoff, made by `webhook-cooldown-<id>` once it has
     * decided the removal is allowed. Records REMOVED (with the cooldown it starts) and takes the
     * webhook off the removal queue in one transaction. The gateway's own refusal (429, its
     * cooldown) is an answer, not a failure: recorded REMOVAL_REFUSED with its Retry-After.
     */
    async removeWebhookBackoff(input: {
      webhookId: string;
      cooldownUntil: string;
      requestedBy: string;
      source: BackoffRemovalSource;
    }): Promise<{ kind: 'removed'; webhook: GatewayWebhook } | { kind: 'too_soon'; retryAfterMs: number }> {
      const workflowExecution = executionOf();
      const key = `${workflowExecution.workflowId}:${workflowExecution.runId}:${input.cooldownUntil}`;
      let webhook: GatewayWebhook;
      try {
        webhook = await gateway.removeWebhookBackoff(input.webhookId, { signal: Context.current().cancellationSignal });
      } catch (error) {
        if (isGatewayError(error) && gatewayFailureKind(error) === 'too_soon') {
          const retryAfterMs = error.retryAfterMs ?? 60_000;
          await appendPenaltyLog(pool, {
            webhookId: input.webhookId,
            action: 'REMOVAL_REFUSED',
            cooldownUntil: new Date(Date.now() + retryAfterMs),
            source: input.source,
            actor: input.requestedBy,
            workflowId: workflowExecution.workflowId,
            operationKey: `${key}:refused`,
            detail: { reason: 'the gateway refused the removal (its own cooldown)', gateway_code: error.code },
          });
          return { kind: 'too_soon', retryAfterMs };
        }
        throw gatewayFailure(error, 'WEBHOOK_NOT_FOUND');
      }
      await withTransaction(pool, async (client) => {
        await appendPenaltyLog(client, {
          webhookId: input.webhookId,
          action: 'REMOVED',
          penalizedRequestsCount: webhook.penalizedRequestsCount,
          interrupted: webhook.interrupted,
          cooldownUntil: new Date(input.cooldownUntil),
          source: input.source,
          actor: input.requestedBy,
          workflowId: workflowExecution.workflowId,
          operationKey: key,
        });
        await dequeueRemoval(client, input.webhookId);
      });
      return { kind: 'removed', webhook };
    },

    /**
     * Reads the gateway's webhooks; logs every penalty and interruption found; queues those
     * webhooks for removal and takes healthy ones off the queue. Entries are keyed by this run
     * and webhook, so a retried attempt logs nothing twice.
     */
    async checkWebhooks(input: { mode: WebhookMonitorMode }): Promise<WebhookCheckSummary> {
      const workflowExecution = executionOf();
      const run = { workflowId: workflowExecution.workflowId, runId: workflowExecution.runId, mode: input.mode };
      const keyOf = (webhookId: string, what: string): string => `${run.workflowId}:${run.runId}:${webhookId}:${what}`;
      /** The monitor's own entry about one webhook, keyed by this run, the webhook and `what`. */
      const monitorEntry = (webhook: GatewayWebhook, action: PenaltyAction, what: string, interrupted: boolean, detail?: unknown) => ({
        webhookId: webhook.id,
        action,
        penalizedRequestsCount: webhook.penalizedRequestsCount ?? 0,
        interrupted,
        source: 'monitor' as const,
        actor: run.workflowId,
        workflowId: run.workflowId,
        operationKey: keyOf(webhook.id, what),
        detail,
      });
      let webhooks: GatewayWebhook[];
      try {
        webhooks = await gateway.listWebhooks({ signal: Context.current().cancellationSignal });
      } catch (error) {
        const message = error instanceof Error ? error.message : String(error);
        await recordMonitorCheck(pool, { ...run, webhooks: 0, penalized: 0, interrupted: 0, queued: 0, error: message });
        throw gatewayFailure(error, 'WEBHOOK_NOT_FOUND');
      }
      const queuedBefore = new Set((await listRemovalQueue(pool, { dueOnly: false, limit: 1000 })).map((row) => row.webhook_id));
      const summary: WebhookCheckSummary = { webhooks: [], penalized: 0, interrupted: 0, queued: 0, recovered: 0 };
      for (const webhook of webhooks) {
        const count = webhook.penalizedRequestsCount ?? 0;
        if (!needsRemoval(webhook)) {
          if (queuedBefore.has(webhook.id)) {
            await withTransaction(pool, async (client) => {
              await dequeueRemoval(client, webhook.id);
              await appendPenaltyLog(client, monitorEntry(webhook, 'RECOVERED', 'recovered', false));
            });
            summary.recovered += 1;
          }
          summary.webhooks.push(summaryOf(webhook, false));
          continue;
        }
        const reason = webhook.interrupted ? 'INTERRUPTED' : 'PENALIZED';
        if (webhook.interrupted) summary.interrupted += 1;
        else summary.penalized += 1;
        await withTransaction(pool, async (client) => {
          await appendPenaltyLog(client, monitorEntry(webhook, reason, 'seen', webhook.interrupted, { enabled: webhook.enabled, url: webhook.url }));
          const inserted = await queueForRemoval(client, { webhookId: webhook.id, reason, penalizedRequestsCount: count });
          if (inserted) {
            await appendPenaltyLog(client, monitorEntry(webhook, 'QUEUED', 'queued', webhook.interrupted));
          }
        });
        summary.queued += 1;
        summary.webhooks.push(summaryOf(webhook, true));
      }
      // A queued webhook the gateway no longer has needs nothing more.
      const present = new Set(webhooks.map((webhook) => webhook.id));
      for (const gone of [...queuedBefore].filter((id) => !present.has(id))) {
        await dequeueRemoval(pool, gone);
      }
      await recordMonitorCheck(pool, {
        ...run,
        webhooks: webhooks.length,
        penalized: summary.penalized,
        interrupted: summary.interrupted,
        queued: summary.queued,
        error: null,
      });
      await pruneMonitorRuns(pool, monitorRunsKeepDays);
      return summary;
    },

    /**
     * Tries a removal for each queued webhook that is due, oldest first, each through its
     * cooldown workflow (so an operator's removal and the monitor's never both reach the
     * gateway within one cooldown). Refused: tried again when the cooldown ends; failed: in a minute.
     */
    async processRemovalQueue(input: { cooldownMs: number }): Promise<RemovalQueueOutcome[]> {
      const context = Context.current();
      const workflowExecution = executionOf();
      const { taskQueue } = context.info;
      const due = await listRemovalQueue(pool, { dueOnly: true, limit: removalQueueBatchMax });
      const outcomes: RemovalQueueOutcome[] = [];
      for (const item of due) {
        context.heartbeat(item.webhook_id);
        try {
          const result = await requestBackoffRemoval(temporal, {
            taskQueue,
            cooldownMs: input.cooldownMs,
            webhookId: item.webhook_id,
            requestedBy: workflowExecution.workflowId,
            source: 'monitor',
          });
          if (result.kind === 'removed') {
            outcomes.push({ webhookId: item.webhook_id, outcome: 'removed', retryAfterMs: null, error: null });
          } else {
            await deferRemoval(pool, { webhookId: item.webhook_id, outcome: 'REFUSED', retryAfterMs: result.retryAfterMs });
            outcomes.push({ webhookId: item.webhook_id, outcome: 'refused', retryAfterMs: result.retryAfterMs, error: null });
          }
        } catch (error) {
          const message = describeFailure(error);
          if (message.startsWith('WEBHOOK_NOT_FOUND')) await dequeueRemoval(pool, item.webhook_id);
          else await deferRemoval(pool, { webhookId: item.webhook_id, outcome: 'FAILED', retryAfterMs: removalRetryAfterFailureMs, error: message });
          outcomes.push({ webhookId: item.webhook_id, outcome: 'failed', retryAfterMs: removalRetryAfterFailureMs, error: message });
        }
      }
      await recordMonitorRemovals(pool, {
        workflowId: workflowExecution.workflowId,
        runId: workflowExecution.runId,
        removed: outcomes.filter((o) => o.outcome === 'removed').length,
        refused: outcomes.filter((o) => o.outcome === 'refused').length,
        failed: outcomes.filter((o) => o.outcome === 'failed').length,
      });
      return outcomes;
    },
  };
}

/** The workflow execution running this activity (these activities only run inside workflows). */
function executionOf(): { workflowId: string; runId: string } {
  const execution = Context.current().info.workflowExecution;
  if (execution === undefined) throw new Error('assertion failed: a webhook monitor activity runs inside a workflow');
  return execution;
}

/** `CODE: message` of the first ApplicationFailure in a client error's cause chain. */
function describeFailure(error: unknown): string {
  for (const cause of causesOf(error)) {
    if (cause instanceof ApplicationFailure && typeof cause.type === 'string') return `${cause.type}: ${cause.message}`.slice(0, 1000);
  }
  return (error instanceof Error ? error.message : String(error)).slice(0, 1000);
}

export type WebhookMonitorActivities = ReturnType<typeof createWebhookMonitorActivities>;
