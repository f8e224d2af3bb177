import { z } from 'zod';
import { inboxStatuses, type InboxStatus } from './inbox.ts';
import type { Queryable } from './pool.ts';
import { many, one } from './sql.ts';

/**
 * The webhook inbox as operators read and repair it (`/api/v1/admin/monitor/inbox/*`,
 * `/api/v1/admin/webhooks`): statistics, bounded lists newest first, and the two repairs, dead
 * events sent back through their workflow and events stored but never started.
 */

export const inboxEventRow = z.object({
  id: z.string().uuid(),
  provider: z.enum(['gateway', 'supabase']),
  endpoint: z.string(),
  event_id: z.string(),
  event_type: z.string().nullable(),
  status: z.enum(inboxStatuses),
  attempts: z.number().int(),
  duplicates: z.number().int(),
  reprocessed: z.number().int(),
  last_error: z.string().nullable(),
  result: z.unknown().nullable(),
  received_at: z.date(),
  processed_at: z.date().nullable(),
});
export type InboxEventRow = z.infer<typeof inboxEventRow>;
/** Every column but the raw body: lists never carry payloads (they may hold personal data). */
const columns = 'id, provider, endpoint, event_id, event_type, status, attempts, duplicates, reprocessed, last_error, result, received_at, processed_at';

export function listInboxEvents(
  db: Queryable,
  filter: { status?: InboxStatus | undefined; eventType?: string | undefined; provider?: 'gateway' | 'supabase' | undefined },
  page: { limit: number; offset: number },
): Promise<InboxEventRow[]> {
  return many(db, inboxEventRow, {
    name: 'inbox-admin-list',
    text: `SELECT ${columns} FROM webhook_inbox
            WHERE ($1::text IS NULL OR status = $1) AND ($2::text IS NULL OR event_type = $2) AND ($3::text IS NULL OR provider = $3)
            ORDER BY received_at DESC, id DESC LIMIT $4 OFFSET $5`,
    values: [filter.status ?? null, filter.eventType ?? null, filter.provider ?? null, page.limit, page.offset],
  });
}

/** The newest `perEndpoint` events of each endpoint named (the webhook they came through). */
export function recentEventsByEndpoint(db: Queryable, endpoints: readonly string[], perEndpoint: number): Promise<InboxEventRow[]> {
  return many(db, inboxEventRow, {
    name: 'inbox-admin-recent',
    text: `SELECT e.* FROM unnest($1::text[]) AS n(endpoint)
             CROSS JOIN LATERAL (SELECT ${columns} FROM webhook_inbox w WHERE w.endpoint = n.endpoint
                                  ORDER BY received_at DESC LIMIT $2) e
            ORDER BY e.received_at DESC`,
    values: [endpoints, perEndpoint],
  });
}

export const inboxStatsRow = z.object({
  by_status: z.record(z.string(), z.number().int()),
  by_event_type: z.array(z.object({ event_type: z.string().nullable(), status: z.string(), n: z.number().int() })),
  total: z.number().int(),
  dead: z.number().int(),
  waiting: z.number().int(),
  oldest_waiting_ms: z.number().nullable(),
  oldest_waiting_event_id: z.string().nullable(),
  duplicates: z.number().int(),
});
export type InboxStatsRow = z.infer<typeof inboxStatsRow>;

/**
 * Counts by status and by event type (the 100 largest groups), the oldest event still waiting
 * (RECEIVED or PROCESSING) and the dead ones. One statement, so the numbers agree with each other.
 */
export function inboxStats(db: Queryable): Promise<InboxStatsRow> {
  return one(db, inboxStatsRow, {
    name: 'inbox-admin-stats',
    text: `WITH s AS (SELECT status, count(*)::int AS n, sum(duplicates)::int AS d FROM webhook_inbox GROUP BY status),
                t AS (SELECT event_type, status, count(*)::int AS n FROM webhook_inbox GROUP BY event_type, status
                       ORDER BY n DESC, event_type LIMIT 100),
                o AS (SELECT event_id, received_at FROM webhook_inbox WHERE status IN ('RECEIVED', 'PROCESSING')
                       ORDER BY received_at LIMIT 1)
           SELECT coalesce((SELECT jsonb_object_agg(status, n) FROM s), '{}'::jsonb) AS by_status,
                  coalesce((SELECT jsonb_agg(jsonb_build_object('event_type', event_type, 'status', status, 'n', n)) FROM t), '[]'::jsonb) AS by_event_type,
                  coalesce((SELECT sum(n) FROM s), 0)::int AS total,
                  coalesce((SELECT n FROM s WHERE status = 'DEAD'), 0)::int AS dead,
                  coalesce((SELECT sum(n) FROM s WHERE status IN ('RECEIVED', 'PROCESSING')), 0)::int AS waiting,
                  (SELECT (extract(epoch FROM now() - received_at) * 1000)::float8 FROM o) AS oldest_waiting_ms,
                  (SELECT event_id FROM o) AS oldest_waiting_event_id,
                  coalesce((SELECT sum(d) FROM s), 0)::int AS duplicates`,
    values: [],
  });
}

