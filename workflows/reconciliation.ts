import { WorkflowExecutionAlreadyStartedError } from '@temporalio/common';
import {
  ApplicationFailure,
  CancellationScope,
  continueAsNew,
  getExternalWorkflowHandle,
  proxyActivities,
  sleep,
  startChild,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import { reportedTransferStatus } from '../gateway/status.ts';
import { causesOf } from '../src/errors.ts';
import type { ReconciliationActivities } from '../activities/reconciliation.ts';
import type { Dispatch, DispatchedHandover, Handover } from '../src/reconciliation/gateway.ts';
import {
  batchSizeDefault,
  batchSizeMax,
  gatewayBatchesPerExecution,
  gatewayBatchSizeDefault,
  isGatewayTool,
  type GatewayReconcileTool,
  type ReconcileParams,
  type ReconcileReport,
  type ReconcileTool,
} from '../src/reconciliation/tools.ts';
import { paymentEventSignal } from './charge-signals.ts';
import { transferEventSignal } from './redemption-messages.ts';
import { redemptionWorkflow } from './redemption.ts';
import { bearerIdKey, businessStatusKey, referenceIdKey, tokenIdKey } from './search-attributes.ts';

/**
 * A real run of a reconcile tool (`reconcile-<tool>-<run_id>`; search attributes ReferenceId =
 * run id, BusinessStatus RUNNING -> COMPLETED | FAILED). It walks the tool's work in bounded
 * batches, one activity call each: the cursor a batch returns is the only state carried to the
 * next, so after a worker crash the workflow resumes from the last batch Temporal recorded as
 * finished, not from the start. Every fix the batches make is recorded in reconciliation_items
 * and every ledger change is a ledger transaction; the workflow's result is the run's report.
 *
 * A gateway tool's batch hands what it found to the workflows that own the money, from here:
 * a signal (`transferEvent` to `redemption-<id>`, `paymentEvent` to `charge-<id>`) when the owner
 * runs; when it has ended without a final status, a redemption is started again as a child with
 * `resume: true` (abandoned when this run ends; same payout idempotency key, so never a second
 * payout), and a charge (whose workflow has no resume) is booked by the recording activity
 * through the charge's own database function and keys.
 */

const { beginReconciliationRun, reconcileBatch, finishReconciliationRun } = proxyActivities<ReconciliationActivities>({
  // One batch fixes at most batchSizeMax accounts, each one short database transaction; the
  // heartbeat after each fix catches a lost worker long before the start-to-close bound.
  startToCloseTimeout: '10 minutes',
  heartbeatTimeout: '1 minute',
  retry: { initialInterval: '1 second', maximumInterval: '1 minute', backoffCoefficient: 2, maximumAttempts: 20 },
});
const { prepareGatewayBatch, settleGatewayBatch } = proxyActivities<ReconciliationActivities>({
  // Gateway calls (each bounded by the client's timeout) and a bounded wait for the owners, with
  // a heartbeat after each item and each look at the owners' rows.
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
  /** Gateway tools: the webhook wait a restarted redemption uses (REDEMPTION_WEBHOOK_WAIT_MS); default 10 minutes. */
  redemptionWebhookWaitMs?: number;
  /** Gateway tools: how long a batch waits for the owners to book what they were handed; default 30 s. */
  ownerWaitMs?: number;
}

/** Batches per workflow execution before it continues as new, which keeps every history bounded. */
export const batchesPerExecutionDefault = 200;

export async function reconciliationWorkflow(input: ReconciliationWorkflowInput): Promise<ReconcileReport> {
  const gatewayTool = isGatewayTool(input.tool) ? input.tool : null;
  const batchSize = input.batchSize ?? (gatewayTool === null ? batchSizeDefault : gatewayBatchSizeDefault);
  const batchPauseMs = input.batchPauseMs ?? 0;
  const batchesPerExecution = input.batchesPerExecution ?? (gatewayTool === null ? batchesPerExecutionDefault : gatewayBatchesPerExecution);
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
      const result =
        gatewayTool === null
          ? await reconcileBatch({ runId: input.runId, tool: input.tool, params: input.params, cursor, batchSize })
          : await gatewayBatch(gatewayTool, input, cursor, batchSize);
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

/** Default wait of a restarted redemption for its transfer's webhook (the service's default). */
const redemptionWebhookWaitMsDefault = 600_000;
const ownerWaitMsDefault = 30_000;

/** One batch of a gateway tool: find, hand over to the owners, record what they did. */
async function gatewayBatch(
  tool: GatewayReconcileTool,
  input: ReconciliationWorkflowInput,
  cursor: string | null,
  batchSize: number,
): Promise<{ scanned: number; cursor: string | null }> {
  const batch = await prepareGatewayBatch({ runId: input.runId, tool, params: input.params, cursor, batchSize });
  if (batch.handovers.length === 0) return batch;
  const dispatched = await Promise.all(
    batch.handovers.map(
      async (handover): Promise<DispatchedHandover> => ({
        handover,
        dispatch: handover.problem === null ? await handOver(handover, input) : 'NONE',
      }),
    ),
  );
  await settleGatewayBatch({
    runId: input.runId,
    tool,
    params: input.params,
    dispatched,
    ownerWaitMs: input.ownerWaitMs ?? ownerWaitMsDefault,
  });
  return batch;
}

/**
 * Tells the owner workflow what the gateway says, or restarts a redemption whose workflow has
 * ended. A running owner applies only a status that moves it forward, so telling it a status it
 * cannot act on yet (PENDING) changes nothing; signalling is also how the run learns whether
 * the owner still runs (a signal to an ended workflow fails).
 */
async function handOver(handover: Handover, input: ReconciliationWorkflowInput): Promise<Dispatch> {
  const eventId = `reconcile:${input.runId}`;
  try {
    const owner = getExternalWorkflowHandle(handover.workflowId);
    if (handover.subject === 'redemption') {
      await owner.signal(transferEventSignal, {
        eventId,
        transferId: handover.gatewayId ?? '',
        status: reportedTransferStatus(handover.signalStatus),
        failReason: handover.failReason,
      });
    } else {
      await owner.signal(paymentEventSignal, { eventId, paymentId: handover.gatewayId ?? '', status: handover.signalStatus });
    }
    return 'SIGNALLED';
  } catch {
    // The owner has ended (or never existed under this id): below.
  }
  if (handover.subject === 'charge' || handover.tokenId === null) return 'OWNER_ENDED';
  try {
    await startChild(redemptionWorkflow, {
      workflowId: handover.workflowId,
      args: [
        {
          redemptionId: handover.subjectId,
          tokenId: handover.tokenId,
          webhookWaitMs: input.redemptionWebhookWaitMs ?? redemptionWebhookWaitMsDefault,
          resume: true,
        },
      ],
      // The redemption outlives this run and is found by its own id, as if the API had started it.
      parentClosePolicy: 'ABANDON',
      workflowIdReusePolicy: 'ALLOW_DUPLICATE',
      typedSearchAttributes: [
        { key: tokenIdKey, value: handover.tokenId },
        ...(handover.bearerPubkey === null ? [] : [{ key: bearerIdKey, value: handover.bearerPubkey }]),
        { key: businessStatusKey, value: 'RESUMING' },
      ],
    });
    return 'RESTARTED';
  } catch (error) {
    if (error instanceof WorkflowExecutionAlreadyStartedError) return 'ALREADY_RUNNING';
    throw error;
  }
}

/** Records the run as FAILED, also when the workflow was cancelled from the UI. */
async function endFailed(runId: string, error: unknown): Promise<void> {
  upsertSearchAttributes([{ key: businessStatusKey, value: 'FAILED' }]);
  // The innermost cause says what went wrong ("Activity task failed" wraps it).
  let message = String(error);
  for (const cause of causesOf(error, 5)) {
    if (!(cause instanceof Error)) break;
    message = cause.message;
  }
  await CancellationScope.nonCancellable(() => failReconciliationRun({ runId, error: message }));
}
