import { z } from 'zod';
import type { Queryable } from './pool.ts';
import { exec, many, maybeOne, one } from './sql.ts';

/**
 * The gateway's webhook queues as our monitor sees them (migration 15_webhook_monitor): the penalty log (every
 * penalty found, every backoff removal and refusal, every configure), the queue of webhooks
 * waiting for a removal, one row per monitor run, and the deliveries our endpoints refused for a
 * bad token. docs/settlement.md, "Operators", says how an operator reads them.
 */

export const penaltyActions = ['PENALIZED', 'INTERRUPTED', 'QUEUED', 'RECOVERED', 'REMOVED', 'REMOVAL_REFUSED', 'CONFIGURED'] as const;
export type PenaltyAction = (typeof penaltyActions)[number];
export const penaltySources = ['monitor', 'api', 'admin'] as const;
export type PenaltySource = (typeof penaltySources)[number];
export const monitorModes = ['scheduled', 'check', 'process'] as const;
export type MonitorMode = (typeof monitorModes)[number];

export const penaltyLogRow = z.object({
  id: z.bigint(),
  webhook_id: z.string(),
  action: z.enum(penaltyActions),
  penalized_requests_count: z.number().int().nullable(),
  interrupted: z.boolean().nullable(),
  cooldown_until: z.date().nullable(),
  source: z.enum(penaltySources),
  actor: z.string().nullable(),
  workflow_id: z.string().nullable(),
  detail: z.unknown().nullable(),
  created_at: z.date(),
});
export type PenaltyLogRow = z.infer<typeof penaltyLogRow>;

const penaltyColumns = 'id, webhook_id, action, penalized_requests_count, interrupted, cooldown_until, source, actor, workflow_id, detail, created_at';

export interface PenaltyLogEntry {
  webhookId: string;
  action: PenaltyAction;
  penalizedRequestsCount?: number | null;
  interrupted?: boolean | null;
  cooldownUntil?: Date | null;
  source: PenaltySource;
  actor?: string | null;
  workflowId?: string | null;
  /** Written once: a second entry with the same key (a retried activity) is dropped. */
  operationKey?: string | null;
  detail?: unknown;
}

/** Appends one entry; false when an entry with the same operation key is there already. */
export async function appendPenaltyLog(db: Queryable, entry: PenaltyLogEntry): Promise<boolean> {
  const inserted = await exec(db, {
    name: 'penalty-log-append',
    text: `INSERT INTO webhook_penalty_log
             (webhook_id, action, penalized_requests_count, interrupted, cooldown_until, source, actor, workflow_id, operation_key, detail)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10::jsonb)
           ON CONFLICT (operation_key) DO NOTHING`,
    values: [
      entry.webhookId,
      entry.action,
      entry.penalizedRequestsCount ?? null,
      entry.interrupted ?? null,
      entry.cooldownUntil ?? null,
      entry.source,
      entry.actor?.slice(0, 100) ?? null,
      entry.workflowId ?? null,
      entry.operationKey ?? null,
      entry.detail === undefined ? null : JSON.stringify(entry.detail),
    ],
  });
  return inserted === 1;
}

export function listPenaltyLog(
  db: Queryable,
  filter: { webhookId?: string | undefined; action?: PenaltyAction | undefined },
  page: { limit: number; offset: number },
): Promise<PenaltyLogRow[]> {
  return many(db, penaltyLogRow, {
    name: 'penalty-log-list',
    text: `SELECT ${penaltyColumns} FROM webhook_penalty_log
            WHERE ($1::text IS NULL OR webhook_id = $1) AND ($2::text IS NULL OR action = $2)
            ORDER BY created_at DESC, id DESC LIMIT $3 OFFSET $4`,
    values: [filter.webhookId ?? null, filter.action ?? null, page.limit, page.offset],
  });
}

