import { defineQuery, defineUpdate } from '@temporalio/workflow';
import type { GatewayWebhook } from '../gateway/types.ts';

/**
 * Messages of the webhook workflows (webhook-cooldown.ts, webhook-monitor.ts), in a module of
 * their own so the API and activities can import them without importing workflow code.
 */

export type BackoffRemovalSource = 'api' | 'admin' | 'monitor';

export interface BackoffRemovalRequest {
  /** Who asked: an admin's username, or the monitor's workflow id. */
  requestedBy: string;
  source: BackoffRemovalSource;
}

export type BackoffRemovalResult =
  | { kind: 'removed'; webhookId: string; cooldownUntil: string; webhook: GatewayWebhook }
  | {
      kind: 'refused';
      webhookId: string;
      /** `cooldown`: ours, the gateway was not called; `gateway_cooldown`: the gateway refused (its own cooldown). */
      reason: 'cooldown' | 'gateway_cooldown';
      retryAfterMs: number;
      cooldownUntil: string;
    };

/** Asks for one backoff removal; the workflow decides, one request at a time, and calls the gateway at most once per cooldown. */
export const removeBackoffUpdate = defineUpdate<BackoffRemovalResult, [BackoffRemovalRequest]>('removeBackoff');

/** Until when (ms since the epoch, 0: none) no removal is allowed. */
export const cooldownQuery = defineQuery<{ cooldownUntilMs: number }>('cooldown');

export interface WebhookCooldownInput {
  webhookId: string;
  /** WEBHOOK_BACKOFF_COOLDOWN_MS: 5 minutes in production, seconds in tests. */
  cooldownMs: number;
}

export type WebhookMonitorMode = 'scheduled' | 'check' | 'process';

export interface WebhookMonitorInput {
  /** `scheduled`: the schedule's run; `check`: check-webhooks; `process`: process-queue (a check, then the queue). */
  mode: WebhookMonitorMode;
  /** Scheduled runs: whether to process the removal queue after the check (WEBHOOK_AUTO_HEAL). */
  autoHeal: boolean;
  cooldownMs: number;
}

export interface WebhookCheckSummary {
  webhooks: {
    id: string;
    enabled: boolean;
    interrupted: boolean;
    penalizedRequestsCount: number;
    queued: boolean;
  }[];
  penalized: number;
  interrupted: number;
  queued: number;
  recovered: number;
}

export interface RemovalQueueOutcome {
  webhookId: string;
  outcome: 'removed' | 'refused' | 'failed';
  retryAfterMs: number | null;
  error: string | null;
}

export interface WebhookMonitorReport {
  mode: WebhookMonitorMode;
  check: WebhookCheckSummary;
  /** Null when the run did not process the queue (a check, or a scheduled run without auto-healing). */
  removals: RemovalQueueOutcome[] | null;
}
