import { z } from 'zod';
import type { Queryable } from './pool.ts';
import { exec, many } from './sql.ts';

/**
 * The PLCs' expiry buckets (migration 35; docs/plc.md, "Expiry by time buckets"): one row per
 * minute of expiry time, its workflow (`plc-expiry-<bucket>`) started once. The transitions
 * themselves stay `releasePlc`'s (db/plcs.ts), one guarded transaction per PLC.
 */

const bucketRow = z.object({ bucket_start: z.date(), bucket_end: z.date() });
const tokenIdRow = z.object({ token_id: z.string().uuid() });

/** The bucket's workflow was started (or found running): the sweep need not start it. */
export async function markBucketStarted(db: Queryable, bucketStart: Date): Promise<void> {
  await exec(db, {
    name: 'plc-expiry-bucket-started',
    prepare: true,
    text: 'UPDATE plc_expiry_buckets SET started_at = now() WHERE bucket_start = $1 AND started_at IS NULL',
    values: [bucketStart],
  });
}

/**
 * Buckets whose workflow nobody started: the create that inserted the row died (or lost Temporal)
 * between its commit and the start. Rows younger than `graceMs` are left to their creator.
 */
export async function listUnstartedBuckets(db: Queryable, graceMs: number, limit: number): Promise<{ start: Date; end: Date }[]> {
  const rows = await many(db, bucketRow, {
    name: 'plc-expiry-buckets-unstarted',
    text: `SELECT bucket_start, bucket_end FROM plc_expiry_buckets
            WHERE started_at IS NULL AND created_at < now() - make_interval(secs => $1::double precision / 1000)
            ORDER BY created_at LIMIT $2`,
    values: [graceMs, limit],
  });
  return rows.map((row) => ({ start: row.bucket_start, end: row.bucket_end }));
}

/**
 * Live PLCs of the bucket [start, end) that are due now and may be expired (no redemption in
 * flight), at most `limit`, in due order.
 */
export function listBucketDue(db: Queryable, bucketStart: Date, bucketEnd: Date, limit: number): Promise<{ token_id: string }[]> {
  return many(db, tokenIdRow, {
    name: 'plc-expiry-bucket-due',
    text: `SELECT token_id FROM plcs
            WHERE status IN ('ISSUED', 'TRANSFERRED') AND expiry_due_at IS NOT NULL
              AND expiry_due_at >= $1 AND expiry_due_at < $2 AND expiry_due_at <= now() AND redemption_id IS NULL
            ORDER BY expiry_due_at LIMIT $3`,
    values: [bucketStart, bucketEnd, limit],
  });
}

/** The bucket's workflow found nothing left to expire (PLCs with a redemption in flight are the sweep's). */
export async function markBucketDone(db: Queryable, bucketStart: Date): Promise<void> {
  await exec(db, {
    name: 'plc-expiry-bucket-done',
    text: 'UPDATE plc_expiry_buckets SET done_at = now() WHERE bucket_start = $1',
    values: [bucketStart],
  });
}

/**
 * Live bucketed PLCs due more than `lateMs` ago with no redemption in flight: what no bucket
 * workflow expired (a redemption reverted after its bucket ran, a bucket's workflow that could not
 * run). The sweep expires them.
 */
export function listLateBucketed(db: Queryable, lateMs: number, limit: number): Promise<{ token_id: string }[]> {
  return many(db, tokenIdRow, {
    name: 'plc-expiry-late',
    text: `SELECT token_id FROM plcs
            WHERE status IN ('ISSUED', 'TRANSFERRED') AND expiry_due_at IS NOT NULL AND redemption_id IS NULL
              AND expiry_due_at < now() - make_interval(secs => $1::double precision / 1000)
            ORDER BY expiry_due_at LIMIT $2`,
    values: [lateMs, limit],
  });
}

/** Buckets done for longer than `keepMs`: forgotten in bounded batches (their PLCs keep their rows). */
export async function forgetDoneBuckets(db: Queryable, keepMs: number, limit: number): Promise<void> {
  await exec(db, {
    name: 'plc-expiry-buckets-forget',
    text: `DELETE FROM plc_expiry_buckets WHERE bucket_start IN (
             SELECT bucket_start FROM plc_expiry_buckets
              WHERE done_at < now() - make_interval(secs => $1::double precision / 1000) ORDER BY done_at LIMIT $2)`,
    values: [keepMs, limit],
  });
}

const ownWorkflowRow = z.object({ own: z.boolean() });

/** Whether the PLC has a workflow of its own (`plc-<token_id>`: issued before migration 35) that waits to hear of its redemption. */
export async function hasOwnWorkflow(db: Queryable, tokenId: string): Promise<boolean> {
  const rows = await many(db, ownWorkflowRow, {
    name: 'plc-has-own-workflow',
    prepare: true,
    text: 'SELECT expiry_due_at IS NULL AS own FROM plcs WHERE token_id = $1',
    values: [tokenId],
  });
  return rows[0]?.own ?? false;
}