/** Until when each webhook's backoff may not be removed again (only webhooks with a cooldown still running). */
export async function activeCooldowns(db: Queryable): Promise<Map<string, Date>> {
  const rows = await many(db, z.object({ webhook_id: z.string(), cooldown_until: z.date() }), {
    name: 'penalty-log-cooldowns',
    text: `SELECT webhook_id, max(cooldown_until) AS cooldown_until FROM webhook_penalty_log
            WHERE action IN ('REMOVED', 'REMOVAL_REFUSED') AND cooldown_until > now()
            GROUP BY webhook_id`,
    values: [],
  });
  return new Map(rows.map((row) => [row.webhook_id, row.cooldown_until]));
}

/** Entries per action since `since`, for the dashboard. */
export async function penaltyCountsSince(db: Queryable, since: Date): Promise<Record<string, number>> {
  const rows = await many(db, z.object({ action: z.string(), n: z.number().int() }), {
    name: 'penalty-log-counts',
    text: `SELECT action, count(*)::int AS n FROM webhook_penalty_log WHERE created_at >= $1 GROUP BY action`,
    values: [since],
  });
  return Object.fromEntries(rows.map((row) => [row.action, row.n]));
}

// The removal queue

export const removalQueueRow = z.object({
  webhook_id: z.string(),
  reason: z.enum(['PENALIZED', 'INTERRUPTED']),
  penalized_requests_count: z.number().int(),
  queued_at: z.date(),
  next_attempt_at: z.date(),
  attempts: z.number().int(),
  last_outcome: z.enum(['REFUSED', 'FAILED']).nullable(),
  last_error: z.string().nullable(),
});
export type RemovalQueueRow = z.infer<typeof removalQueueRow>;
const queueColumns = 'webhook_id, reason, penalized_requests_count, queued_at, next_attempt_at, attempts, last_outcome, last_error';

/** Queues a webhook for removal, or refreshes what the queue knows of it; true when it was not queued before. */
export async function queueForRemoval(
  db: Queryable,
  item: { webhookId: string; reason: 'PENALIZED' | 'INTERRUPTED'; penalizedRequestsCount: number },
): Promise<boolean> {
  const row = await one(db, z.object({ inserted: z.boolean() }), {
    name: 'removal-queue-upsert',
    text: `INSERT INTO webhook_removal_queue AS q (webhook_id, reason, penalized_requests_count) VALUES ($1, $2, $3)
           ON CONFLICT (webhook_id) DO UPDATE SET reason = EXCLUDED.reason, penalized_requests_count = EXCLUDED.penalized_requests_count
           RETURNING (xmax = 0) AS inserted`,
    values: [item.webhookId, item.reason, item.penalizedRequestsCount],
  });
  return row.inserted;
}

/** Takes a webhook off the queue (removed, or healthy again); true when it was queued. */
export async function dequeueRemoval(db: Queryable, webhookId: string): Promise<boolean> {
  return (await exec(db, { name: 'removal-queue-delete', text: 'DELETE FROM webhook_removal_queue WHERE webhook_id = $1', values: [webhookId] })) === 1;
}

export function listRemovalQueue(db: Queryable, options: { dueOnly: boolean; limit: number }): Promise<RemovalQueueRow[]> {
  return many(db, removalQueueRow, {
    name: 'removal-queue-list',
    text: `SELECT ${queueColumns} FROM webhook_removal_queue
            WHERE NOT $1::boolean OR next_attempt_at <= now()
            ORDER BY queued_at, webhook_id LIMIT $2`,
    values: [options.dueOnly, options.limit],
  });
}

/** A removal that did not happen: try again after `retryAfterMs`. */
export async function deferRemoval(
  db: Queryable,
  item: { webhookId: string; outcome: 'REFUSED' | 'FAILED'; retryAfterMs: number; error?: string | null },
): Promise<void> {
  await exec(db, {
    name: 'removal-queue-defer',
    text: `UPDATE webhook_removal_queue
              SET attempts = attempts + 1, last_outcome = $2, last_error = $4,
                  next_attempt_at = now() + make_interval(secs => $3::float8 / 1000)
            WHERE webhook_id = $1`,
    values: [item.webhookId, item.outcome, Math.max(0, Math.round(item.retryAfterMs)), item.error?.slice(0, 1000) ?? null],
  });
}

