import pg from 'pg';
import { z } from 'zod';
import type { Queryable } from './pool.ts';
import { exec, many, one } from './sql.ts';

/**
 * The realtime events (migration 20_operator_views): one row per change of a PLC, a redemption or a charge,
 * written by the transaction that made the change, and a NOTIFY on `realtime_events` at its
 * commit. Every API replica listens and reads the table (docs/operations-console.md, "Realtime
 * events").
 *
 * Order and gaps. A row's position is (the id of the transaction that wrote it, its own id).
 * A reader takes only rows of transactions older than every transaction still running
 * (`xact_id < pg_snapshot_xmin(pg_current_snapshot())`): such a transaction has ended, so all its
 * rows are visible now or never will be, and every transaction that writes a row later has a
 * higher id (the triggers take the transaction's id before they write). So a position, once
 * passed, never has a row appear behind it: a stream resumed from it misses nothing. The price:
 * a transaction left open (anywhere in the cluster) holds back delivery until it ends; it delays,
 * never loses or reorders.
 */

export interface EventPosition {
  /** The writing transaction's id (xid8), as decimal text. */
  xact: string;
  /** The row's id, as decimal text. */
  id: string;
}

export const startPosition: EventPosition = { xact: '0', id: '0' };

const positionPattern = /^(\d{1,20})-(\d{1,20})$/;

/** An SSE event id (`<xact>-<id>`) as a position; null when it is not one. */
export function parsePosition(text: string): EventPosition | null {
  const match = positionPattern.exec(text);
  if (match === null) return null;
  const xact = BigInt(match[1]!);
  const id = BigInt(match[2]!);
  // xid8 and bigint ranges: anything beyond was never sent by this stream.
  if (xact >= 2n ** 64n || id >= 2n ** 63n) return null;
  return { xact: xact.toString(), id: id.toString() };
}

export function formatPosition(position: EventPosition): string {
  return `${position.xact}-${position.id}`;
}

export function comparePositions(a: EventPosition, b: EventPosition): number {
  const xa = BigInt(a.xact);
  const xb = BigInt(b.xact);
  if (xa !== xb) return xa < xb ? -1 : 1;
  const ia = BigInt(a.id);
  const ib = BigInt(b.id);
  return ia === ib ? 0 : ia < ib ? -1 : 1;
}

export const realtimeEventRow = z.object({
  xact: z.string(),
  id: z.string(),
  kind: z.enum(['plc', 'redemption', 'charge']),
  subject_id: z.string(),
  token_id: z.string().nullable(),
  status: z.string(),
  payload: z.record(z.string(), z.unknown()),
  created_at: z.date(),
});
export type RealtimeEventRow = z.infer<typeof realtimeEventRow>;

export function positionOf(row: RealtimeEventRow): EventPosition {
  return { xact: row.xact, id: row.id };
}

/**
 * Events after `after` (exclusive) whose writing transactions have all ended, oldest first, at
 * most `limit`; only those of `tokenId` when given; only up to `upTo` (inclusive) when given.
 */
export function readEventsAfter(
  db: Queryable,
  after: EventPosition,
  options: { limit: number; tokenId?: string | null; upTo?: EventPosition | null },
): Promise<RealtimeEventRow[]> {
  return many(db, realtimeEventRow, {
    name: 'realtime-read',
    text: `SELECT xact_id::text AS xact, id::text AS id, kind, subject_id, token_id::text AS token_id, status, payload, created_at
             FROM realtime_events
            WHERE (xact_id, id) > ($1::text::xid8, $2::bigint)
              AND xact_id < pg_snapshot_xmin(pg_current_snapshot())
              AND ($3::uuid IS NULL OR token_id = $3::uuid)
              AND ($4::text IS NULL OR (xact_id, id) <= ($4::text::xid8, $5::bigint))
            ORDER BY xact_id, id
            LIMIT $6`,
    values: [after.xact, after.id, options.tokenId ?? null, options.upTo?.xact ?? null, options.upTo?.id ?? '0', options.limit],
  });
}

/**
 * Whether committed events after `after` are held back by a transaction still running (they
 * become readable when it ends): the reader then looks again shortly instead of at its next poll.
 */
export async function hasHeldEvents(db: Queryable, after: EventPosition): Promise<boolean> {
  const row = await one(db, z.object({ held: z.boolean() }), {
    name: 'realtime-held',
    text: `SELECT EXISTS (SELECT 1 FROM realtime_events
                           WHERE (xact_id, id) > ($1::text::xid8, $2::bigint)
                             AND xact_id >= pg_snapshot_xmin(pg_current_snapshot())) AS held`,
    values: [after.xact, after.id],
  });
  return row.held;
}

