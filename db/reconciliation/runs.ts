import { z } from 'zod';
import { assert, DomainError } from '../../src/errors.ts';
import type { ItemRecord } from '../../src/reconciliation/items.ts';
import {
  isReconcileTool,
  itemActions,
  reconcileScope,
  reportItemsMax,
  type ReconcileCounts,
  type ReconcileItemReport,
  type ReconcileParams,
  type ReconcileReport,
  type ReconcileTool,
} from '../../src/reconciliation/tools.ts';
import { withTransaction, type Pool, type Queryable } from '../pool.ts';
import { exec, many, maybeOne, one } from '../sql.ts';
import { bucketEnum, currencyEnum } from './shared.ts';

/**
 * A reconcile run's bookkeeping (docs/reconciliation.md): the run (`reconciliation_runs`: its
 * tool, scope, status and counts) and what it found and did (`reconciliation_items`, one row per
 * item key, written once per run). A real run is recorded by its workflow's first activity (or
 * by the API before it), a dry run by the request; both end here with their report.
 */

const toolSchema = z.string().refine(isReconcileTool, 'unknown reconcile tool');
const paramsSchema = z.object({
  ownerId: z.string().optional(),
  expiryGraceMs: z.number().int().optional(),
  since: z.string().regex(/^\d{4}-\d{2}-\d{2}$/).optional(),
});

const runRow = z.object({
  id: z.string().uuid(),
  tool: toolSchema,
  scope: z.string(),
  dry_run: z.boolean(),
  status: z.enum(['RUNNING', 'COMPLETED', 'FAILED']),
  requested_by: z.string(),
  params: paramsSchema,
  workflow_id: z.string().nullable(),
  started_at: z.date(),
  finished_at: z.date().nullable(),
  scanned: z.bigint(),
  complete: z.boolean(),
  batches: z.number().int(),
  items_found: z.number().int(),
  items_planned: z.number().int(),
  items_fixed: z.number().int(),
  items_skipped: z.number().int(),
  items_failed: z.number().int(),
  error: z.string().nullable(),
});
export type RunRow = z.infer<typeof runRow>;

const runColumns = `id, tool, scope, dry_run, status, requested_by, params, workflow_id, started_at, finished_at, scanned,
                    complete, batches, items_found, items_planned, items_fixed, items_skipped, items_failed, error`;

export interface CreateRunInput {
  runId: string;
  tool: ReconcileTool;
  params: ReconcileParams;
  dryRun: boolean;
  requestedBy: string;
  workflowId: string | null;
}

export type CreateRunResult = { created: true; run: RunRow } | { created: false; running: RunRow };

/**
 * Records a run as RUNNING. Idempotent by run id (the workflow's first step repeats what the
 * API did). A real run whose scope already has a real run RUNNING is not created: the caller
 * gets that run instead (partial unique index reconciliation_runs_one_running).
 */
export async function createRun(db: Queryable, input: CreateRunInput): Promise<CreateRunResult> {
  const scope = reconcileScope(input.tool, input.params);
  // Bounded: each round either inserts, finds this id, or finds the running run; a third
  // outcome (the running run finished in between) is retried.
  for (let attempt = 0; attempt < 3; attempt += 1) {
    const inserted = await maybeOne(db, runRow, {
      name: 'reconcile-run-insert',
      text: `INSERT INTO reconciliation_runs (id, tool, scope, dry_run, status, requested_by, params, workflow_id)
             VALUES ($1, $2, $3, $4, 'RUNNING', $5, $6::jsonb, $7)
             ON CONFLICT DO NOTHING RETURNING ${runColumns}`,
      values: [input.runId, input.tool, scope, input.dryRun, input.requestedBy, JSON.stringify(input.params), input.workflowId],
    });
    if (inserted !== null) return { created: true, run: inserted };
    const same = await findRun(db, input.runId);
    if (same !== null) {
      assert(same.tool === input.tool && same.dry_run === input.dryRun, 'a run id is used for one tool and one mode');
      return { created: true, run: same };
    }
    const running = await maybeOne(db, runRow, {
      name: 'reconcile-run-running',
      text: `SELECT ${runColumns} FROM reconciliation_runs WHERE scope = $1 AND status = 'RUNNING' AND NOT dry_run`,
      values: [scope],
    });
    if (running !== null) return { created: false, running };
  }
  throw new Error(`could not record reconciliation run ${input.runId}: its scope keeps changing`);
}

