import { executeChild, proxyActivities, workflowInfo } from '@temporalio/workflow';
import type { ReconciliationActivities } from '../activities/reconciliation.ts';
import type { ReconcileCounts, ReconcileTool } from '../src/reconciliation/tools.ts';
import { reconciliationWorkflow } from './reconciliation.ts';
import { businessStatusKey, referenceIdKey } from './search-attributes.ts';

/**
 * A reconcile tool run by a Temporal Schedule (infra/schedules.ts; the gateway audit's
 * `gateway-audit`, worker/schedules.ts). A schedule starts every run with the same arguments, so
 * this workflow gives each one its own run: an activity records a new run (a run id, the tool's
 * parameters as of now, such as the audit's window), then the run is the usual real run,
 * `reconcile-<tool>-<run_id>`, as a child, exactly as if an admin had asked for it. While a real
 * run of the same tool is going on (an admin's, or a previous scheduled one), this one is skipped.
 */

const { claimScheduledReconcileRun } = proxyActivities<ReconciliationActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', maximumInterval: '30 seconds', maximumAttempts: 10 },
});

export interface ScheduledReconcileInput {
  tool: ReconcileTool;
  /** Who the run is recorded as requested by: `schedule:<schedule id>`. */
  requestedBy: string;
  /** The gateway audit's window, in days back from today (GATEWAY_AUDIT_LOOKBACK_DAYS). */
  lookbackDays?: number;
}

export type ScheduledReconcileResult =
  | { status: 'SKIPPED'; runningRunId: string }
  | { status: 'COMPLETED'; runId: string; workflowId: string; counts: ReconcileCounts };

export async function scheduledReconcileWorkflow(input: ScheduledReconcileInput): Promise<ScheduledReconcileResult> {
  const claim = await claimScheduledReconcileRun({
    tool: input.tool,
    requestedBy: input.requestedBy,
    ...(input.lookbackDays === undefined ? {} : { lookbackDays: input.lookbackDays }),
    scheduledWorkflowId: workflowInfo().workflowId,
  });
  if (claim.kind === 'running') return { status: 'SKIPPED', runningRunId: claim.runId };
  const report = await executeChild(reconciliationWorkflow, {
    workflowId: claim.workflowId,
    args: [{ runId: claim.runId, tool: input.tool, params: claim.params, requestedBy: input.requestedBy }],
    typedSearchAttributes: [
      { key: referenceIdKey, value: claim.runId },
      { key: businessStatusKey, value: 'RUNNING' },
    ],
  });
  return { status: 'COMPLETED', runId: claim.runId, workflowId: claim.workflowId, counts: report.counts };
}