const positionRow = z.object({ xact: z.string(), id: z.string() });

/** The newest position every reader may pass now: the last event of an ended transaction (the start when none). */
export async function readSafePosition(db: Queryable): Promise<EventPosition> {
  const rows = await many(db, positionRow, {
    name: 'realtime-safe-position',
    text: `SELECT xact_id::text AS xact, id::text AS id FROM realtime_events
            WHERE xact_id < pg_snapshot_xmin(pg_current_snapshot())
            ORDER BY xact_id DESC, id DESC LIMIT 1`,
  });
  return rows[0] ?? startPosition;
}

/** The newest position pruned: a resume from at or before it may have missed events. */
export function readHorizon(db: Queryable): Promise<EventPosition> {
  return one(db, positionRow, {
    name: 'realtime-horizon',
    text: 'SELECT xact_id::text AS xact, id::text AS id FROM realtime_events_horizon',
  });
}

/**
 * Deletes the oldest events beyond the newest `keep`, and those older than `maxAgeMs`, at most
 * `batch` per call, and moves the horizon to the newest one deleted. One replica prunes at a time
 * (an advisory lock tried, not waited for). Returns the number deleted.
 */
export async function pruneEvents(db: Queryable, options: { keep: number; maxAgeMs: number; batch: number }): Promise<number> {
  const row = await one(db, z.object({ deleted: z.number().int() }), {
    name: 'realtime-prune',
    text: `WITH locked AS (
             -- 0x5245414C54494D45 ('REALTIME'): the pruner's advisory lock key.
             SELECT pg_try_advisory_xact_lock(5927858932137641285) AS ok
           ), cut AS (
             SELECT xact_id, id FROM realtime_events ORDER BY xact_id DESC, id DESC OFFSET $1 LIMIT 1
           ), victims AS (
             SELECT e.xact_id, e.id FROM (
               SELECT xact_id, id, created_at FROM realtime_events ORDER BY xact_id, id LIMIT $3
             ) e, locked
              WHERE locked.ok
                AND ((e.xact_id, e.id) <= (SELECT xact_id, id FROM cut)
                     OR e.created_at < now() - make_interval(secs => $2::double precision / 1000))
           ), deleted AS (
             DELETE FROM realtime_events r USING victims v WHERE r.xact_id = v.xact_id AND r.id = v.id
             RETURNING r.xact_id, r.id
           ), newest AS (
             SELECT xact_id, id FROM deleted ORDER BY xact_id DESC, id DESC LIMIT 1
           ), moved AS (
             UPDATE realtime_events_horizon h SET xact_id = n.xact_id, id = n.id FROM newest n
              WHERE (n.xact_id, n.id) > (h.xact_id, h.id)
           )
           SELECT count(*)::int AS deleted FROM deleted`,
    values: [options.keep, options.maxAgeMs, options.batch],
  });
  return row.deleted;
}

/** Writes an event row and its NOTIFY by hand (tests: volume without business rows). */
export async function insertTestEvents(db: Queryable, count: number, payloadBytes: number): Promise<void> {
  await exec(db, {
    name: 'realtime-test-events',
    text: `WITH x AS (SELECT pg_current_xact_id() AS xid)
           INSERT INTO realtime_events (xact_id, kind, subject_id, token_id, status, payload)
           SELECT x.xid, 'charge', 'test-' || g, NULL, 'PENDING', jsonb_build_object('filler', repeat('x', $2))
             FROM x, generate_series(1, $1) g`,
    values: [count, payloadBytes],
  });
  await exec(db, { name: 'realtime-test-notify', text: `SELECT pg_notify('realtime_events', '')` });
}

/**
 * A dedicated connection that LISTENs on `realtime_events` (a pooled connection cannot: LISTEN
 * belongs to a session). `onNotify` runs on every notification; `onError` when the connection
 * fails (the caller reconnects).
 */
export async function listenForEvents(
  connectionString: string,
  handlers: { onNotify: () => void; onError: (error: Error) => void },
): Promise<{ close(): Promise<void> }> {
  const client = new pg.Client({ connectionString, application_name: 'settlement-api-listen' });
  client.on('notification', () => handlers.onNotify());
  client.on('error', (error) => handlers.onError(error));
  client.on('end', () => handlers.onError(new Error('the LISTEN connection ended')));
  await client.connect();
  await exec(client, { name: 'realtime-listen', text: 'LISTEN realtime_events' });
  return {
    async close() {
      client.removeAllListeners('end');
      client.removeAllListeners('error');
      client.on('error', () => {});
      await client.end().catch(() => {});
    },
  };
}
