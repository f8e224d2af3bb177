import { randomUUID } from 'node:crypto';
import { WorkflowNotFoundError, type Client, type WorkflowHandle } from '@temporalio/client';
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { examplePubkeys } from '../schemas/examples.ts';
import { findAccount } from '../../db/ledger.ts';
import type { Pool } from '../../db/pool.ts';
import { runDryReconciliation } from '../../db/reconciliation/engine.ts';
import { createRun, findRun, markRunFailed, readReport, type RunRow } from '../../db/reconciliation/runs.ts';
import type { Config } from '../../infra/config.ts';
import { DomainError } from '../../src/errors.ts';
import { buckets } from '../../src/ledger/money-model.ts';
import type { GatewayPort } from '../../src/reconciliation/gateway.ts';
import { auditWindowStart } from '../../src/reconciliation/gateway-audit.ts';
import { runDryGatewayAudit, type GatewayAuditDeps } from '../../services/gateway-audit.ts';
import { runDryGatewayReconciliation } from '../../services/reconcile-gateway.ts';
import { isGatewayError } from '../../gateway/index.ts';
import {
  batchSizeDefault,
  gatewayBatchSizeDefault,
  isAuditTool,
  isGatewayTool,
  itemActions,
  itemStatuses,
  reconcileTools,
  reconcileToolNames,
  reconcileWorkflowId,
  type ReconcileParams,
  type ReconcileReport,
  type ReconcileTool,
} from '../../src/reconciliation/tools.ts';
import type { reconciliationWorkflow, ReconciliationWorkflowInput } from '../../workflows/reconciliation.ts';
import { businessStatusKey, ownerIdKey, referenceIdKey } from '../../workflows/search-attributes.ts';
import { adminErrors, booleanQuery, errorResponse } from '../schemas/common.ts';
import { entryItem } from '../schemas/ledger.ts';
import { amountSchema, currencySchema, money, ownerIdSchema } from '../schemas/money.ts';
import { withTemporalDeadline } from '../../services/temporal.ts';

/**
 * Administration: the reconcile tools (interface spec, /api/v1/admin/reconcile/*). One route per
 * entry of `reconcileTools` with `adminRoute` (the per-owner PLC booking repair is served by
 * api/routes/balance-reconcile.ts through the same run machinery, exported here). A dry run (`?dry_run=true`) runs here, inside the request, changes
 * nothing in the ledger and answers with what would change. A real run is a workflow
 * (`reconcile-<tool>-<run_id>`): the answer is its report when it ends within
 * `resultWaitMs`, else 202 with the run and workflow ids (docs/reconciliation.md says how to follow it).
 */

/** How long a real run's request waits for the workflow's report before answering 202. */
export const resultWaitMsDefault = 10_000;
/** A run row younger than this whose workflow is not found yet is still being started. */
const startGraceMs = 60_000;

const reconcileItem = z
  .object({
    key: z.string(),
    action: z.enum(itemActions),
    status: z
      .enum(itemStatuses)
      .describe('PLANNED: a dry run would change it; FIXED; SKIPPED: left alone (see detail); FAILED: refused (see detail)'),
    owner_id: z.string().nullable().describe('the owner the item is about (a gateway finding names one only when it concerns one)'),
    bucket: z.enum(buckets).nullable(),
    currency: currencySchema,
    snapshot: amountSchema.nullable().describe('the balance snapshot when the item was found (null for a gateway finding)'),
    computed: amountSchema.nullable().describe('what the ledger entries say the bucket holds (null for a gateway finding)'),
    amount: amountSchema
      .nullable()
      .describe('the amount of the posting the item is about (postings only); `entries` give the direction of every leg'),
    snapshot_after: amountSchema.nullable().describe('the snapshot after the fix (a dry run: what it would be)'),
    transaction_id: z.string().uuid().nullable(),
    reference_transaction_id: z
      .string()
      .uuid()
      .nullable()
      .describe('the transaction a posting compensates or completes (the failure reversed; the request a settlement finishes)'),
    entries: z.array(entryItem).nullable().describe('every leg of the posting (postings only)'),
    detail: z.string().nullable().describe('why, and for the gateway tools what the gateway said and who booked the outcome'),
    finding: z
      .string()
      .nullable()
      .describe('gateway-audit only: the mismatch (FAILED_REDEMPTION_PAID, SETTLED_REDEMPTION_UNPAID, PLC_PAID_TWICE, UNKNOWN_PAYOUT, ...)'),
    evidence: z.record(z.string(), z.unknown()).nullable().describe("gateway-audit only: the gateway's side and ours, as read"),
  })
  .meta({ id: 'ReconcileItem' });

