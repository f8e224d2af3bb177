import { z } from 'zod';
import { plcStatuses } from '../src/plc/lifecycle.ts';
import type { Queryable } from './pool.ts';
import { exec, many } from './sql.ts';

/**
 * The outbox of PLC statuses owed to the PLC workflows (migration 9). The transfer route queues
 * a row in the statement that appends a first hop (`appendTransfersBatch`); the dispatcher
 * (`api/plc-status-dispatcher.ts`) claims due rows with a lease, signals each workflow, and
 * deletes a row once its signal was delivered, unless a newer status replaced it meanwhile.
 */

export const outboxRow = z.object({
  token_id: z.string().uuid(),
  status: z.enum(plcStatuses),
  chain_length: z.number().int(),
  attempts: z.number().int(),
  revision: z.bigint(),
  enqueued_at: z.date(),
});
export type OutboxRow = z.infer<typeof outboxRow>;

/** Claims up to `limit` due rows for `leaseMs`: another dispatcher skips them until the lease ends. */
export function claimDueStatuses(db: Queryable, limit: number, leaseMs: number): Promise<OutboxRow[]> {
  return many(db, outboxRow, {
    name: 'plc-outbox-claim',
    text: `UPDATE plc_status_outbox o SET attempts = o.attempts + 1, next_attempt_at = now() + make_interval(secs => $2 / 1000.0)
            WHERE o.token_id IN (SELECT token_id FROM plc_status_outbox WHERE next_attempt_at <= now()
                                  ORDER BY next_attempt_at LIMIT $1 FOR UPDATE SKIP LOCKED)
            RETURNING o.token_id, o.status, o.chain_length, o.attempts, o.revision, o.enqueued_at`,
    values: [limit, leaseMs],
  });
}

/** Done with a row: deleted, unless it was queued again after it was claimed. */
export async function completeStatus(db: Queryable, row: Pick<OutboxRow, 'token_id' | 'revision'>): Promise<void> {
  await exec(db, {
    prepare: true,
    name: 'plc-outbox-complete',
    text: 'DELETE FROM plc_status_outbox WHERE token_id = $1 AND revision = $2',
    values: [row.token_id, row.revision],
  });
}

/** A failed delivery: tried again after `retryInMs`. */
export async function failStatus(db: Queryable, row: Pick<OutboxRow, 'token_id' | 'revision'>, retryInMs: number, error: string): Promise<void> {
  await exec(db, {
    prepare: true,
    name: 'plc-outbox-fail',
    text: `UPDATE plc_status_outbox SET next_attempt_at = now() + make_interval(secs => $3 / 1000.0), last_error = left($4, 500)
            WHERE token_id = $1 AND revision = $2`,
    values: [row.token_id, row.revision, retryInMs, error],
  });
}
