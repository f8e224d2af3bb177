import {
  ApplicationFailure,
  CancellationScope,
  continueAsNew,
  proxyActivities,
  sleep,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { ReconciliationActivities } from '../activities/reconciliation.ts';
import {
  batchSizeDefault,
  batchSizeMax,
  type ReconcileParams,
  type ReconcileReport,
  type ReconcileTool,
} from '../src/reconciliation/tools.ts';
import { businessStatusKey, referenceIdKey } from './search-attributes.ts';

/**
 * A real run of a reconcile tool (`reconcile-<tool>-<run_id>`; search attributes ReferenceId =
 * run id, BusinessStatus RUNNING -> COMPLETED | FAILED). It walks the tool's work in bounded
 * batches, one activity call each: the cursor a batch returns is the only state carried to the
 * next, so after a worker crash the workflow resumes from the last batch Temporal recorded as
 * finished, not from the start. Every fix the batches make is recorded in reconciliation_items
 * and every ledger change is a ledger transaction; the workflow's result is the run's report.
 */

const { beginReconciliationRun, reconcileBatch, finishReconciliationRun } = proxyActivities<ReconciliationActivities>({
  // One batch fixes at most batchSizeMax accounts, each one short database transaction; the
  // heartbeat after each fix catches a lost worker long before the start-to-close bound.
  startToCloseTimeout: '10 minutes',
  heartbeatTimeout: '1 minute',
  retry: { initialInterval: '1 second', maximumInterval: '1 minute', backoffCoefficient: 2, maximumAttempts: 20 },
});
const { failReconciliationRun } = proxyActivities<ReconciliationActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', maximumInterval: '30 seconds', maximumAttempts: 20 },
});

export interface ReconciliationWorkflowInput {
  runId: string;
  tool: ReconcileTool;
  params: ReconcileParams;
  requestedBy: string;
  /** Accounts (or transactions) per batch; default 100. */
  batchSize?: number;
  /** Pause between batches, to spare a busy primary; default none, at most 60 s. */
  batchPauseMs?: number;
  /** Batches per workflow execution before it continues as new; default 200, at most 1000. */
  batchesPerExecution?: number;
  /** Set when the run continues as new: where the previous execution stopped. */
  resume?: { cursor: string; scanned: number; batches: number };
}

/** Batches per workflow execution before it continues as new, which keeps every history bounded. */
export const batchesPerExecutionDefault = 200;

export async function reconciliationWorkflow(input: ReconciliationWorkflowInput): Promise<ReconcileReport> {
  const batchSize = input.batchSize ?? batchSizeDefault;
  const batchPauseMs = input.batchPauseMs ?? 0;
  const batchesPerExecution = input.batchesPerExecution ?? batchesPerExecutionDefault;
  if (
    !Number.isInteger(batchSize) ||
    batchSize < 1 ||
    batchSize > batchSizeMax ||
    batchPauseMs < 0 ||
    batchPauseMs > 60_000 ||
    !Number.isInteger(batchesPerExecution) ||
    batchesPerExecution < 1 ||
    batchesPerExecution > 1000
  ) {
    throw ApplicationFailure.create({ type: 'INVALID_INPUT', message: 'batch size or pause out of bounds', nonRetryable: true });
  }
  let cursor: string | null = input.resume?.cursor ?? null;
  let scanned = input.resume?.scanned ?? 0;
  let batches = input.resume?.batches ?? 0;
  let done = false;
  try {
    if (input.resume === undefined) {
      // Whoever started the run may not have set them; a continued run keeps them.
      upsertSearchAttributes([
        { key: referenceIdKey, value: input.runId },
        { key: businessStatusKey, value: 'RUNNING' },
      ]);
      await beginReconciliationRun({
        runId: input.runId,
        tool: input.tool,
        params: input.params,
        requestedBy: input.requestedBy,
        workflowId: workflowInfo().workflowId,
      });
    }
    for (let round = 0; round < batchesPerExecution; round += 1) {
      const result = await reconcileBatch({ runId: input.runId, tool: input.tool, params: input.params, cursor, batchSize });
      scanned += result.scanned;
      batches += 1;
      cursor = result.cursor;
      if (cursor === null) {
        done = true;
        break;
      }
      if (batchPauseMs > 0) await sleep(batchPauseMs);
    }
  } catch (error) {
    await endFailed(input.runId, error);
    throw error;
  }
  if (!done && cursor !== null) {
    // Outside the try: continue-as-new ends this execution by throwing, which is no failure.
    await continueAsNew<typeof reconciliationWorkflow>({ ...input, resume: { cursor, scanned, batches } });
  }
  try {
    const report = await finishReconciliationRun({ runId: input.runId, scanned, batches });
    upsertSearchAttributes([{ key: businessStatusKey, value: 'COMPLETED' }]);
    return report;
  } catch (error) {
    await endFailed(input.runId, error);
    throw error;
  }
}

/** Records the run as FAILED, also when the workflow was cancelled from the UI. */
async function endFailed(runId: string, error: unknown): Promise<void> {
  upsertSearchAttributes([{ key: businessStatusKey, value: 'FAILED' }]);
  // The innermost cause says what went wrong ("Activity task failed" wraps it).
  let message = String(error);
  let current: unknown = error;
  for (let depth = 0; depth < 5 && current instanceof Error; depth += 1) {
    message = current.message;
    current = current.cause;
  }
  await CancellationScope.nonCancellable(() => failReconciliationRun({ runId, error: message }));
}