const reconcileReportResponse = z
  .object({
    run_id: z.string().uuid(),
    workflow_id: z.string().nullable(),
    tool: z.enum(reconcileToolNames as [ReconcileTool, ...ReconcileTool[]]),
    owner_id: z.string().nullable(),
    dry_run: z.boolean(),
    status: z.enum(['COMPLETED', 'FAILED']),
    requested_by: z.string(),
    started_at: z.string(),
    finished_at: z.string().nullable(),
    complete: z.boolean().describe('false when a dry run stopped at its time or item bound before looking at everything'),
    counts: z.object({
      scanned: z.number().int(),
      batches: z.number().int(),
      items: z.number().int(),
      planned: z.number().int(),
      fixed: z.number().int(),
      skipped: z.number().int(),
      failed: z.number().int(),
    }),
    items: z.array(reconcileItem),
    items_truncated: z.boolean().describe('more items than the report holds; all are in reconciliation_items'),
  })
  .meta({ id: 'ReconcileReport' });

export const reconcileAccepted = z
  .object({
    run_id: z.string().uuid(),
    workflow_id: z.string(),
    tool: z.enum(reconcileToolNames as [ReconcileTool, ...ReconcileTool[]]),
    status: z.literal('RUNNING'),
  })
  .meta({ id: 'ReconcileAccepted', description: 'The run goes on; follow it in the Temporal UI (ReferenceId = run_id)' });

export function toReportResponse(report: ReconcileReport): z.infer<typeof reconcileReportResponse> {
  return {
    run_id: report.runId,
    workflow_id: report.workflowId,
    tool: report.tool,
    owner_id: report.params.ownerId ?? null,
    dry_run: report.dryRun,
    status: report.status,
    requested_by: report.requestedBy,
    started_at: report.startedAt,
    finished_at: report.finishedAt,
    complete: report.complete,
    counts: report.counts,
    items: report.items.map((item) => ({
      key: item.key,
      action: item.action,
      status: item.status,
      owner_id: item.ownerId,
      bucket: item.bucket,
      currency: item.currency,
      snapshot: item.snapshotMinor === null ? null : money(BigInt(item.snapshotMinor), item.currency),
      computed: item.computedMinor === null ? null : money(BigInt(item.computedMinor), item.currency),
      amount: item.amountMinor === null ? null : money(BigInt(item.amountMinor), item.currency),
      snapshot_after: item.snapshotAfterMinor === null ? null : money(BigInt(item.snapshotAfterMinor), item.currency),
      transaction_id: item.transactionId,
      reference_transaction_id: item.referenceTransactionId,
      entries:
        item.entries?.map((entry) => ({
          owner_id: entry.ownerId,
          bucket: entry.bucket,
          currency: entry.currency,
          amount: money(BigInt(entry.amountMinor), entry.currency),
        })) ?? null,
      detail: item.detail,
      finding: item.finding,
      evidence: item.evidence,
    })),
    items_truncated: report.itemsTruncated,
  };
}