export function findRun(db: Queryable, runId: string): Promise<RunRow | null> {
  return maybeOne(db, runRow, {
    name: 'reconcile-run-by-id',
    text: `SELECT ${runColumns} FROM reconciliation_runs WHERE id = $1`,
    values: [runId],
  });
}

/** Counts of a run's items, from the items themselves (exact whatever was retried). */
const countsSql = `SELECT count(*)::int AS items_found,
                          count(*) FILTER (WHERE status = 'PLANNED')::int AS items_planned,
                          count(*) FILTER (WHERE status = 'FIXED')::int AS items_fixed,
                          count(*) FILTER (WHERE status = 'SKIPPED')::int AS items_skipped,
                          count(*) FILTER (WHERE status = 'FAILED')::int AS items_failed
                     FROM reconciliation_items WHERE run_id = $1`;

/**
 * Ends a run: COMPLETED with its counts and bounded report. Idempotent: ending an ended run
 * returns its report unchanged.
 */
export async function completeRun(
  pool: Pool,
  runId: string,
  totals: { scanned: number; batches: number; complete: boolean },
): Promise<ReconcileReport> {
  return withTransaction(pool, async (client) => {
    await exec(client, {
      name: 'reconcile-run-complete',
      text: `UPDATE reconciliation_runs r
                SET status = 'COMPLETED', finished_at = now(), scanned = $2, batches = $3, complete = $4,
                    items_found = c.items_found, items_planned = c.items_planned, items_fixed = c.items_fixed,
                    items_skipped = c.items_skipped, items_failed = c.items_failed
               FROM (${countsSql}) c
              WHERE r.id = $1 AND r.status = 'RUNNING'`,
      values: [runId, totals.scanned, totals.batches, totals.complete],
    });
    const report = await readReport(client, runId);
    await exec(client, {
      name: 'reconcile-run-store-report',
      text: 'UPDATE reconciliation_runs SET report = $2::jsonb WHERE id = $1 AND report IS NULL',
      values: [runId, JSON.stringify(report)],
    });
    return report;
  });
}

/** Ends a run as FAILED (idempotent); the items it recorded stay, and say what it did. */
export async function markRunFailed(db: Queryable, runId: string, error: string): Promise<void> {
  await exec(db, {
    name: 'reconcile-run-fail',
    text: `UPDATE reconciliation_runs r
              SET status = 'FAILED', finished_at = now(), error = left($2, 2000),
                  items_found = c.items_found, items_planned = c.items_planned, items_fixed = c.items_fixed,
                  items_skipped = c.items_skipped, items_failed = c.items_failed
             FROM (${countsSql}) c
            WHERE r.id = $1 AND r.status = 'RUNNING'`,
    values: [runId, error],
  });
}

const itemRow = z.object({
  item_key: z.string(),
  action: z.enum(itemActions),
  status: z.enum(['PLANNED', 'FIXED', 'SKIPPED', 'FAILED']),
  owner_id: z.string().nullable(),
  bucket: bucketEnum.nullable(),
  currency: currencyEnum,
  snapshot_minor: z.bigint().nullable(),
  computed_minor: z.bigint().nullable(),
  amount_minor: z.bigint().nullable(),
  snapshot_after_minor: z.bigint().nullable(),
  transaction_id: z.string().uuid().nullable(),
  reference_transaction_id: z.string().uuid().nullable(),
  entries: z
    .array(z.object({ ownerId: z.string(), bucket: bucketEnum, currency: currencyEnum, amountMinor: z.string() }))
    .nullable(),
  detail: z.string().nullable(),
  finding: z.string().nullable(),
  evidence: z.record(z.string(), z.unknown()).nullable(),
});

