import { z } from 'zod';
import type { Queryable } from './pool.ts';
import { one } from './sql.ts';

/**
 * The processing queues kept in PostgreSQL, as an operator watches them
 * (`GET /api/v1/admin/queues/stats`): what waits, how long the oldest has waited, what keeps failing.
 *
 * - `plc_status_outbox` (migration 9): PLC statuses owed to their workflows' search attributes.
 *   It drains at `PLC_STATUS_MAX_PER_SECOND` per API process, so a sustained burst of first hops
 *   above that rate grows it without bound: its age is the number to alert on.
 * - `webhook_inbox` (migration 5): gateway events stored before the 200. RECEIVED and PROCESSING
 *   rows are still to be routed; DEAD ones gave up after their retries and need an operator.
 *   Only those statuses are counted (index scans on `webhook_inbox_status`); PROCESSED and
 *   IGNORED rows, the inbox's history, are not.
 */
export const queueStatsRow = z.object({
  outbox_pending: z.number().int(),
  outbox_failing: z.number().int(),
  outbox_max_attempts: z.number().int().nullable(),
  outbox_oldest_ms: z.number().nullable(),
  outbox_last_error: z.string().nullable(),
  inbox_received: z.number().int(),
  inbox_processing: z.number().int(),
  inbox_dead: z.number().int(),
  inbox_oldest_ms: z.number().nullable(),
});
export type QueueStatsRow = z.infer<typeof queueStatsRow>;

export function queueStats(db: Queryable): Promise<QueueStatsRow> {
  return one(db, queueStatsRow, {
    name: 'queue-stats',
    text: `SELECT o.pending AS outbox_pending, o.failing AS outbox_failing, o.max_attempts AS outbox_max_attempts,
                  o.oldest_ms AS outbox_oldest_ms,
                  (SELECT last_error FROM plc_status_outbox WHERE last_error IS NOT NULL ORDER BY next_attempt_at DESC LIMIT 1) AS outbox_last_error,
                  i.received AS inbox_received, i.processing AS inbox_processing, i.dead AS inbox_dead, i.oldest_ms AS inbox_oldest_ms
             FROM (SELECT count(*)::int AS pending, (count(*) FILTER (WHERE last_error IS NOT NULL))::int AS failing,
                          max(attempts) AS max_attempts,
                          (extract(epoch FROM now() - min(enqueued_at)) * 1000)::float8 AS oldest_ms
                     FROM plc_status_outbox) o,
                  (SELECT (count(*) FILTER (WHERE status = 'RECEIVED'))::int AS received,
                          (count(*) FILTER (WHERE status = 'PROCESSING'))::int AS processing,
                          (count(*) FILTER (WHERE status = 'DEAD'))::int AS dead,
                          (extract(epoch FROM now() - min(received_at) FILTER (WHERE status IN ('RECEIVED', 'PROCESSING'))) * 1000)::float8 AS oldest_ms
                     FROM webhook_inbox WHERE status IN ('RECEIVED', 'PROCESSING', 'DEAD')) i`,
    values: [],
  });
}