const reconcileRunResponse = reconcileReportResponse
  .extend({
    status: z.enum(['RUNNING', 'COMPLETED', 'FAILED']),
    error: z.string().nullable(),
  })
  .meta({ id: 'ReconcileRun', description: 'A run as it stands: while RUNNING, the items recorded so far' });

export type RealRunOutcome = { kind: 'report'; report: ReconcileReport } | { kind: 'running'; runId: string; workflowId: string };

/**
 * Waits up to `waitMs` for the workflow's result. The long poll behind `result()` is cancelled
 * when the wait ends, so no request leaves a call behind.
 */
async function resultWithin(temporal: Client, handle: WorkflowHandle<typeof reconciliationWorkflow>, waitMs: number) {
  const controller = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<{ done: false }>((resolve) => {
    timer = setTimeout(() => resolve({ done: false }), waitMs);
  });
  // A deliberate wait that may outlast the request's Temporal deadline: its own, past the race's end.
  const result = withTemporalDeadline(temporal, Date.now() + waitMs + 1000, () => temporal.withAbortSignal(controller.signal, () => handle.result())).then(
    (report) => ({ done: true as const, report }),
  );
  try {
    return await Promise.race([result, timedOut]);
  } finally {
    clearTimeout(timer);
    controller.abort();
    result.catch(() => {});
  }
}

/**
 * Whether a run recorded as RUNNING still has a live workflow. A run whose workflow ended without
 * ending the run (terminated from the UI) is marked FAILED so that the scope is free again.
 */
async function isStillRunning(pool: Pool, temporal: Client, run: RunRow): Promise<boolean> {
  if (run.workflow_id === null) return false;
  try {
    const description = await temporal.workflow.getHandle(run.workflow_id).describe();
    if (description.status.name === 'RUNNING') return true;
    await markRunFailed(pool, run.id, `workflow ${run.workflow_id} ended as ${description.status.name} without ending the run`);
    return false;
  } catch (error) {
    if (!(error instanceof WorkflowNotFoundError)) throw error;
    if (Date.now() - run.started_at.getTime() < startGraceMs) return true;
    await markRunFailed(pool, run.id, `workflow ${run.workflow_id} was never started`);
    return false;
  }
}

/** Whether the workflow with this id runs now (the gateway tools' dry runs ask it of each owner). */
async function isWorkflowRunning(temporal: Client, workflowId: string): Promise<boolean> {
  try {
    return (await temporal.workflow.getHandle(workflowId).describe()).status.name === 'RUNNING';
  } catch (error) {
    if (error instanceof WorkflowNotFoundError) return false;
    throw error;
  }
}

/** What a run needs from the app. */
export interface ReconcileRunDeps {
  pool: Pool;
  temporal: Client;
  config: Config;
  gateway: GatewayPort & GatewayAuditDeps['gateway'];
}

/** What a tool works on, beyond an owner: the release tool's expiry grace, the gateway audit's window. */
export function toolParams(tool: ReconcileTool, config: Config, ownerId?: string, now: Date = new Date()): ReconcileParams {
  const params: ReconcileParams = {};
  if (ownerId !== undefined) params.ownerId = ownerId;
  if (tool === 'release-expired-promises') params.expiryGraceMs = config.CLOCK_TOLERANCE_MS;
  if (tool === 'gateway-audit') params.since = auditWindowStart(now, config.GATEWAY_AUDIT_LOOKBACK_DAYS);
  return params;
}

/**
 * Starts a real run as the workflow `reconcile-<tool>-<run_id>` and waits up to `waitMs` for its
 * report; while a real run of the same scope runs, answers that run instead of starting another.
 */
