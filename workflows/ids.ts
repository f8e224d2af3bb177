/**
 * Workflow ids: one builder per business process, so that every caller (routes, activities,
 * workflows, reconciliation, tests) names a workflow the same way. Ids carry business meaning
 * and are what an operator types into the Temporal UI. This module is pure (no Temporal import)
 * so the API, activities and workflows all import it.
 */
export const workflowIds = {
  /** A PLC issued before migration 35: its own workflow (workflows/plc.ts). */
  plc: (tokenId: string) => `plc-${tokenId}`,
  /**
   * The expiry bucket of due time starting at `bucketStartMs` (workflows/plc-expiry.ts): `plc-expiry-2026-12-07T19:41:00Z`
   * on the service's own task queue (`settlement`); on another one (a test's, a second deployment
   * sharing a namespace) the queue is in the id, `plc-expiry-<queue>-<minute>`, so that two
   * databases never share a bucket's workflow.
   */
  plcExpiryBucket: (bucketStartMs: number, taskQueue: string) =>
    `plc-expiry-${taskQueue === 'settlement' ? '' : `${taskQueue}-`}${new Date(bucketStartMs).toISOString().slice(0, 19)}Z`,
  redemption: (redemptionId: string) => `redemption-${redemptionId}`,
  charge: (chargeId: string) => `charge-${chargeId}`,
  deposit: (idempotencyKey: string) => `deposit-${idempotencyKey}`,
  webhookEvent: (provider: string, eventId: string) => `webhook-${provider}-${eventId}`,
  expireTokens: (runId: string) => `expire-tokens-${runId}`,
  reconcile: (tool: string, runId: string) => `reconcile-${tool}-${runId}`,
  /** The schedule `ledger-check` starts `ledger-check-<time>` (Temporal appends the time). */
  ledgerCheck: () => 'ledger-check',
  /** The cooldown between two backoff removals of one gateway webhook (workflows/webhook-cooldown.ts). */
  webhookCooldown: (webhookId: string) => `webhook-cooldown-${webhookId}`,
  /** The webhook monitor's Temporal Schedule; its runs are `webhook-monitor-<time>` (Temporal appends the time). */
  webhookMonitorSchedule: () => 'webhook-monitor',
  /** A run of the webhook monitor asked for by an operator: `check` (check-webhooks) or `process` (process-queue). */
  webhookMonitorRun: (mode: 'check' | 'process', runId: string) => `webhook-monitor-${mode}-${runId}`,
  pinResetEmail: (requestId: string) => `pin-reset-email-${requestId}`,
  /** The review of a PLC limit increase request (workflows/limit-review.ts). */
  limitReview: (requestId: string) => `limit-review-${requestId}`,
  /** A run started by a Temporal Schedule: the schedule's id; Temporal appends the run's scheduled time. */
  scheduled: (scheduleId: string) => scheduleId,
} as const;

/** Temporal Schedules (worker/schedules.ts): their ids are business names an operator finds in the UI. */
export const scheduleIds = {
  /** The gateway audit (docs/reconciliation.md), every GATEWAY_AUDIT_INTERVAL_MS. */
  gatewayAudit: 'gateway-audit',
  /** The webhook monitor (docs/settlement.md), every WEBHOOK_MONITOR_INTERVAL_MS. */
  webhookMonitor: 'webhook-monitor',
  /** The PLC expiry sweep (docs/plc.md, "Expiry by time buckets"), every minute. */
  plcExpirySweep: 'plc-expiry-sweep',
} as const;