/** A run's report: the run, its counts and its first `reportItemsMax` items. */
export async function readReport(db: Queryable, runId: string): Promise<ReconcileReport> {
  const run = await findRun(db, runId);
  if (run === null) throw new DomainError('NOT_FOUND', `no reconciliation run ${runId}`);
  const items = await many(db, itemRow, {
    name: 'reconcile-items-first',
    text: `SELECT item_key, action, status, owner_id, bucket, currency, snapshot_minor, computed_minor, amount_minor,
                  snapshot_after_minor, transaction_id, reference_transaction_id, entries, detail, finding, evidence
             FROM reconciliation_items WHERE run_id = $1 ORDER BY seq LIMIT $2`,
    values: [runId, reportItemsMax + 1],
  });
  const counts = await one(
    db,
    z.object({
      items_found: z.number().int(),
      items_planned: z.number().int(),
      items_fixed: z.number().int(),
      items_skipped: z.number().int(),
      items_failed: z.number().int(),
    }),
    { name: 'reconcile-items-counts', text: countsSql, values: [runId] },
  );
  const reportCounts: ReconcileCounts = {
    scanned: Number(run.scanned),
    batches: run.batches,
    items: counts.items_found,
    planned: counts.items_planned,
    fixed: counts.items_fixed,
    skipped: counts.items_skipped,
    failed: counts.items_failed,
  };
  return {
    runId: run.id,
    tool: run.tool as ReconcileTool,
    scope: run.scope,
    params: run.params,
    dryRun: run.dry_run,
    status: run.status === 'FAILED' ? 'FAILED' : 'COMPLETED',
    requestedBy: run.requested_by,
    workflowId: run.workflow_id,
    startedAt: run.started_at.toISOString(),
    finishedAt: run.finished_at?.toISOString() ?? null,
    complete: run.complete,
    counts: reportCounts,
    items: items.slice(0, reportItemsMax).map(
      (item): ReconcileItemReport => ({
        key: item.item_key,
        action: item.action,
        status: item.status,
        ownerId: item.owner_id,
        bucket: item.bucket,
        currency: item.currency,
        snapshotMinor: item.snapshot_minor?.toString() ?? null,
        computedMinor: item.computed_minor?.toString() ?? null,
        amountMinor: item.amount_minor?.toString() ?? null,
        snapshotAfterMinor: item.snapshot_after_minor?.toString() ?? null,
        transactionId: item.transaction_id,
        referenceTransactionId: item.reference_transaction_id,
        entries: item.entries,
        detail: item.detail,
        finding: item.finding,
        evidence: item.evidence,
      }),
    ),
    itemsTruncated: items.length > reportItemsMax,
    error: run.error,
  };
}

/** Whether the run recorded an item under this key already (a retried batch). */
export async function itemRecorded(db: Queryable, runId: string, key: string): Promise<boolean> {
  const row = await maybeOne(db, z.object({ one: z.number() }), {
    name: 'reconcile-item-exists',
    text: 'SELECT 1 AS one FROM reconciliation_items WHERE run_id = $1 AND item_key = $2',
    values: [runId, key],
  });
  return row !== null;
}

/** Records items once per run and key: a retried batch records nothing twice. */
export async function recordItems(db: Queryable, runId: string, items: readonly ItemRecord[]): Promise<void> {
  if (items.length === 0) return;
  const rows = items.map((item) => ({
    item_key: item.key,
    action: item.action,
    status: item.status,
    owner_id: item.ownerId,
    bucket: item.bucket,
    currency: item.currency,
    snapshot_minor: item.snapshotMinor?.toString() ?? null,
    computed_minor: item.computedMinor?.toString() ?? null,
    amount_minor: item.amountMinor?.toString() ?? null,
    snapshot_after_minor: item.snapshotAfterMinor?.toString() ?? null,
    transaction_id: item.transactionId,
    reference_transaction_id: item.referenceTransactionId,
    entries:
      item.entries === null
        ? null
        : item.entries.map((entry) => ({
            ownerId: entry.ownerId,
            bucket: entry.bucket,
            currency: entry.currency,
            amountMinor: entry.amountMinor.toString(),
          })),
    detail: item.detail === null ? null : item.detail.slice(0, 500),
    finding: item.finding ?? null,
    evidence: item.evidence ?? null,
  }));
  await exec(db, {
    name: 'reconcile-items-insert',
    text: `INSERT INTO reconciliation_items (run_id, item_key, action, status, owner_id, bucket, currency, snapshot_minor,
                                             computed_minor, amount_minor, snapshot_after_minor, transaction_id,
                                             reference_transaction_id, entries, detail, finding, evidence)
           SELECT $1, x.item_key, x.action, x.status, x.owner_id, x.bucket, x.currency, x.snapshot_minor, x.computed_minor,
                  x.amount_minor, x.snapshot_after_minor, x.transaction_id, x.reference_transaction_id, x.entries, x.detail,
                  x.finding, x.evidence
             FROM jsonb_to_recordset($2::jsonb) AS x(item_key text, action text, status text, owner_id text, bucket ledger_bucket,
                  currency ledger_currency, snapshot_minor bigint, computed_minor bigint, amount_minor bigint, snapshot_after_minor bigint,
                  transaction_id uuid, reference_transaction_id uuid, entries jsonb, detail text, finding text, evidence jsonb)
           ON CONFLICT (run_id, item_key) DO NOTHING`,
    values: [runId, JSON.stringify(rows)],
  });
}
