import type { Client } from '@temporalio/client';
import { forgetDoneBuckets, listBucketDue, listLateBucketed, listUnstartedBuckets, markBucketDone } from '../db/plc-expiry.ts';
import { releasePlc } from '../db/plcs.ts';
import type { Pool } from '../db/pool.ts';
import { startExpiryBucket } from '../services/plc-expiry.ts';

/**
 * The expiry buckets' activities (workflows/plc-expiry.ts; docs/plc.md, "Expiry by time buckets").
 * Every expiry is `releasePlc`'s guarded transaction (PROMISED -> AVAILABLE), so a bucket, the
 * sweep, a retried batch and an old PLC's own workflow may meet on one PLC: the first expires it,
 * the others find it done.
 */

/** A bucket row younger than this is left to the create that inserted it (it starts the workflow after its commit). */
export const unstartedGraceMs = 5_000;
/**
 * The sweep expires a bucketed PLC due longer ago than this: its bucket (which ends at most one
 * bucket width, a minute by default, after the due time) should have.
 */
export const lateAfterMs = 60_000;
const sweepBatchSize = 200;
const sweepBatchesMax = 10;
/** Done buckets are kept a day for the console, then forgotten. */
const doneBucketKeepMs = 24 * 3_600_000;

export function createPlcExpiryActivities(deps: { pool: Pool; temporal: Pick<Client, 'workflow'> }) {
  async function expireAll(tokenIds: readonly { token_id: string }[]): Promise<number> {
    let expired = 0;
    for (const { token_id: tokenId } of tokenIds) {
      const result = await releasePlc(deps.pool, tokenId, 'EXPIRED');
      if (result.released) expired += 1;
    }
    return expired;
  }
  return {
    /** One bounded batch of the bucket's due PLCs; `more` when the batch was full. Marks the bucket done when nothing is left. */
    async expireBucketBatch(input: { bucket: string; bucketStartMs: number; bucketEndMs: number; batchSize: number }): Promise<{ expired: number; more: boolean }> {
      const due = await listBucketDue(deps.pool, new Date(input.bucketStartMs), new Date(input.bucketEndMs), input.batchSize);
      const expired = await expireAll(due);
      const more = due.length === input.batchSize;
      if (!more) await markBucketDone(deps.pool, new Date(input.bucketStartMs));
      return { expired, more };
    },

    /**
     * The sweep: starts the bucket workflows nobody started, expires bucketed PLCs late by more
     * than a bucket (bounded batches), forgets buckets done a day ago.
     */
    async sweepPlcExpiry(input: { taskQueue: string; scheduleId: string }): Promise<{ bucketsStarted: number; expiredLate: number }> {
      const unstarted = await listUnstartedBuckets(deps.pool, unstartedGraceMs, 100);
      for (const bucket of unstarted) {
        await startExpiryBucket({ pool: deps.pool, temporal: deps.temporal, taskQueue: input.taskQueue }, bucket);
      }
      let expiredLate = 0;
      for (let batch = 0; batch < sweepBatchesMax; batch += 1) {
        const late = await listLateBucketed(deps.pool, lateAfterMs, sweepBatchSize);
        expiredLate += await expireAll(late);
        if (late.length < sweepBatchSize) break;
      }
      await forgetDoneBuckets(deps.pool, doneBucketKeepMs, 1_000);
      return { bucketsStarted: unstarted.length, expiredLate };
    },
  };
}

export type PlcExpiryActivities = ReturnType<typeof createPlcExpiryActivities>;
