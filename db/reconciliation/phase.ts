import type { ReconcileParams, ReconcileTool } from '../../src/reconciliation/tools.ts';
import type { Pool } from '../pool.ts';

/**
 * What a reconcile phase is (db/reconciliation/engine.ts runs them; the phases under ./phases/
 * are such passes): its own module, so the phases and the engine that lists them do not import
 * each other.
 */

export interface ReconcileContext {
  runId: string;
  tool: ReconcileTool;
  params: ReconcileParams;
  dryRun: boolean;
  /** Called after each account or transaction a real run fixes; activities heartbeat here. */
  progress: () => void;
}

export interface PhaseBatch {
  scanned: number;
  found: number;
  /** The last key looked at, or null when the phase has nothing after this batch. */
  next: string | null;
}

/**
 * One pass of a tool over one keyed set. `batch` looks at up to `limit` keys after `after`
 * (null: from the start), records what it found (and, in a real run, fixed) and returns the
 * last key it looked at.
 */
export interface ReconcilePhase {
  name: string;
  batch(pool: Pool, ctx: ReconcileContext, after: string | null, limit: number): Promise<PhaseBatch>;
}

export interface BatchResult {
  /** Which phase the batch ran. */
  phase: string;
  scanned: number;
  found: number;
  /** Where the next batch starts; null when the tool has looked at everything. */
  cursor: string | null;
}
