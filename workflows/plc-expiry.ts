import { ActivityFailure, continueAsNew, proxyActivities, sleep, workflowInfo } from '@temporalio/workflow';
import { scheduleIds } from './ids.ts';
import type { PlcExpiryActivities } from '../activities/plc-expiry.ts';

/**
 * Expiry by time buckets (docs/plc.md, "Expiry by time buckets"). A PLC issued since migration 35
 * has no workflow of its own: its create stores the PLC's due time and its bucket (the minute the
 * due time falls in) in the create's one transaction, and one workflow per bucket
 * (`plc-expiry-<bucket>`) sleeps on a durable timer until the bucket's end, then expires the
 * bucket's live PLCs in bounded batches, each PLC its own guarded transaction (PostgreSQL decides:
 * a PLC redeemed, cancelled or with a redemption in flight is not touched). Open workflows are
 * bounded by the horizon (a week of minutes at most), not by the number of PLCs.
 *
 * `plc-expiry-sweep` (a Temporal Schedule, every minute) is the net under it: it starts the bucket
 * workflows whose creator died between its commit and the start, and expires what no bucket did
 * (a PLC whose redemption reverted after its bucket ran, a bucket whose batches kept failing).
 */
const bucketActivities = proxyActivities<PlcExpiryActivities>({
  startToCloseTimeout: '2 minutes',
  retry: { initialInterval: '1 second', maximumInterval: '30 seconds', backoffCoefficient: 2, maximumAttempts: 10 },
});
const sweepActivities = proxyActivities<PlcExpiryActivities>({
  startToCloseTimeout: '5 minutes',
  retry: { initialInterval: '1 second', maximumInterval: '30 seconds', maximumAttempts: 5 },
});

export interface PlcExpiryBucketInput {
  /** The bucket [start, end): a minute of expiry due time, in ms since the epoch. */
  bucketStartMs: number;
  bucketEndMs: number;
  /** PLCs per batch (one activity); default 200. */
  batchSize?: number;
}

export type PlcExpiryBucketResult = { status: 'DONE' | 'PARTIAL'; expired: number };

/** Batches per run before the run continues as new (a bucket's history stays small however many PLCs it holds). */
const batchesPerRun = 100;

export async function plcExpiryBucketWorkflow(input: PlcExpiryBucketInput): Promise<PlcExpiryBucketResult> {
  const waitMs = input.bucketEndMs - Date.now();
  if (waitMs > 0) await sleep(waitMs);
  let expired = 0;
  for (let batch = 0; batch < batchesPerRun; batch += 1) {
    let result;
    try {
      result = await bucketActivities.expireBucketBatch({
        bucket: workflowInfo().workflowId,
        bucketStartMs: input.bucketStartMs,
        bucketEndMs: input.bucketEndMs,
        batchSize: input.batchSize ?? 200,
      });
    } catch (error) {
      if (!(error instanceof ActivityFailure)) throw error;
      // The database kept refusing: the sweep expires what is left (docs/plc.md).
      return { status: 'PARTIAL', expired };
    }
    expired += result.expired;
    if (!result.more) return { status: 'DONE', expired };
  }
  return continueAsNew<typeof plcExpiryBucketWorkflow>(input);
}

export interface PlcExpirySweepInput {
  /** The task queue bucket workflows run on. */
  taskQueue: string;
}

/** `plc-expiry-sweep`'s runs (the schedule appends the time): one activity. */
export async function plcExpirySweepWorkflow(input: PlcExpirySweepInput): Promise<{ bucketsStarted: number; expiredLate: number }> {
  return sweepActivities.sweepPlcExpiry({ taskQueue: input.taskQueue, scheduleId: scheduleIds.plcExpirySweep });
}
