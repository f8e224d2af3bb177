import { batchFrom } from '../../src/reconciliation/phases.ts';
import {
  dryRunBudgetMs,
  dryRunItemsMax,
  isAuditTool,
  isGatewayTool,
  type ReconcileParams,
  type ReconcileReport,
  type ReconcileTool,
} from '../../src/reconciliation/tools.ts';
import type { Pool } from '../pool.ts';
import { phasesByTool } from './phases/index.ts';
import { completeRun, createRun, markRunFailed } from './runs.ts';
import type { BatchResult, ReconcileContext } from './phase.ts';

export type { BatchResult, ReconcileContext, PhaseBatch, ReconcilePhase } from './phase.ts';

/**
 * The reconcile tools' phase engine (docs/reconciliation.md). Every tool is a list of phases
 * (ledger tools: db/reconciliation/phases/index.ts); a phase walks one keyed set (accounts by id,
 * failure transactions by seq, settlement rows by id) in bounded batches, each batch taking the
 * last key it was given and returning the next one, so a real run that stops anywhere resumes
 * from its last finished batch. Finding is read-only; fixing happens per account (or per
 * transaction, or row) in a database transaction of its own that locks what it changes and
 * checks again under the lock, and records what it did in reconciliation_items in that same
 * transaction. The gateway tools and the gateway audit run their batches in
 * services/reconcile-gateway.ts and services/gateway-audit.ts, and their dry runs through
 * `runDryBatches` here.
 */

/**
 * Runs one batch of a ledger tool from `cursor` (null: the start). The cursor names the phase
 * and the last key of the previous batch (`<phase>:<key>`), so it stays valid across worker restarts.
 */
export async function reconcileBatch(
  pool: Pool,
  ctx: ReconcileContext,
  cursor: string | null,
  limit: number,
): Promise<BatchResult> {
  if (isGatewayTool(ctx.tool)) throw new Error(`${ctx.tool} is a gateway tool: its batches run in services/reconcile-gateway.ts`);
  if (isAuditTool(ctx.tool)) throw new Error(`${ctx.tool} audits the gateway: its batches run in services/gateway-audit.ts`);
  const { phase, result, cursor: next } = await batchFrom(phasesByTool[ctx.tool], ctx.tool, cursor, limit, (current, after) =>
    current.batch(pool, ctx, after, limit),
  );
  return { phase, scanned: result.scanned, found: result.found, cursor: next };
}

export interface DryRunInput {
  runId: string;
  tool: ReconcileTool;
  params: ReconcileParams;
  requestedBy: string;
  batchSize: number;
}
export interface DryRunLimits {
  budgetMs: number;
  itemsMax: number;
}

/**
 * A dry run, inside the caller's request: every batch of the tool, finding and recording items
 * as PLANNED (or SKIPPED), changing nothing in the ledger. Bounded by time and item count; a
 * report with `complete: false` says it stopped early.
 */
export async function runDryReconciliation(
  pool: Pool,
  input: DryRunInput,
  limits: DryRunLimits = { budgetMs: dryRunBudgetMs, itemsMax: dryRunItemsMax },
): Promise<ReconcileReport> {
  return runDryBatches(pool, input, (ctx, cursor) => reconcileBatch(pool, ctx, cursor, input.batchSize), limits);
}

/** The dry run's loop for any kind of tool: records the run, runs `batch` until done or bounded, ends the run. */
export async function runDryBatches(
  pool: Pool,
  input: DryRunInput,
  batch: (ctx: ReconcileContext, cursor: string | null) => Promise<{ scanned: number; found: number; cursor: string | null }>,
  limits: DryRunLimits = { budgetMs: dryRunBudgetMs, itemsMax: dryRunItemsMax },
): Promise<ReconcileReport> {
  await createRun(pool, { ...input, dryRun: true, workflowId: null });
  const ctx: ReconcileContext = { runId: input.runId, tool: input.tool, params: input.params, dryRun: true, progress: () => {} };
  const deadline = Date.now() + limits.budgetMs;
  let cursor: string | null = null;
  let scanned = 0;
  let found = 0;
  let batches = 0;
  let complete = true;
  try {
    // Bounded by the deadline and the item count; the batch count bound is a backstop.
    for (let round = 0; round < 1_000_000; round += 1) {
      const result = await batch(ctx, cursor);
      scanned += result.scanned;
      found += result.found;
      batches += 1;
      cursor = result.cursor;
      if (cursor === null) break;
      if (Date.now() >= deadline || found >= limits.itemsMax) {
        complete = false;
        break;
      }
    }
  } catch (error) {
    await markRunFailed(pool, input.runId, error instanceof Error ? error.message : String(error));
    throw error;
  }
  return completeRun(pool, input.runId, { scanned, batches, complete });
}
