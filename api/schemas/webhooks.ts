import { z } from 'zod';
import { inboxStatuses } from '../../db/inbox.ts';
import { inboxEventRow } from '../../db/inbox-admin.ts';
import { operationLogRow, operationStatuses, operationTypes } from '../../db/operation-log.ts';
import { monitorRunRow, penaltyActions, penaltyLogRow } from '../../db/webhook-monitor.ts';
import type { BackoffRemovalResult } from '../../workflows/webhook-messages.ts';

/** Schemas of the webhook operations and the monitor (api/routes/redemption-webhooks.ts, api/routes/admin-monitor.ts). */

/** A gateway webhook id as it may go into a gateway path (the client's own rule). */
export const webhookIdParams = z.object({
  webhook_id: z
    .string()
    .regex(/^[A-Za-z0-9_-]{1,100}$/, 'a webhook id is 1 to 100 letters, digits, _ or -')
    .describe("the gateway's id of the webhook (`GET /api/v1/redemption/webhook/list` lists them)")
    .meta({ examples: ['wh_transfer'] }),
});

export const recentEvent = z.object({
  event_id: z.string(),
  event_type: z.string().nullable(),
  status: z.string(),
  received_at: z.string(),
});

export const webhookView = z
  .object({
    id: z.string(),
    name: z.string(),
    url: z.string(),
    endpoint: z.string().nullable().describe('Our endpoint it delivers to (redemption/gateway, payment/pix, payment/boleto); null when not ours'),
    enabled: z.boolean(),
    interrupted: z.boolean().describe('The gateway stopped delivering after repeated failures; events wait at the gateway'),
    penalized_requests_count: z.number().int().describe('Consecutive failed deliveries the gateway counts against the queue'),
    events: z.array(z.string()),
    subscribed_to_all: z.boolean().describe('Subscribed to every PAYMENT_*, TRANSFER_* and BILL_PAYMENT_* event (without payout events payouts are confirmed only by polling)'),
    missing_events: z.array(z.string()),
    has_auth_token: z.boolean().nullable(),
    send_type: z.string().nullable(),
    queued_for_removal: z.boolean().describe('The monitor queued it for a backoff removal'),
    cooldown_remaining_ms: z.number().int().describe('Time left before the next backoff removal is allowed; 0: allowed now'),
    cooldown_until: z.string().nullable(),
    recent_events: z.array(recentEvent).describe('The newest events our endpoint received through this webhook'),
    last_event_at: z.string().nullable(),
  })
  .meta({ id: 'GatewayWebhookView' });

export const webhookHealthResponse = z
  .object({
    status: z.enum(['ok', 'degraded', 'down']).describe('down: a queue is interrupted; degraded: penalised, disabled or missing events'),
    checked_at: z.string(),
    webhooks: z.array(webhookView),
    interrupted: z.number().int(),
    penalized: z.number().int(),
    misconfigured: z.number().int(),
    queued_for_removal: z.number().int(),
    monitor: z.object({
      interval_ms: z.number().int(),
      auto_heal: z.boolean(),
      cooldown_ms: z.number().int(),
      last_check_at: z.string().nullable(),
      last_check_error: z.string().nullable(),
    }),
  })
  .meta({ id: 'WebhookHealthResponse' });

export const backoffRemovedResponse = z
  .object({
    webhook_id: z.string(),
    status: z.literal('removed'),
    cooldown_until: z.string().describe('No other removal of this webhook before this time'),
    webhook: z.object({
      id: z.string(),
      enabled: z.boolean(),
      interrupted: z.boolean(),
      penalized_requests_count: z.number().int().nullable(),
    }),
  })
  .meta({ id: 'BackoffRemovedResponse' });

/** The answer of a backoff removal, the same from the gateway's route and the operators' one. */
export function backoffRemovedAnswer(removed: Extract<BackoffRemovalResult, { kind: 'removed' }>): z.infer<typeof backoffRemovedResponse> {
  return {
    webhook_id: removed.webhookId,
    status: 'removed',
    cooldown_until: removed.cooldownUntil,
    webhook: {
      id: removed.webhook.id,
      enabled: removed.webhook.enabled,
      interrupted: removed.webhook.interrupted,
      penalized_requests_count: removed.webhook.penalizedRequestsCount,
    },
  };
}

export const reactivateAllResponse = z
  .object({
    results: z.array(
      z.object({
        webhook_id: z.string(),
        outcome: z.enum(['removed', 'refused', 'failed', 'not_needed']),
        cooldown_until: z.string().optional(),
        retry_after_ms: z.number().int().optional(),
        reason: z.enum(['cooldown', 'gateway_cooldown']).optional(),
        error_code: z.string().optional(),
        error: z.string().optional(),
      }),
    ),
    removed: z.number().int(),
    refused: z.number().int(),
    failed: z.number().int(),
  })
  .meta({ id: 'ReactivateAllResponse' });

/** The API's items are the rows as stored: ids as strings, times as ISO strings, the enums the API does not close kept open. */
export const penaltyLogItem = penaltyLogRow
  .extend({ id: z.string(), cooldown_until: z.string().nullable(), source: z.string(), created_at: z.string() })
  .meta({ id: 'PenaltyLogItem' });