export async function startRealRun(
  deps: ReconcileRunDeps,
  tool: ReconcileTool,
  params: ReconcileParams,
  requestedBy: string,
  waitMs: number,
): Promise<RealRunOutcome> {
  const { pool, temporal, config } = deps;
  const runId = randomUUID();
  const workflowId = reconcileWorkflowId(tool, runId);
  // Two rounds at most: the second only after a stale RUNNING row was marked FAILED.
  for (let attempt = 0; attempt < 2; attempt += 1) {
    const created = await createRun(pool, { runId, tool, params, dryRun: false, requestedBy, workflowId });
    if (created.created) break;
    const running = created.running;
    if (await isStillRunning(pool, temporal, running)) {
      return { kind: 'running', runId: running.id, workflowId: running.workflow_id ?? reconcileWorkflowId(tool, running.id) };
    }
    if (attempt === 1) throw new DomainError('CONFLICT', 'another run of this tool is still being recorded; retry shortly');
  }
  const gateway = isGatewayTool(tool);
  const input: ReconciliationWorkflowInput = {
    runId,
    tool,
    params,
    requestedBy,
    batchSize: gateway ? gatewayBatchSizeDefault : batchSizeDefault,
    ...(gateway ? { redemptionWebhookWaitMs: config.REDEMPTION_WEBHOOK_WAIT_MS } : {}),
  };
  let handle: WorkflowHandle<typeof reconciliationWorkflow>;
  try {
    // Started by name: the API imports the workflow's type, never its code.
    handle = await temporal.workflow.start<typeof reconciliationWorkflow>('reconciliationWorkflow', {
      workflowId,
      taskQueue: config.TEMPORAL_TASK_QUEUE,
      args: [input],
      typedSearchAttributes: [
        { key: referenceIdKey, value: runId },
        { key: businessStatusKey, value: 'RUNNING' },
        ...(params.ownerId === undefined ? [] : [{ key: ownerIdKey, value: params.ownerId }]),
      ],
    });
  } catch (error) {
    await markRunFailed(pool, runId, `the workflow could not be started: ${error instanceof Error ? error.message : String(error)}`);
    throw error;
  }
  const waited = await resultWithin(temporal, handle, waitMs);
  return waited.done ? { kind: 'report', report: waited.report } : { kind: 'running', runId, workflowId };
}

/** A dry run inside the request: ledger tools read the database, gateway tools the gateway and Temporal too. */
export async function runDryRun(deps: ReconcileRunDeps, tool: ReconcileTool, params: ReconcileParams, requestedBy: string): Promise<ReconcileReport> {
  const runId = randomUUID();
  if (isAuditTool(tool)) {
    try {
      return await runDryGatewayAudit(deps, { runId, tool, params, requestedBy, batchSize: batchSizeDefault });
    } catch (error) {
      // The run is recorded FAILED with the gateway's error; the caller learns it may try again.
      if (isGatewayError(error) && error.retryable) throw new DomainError('GATEWAY_UNAVAILABLE', 'the gateway did not answer the audit; try again');
      throw error;
    }
  }
  if (isGatewayTool(tool)) {
    return runDryGatewayReconciliation(deps.pool, deps.gateway, (workflowId) => isWorkflowRunning(deps.temporal, workflowId), {
      runId,
      tool,
      params,
      requestedBy,
      batchSize: gatewayBatchSizeDefault,
    });
  }
  return runDryReconciliation(deps.pool, { runId, tool, params, requestedBy, batchSize: batchSizeDefault });
}

export interface AdminReconcileOptions {
  /** How long a real run's request waits for the report before answering 202. */
  resultWaitMs?: number;
}

