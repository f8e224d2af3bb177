import { summarize } from '../support/stats.ts';
import type { OpRecord } from './drive.ts';
import type { ActivityTimes, WorkflowTimeline } from './history.ts';
import type { BareProbe, RedemptionProbe, Span } from './probes.ts';

/**
 * Where one settlement's time goes: named points on its timeline (probes, workflow histories,
 * the database's finished time), then the segments between them, each put in one category.
 * Points are milliseconds since the client sent the request.
 */

export const pointLabels = {
  handedToTemporal: 'API calls update-with-start (request parsed, rate-limited, verified)',
  workflowStarted: 'workflow started (history)',
  firstTaskStarted: 'first workflow task picked up by the worker',
  firstTaskCompleted: 'first workflow task completed (local activity done, update answered)',
  apiAnswered: 'client has the API answer (PENDING_PAYMENT)',
  payoutStarted: 'payout activity started',
  transferCreated: 'gateway answered POST /v3/transfers',
  payoutCompleted: 'payout activity completed',
  validationSent: 'simulator sent the validation request',
  validationAnswered: 'validation answered by the API',
  webhookSent: 'TRANSFER_DONE webhook sent',
  webhookAnswered: 'webhook answered (stored, workflow started)',
  routeStarted: 'webhook workflow: route activity started',
  routeCompleted: 'webhook workflow: route activity completed',
  signalRecorded: 'DONE signal recorded in the settlement workflow',
  finishStarted: 'finish activity started',
  finishCompleted: 'finish activity completed',
  settled: 'SETTLED (row finished_at / bare finish row)',
  closed: 'workflow closed',
  clientSaw: 'client saw the final result',
} as const;
export type PointKey = keyof typeof pointLabels;
export type Points = Partial<Record<PointKey, number>>;

export type Category = 'API' | 'Temporal' | 'PostgreSQL' | 'gateway+PostgreSQL' | 'simulator' | 'API+PostgreSQL+Temporal';

export interface Segment {
  label: string;
  from: PointKey | 'sent';
  to: PointKey;
  category: Category;
  /** On the path from the TRANSFER_DONE webhook to SETTLED. */
  afterWebhook: boolean;
  /** Only meaningful for one kind of settlement. */
  only?: 'redemption' | 'bare';
}

export const segments: readonly Segment[] = [
  { label: 'API before the workflow: parse, rate limit, verify', from: 'sent', to: 'handedToTemporal', category: 'API', afterWebhook: false },
  { label: 'start workflow, dispatch first workflow task', from: 'handedToTemporal', to: 'firstTaskStarted', category: 'Temporal', afterWebhook: false },
  { label: 'first workflow task incl. local activity (open)', from: 'firstTaskStarted', to: 'firstTaskCompleted', category: 'PostgreSQL', afterWebhook: false },
  { label: 'update answer to API, row read, response', from: 'firstTaskCompleted', to: 'apiAnswered', category: 'API+PostgreSQL+Temporal', afterWebhook: false },
  { label: 'dispatch payout activity (parallel to the answer)', from: 'firstTaskCompleted', to: 'payoutStarted', category: 'Temporal', afterWebhook: false },
  { label: 'payout activity (gateway POST + PostgreSQL)', from: 'payoutStarted', to: 'payoutCompleted', category: 'gateway+PostgreSQL', afterWebhook: false },
  { label: 'simulator: validation delay', from: 'transferCreated', to: 'validationSent', category: 'simulator', afterWebhook: false, only: 'redemption' },
  { label: 'validation request (API + PostgreSQL)', from: 'validationSent', to: 'validationAnswered', category: 'API', afterWebhook: false, only: 'redemption' },
  { label: 'simulator webhook queue (earlier events first)', from: 'validationAnswered', to: 'webhookSent', category: 'simulator', afterWebhook: false, only: 'redemption' },
  { label: 'bench gateway: webhook delay after payout start', from: 'payoutStarted', to: 'webhookSent', category: 'simulator', afterWebhook: false, only: 'bare' },
  { label: 'webhook route: inbox INSERT + start webhook workflow (final events)', from: 'webhookSent', to: 'webhookAnswered', category: 'API+PostgreSQL+Temporal', afterWebhook: true },
  { label: 'webhook workflow: dispatch first task (+ route activity if remote)', from: 'webhookAnswered', to: 'routeStarted', category: 'Temporal', afterWebhook: true },
  { label: 'route (local) activity', from: 'routeStarted', to: 'routeCompleted', category: 'PostgreSQL', afterWebhook: true },
  { label: 'workflow task + signal to the settlement workflow', from: 'routeCompleted', to: 'signalRecorded', category: 'Temporal', afterWebhook: true },
  { label: 'workflow task (+ dispatch if remote) up to the finish', from: 'signalRecorded', to: 'finishStarted', category: 'Temporal', afterWebhook: true },
  { label: 'finish (local) activity up to its commit', from: 'finishStarted', to: 'finishCompleted', category: 'PostgreSQL', afterWebhook: true },
  { label: 'after the finish: workflow tasks (PLC signal), close', from: 'finishCompleted', to: 'closed', category: 'Temporal', afterWebhook: false },
  { label: 'result delivered to the waiting client', from: 'closed', to: 'clientSaw', category: 'Temporal', afterWebhook: false },
];

