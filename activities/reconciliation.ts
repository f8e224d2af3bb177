import { randomUUID } from 'node:crypto';
import { Context } from '@temporalio/activity';
import { WorkflowNotFoundError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import type { Pool } from '../db/pool.ts';
import { reconcileBatch, type BatchResult } from '../db/reconciliation/engine.ts';
import { completeRun, createRun, markRunFailed } from '../db/reconciliation/runs.ts';
import { auditBatch, type GatewayAuditDeps } from '../services/gateway-audit.ts';
import { prepareGatewayBatch, settleGatewayBatch, type GatewayBatch } from '../services/reconcile-gateway.ts';
import type { DispatchedHandover, GatewayPort } from '../src/reconciliation/gateway.ts';
import { auditLookbackDaysDefault, auditWindowStart } from '../src/reconciliation/gateway-audit.ts';
import {
  batchSizeMax,
  isAuditTool,
  reconcileTools,
  reconcileWorkflowId,
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
 *
 * The work itself is elsewhere, called with plain arguments: the ledger tools and the runs'
 * bookkeeping in db/reconciliation/, the gateway tools in services/reconcile-gateway.ts, the
 * gateway audit in services/gateway-audit.ts (the admin route's dry runs call the same). These
 * activities hand it the worker's deps and a heartbeat.
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

export interface ClaimScheduledRunInput {
  tool: ReconcileTool;
  requestedBy: string;
  lookbackDays?: number;
  /** The scheduled workflow claiming it, for the record. */
  scheduledWorkflowId: string;
}

export type ClaimScheduledRunResult =
  | { kind: 'claimed'; runId: string; workflowId: string; params: ReconcileParams }
  | { kind: 'running'; runId: string };

/** A run row younger than this whose workflow is not found yet is still being started. */
const startGraceMs = 60_000;

export function createReconciliationActivities(deps: {
  pool: Pool;
  gateway: GatewayPort & GatewayAuditDeps['gateway'];
  /** For the gateway audit's repair, which tells the PLC's workflow (optional in tests of the other tools). */
  temporal?: GatewayAuditDeps['temporal'];
}) {
  function checkBatchSize(batchSize: number): void {
    if (!Number.isInteger(batchSize) || batchSize < 1 || batchSize > batchSizeMax) {
      throw ApplicationFailure.create({ type: 'INVALID_BATCH_SIZE', message: `batch size must be 1..${batchSizeMax}`, nonRetryable: true });
    }
  }

  /** Whether a run's workflow still runs (a run just recorded whose workflow is not found yet is still starting). */
  async function ownerRuns(workflowId: string | null, startedAt: Date): Promise<boolean> {
    if (workflowId === null || deps.temporal === undefined) return true;
    try {
      return (await deps.temporal.workflow.getHandle(workflowId).describe()).status.name === 'RUNNING';
    } catch (error) {
      if (!(error instanceof WorkflowNotFoundError)) throw error;
      return Date.now() - startedAt.getTime() < startGraceMs;
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
      const ctx = {
        runId: input.runId,
        tool: input.tool,
        params: input.params,
        dryRun: false,
        progress: () => {
          fixed += 1;
          context.heartbeat({ cursor: input.cursor, fixed });
        },
      };
      // The gateway audit runs through this activity too (the workflow treats it as a batch
      // tool); its batches read the gateway (services/gateway-audit.ts).
      if (isAuditTool(input.tool)) return auditBatch(deps, ctx, input.cursor, input.batchSize);
      return reconcileBatch(deps.pool, ctx, input.cursor, input.batchSize);
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

    /**
     * The first step of a scheduled run (workflows/scheduled-reconcile.ts): records a new real run
     * of the tool, with its parameters as of now (the audit's window), unless a real run of the
     * same scope is going on. A run recorded RUNNING whose workflow has ended without ending it
     * (terminated from the UI) is marked FAILED first, as the API does.
     */
    async claimScheduledReconcileRun(input: ClaimScheduledRunInput): Promise<ClaimScheduledRunResult> {
      if (reconcileTools[input.tool].ownerScoped) {
        throw ApplicationFailure.create({ type: 'INVALID_INPUT', message: `${input.tool} needs an owner: it cannot be scheduled`, nonRetryable: true });
      }
      const runId = randomUUID();
      const workflowId = reconcileWorkflowId(input.tool, runId);
      const params: ReconcileParams = {};
      if (input.tool === 'gateway-audit') params.since = auditWindowStart(new Date(), input.lookbackDays ?? auditLookbackDaysDefault);
      for (let attempt = 0; attempt < 2; attempt += 1) {
        const created = await createRun(deps.pool, { runId, tool: input.tool, params, dryRun: false, requestedBy: input.requestedBy, workflowId });
        if (created.created) return { kind: 'claimed', runId, workflowId, params };
        const running = created.running;
        if (await ownerRuns(running.workflow_id, running.started_at)) return { kind: 'running', runId: running.id };
        await markRunFailed(deps.pool, running.id, `workflow ${running.workflow_id ?? '(none)'} ended without ending the run (found by ${input.scheduledWorkflowId})`);
      }
      throw new Error(`could not claim a run of ${input.tool}: another keeps appearing`);
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