export async function adminReconcileRoutes(app: FastifyInstance, options: AdminReconcileOptions = {}): Promise<void> {
  const routes = app.withTypeProvider<ZodTypeProvider>();
  const { pool, config } = app.deps;
  const deps: ReconcileRunDeps = app.deps;
  const resultWaitMs = options.resultWaitMs ?? resultWaitMsDefault;
  app.addHook('onRequest', app.requireAdmin());
  const security = [{ bearer: [] }];

  routes.get(
    '/runs/:run_id',
    {
      schema: {
        tags: ['admin: reconcile'],
        summary: 'A reconcile run as it stands (beyond the spec): status, counts and the items recorded so far',
        description: 'Follows a real run that answered 202: the counts grow as its batches record items; the report is final once status is COMPLETED or FAILED.',
        security,
        params: z.object({ run_id: z.string().uuid() }),
        requestExample: { params: { run_id: '4c0b2f7e-8d1a-4e3b-9f6c-5a7d8e9f0a1b' } },
        response: { 200: reconcileRunResponse, 404: errorResponse, ...adminErrors },
      },
    },
    async (request) => {
      const run = await findRun(pool, request.params.run_id);
      if (run === null) throw new DomainError('NOT_FOUND', 'no such reconcile run');
      const report = await readReport(pool, run.id);
      return { ...toReportResponse(report), status: run.status, error: run.error };
    },
  );

  for (const tool of reconcileToolNames) {
    const spec = reconcileTools[tool];
    if (!spec.adminRoute) continue;
    const dryRunQuery = z.object({
      dry_run: booleanQuery
        .default(spec.dryRunDefault)
        .describe(`true: report what would change and change nothing; default ${String(spec.dryRunDefault)}`),
    });
    routes.post(
      spec.ownerScoped ? `/${tool}/:owner_id` : `/${tool}`,
      {
        schema: {
          tags: ['admin: reconcile'],
          summary: spec.summary,
          description:
            'A dry run answers 200 with every item it would change (bounded; all items are in reconciliation_items); ' +
            'it changes nothing, at the gateway neither. ' +
            'A real run is the workflow reconcile-<tool>-<run_id>: 200 with its report when it ends within a few seconds, ' +
            'else 202 with run_id and workflow_id (Temporal UI: ReferenceId = run_id). While a real run of the same tool ' +
            '(and owner) is running, a new request answers 202 with that run.',
          security,
          ...(spec.ownerScoped ? { params: z.object({ owner_id: ownerIdSchema }) } : {}),
          querystring: dryRunQuery,
          requestExample: { querystring: { dry_run: 'true' }, ...(spec.ownerScoped ? { params: { owner_id: examplePubkeys.alice } } : {}) },
          response: {
            200: reconcileReportResponse,
            202: reconcileAccepted,
            404: errorResponse,
            409: errorResponse,
            // The gateway audit's dry run when the gateway does not answer (GATEWAY_UNAVAILABLE).
            ...(spec.kind === 'audit' ? { 503: errorResponse } : {}),
            ...adminErrors,
          },
        },
      },
      async (request, reply) => {
        const admin = request.admin;
        if (admin === null) throw new DomainError('UNAUTHENTICATED', 'a bearer token is required');
        let ownerId: string | undefined;
        if (spec.ownerScoped) {
          const account = await findAccount(pool, (request.params as { owner_id: string }).owner_id);
          if (account === null) throw new DomainError('ACCOUNT_NOT_FOUND', 'no account for this owner');
          ownerId = account.owner_id;
        }
        const params = toolParams(tool, config, ownerId);
        const dryRun = request.query.dry_run;
        if (dryRun) {
          const report = await runDryRun(deps, tool, params, admin.username);
          request.log.info({ tool, run_id: report.runId, items: report.counts.items, admin: admin.username }, 'reconcile dry run');
          return reply.code(200).send(toReportResponse(report));
        }
        const outcome = await startRealRun(deps, tool, params, admin.username, resultWaitMs);
        if (outcome.kind === 'running') {
          request.log.info({ tool, run_id: outcome.runId, admin: admin.username }, 'reconcile run goes on');
          return reply.code(202).send({ run_id: outcome.runId, workflow_id: outcome.workflowId, tool, status: 'RUNNING' as const });
        }
        request.log.info(
          { tool, run_id: outcome.report.runId, counts: outcome.report.counts, admin: admin.username },
          'reconcile run completed',
        );
        return reply.code(200).send(toReportResponse(outcome.report));
      },
    );
  }
}
