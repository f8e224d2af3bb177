import type { Client } from '@temporalio/client';

/**
 * Reads a closed workflow's history (`handle.fetchHistory()`) into the milestones the report
 * needs: when Temporal started the workflow, dispatched and completed its first workflow task,
 * dispatched, started and completed each named activity, recorded the signal that carries the
 * final status, and closed the workflow. Event times are the server's (same machine clock as ours).
 */

type History = Awaited<ReturnType<ReturnType<Client['workflow']['getHandle']>['fetchHistory']>>;
type HistoryEvent = NonNullable<History['events']>[number];

export interface ActivityTimes {
  scheduled: number;
  started: number | null;
  completed: number | null;
}

export interface WorkflowTimeline {
  started: number;
  firstTaskStarted: number | null;
  firstTaskCompleted: number | null;
  /** First scheduling of each activity type, with its first attempt's start and its completion. */
  activities: Map<string, ActivityTimes>;
  /** Signals received, in order, with their first argument decoded as JSON when it is JSON. */
  signals: { name: string; time: number; arg: unknown }[];
  externalSignalInitiated: number | null;
  externalSignalDone: number | null;
  closed: number | null;
  workflowTasks: number;
  events: number;
}

function timeMs(event: HistoryEvent): number {
  const t = event.eventTime;
  if (t === null || t === undefined) return Number.NaN;
  const seconds = typeof t.seconds === 'number' ? t.seconds : Number(t.seconds?.toString() ?? 0);
  return seconds * 1000 + (t.nanos ?? 0) / 1e6;
}

function decode(payload: { data?: Uint8Array | null } | undefined): unknown {
  if (payload?.data === undefined || payload.data === null) return undefined;
  try {
    return JSON.parse(Buffer.from(payload.data).toString('utf8')) as unknown;
  } catch {
    return undefined;
  }
}

export function readTimeline(history: History): WorkflowTimeline {
  const events = history.events ?? [];
  const timeline: WorkflowTimeline = {
    started: Number.NaN,
    firstTaskStarted: null,
    firstTaskCompleted: null,
    activities: new Map(),
    signals: [],
    externalSignalInitiated: null,
    externalSignalDone: null,
    closed: null,
    workflowTasks: 0,
    events: events.length,
  };
  const activityBySchedule = new Map<string, string>();
  let taskStarted = Number.NaN;
  for (const event of events) {
    const at = timeMs(event);
    const id = event.eventId?.toString() ?? '';
    if (event.workflowExecutionStartedEventAttributes) timeline.started = at;
    else if (event.workflowTaskStartedEventAttributes) {
      timeline.firstTaskStarted ??= at;
      taskStarted = at;
    } else if (event.markerRecordedEventAttributes?.markerName === 'core_local_activity') {
      // A local activity: no task of its own; it ran inside the workflow task that started last
      // (its start is taken as that task's start) and its marker carries its completion time.
      const data = decode(event.markerRecordedEventAttributes.details?.data?.payloads?.[0] ?? undefined) as
        | { activity_type?: string; complete_time?: { seconds?: number; nanos?: number } | null }
        | undefined;
      const name = data?.activity_type ?? '?';
      const done = data?.complete_time;
      const completed = done === null || done === undefined ? at : (done.seconds ?? 0) * 1000 + (done.nanos ?? 0) / 1e6;
      if (!timeline.activities.has(name)) timeline.activities.set(name, { scheduled: taskStarted, started: taskStarted, completed });
    } else if (event.workflowTaskCompletedEventAttributes) {
      timeline.firstTaskCompleted ??= at;
      timeline.workflowTasks += 1;
    } else if (event.activityTaskScheduledEventAttributes) {
      const name = event.activityTaskScheduledEventAttributes.activityType?.name ?? '?';
      activityBySchedule.set(id, name);
      if (!timeline.activities.has(name)) timeline.activities.set(name, { scheduled: at, started: null, completed: null });
    } else if (event.activityTaskStartedEventAttributes) {
      const name = activityBySchedule.get(event.activityTaskStartedEventAttributes.scheduledEventId?.toString() ?? '');
      const times = name === undefined ? undefined : timeline.activities.get(name);
      if (times !== undefined) times.started ??= at;
    } else if (event.activityTaskCompletedEventAttributes) {
      const name = activityBySchedule.get(event.activityTaskCompletedEventAttributes.scheduledEventId?.toString() ?? '');
      const times = name === undefined ? undefined : timeline.activities.get(name);
      if (times !== undefined) times.completed ??= at;
    } else if (event.workflowExecutionSignaledEventAttributes) {
      const attributes = event.workflowExecutionSignaledEventAttributes;
      timeline.signals.push({ name: attributes.signalName ?? '?', time: at, arg: decode(attributes.input?.payloads?.[0] ?? undefined) });
    } else if (event.signalExternalWorkflowExecutionInitiatedEventAttributes) {
      timeline.externalSignalInitiated ??= at;
    } else if (event.externalWorkflowExecutionSignaledEventAttributes) {
      timeline.externalSignalDone ??= at;
    } else if (
      event.workflowExecutionCompletedEventAttributes ||
      event.workflowExecutionFailedEventAttributes ||
      event.workflowExecutionTimedOutEventAttributes ||
      event.workflowExecutionTerminatedEventAttributes
    ) {
      timeline.closed = at;
    }
  }
  return timeline;
}

export async function fetchTimeline(client: Client, workflowId: string): Promise<WorkflowTimeline> {
  return readTimeline(await client.workflow.getHandle(workflowId).fetchHistory());
}
