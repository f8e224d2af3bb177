import { proxyActivities, upsertSearchAttributes } from '@temporalio/workflow';
import type { PlcActivities } from '../activities/plc.ts';
import { businessStatusKey } from './search-attributes.ts';

/**
 * `POST /api/v1/admin/expire-tokens` (`expire-tokens-<run_id>`): expires every overdue PLC in
 * bounded batches, each batch one activity, each PLC its own guarded transition plus
 * PROMISED -> AVAILABLE and a risk flag. Safe beside the PLCs' own workflows: whichever comes
 * first expires a PLC, the other finds it done.
 */
const { expireOverdueBatch } = proxyActivities<PlcActivities>({
  startToCloseTimeout: '2 minutes',
  retry: { initialInterval: '1 second', maximumInterval: '30 seconds', maximumAttempts: 10 },
});

export interface ExpireSweepInput {
  runId: string;
  graceMs: number;
  batchSize: number;
  /** Bound on the whole sweep: batchSize x batchesMax PLCs at most per run. */
  batchesMax: number;
}

export async function expireTokensWorkflow(input: ExpireSweepInput): Promise<{ expiredTokenIds: string[]; complete: boolean }> {
  const expiredTokenIds: string[] = [];
  let more = true;
  for (let batch = 0; batch < input.batchesMax && more; batch += 1) {
    const result = await expireOverdueBatch({ graceMs: input.graceMs, batchSize: input.batchSize, runId: input.runId });
    expiredTokenIds.push(...result.expiredTokenIds);
    more = result.more;
  }
  upsertSearchAttributes([{ key: businessStatusKey, value: more ? 'PARTIAL' : 'COMPLETED' }]);
  return { expiredTokenIds, complete: !more };
}
