import { ScheduleAlreadyRunning, ScheduleNotFoundError, ScheduleOverlapPolicy, type Client, type ScheduleDescription } from '@temporalio/client';

type ScheduleClient = Pick<Client, 'schedule'>;

/**
 * Temporal Schedules the service keeps, created idempotently when a worker starts
 * (worker/schedules.ts: the gateway audit's `gateway-audit`, the webhook monitor's
 * `webhook-monitor`; nothing periodic lives in a cron job or a timer in a process). Several workers starting at once all call `ensureSchedule`: the
 * first creates the schedule, the others find it (`ScheduleAlreadyRunning`) and bring its
 * interval, action and task queue up to date when they differ, so a configuration change takes
 * effect on the next start. A schedule whose interval is configured to 0 is removed.
 *
 * Every schedule skips a run while the previous one still goes on (overlap SKIP) and does not
 * catch up on runs missed while Temporal was down beyond one interval: a periodic check needs the
 * next run, not a burst of old ones.
 */

export interface ScheduleDefinition {
  /** The schedule's id, a business name an operator finds in the UI: `gateway-audit`. */
  scheduleId: string;
  /** Milliseconds between runs; 0 removes the schedule. */
  intervalMs: number;
  /** The workflow each run starts (its type name, as the worker registers it). */
  workflowType: string;
  /** The started workflow's id prefix; Temporal appends the run's scheduled time. */
  workflowId: string;
  taskQueue: string;
  args: unknown[];
  /** Bounds each started run (a run stuck past it is ended, and the next scheduled one starts). */
  workflowExecutionTimeoutMs?: number;
  /** What the UI shows for it. */
  note?: string;
}

export type EnsureScheduleOutcome = 'created' | 'updated' | 'unchanged' | 'removed' | 'absent';

function sameDefinition(description: ScheduleDescription, definition: ScheduleDefinition): boolean {
  const intervals = description.spec.intervals ?? [];
  const action = description.action;
  return (
    intervals.length === 1 &&
    intervals[0]?.every === definition.intervalMs &&
    (description.spec.calendars ?? []).length === 0 &&
    action.workflowType === definition.workflowType &&
    action.workflowId === definition.workflowId &&
    action.taskQueue === definition.taskQueue &&
    JSON.stringify(action.args ?? []) === JSON.stringify(definition.args) &&
    (definition.workflowExecutionTimeoutMs === undefined || action.workflowExecutionTimeout === definition.workflowExecutionTimeoutMs)
  );
}

/** Creates the schedule, or updates it to `definition`, or removes it when its interval is 0. Idempotent. */
export async function ensureSchedule(client: ScheduleClient, definition: ScheduleDefinition): Promise<EnsureScheduleOutcome> {
  const handle = client.schedule.getHandle(definition.scheduleId);
  if (definition.intervalMs === 0) {
    try {
      await handle.delete();
      return 'removed';
    } catch (error) {
      if (error instanceof ScheduleNotFoundError) return 'absent';
      throw error;
    }
  }
  if (!Number.isInteger(definition.intervalMs) || definition.intervalMs < 1000) {
    throw new RangeError(`schedule ${definition.scheduleId}: the interval must be a whole number of milliseconds, at least 1000`);
  }
  const spec = { intervals: [{ every: definition.intervalMs }] };
  const action = {
    type: 'startWorkflow' as const,
    workflowType: definition.workflowType,
    workflowId: definition.workflowId,
    taskQueue: definition.taskQueue,
    args: definition.args,
    ...(definition.workflowExecutionTimeoutMs === undefined ? {} : { workflowExecutionTimeout: definition.workflowExecutionTimeoutMs }),
  };
  const policies = { overlap: ScheduleOverlapPolicy.SKIP, catchupWindow: Math.max(60_000, definition.intervalMs) };
  try {
    await client.schedule.create({ scheduleId: definition.scheduleId, spec, action, policies, ...(definition.note === undefined ? {} : { state: { note: definition.note } }) });
    return 'created';
  } catch (error) {
    if (!(error instanceof ScheduleAlreadyRunning)) throw error;
  }
  if (sameDefinition(await handle.describe(), definition)) return 'unchanged';
  await handle.update((previous) => ({ ...previous, spec, action, policies: { ...previous.policies, ...policies } }));
  return 'updated';
}