export interface Summary {
  n: number;
  mean: number;
  p50: number;
  p95: number;
  p99: number;
  max: number;
}

export function summarizeValues(values: readonly number[]): Summary {
  const summary = summarize(values.filter((value) => Number.isFinite(value)));
  return { n: summary.count, mean: summary.meanMs, p50: summary.p50Ms, p95: summary.p95Ms, p99: summary.p99Ms, max: summary.maxMs };
}

function relative(points: Record<string, number | null | undefined>, origin: number): Points {
  const out: Points = {};
  for (const [key, value] of Object.entries(points)) {
    if (typeof value === 'number' && Number.isFinite(value)) out[key as PointKey] = value - origin;
  }
  return out;
}

/** The pieces of one settlement that stand for the points both kinds have (the names differ per kind). */
interface SettlementPieces {
  update: Span | undefined;
  payout: ActivityTimes | undefined;
  webhook: Span | undefined;
  route: ActivityTimes | undefined;
  signalAt: number | undefined;
  finish: ActivityTimes | undefined;
}

/** Every point of one settlement; `extra` adds the points only one kind has. */
function settlementPoints(
  op: OpRecord,
  pieces: SettlementPieces,
  settledAt: number | null,
  timeline: WorkflowTimeline | null,
  extra: Partial<Record<PointKey, number | undefined>> = {},
): Points {
  return relative(
    {
      handedToTemporal: pieces.update?.start,
      workflowStarted: timeline?.started,
      firstTaskStarted: timeline?.firstTaskStarted,
      firstTaskCompleted: timeline?.firstTaskCompleted,
      apiAnswered: op.respondedAt,
      payoutStarted: pieces.payout?.started,
      payoutCompleted: pieces.payout?.completed,
      webhookSent: pieces.webhook?.start,
      webhookAnswered: pieces.webhook?.end,
      routeStarted: pieces.route?.started,
      routeCompleted: pieces.route?.completed,
      signalRecorded: pieces.signalAt,
      finishStarted: pieces.finish?.started,
      finishCompleted: pieces.finish?.completed,
      settled: settledAt,
      closed: timeline?.closed,
      clientSaw: op.doneAt,
      ...extra,
    },
    op.sentAt,
  );
}

export function redemptionPoints(
  op: OpRecord,
  probe: RedemptionProbe | undefined,
  settledAt: number | null,
  timeline: WorkflowTimeline | null,
  webhookTimeline: WorkflowTimeline | null,
): Points {
  const pieces: SettlementPieces = {
    update: probe?.update,
    payout: timeline?.activities.get('createPayout'),
    webhook: probe?.webhooks.find((send) => send.event === 'TRANSFER_DONE'),
    route: webhookTimeline?.activities.get('routeInboxEvent'),
    signalAt: timeline?.signals.find((signal) => (signal.arg as { status?: unknown } | undefined)?.status === 'DONE')?.time,
    finish: timeline?.activities.get('settleRedemption') ?? timeline?.activities.get('finishRedemption'),
  };
  return settlementPoints(op, pieces, settledAt, timeline, {
    transferCreated: probe?.transferCreate?.end,
    validationSent: probe?.validation?.start,
    validationAnswered: probe?.validation?.end,
  });
}

export function barePoints(
  op: OpRecord,
  probe: BareProbe | undefined,
  settledAt: number | null,
  timeline: WorkflowTimeline | null,
  webhookTimeline: WorkflowTimeline | null,
): Points {
  return settlementPoints(
    op,
    {
      update: probe?.update,
      payout: timeline?.activities.get('barePayout'),
      webhook: probe?.webhook,
      route: webhookTimeline?.activities.get('bareRouteEvent'),
      signalAt: timeline?.signals.find((signal) => signal.name === 'bareEvent')?.time,
      finish: timeline?.activities.get('bareFinish'),
    },
    settledAt,
    timeline,
  );
}

/** Per segment, the summary of its duration over the samples that have both ends. */
export function segmentSummaries(samples: readonly Points[], kind: 'redemption' | 'bare'): Map<Segment, Summary> {
  const out = new Map<Segment, Summary>();
  for (const segment of segments) {
    if (segment.only !== undefined && segment.only !== kind) continue;
    const values: number[] = [];
    for (const points of samples) {
      const from = segment.from === 'sent' ? 0 : points[segment.from];
      const to = points[segment.to];
      if (from !== undefined && to !== undefined) values.push(to - from);
    }
    out.set(segment, summarizeValues(values));
  }
  return out;
}

export function pointSummaries(samples: readonly Points[]): Map<PointKey, Summary> {
  const out = new Map<PointKey, Summary>();
  for (const key of Object.keys(pointLabels) as PointKey[]) {
    out.set(key, summarizeValues(samples.map((points) => points[key]).filter((value): value is number => value !== undefined)));
  }
  return out;
}
