import type { Client } from '@temporalio/client';
import type { Logger } from 'pino';
import type { Config } from '../infra/config.ts';
import { ensureSchedule, type EnsureScheduleOutcome, type ScheduleDefinition } from '../infra/schedules.ts';
import { scheduleIds, workflowIds } from '../workflows/ids.ts';
import type { ScheduledReconcileInput } from '../workflows/scheduled-reconcile.ts';
import type { WebhookMonitorInput } from '../workflows/webhook-messages.ts';
import type { PlcExpirySweepInput } from '../workflows/plc-expiry.ts';

/**
 * The Temporal Schedules a worker keeps (infra/schedules.ts `ensureSchedule`), from the
 * configuration: each worker ensures them when it starts, so they exist as soon as one worker
 * runs, and several workers starting at once converge on the same schedules; a changed interval
 * takes effect at the next start.
 */

export interface WebhookMonitorScheduleOptions {
  taskQueue: string;
  intervalMs: number;
  autoHeal: boolean;
  cooldownMs: number;
  /** `webhook-monitor` (workflows/ids.ts); tests give their own, one dev server serving many. */
  scheduleId?: string;
}

/** The webhook monitor's schedule: a `scheduled` run of webhookMonitorWorkflow every `intervalMs`. */
export function webhookMonitorSchedule(options: WebhookMonitorScheduleOptions): ScheduleDefinition {
  const scheduleId = options.scheduleId ?? workflowIds.webhookMonitorSchedule();
  const input: WebhookMonitorInput = { mode: 'scheduled', autoHeal: options.autoHeal, cooldownMs: options.cooldownMs };
  return {
    scheduleId,
    intervalMs: options.intervalMs,
    workflowType: 'webhookMonitorWorkflow',
    // Temporal appends the scheduled time: webhook-monitor-2026-11-22T10:00:00Z.
    workflowId: scheduleId,
    taskQueue: options.taskQueue,
    args: [input],
    workflowExecutionTimeoutMs: Math.max(options.intervalMs * 10, 15 * 60_000),
    note: 'the webhook monitor (docs/settlement.md): WEBHOOK_MONITOR_INTERVAL_MS',
  };
}

/** Creates the webhook monitor's schedule, or brings it up to date. */
export function ensureWebhookMonitorSchedule(client: Pick<Client, 'schedule'>, options: WebhookMonitorScheduleOptions): Promise<EnsureScheduleOutcome> {
  return ensureSchedule(client, webhookMonitorSchedule(options));
}

/** The gateway audit's schedule (docs/reconciliation.md): a scheduled real run every GATEWAY_AUDIT_INTERVAL_MS, 0 for none. */
export function gatewayAuditSchedule(config: Pick<Config, 'GATEWAY_AUDIT_INTERVAL_MS' | 'GATEWAY_AUDIT_LOOKBACK_DAYS' | 'TEMPORAL_TASK_QUEUE'>): ScheduleDefinition {
  const audit: ScheduledReconcileInput = {
    tool: 'gateway-audit',
    requestedBy: `schedule:${scheduleIds.gatewayAudit}`,
    lookbackDays: config.GATEWAY_AUDIT_LOOKBACK_DAYS,
  };
  return {
    scheduleId: scheduleIds.gatewayAudit,
    intervalMs: config.GATEWAY_AUDIT_INTERVAL_MS,
    workflowType: 'scheduledReconcileWorkflow',
    workflowId: workflowIds.scheduled(scheduleIds.gatewayAudit),
    taskQueue: config.TEMPORAL_TASK_QUEUE,
    args: [audit],
    note: 'the gateway audit (docs/reconciliation.md): GATEWAY_AUDIT_INTERVAL_MS, GATEWAY_AUDIT_LOOKBACK_DAYS',
  };
}

/** Ensures the gateway audit's schedule, logging what it did; a failure is logged, not fatal (the next worker start tries again). */
export async function ensureGatewayAuditSchedule(
  client: Pick<Client, 'schedule'>,
  config: Parameters<typeof gatewayAuditSchedule>[0],
  logger: Pick<Logger, 'info' | 'error'>,
): Promise<EnsureScheduleOutcome | null> {
  try {
    const outcome = await ensureSchedule(client, gatewayAuditSchedule(config));
    logger.info({ schedule: scheduleIds.gatewayAudit, outcome, intervalMs: config.GATEWAY_AUDIT_INTERVAL_MS }, 'gateway audit scheduled');
    return outcome;
  } catch (error) {
    logger.error({ err: error }, 'the gateway audit\'s schedule could not be ensured; the next worker start tries again');
    return null;
  }
}

export interface LedgerCheckScheduleOptions {
  taskQueue: string;
  intervalMs: number;
  /** `ledger-check` (workflows/ids.ts); tests give their own, one dev server serving many. */
  scheduleId?: string;
}

/**
 * The ledger check's schedule (docs/operations-console.md, "Stats"): ledgerCheckWorkflow every
 * `intervalMs`, recording the invariants and totals the stats dashboard shows.
 */
export function ensureLedgerCheckSchedule(client: Pick<Client, 'schedule'>, options: LedgerCheckScheduleOptions): Promise<EnsureScheduleOutcome> {
  const scheduleId = options.scheduleId ?? workflowIds.ledgerCheck();
  return ensureSchedule(client, {
    scheduleId,
    intervalMs: options.intervalMs,
    workflowType: 'ledgerCheckWorkflow',
    // Temporal appends the scheduled time: ledger-check-2026-11-22T10:00:00Z.
    workflowId: scheduleId,
    taskQueue: options.taskQueue,
    args: [],
    workflowExecutionTimeoutMs: Math.max(options.intervalMs * 2, 60 * 60_000),
    note: 'the ledger check (docs/operations-console.md): LEDGER_CHECK_INTERVAL_MS',
  });
}

export interface PlcExpirySweepScheduleOptions {
  taskQueue: string;
  /** Every minute by default: with a one-minute bucket, the bound docs/plc.md states. */
  intervalMs?: number;
  /** `plc-expiry-sweep` (workflows/ids.ts); tests give their own. */
  scheduleId?: string;
}

/**
 * The PLC expiry sweep's schedule (docs/plc.md, "Expiry by time buckets"): plcExpirySweepWorkflow
 * every minute, starting the bucket workflows nobody started and expiring what no bucket did.
 */
export function ensurePlcExpirySweepSchedule(client: Pick<Client, 'schedule'>, options: PlcExpirySweepScheduleOptions): Promise<EnsureScheduleOutcome> {
  const scheduleId = options.scheduleId ?? scheduleIds.plcExpirySweep;
  const intervalMs = options.intervalMs ?? 60_000;
  const input: PlcExpirySweepInput = { taskQueue: options.taskQueue };
  return ensureSchedule(client, {
    scheduleId,
    intervalMs,
    workflowType: 'plcExpirySweepWorkflow',
    // Temporal appends the scheduled time: plc-expiry-sweep-2026-12-07T19:41:00Z.
    workflowId: scheduleId,
    taskQueue: options.taskQueue,
    args: [input],
    workflowExecutionTimeoutMs: Math.max(intervalMs * 10, 15 * 60_000),
    note: 'the PLC expiry sweep (docs/plc.md, "Expiry by time buckets")',
  });
}
