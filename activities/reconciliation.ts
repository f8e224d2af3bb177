import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import type { Pool } from '../db/pool.ts';
import { completeRun, createRun, markRunFailed, reconcileBatch, type BatchResult } from '../db/reconciliation.ts';
import { prepareGatewayBatch, settleGatewayBatch, type GatewayBatch } from '../db/reconciliation-gateway.ts';
import type { DispatchedHandover, GatewayPort } from '../src/reconciliation/gateway.ts';
import {
  batchSizeMax,
  type GatewayReconcileTool,
  type ReconcileParams,
  type ReconcileReport,
  type ReconcileTool,
} from '../src/reconciliation/tools.ts';

/**
 * Activities of the reconciliation workflow (`workflows/reconciliation.ts`). Each batch is one
 * activity call that takes the cursor of the last finished batch and returns the next one; it
 * heartbeats after every account or transaction it fixes. Every fix is its own database
 * transaction, recorded with what it did and keyed by `reconcile:<run_id>:<item key>` (or, for a
 * settlement row's missing booking, by the owning code's own key), so a batch retried after a
 * crash redoes only what did not commit and books nothing twice.
 *
 * Gateway tools take two activities per batch around the workflow's hand-over: one finds the
 * redemptions or charges and reads the gateway (`prepareGatewayBatch`), one records what their
 * owner workflows did with them (`settleGatewayBatch`).
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

export interface PrepareGatewayBatchInput {
  runId: string;
  tool: GatewayReconcileTool;
  params: ReconcileParams;
  /** null: the first batch. */
  cursor: string | null;
  batchSize: number;
}

export interface SettleGatewayBatchInput {
  runId: string;
  tool: GatewayReconcileTool;
  params: ReconcileParams;
  dispatched: DispatchedHandover[];
  /** How long to wait for the owner workflows to book what they were handed. */
  ownerWaitMs: number;
}

export interface FinishReconciliationRunInput {
  runId: string;
  scanned: number;
  batches: number;
}

/** How often the recording step looks at the handed-over rows while it waits for their owners. */
const ownerPollMs = 250;

export function createReconciliationActivities(deps: { pool: Pool; gateway: GatewayPort }) {
  function checkBatchSize(batchSize: number): void {
    if (!Number.isInteger(batchSize) || batchSize < 1 || batchSize > batchSizeMax) {
      throw ApplicationFailure.create({ type: 'INVALID_BATCH_SIZE', message: `batch size must be 1..${batchSizeMax}`, nonRetryable: true });
    }
  }

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
      checkBatchSize(input.batchSize);
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

    /** Finds one batch of a gateway tool and reads the gateway; the cancel tools cancel here (idempotent). */
    async prepareGatewayBatch(input: PrepareGatewayBatchInput): Promise<GatewayBatch> {
      checkBatchSize(input.batchSize);
      const context = Context.current();
      return prepareGatewayBatch(
        deps.pool,
        deps.gateway,
        { runId: input.runId, tool: input.tool, params: input.params, dryRun: false, progress: () => context.heartbeat({ cursor: input.cursor }) },
        input.cursor,
        input.batchSize,
      );
    },

    /** Books ended charges' outcomes through the charge's own code, waits for the owners, records the items. */
    async settleGatewayBatch(input: SettleGatewayBatchInput): Promise<{ found: number }> {
      const context = Context.current();
      const waitMs = Math.min(Math.max(0, input.ownerWaitMs), 5 * 60_000);
      return settleGatewayBatch(
        deps.pool,
        deps.gateway,
        { runId: input.runId, tool: input.tool, params: input.params, dryRun: false, progress: () => context.heartbeat() },
        input.dispatched,
        { waitMs, pollMs: ownerPollMs },
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
