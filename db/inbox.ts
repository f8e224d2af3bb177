import { z } from 'zod';
import type { Queryable } from './pool.ts';
import { maybeOne, one } from './sql.ts';
import { reportCommitted } from './committed.ts';

/**
 * The inbound webhook inbox: every body stored exactly as received, unique by (provider,
 * event_id), before anything acts on it. A duplicate is counted and acknowledged, never processed
 * twice; an event whose processing keeps failing ends DEAD and can be reprocessed; an event the
 * gateway contradicts when asked ends CONTRADICTED (migration 22_gateway_word), with the gateway's answer in
 * `result`, and is never processed again.
 */

export const inboxStatuses = ['RECEIVED', 'PROCESSING', 'PROCESSED', 'IGNORED', 'DEAD', 'CONTRADICTED'] as const;
/** The statuses an event ends in: never claimed again, never changed. */
export type InboxFinalStatus = 'PROCESSED' | 'IGNORED' | 'CONTRADICTED';
export type InboxStatus = (typeof inboxStatuses)[number];

export const inboxRow = z.object({
  id: z.string().uuid(),
  provider: z.enum(['gateway', 'supabase']),
  endpoint: z.string(),
  event_id: z.string(),
  event_type: z.string().nullable(),
  raw_body: z.string(),
  status: z.enum(inboxStatuses),
  attempts: z.number().int(),
  last_error: z.string().nullable(),
  duplicates: z.number().int(),
  result: z.unknown().nullable(),
  received_at: z.date(),
  processed_at: z.date().nullable(),
});
export type InboxRow = z.infer<typeof inboxRow>;

const columns = 'id, provider, endpoint, event_id, event_type, raw_body, status, attempts, last_error, duplicates, result, received_at, processed_at';

/**
 * Stores an event (or counts a duplicate). `settled` stores a new event already in its final
 * state, for an event that by its content alone needs no processing (a non-final transfer status,
 * a body nothing acts on): the row is the whole record and no workflow is started for it.
 */
export async function storeInboxEvent(
  db: Queryable,
  event: {
    provider: 'gateway' | 'supabase';
    endpoint: string;
    eventId: string;
    eventType: string | null;
    rawBody: string;
    settled?: { status: 'IGNORED'; result: unknown };
  },
): Promise<{ row: InboxRow; duplicate: boolean }> {
  const row = await one(db, inboxRow.extend({ inserted: z.boolean() }), {
    name: 'inbox-store',
    text: `INSERT INTO webhook_inbox AS w (provider, endpoint, event_id, event_type, raw_body, status, result, processed_at)
           VALUES ($1, $2, $3, $4, $5, coalesce($6::text, 'RECEIVED'), $7::jsonb, CASE WHEN $6::text IS NULL THEN NULL ELSE now() END)
           ON CONFLICT (provider, event_id) DO UPDATE SET duplicates = w.duplicates + 1
           RETURNING ${columns}, (xmax = 0) AS inserted`,
    values: [
      event.provider,
      event.endpoint,
      event.eventId,
      event.eventType,
      event.rawBody,
      event.settled?.status ?? null,
      event.settled === undefined ? null : JSON.stringify(event.settled.result),
    ],
  });
  const { inserted, ...stored } = row;
  reportCommitted(db, { kind: 'webhook_event', provider: stored.provider, outcome: inserted ? 'received' : 'duplicate' });
  if (inserted && event.settled !== undefined) reportCommitted(db, { kind: 'webhook_event', provider: stored.provider, outcome: event.settled.status });
  return { row: stored, duplicate: !inserted };
}

export function getInboxEvent(db: Queryable, id: string): Promise<InboxRow | null> {
  return maybeOne(db, inboxRow, { name: 'inbox-get', text: `SELECT ${columns} FROM webhook_inbox WHERE id = $1`, values: [id] });
}

/** Claims an event for one processing attempt; PROCESSED, IGNORED and CONTRADICTED events are never claimed again. */
export function claimInboxEvent(db: Queryable, id: string): Promise<InboxRow | null> {
  return maybeOne(db, inboxRow, {
    name: 'inbox-claim',
    text: `UPDATE webhook_inbox SET status = 'PROCESSING', attempts = attempts + 1
            WHERE id = $1 AND status IN ('RECEIVED', 'PROCESSING', 'DEAD') RETURNING ${columns}`,
    values: [id],
  });
}

export async function finishInboxEvent(
  db: Queryable,
  id: string,
  outcome: { status: InboxFinalStatus | 'DEAD'; result?: unknown; error?: string },
): Promise<void> {
  const changed = await maybeOne(db, z.object({ provider: z.string(), before: z.enum(inboxStatuses) }), {
    name: 'inbox-finish',
    text: `WITH before AS (SELECT id, status FROM webhook_inbox WHERE id = $1 FOR UPDATE)
           UPDATE webhook_inbox w SET status = $2, result = $3, last_error = $4, processed_at = now()
             FROM before b
            WHERE w.id = b.id AND w.status NOT IN ('PROCESSED', 'IGNORED', 'CONTRADICTED')
           RETURNING w.provider, b.status AS before`,
    values: [id, outcome.status, outcome.result === undefined ? null : JSON.stringify(outcome.result), outcome.error?.slice(0, 1000) ?? null],
  });
  // Counted once per change of status: a retried attempt that finds it already done counts nothing.
  if (changed !== null && changed.before !== outcome.status) {
    reportCommitted(db, { kind: 'webhook_event', provider: changed.provider, outcome: outcome.status });
  }
}
