import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import type { Pool } from '../db/pool.ts';
import { completeRun, createRun, markRunFailed, reconcileBatch, type BatchResult } from '../db/reconciliation.ts';
import { batchSizeMax, type ReconcileParams, type ReconcileReport, type ReconcileTool } from '../src/reconciliation/tools.ts';

/**
 * Activities of the reconciliation workflow (`workflows/reconciliation.ts`). Each batch is one
 * activity call that takes the cursor of the last finished batch and returns the next one; it
 * heartbeats after every account or transaction it fixes. Every fix is its own database
 * transaction, recorded with what it did and keyed by `reconcile:<run_id>:<item key>`, so a
 * batch retried after a crash redoes only what did not commit and books nothing twice.
 */

export interface BeginReconciliationRunInput {
  runId: string;
  tool: ReconcileTool;
  params: ReconcileParams;
  requestedBy: string;
  workflowId: string;
}

export interface ReconcileBatchInput {
  runId: string;
  tool: ReconcileTool;
  params: ReconcileParams;
  /** null: the first batch. */
  cursor: string | null;
  batchSize: number;
}

export interface FinishReconciliationRunInput {
  runId: string;
  scanned: number;
  batches: number;
}

export function createReconciliationActivities(deps: { pool: Pool }) {
  return {
    /** Records the run as RUNNING unless the API already did (idempotent by run id). */
    async beginReconciliationRun(input: BeginReconciliationRunInput): Promise<void> {
      const result = await createRun(deps.pool, { ...input, dryRun: false });
      if (!result.created) {
        throw ApplicationFailure.create({
          type: 'CONFLICT',
          message: `run ${result.running.id} of the same scope is still running`,
          details: [{ run_id: result.running.id, workflow_id: result.running.workflow_id }],
          nonRetryable: true,
        });
      }
    },

    async reconcileBatch(input: ReconcileBatchInput): Promise<BatchResult> {
      if (!Number.isInteger(input.batchSize) || input.batchSize < 1 || input.batchSize > batchSizeMax) {
        throw ApplicationFailure.create({
          type: 'INVALID_BATCH_SIZE',
          message: `batch size must be 1..${batchSizeMax}`,
          nonRetryable: true,
        });
      }
      const context = Context.current();
      let fixed = 0;
      return reconcileBatch(
        deps.pool,
        {
          runId: input.runId,
          tool: input.tool,
          params: input.params,
          dryRun: false,
          progress: () => {
            fixed += 1;
            context.heartbeat({ cursor: input.cursor, fixed });
          },
        },
        input.cursor,
        input.batchSize,
      );
    },

    async finishReconciliationRun(input: FinishReconciliationRunInput): Promise<ReconcileReport> {
      return completeRun(deps.pool, input.runId, { scanned: input.scanned, batches: input.batches, complete: true });
    },

    async failReconciliationRun(input: { runId: string; error: string }): Promise<void> {
      await markRunFailed(deps.pool, input.runId, input.error);
    },
  };
}

export type ReconciliationActivities = ReturnType<typeof createReconciliationActivities>;