export interface ClaimedInboxEvent {
  id: string;
  provider: 'gateway' | 'supabase';
  event_id: string;
}
const claimedRow = z.object({ id: z.string().uuid(), provider: z.enum(['gateway', 'supabase']), event_id: z.string() });

/**
 * Takes up to `limit` DEAD events (oldest first) back to RECEIVED for a new run of their
 * workflow, counting the reprocessing. Rows another caller is taking at the same moment are
 * skipped (SKIP LOCKED) and the status guard makes the flip happen once: two operators pressing
 * together get disjoint sets, so each dead event goes through its workflow once.
 */
export function claimDeadEvents(db: Queryable, limit: number): Promise<ClaimedInboxEvent[]> {
  return many(db, claimedRow, {
    name: 'inbox-admin-claim-dead',
    // The pick is a materialized CTE: a LIMIT inside `WHERE id IN (subquery)` may be evaluated more
    // than once by the planner and so take more than `limit` rows.
    text: `WITH picked AS MATERIALIZED (
             SELECT id FROM webhook_inbox WHERE status = 'DEAD' ORDER BY received_at, id LIMIT $1 FOR UPDATE SKIP LOCKED)
           UPDATE webhook_inbox w SET status = 'RECEIVED', reprocessed = w.reprocessed + 1
             FROM picked WHERE w.id = picked.id AND w.status = 'DEAD'
            RETURNING w.id, w.provider, w.event_id`,
    values: [limit],
  });
}

/**
 * Events stored but not finished (RECEIVED, or PROCESSING) for at least `olderThanMs`, oldest
 * first: after a worker outage, or a process that died between storing an event and starting its
 * workflow. The age keeps a sweep from racing the webhook route's own start.
 */
export function listUnfinishedEvents(db: Queryable, options: { olderThanMs: number; limit: number }): Promise<ClaimedInboxEvent[]> {
  return many(db, claimedRow, {
    name: 'inbox-admin-unfinished',
    text: `SELECT id, provider, event_id FROM webhook_inbox
            WHERE status IN ('RECEIVED', 'PROCESSING') AND received_at <= now() - make_interval(secs => $1::float8 / 1000)
            ORDER BY received_at, id LIMIT $2`,
    values: [options.olderThanMs, options.limit],
  });
}

export const providerDiagnosticsRow = z.object({
  provider: z.enum(['gateway', 'supabase']),
  total: z.number().int(),
  last_received_at: z.date().nullable(),
  window_total: z.number().int(),
  window_failed: z.number().int(),
  window_dead: z.number().int(),
  waiting: z.number().int(),
});
export type ProviderDiagnosticsRow = z.infer<typeof providerDiagnosticsRow>;

/**
 * Per provider: events ever received and the newest one's time, and over the window since
 * `since` how many arrived, how many failed at least once (a routing error, retried or not) and
 * how many are dead.
 */
export function providerDiagnostics(db: Queryable, since: Date): Promise<ProviderDiagnosticsRow[]> {
  return many(db, providerDiagnosticsRow, {
    name: 'inbox-admin-diagnostics',
    text: `SELECT p.provider,
                  (SELECT count(*)::int FROM webhook_inbox w WHERE w.provider = p.provider) AS total,
                  (SELECT max(received_at) FROM webhook_inbox w WHERE w.provider = p.provider) AS last_received_at,
                  count(w.id)::int AS window_total,
                  (count(w.id) FILTER (WHERE w.last_error IS NOT NULL OR w.attempts > 1))::int AS window_failed,
                  (count(w.id) FILTER (WHERE w.status = 'DEAD'))::int AS window_dead,
                  (count(w.id) FILTER (WHERE w.status IN ('RECEIVED', 'PROCESSING')))::int AS waiting
             FROM (VALUES ('gateway'), ('supabase')) AS p(provider)
             LEFT JOIN webhook_inbox w ON w.provider = p.provider AND w.received_at >= $1
            GROUP BY p.provider ORDER BY p.provider`,
    values: [since],
  });
}
