import type { Client } from '@temporalio/client';
import { markBucketStarted } from '../db/plc-expiry.ts';
import type { Queryable } from '../db/pool.ts';
import { workflowIds } from '../workflows/ids.ts';
import type { plcExpiryBucketWorkflow } from '../workflows/plc-expiry.ts';

/**
 * Starts the expiry bucket's workflow (`plc-expiry-<bucket>`), or finds it running, then marks the
 * bucket started. Called once per bucket: by the create that inserted the bucket's row, after its
 * commit, and by the sweep for a row nobody marked. Starting twice is harmless (the running
 * workflow is used; a finished one runs again and finds nothing due).
 */
export async function startExpiryBucket(
  deps: { pool: Queryable; temporal: Pick<Client, 'workflow'>; taskQueue: string },
  bucket: { start: Date; end: Date },
): Promise<string> {
  const bucketStartMs = bucket.start.getTime();
  const workflowId = workflowIds.plcExpiryBucket(bucketStartMs, deps.taskQueue);
  await deps.temporal.workflow.start<typeof plcExpiryBucketWorkflow>('plcExpiryBucketWorkflow', {
    workflowId,
    taskQueue: deps.taskQueue,
    args: [{ bucketStartMs, bucketEndMs: bucket.end.getTime() }],
    workflowIdConflictPolicy: 'USE_EXISTING',
    workflowIdReusePolicy: 'ALLOW_DUPLICATE',
  });
  await markBucketStarted(deps.pool, bucket.start);
  return workflowId;
}