export const operationItem = operationLogRow
  .omit({ run_id: true })
  .extend({ id: z.string(), started_at: z.string(), finished_at: z.string().nullable() })
  .meta({ id: 'OperationLogItem' });

export const inboxEventItem = inboxEventRow
  .extend({ id: z.string(), provider: z.string(), received_at: z.string(), processed_at: z.string().nullable() })
  .meta({ id: 'InboxEventItem' });

export const inboxRepairResponse = z
  .object({
    events: z.array(
      z.object({
        event_id: z.string(),
        inbox_id: z.string(),
        provider: z.string(),
        workflow_id: z.string(),
        outcome: z.enum(['started', 'running', 'not_started']),
        error: z.string().optional(),
      }),
    ),
    started: z.number().int(),
    more: z.boolean().describe('More events wait than one call takes'),
  })
  .meta({ id: 'InboxRepairResponse' });

export const inboxStatsResponse = z
  .object({
    total: z.number().int(),
    by_status: z.record(z.string(), z.number().int()),
    by_event_type: z.array(z.object({ event_type: z.string().nullable(), status: z.string(), count: z.number().int() })),
    waiting: z.number().int().describe('RECEIVED or PROCESSING'),
    dead: z.number().int(),
    oldest_waiting_ms: z.number().int().nullable(),
    oldest_waiting_event_id: z.string().nullable(),
    duplicates: z.number().int(),
  })
  .meta({ id: 'InboxStatsResponse' });

export const monitorRunResponse = z
  .object({
    workflow_id: z.string(),
    status: z.enum(['COMPLETED', 'RUNNING']),
    report: z
      .object({
        mode: z.string(),
        check: z.object({
          webhooks: z.array(
            z.object({ id: z.string(), enabled: z.boolean(), interrupted: z.boolean(), penalizedRequestsCount: z.number().int(), queued: z.boolean() }),
          ),
          penalized: z.number().int(),
          interrupted: z.number().int(),
          queued: z.number().int(),
          recovered: z.number().int(),
        }),
        removals: z
          .array(
            z.object({
              webhookId: z.string(),
              outcome: z.enum(['removed', 'refused', 'failed']),
              retryAfterMs: z.number().nullable(),
              error: z.string().nullable(),
            }),
          )
          .nullable(),
      })
      .nullable(),
  })
  .meta({ id: 'WebhookMonitorRunResponse' });

export const diagnosticsResponse = z
  .object({
    window_hours: z.number(),
    providers: z.array(
      z.object({
        provider: z.string(),
        token_configured: z.boolean().describe('Whether a token is configured; never its value'),
        last_delivered_at: z.string().nullable(),
        events_total: z.number().int(),
        received_in_window: z.number().int(),
        failed_in_window: z.number().int(),
        dead_in_window: z.number().int(),
        failure_rate: z.number(),
        dead_rate: z.number(),
        waiting: z.number().int(),
        refused_bad_token: z.number().int().describe('Deliveries refused for a missing or wrong token in the window'),
        last_refused_at: z.string().nullable(),
      }),
    ),
  })
  .meta({ id: 'WebhookDiagnosticsResponse' });

export const dashboardResponse = z
  .object({
    generated_at: z.string(),
    window_hours: z.number(),
    webhooks: z.union([
      z.object({
        available: z.literal(true),
        total: z.number().int(),
        enabled: z.number().int(),
        penalized: z.number().int(),
        interrupted: z.number().int(),
        missing_events: z.number().int(),
      }),
      z.object({ available: z.literal(false), error_code: z.string() }),
    ]),
    penalties: z.object({ by_action: z.record(z.string(), z.number().int()), queued_for_removal: z.number().int(), cooldowns_active: z.number().int() }),
    monitor: z.object({
      interval_ms: z.number().int(),
      auto_heal: z.boolean(),
      last_run: monitorRunRow.omit({ run_id: true }).extend({ mode: z.string(), checked_at: z.string() }).nullable(),
    }),
    operations: z.object({
      total: z.number().int(),
      by_status: z.record(z.string(), z.number().int()),
      by_type: z.array(z.object({ operation_type: z.string(), status: z.string(), count: z.number().int(), mean_duration_ms: z.number().int().nullable() })),
    }),
    inbox: z.object({ total: z.number().int(), waiting: z.number().int(), dead: z.number().int(), oldest_waiting_ms: z.number().int().nullable() }),
  })
  .meta({ id: 'MonitorDashboardResponse' });

/** Query filters: each a closed set or a bounded pattern, so a bad one answers 422. */
export const penaltyLogFilter = z.object({
  webhook_id: webhookIdParams.shape.webhook_id.optional(),
  action: z.enum(penaltyActions).optional(),
});
export const operationsFilter = z.object({
  operation_type: z.enum(operationTypes).optional(),
  status: z.enum(operationStatuses).optional(),
  owner_id: z.string().min(1).max(200).optional(),
  reference_id: z.string().min(1).max(300).optional().describe('the business reference: a token, redemption, request, customer, key, webhook or administrator'),
});
export const inboxEventsFilter = z.object({
  status: z.enum(inboxStatuses).optional(),
  event_type: z.string().regex(/^[A-Za-z0-9_.:-]{1,100}$/, 'an event type is 1 to 100 letters, digits or _.:-').optional(),
});