// Monitor runs

export const monitorRunRow = z.object({
  workflow_id: z.string(),
  run_id: z.string(),
  mode: z.enum(monitorModes),
  checked_at: z.date(),
  webhooks: z.number().int(),
  penalized: z.number().int(),
  interrupted: z.number().int(),
  queued: z.number().int(),
  removed: z.number().int(),
  refused: z.number().int(),
  failed: z.number().int(),
  error: z.string().nullable(),
});
export type MonitorRunRow = z.infer<typeof monitorRunRow>;

export async function recordMonitorCheck(
  db: Queryable,
  run: { workflowId: string; runId: string; mode: MonitorMode; webhooks: number; penalized: number; interrupted: number; queued: number; error: string | null },
): Promise<void> {
  await exec(db, {
    name: 'monitor-run-check',
    text: `INSERT INTO webhook_monitor_runs (workflow_id, run_id, mode, webhooks, penalized, interrupted, queued, error)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
           ON CONFLICT (workflow_id, run_id) DO UPDATE
             SET checked_at = now(), webhooks = EXCLUDED.webhooks, penalized = EXCLUDED.penalized,
                 interrupted = EXCLUDED.interrupted, queued = EXCLUDED.queued, error = EXCLUDED.error`,
    values: [run.workflowId, run.runId, run.mode, run.webhooks, run.penalized, run.interrupted, run.queued, run.error?.slice(0, 1000) ?? null],
  });
}

export async function recordMonitorRemovals(
  db: Queryable,
  run: { workflowId: string; runId: string; removed: number; refused: number; failed: number },
): Promise<void> {
  await exec(db, {
    name: 'monitor-run-removals',
    text: `UPDATE webhook_monitor_runs SET removed = $3, refused = $4, failed = $5 WHERE workflow_id = $1 AND run_id = $2`,
    values: [run.workflowId, run.runId, run.removed, run.refused, run.failed],
  });
}

export function latestMonitorRun(db: Queryable): Promise<MonitorRunRow | null> {
  return maybeOne(db, monitorRunRow, {
    name: 'monitor-run-latest',
    text: `SELECT workflow_id, run_id, mode, checked_at, webhooks, penalized, interrupted, queued, removed, refused, failed, error
             FROM webhook_monitor_runs ORDER BY checked_at DESC LIMIT 1`,
    values: [],
  });
}

/** Runs older than `keepDays` go: the table is a recent history, not an archive. */
export async function pruneMonitorRuns(db: Queryable, keepDays: number): Promise<number> {
  return exec(db, {
    name: 'monitor-run-prune',
    text: `DELETE FROM webhook_monitor_runs WHERE checked_at < now() - make_interval(days => $1)`,
    values: [keepDays],
  });
}

// Deliveries refused for a bad token

export async function recordWebhookAuthRefusal(db: Queryable, provider: 'gateway' | 'supabase'): Promise<void> {
  await exec(db, {
    name: 'webhook-auth-refusal',
    text: `INSERT INTO webhook_auth_refusals AS r (provider, hour, refused, last_refused_at) VALUES ($1, date_trunc('hour', now()), 1, now())
           ON CONFLICT (provider, hour) DO UPDATE SET refused = r.refused + 1, last_refused_at = now()`,
    values: [provider],
  });
}

export async function webhookAuthRefusalsSince(db: Queryable, since: Date): Promise<Map<string, { refused: number; lastRefusedAt: Date }>> {
  const rows = await many(db, z.object({ provider: z.string(), refused: z.number().int(), last_refused_at: z.date() }), {
    name: 'webhook-auth-refusals',
    text: `SELECT provider, sum(refused)::int AS refused, max(last_refused_at) AS last_refused_at
             FROM webhook_auth_refusals WHERE hour >= date_trunc('hour', $1::timestamptz) GROUP BY provider`,
    values: [since],
  });
  return new Map(rows.map((row) => [row.provider, { refused: row.refused, lastRefusedAt: row.last_refused_at }]));
}
