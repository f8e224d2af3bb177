import { z } from 'zod';
import { assert, DomainError } from '../src/errors.ts';
import { cursorAfter, phaseAt } from '../src/reconciliation/phases.ts';
import { buckets, isSystemOwner, moneyModel, worldOwnerId, type Bucket, type Entry, type TxType } from '../src/ledger/money-model.ts';
import { currencies, type Currency } from '../src/money/currency.ts';
import {
  bucketItemKey,
  dryRunBudgetMs,
  dryRunItemsMax,
  isAuditTool,
  isGatewayTool,
  isReconcileTool,
  itemActions,
  reconcileIdempotencyKey,
  reconcileScope,
  reportItemsMax,
  type ItemAction,
  type ItemStatus,
  type LedgerReconcileTool,
  type ReconcileCounts,
  type ReconcileItemReport,
  type ReconcileParams,
  type ReconcileReport,
  type ReconcileTool,
} from '../src/reconciliation/tools.ts';
import { postTransaction } from './ledger.ts';
import { withTransaction, type Pool, type PoolClient, type Queryable } from './pool.ts';
import { exec, many, maybeOne, one } from './sql.ts';
import { ledgerKeys } from '../src/ledger/keys.ts';

// Built once (zod compiles a schema's parser on its first use).
const lockedRow = z.object({ locked: z.number().int() });

/**
 * The reconcile tools' SQL (docs/reconciliation.md). Every tool is a list of phases; a phase
 * walks one keyed set (accounts by id, failure transactions by seq) in bounded batches, each
 * batch taking the last key it was given and returning the next one, so a real run that stops
 * anywhere resumes from its last finished batch. Finding is read-only; fixing happens per
 * account (or per transaction) in a database transaction of its own that locks what it changes
 * and checks again under the lock, and records what it did in reconciliation_items in that same
 * transaction. Ledger changes are ordinary ledger transactions booked with `postTransaction`
 * under `reconcile:<run_id>:<item key>`; snapshot rows are a cache and are rewritten in place,
 * and only here. A settlement row (PLC, charge, redemption) whose own booking is missing gets
 * that booking under the owning code's own idempotency key instead (`rowRepairPhase`), so the
 * owner and the repair can never both book it. The gateway tools' SQL is in
 * db/reconciliation-gateway.ts.
 */

// ---------------------------------------------------------------------------------------------
// Runs and items
// ---------------------------------------------------------------------------------------------

const bucketEnum = z.enum(buckets);
const currencyEnum = z.enum(currencies as [Currency, ...Currency[]]);
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

/** What a phase found or did about one bucket (or one transaction, or, for the gateway audit, one mismatch). */
export interface ItemRecord {
  key: string;
  action: ItemAction;
  status: ItemStatus;
  /** Null only for a gateway finding that concerns no one bucket. */
  ownerId: string | null;
  bucket: Bucket | null;
  currency: Currency;
  snapshotMinor: bigint | null;
  computedMinor: bigint | null;
  amountMinor: bigint | null;
  snapshotAfterMinor: bigint | null;
  transactionId: string | null;
  referenceTransactionId: string | null;
  entries: readonly Entry[] | null;
  detail: string | null;
  /** Gateway findings only (action GATEWAY_FINDING): the mismatch and its evidence. */
  finding?: string;
  evidence?: Record<string, unknown>;
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

// ---------------------------------------------------------------------------------------------
// Phases and the batch runner
// ---------------------------------------------------------------------------------------------

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

/**
 * Runs one batch of a tool from `cursor` (null: the start). The cursor names the phase and the
 * last key of the previous batch (`<phase>:<key>`), so it stays valid across worker restarts.
 */
export async function reconcileBatch(
  pool: Pool,
  ctx: ReconcileContext,
  cursor: string | null,
  limit: number,
): Promise<BatchResult> {
  assert(Number.isInteger(limit) && limit >= 1 && limit <= 10_000, 'batch size within 1..10000');
  if (isGatewayTool(ctx.tool)) throw new Error(`${ctx.tool} is a gateway tool: its batches run in db/reconciliation-gateway.ts`);
  if (isAuditTool(ctx.tool)) throw new Error(`${ctx.tool} audits the gateway: its batches run in activities/gateway-audit.ts`);
  const phases = phasesByTool[ctx.tool];
  const { index, phase, after } = phaseAt(phases, ctx.tool, cursor);
  const result = await phase.batch(pool, ctx, after, limit);
  return { phase: phase.name, scanned: result.scanned, found: result.found, cursor: cursorAfter(phases, index, result.next) };
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

// ---------------------------------------------------------------------------------------------
// Accounts and snapshots
// ---------------------------------------------------------------------------------------------

const accountKeyRow = z.object({ id: z.string().uuid(), owner_id: z.string(), kind: z.enum(['user', 'system']) });
type AccountKey = z.infer<typeof accountKeyRow>;

const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

function parseAccountCursor(after: string | null): string | null {
  if (after !== null && !uuidPattern.test(after)) throw new Error(`account cursor ${after} is not an account id`);
  return after;
}

/** The next page of accounts in id order (the order ledger_post locks them in). */
function pageAccounts(
  db: Queryable,
  filter: { after: string | null; limit: number; ownerId: string | null; userOnly: boolean },
): Promise<AccountKey[]> {
  return many(db, accountKeyRow, {
    name: 'reconcile-accounts-page',
    text: `SELECT id, owner_id, kind FROM ledger_accounts
            WHERE ($1::uuid IS NULL OR id > $1) AND ($2::text IS NULL OR owner_id = $2) AND (NOT $3 OR kind = 'user')
            ORDER BY id LIMIT $4`,
    values: [filter.after, filter.ownerId, filter.userOnly, filter.limit],
  });
}

const bucketDiffRow = z.object({
  account_id: z.string().uuid(),
  owner_id: z.string(),
  kind: z.enum(['user', 'system']),
  bucket: bucketEnum,
  currency: currencyEnum,
  snapshot_minor: z.bigint(),
  computed_minor: z.bigint(),
});
type BucketDiff = z.infer<typeof bucketDiffRow>;

/**
 * Buckets of these accounts whose snapshot differs from the sum of their entries. One statement,
 * so one consistent view: a posting changes a snapshot and writes its entries in one database
 * transaction, so a difference seen here is real and not a posting half seen.
 */
function findSnapshotDiffs(db: Queryable, accountIds: readonly string[]): Promise<BucketDiff[]> {
  return many(db, bucketDiffRow, {
    name: 'reconcile-snapshot-diffs',
    text: `WITH sums AS (SELECT account_id, bucket, currency, sum(amount_minor) AS total FROM ledger_entries
                          WHERE account_id = ANY ($1::uuid[]) GROUP BY 1, 2, 3),
                snaps AS (SELECT account_id, bucket, currency, amount_minor FROM ledger_bucket_balances
                           WHERE account_id = ANY ($1::uuid[]))
           SELECT account_id, a.owner_id, a.kind, bucket, currency,
                  coalesce(n.amount_minor, 0) AS snapshot_minor, coalesce(s.total, 0)::bigint AS computed_minor
             FROM sums s FULL JOIN snaps n USING (account_id, bucket, currency)
             JOIN ledger_accounts a ON a.id = account_id
            WHERE coalesce(n.amount_minor, 0) <> coalesce(s.total, 0)
            ORDER BY account_id, bucket, currency`,
    values: [accountIds],
  });
}

/**
 * Locks the snapshot rows of accounts (and, for compensating postings, system:world's AVAILABLE
 * rows) in ledger_post's order, inside the caller's transaction. A posting that wants one of
 * these rows waits until the caller commits, and the caller waits for any posting already
 * holding one, so the entries summed after this call are exactly the entries behind the rows.
 */
async function lockSnapshots(client: PoolClient, accountIds: readonly string[], worldAvailable: boolean): Promise<void> {
  // Give up rather than queue for long behind a stuck transaction; the batch is retried.
  await client.query("SET LOCAL lock_timeout = '10s'");
  await one(client, lockedRow, {
    name: 'reconcile-lock-snapshots',
    text: 'SELECT ledger_lock_snapshots($1::uuid[], $2) AS locked',
    values: [accountIds, worldAvailable],
  });
}

const recomputedRow = z.object({
  bucket: bucketEnum,
  currency: currencyEnum,
  snapshot_minor: z.bigint(),
  computed_minor: z.bigint(),
  corrected: z.boolean(),
});
type Recomputed = z.infer<typeof recomputedRow>;

/**
 * Rewrites the account's snapshots that differ from their entries (only `keys`, "BUCKET/CURRENCY",
 * when given), under the locks `lockSnapshots` took: the bucket's row becomes the sum of its
 * entries and its unfolded credits are folded into it. One statement, so the entries, the row and
 * the credits are read in one snapshot: a credit that commits meanwhile (credits take no lock) is
 * in neither the sum nor the fold, and stays beside the row. A user bucket whose entries sum below
 * zero cannot be written (the non-negative CHECK) and comes back uncorrected.
 */
function recomputeSnapshots(client: PoolClient, account: AccountKey, keys: readonly string[] | null): Promise<Recomputed[]> {
  return many(client, recomputedRow, {
    name: 'reconcile-recompute-snapshots',
    text: `WITH sums AS (SELECT bucket, currency, sum(amount_minor) AS total FROM ledger_entries
                          WHERE account_id = $1 GROUP BY 1, 2),
                snaps AS (SELECT bucket, currency, amount_minor FROM ledger_bucket_balances WHERE account_id = $1),
                diff AS (SELECT bucket, currency, coalesce(n.amount_minor, 0) AS snapshot_minor,
                                coalesce(s.total, 0)::bigint AS computed_minor
                           FROM sums s FULL JOIN snaps n USING (bucket, currency)
                          WHERE coalesce(n.amount_minor, 0) <> coalesce(s.total, 0)
                            AND ($3::text[] IS NULL OR bucket || '/' || currency = ANY ($3::text[]))),
                writable AS (SELECT * FROM diff d WHERE $2::ledger_account_kind = 'system' OR d.computed_minor >= 0),
                folded AS (DELETE FROM ledger_balance_credits c USING writable w
                            WHERE c.account_id = $1 AND c.bucket = w.bucket AND c.currency = w.currency),
                fixed AS (INSERT INTO ledger_balances AS b (account_id, bucket, currency, account_kind, amount_minor, version)
                          SELECT $1, w.bucket, w.currency, $2::ledger_account_kind, w.computed_minor, 1 FROM writable w
                          ON CONFLICT (account_id, bucket, currency) DO UPDATE
                             SET amount_minor = EXCLUDED.amount_minor, version = b.version + 1, updated_at = now()
                          RETURNING b.bucket, b.currency)
           SELECT d.bucket, d.currency, d.snapshot_minor, d.computed_minor, (f.bucket IS NOT NULL) AS corrected
             FROM diff d LEFT JOIN fixed f USING (bucket, currency)
            ORDER BY d.bucket, d.currency`,
    values: [account.id, account.kind, keys],
  });
}

const negativeUserBucketDetail =
  'the entries of this user bucket sum below zero, which a snapshot cannot hold: run fix-negative-balances';

function snapshotItem(
  ownerId: string,
  kind: 'user' | 'system',
  diff: { bucket: Bucket; currency: Currency; snapshot_minor: bigint; computed_minor: bigint },
  status: 'PLANNED' | 'FIXED',
): ItemRecord {
  const writable = kind === 'system' || diff.computed_minor >= 0n;
  return {
    key: bucketItemKey(ownerId, diff.bucket, diff.currency),
    action: 'SNAPSHOT_CORRECTION',
    status: writable ? status : 'SKIPPED',
    ownerId,
    bucket: diff.bucket,
    currency: diff.currency,
    snapshotMinor: diff.snapshot_minor,
    computedMinor: diff.computed_minor,
    amountMinor: null,
    snapshotAfterMinor: writable ? diff.computed_minor : diff.snapshot_minor,
    transactionId: null,
    referenceTransactionId: null,
    entries: null,
    detail: writable ? null : negativeUserBucketDetail,
  };
}

function groupByAccount<T extends { account_id: string }>(rows: readonly T[]): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const row of rows) {
    const group = groups.get(row.account_id);
    if (group === undefined) groups.set(row.account_id, [row]);
    else group.push(row);
  }
  return groups;
}

/** fix-balance (one owner) and recalculate-snapshots (every account): snapshot := sum of entries. */
const snapshotsPhase: ReconcilePhase = {
  name: 'accounts',
  async batch(pool, ctx, after, limit) {
    const accounts = await pageAccounts(pool, {
      after: parseAccountCursor(after),
      limit,
      ownerId: ctx.params.ownerId ?? null,
      userOnly: false,
    });
    const next = accounts.length < limit ? null : (accounts[accounts.length - 1]?.id ?? null);
    if (accounts.length === 0) return { scanned: 0, found: 0, next };
    const diffs = await findSnapshotDiffs(
      pool,
      accounts.map((account) => account.id),
    );
    if (ctx.dryRun) {
      await recordItems(
        pool,
        ctx.runId,
        diffs.map((diff) => snapshotItem(diff.owner_id, diff.kind, diff, 'PLANNED')),
      );
      return { scanned: accounts.length, found: diffs.length, next };
    }
    const byAccount = groupByAccount(diffs);
    let found = 0;
    for (const account of accounts) {
      if (!byAccount.has(account.id)) continue;
      // Checked again under the lock: the difference seen above may have been a cache that a
      // concurrent fix already corrected, and the lock makes the values exact.
      found += await withTransaction(pool, async (client) => {
        await lockSnapshots(client, [account.id], false);
        const rows = await recomputeSnapshots(client, account, null);
        const items = rows.map((row) => {
          const item = snapshotItem(account.owner_id, account.kind, row, 'FIXED');
          assert(row.corrected === (item.status === 'FIXED'), 'a writable snapshot was corrected');
          return item;
        });
        await recordItems(client, ctx.runId, items);
        return items.length;
      });
      ctx.progress();
    }
    return { scanned: accounts.length, found, next };
  },
};

// ---------------------------------------------------------------------------------------------
// Negative user buckets
// ---------------------------------------------------------------------------------------------

const negativeRow = z.object({
  account_id: z.string().uuid(),
  owner_id: z.string(),
  bucket: bucketEnum,
  currency: currencyEnum,
  snapshot_minor: z.bigint(),
  computed_minor: z.bigint(),
});

/** User buckets of these accounts whose entries sum below zero, with their snapshots. */
function findNegativeUserBuckets(db: Queryable, accountIds: readonly string[]) {
  return many(db, negativeRow, {
    name: 'reconcile-negative-user-buckets',
    text: `WITH sums AS (SELECT account_id, bucket, currency, sum(amount_minor) AS total FROM ledger_entries
                          WHERE account_id = ANY ($1::uuid[]) GROUP BY 1, 2, 3 HAVING sum(amount_minor) < 0)
           SELECT s.account_id, a.owner_id, s.bucket, s.currency, coalesce(b.amount_minor, 0) AS snapshot_minor,
                  s.total::bigint AS computed_minor
             FROM sums s JOIN ledger_accounts a ON a.id = s.account_id AND a.kind = 'user'
             LEFT JOIN (SELECT * FROM ledger_bucket_balances WHERE account_id = ANY ($1::uuid[])) b USING (account_id, bucket, currency)
            ORDER BY s.account_id, s.bucket, s.currency`,
    values: [accountIds],
  });
}

function negativeBucketPosting(row: { owner_id: string; bucket: Bucket; currency: Currency; computed_minor: bigint }): Entry[] {
  const amountMinor = -row.computed_minor;
  assert(amountMinor > 0n, 'a negative bucket is brought up by a positive amount');
  return [
    { ownerId: worldOwnerId, bucket: 'AVAILABLE', currency: row.currency, amountMinor: -amountMinor },
    { ownerId: row.owner_id, bucket: row.bucket, currency: row.currency, amountMinor },
  ];
}

export function errorDetail(error: unknown): string {
  if (error instanceof DomainError) return `${error.code}: ${error.message}`;
  return error instanceof Error ? error.message : String(error);
}

/**
 * fix-negative-balances: a user bucket whose entries sum to -X gets a RECONCILIATION transaction
 * system:world AVAILABLE -X -> bucket +X, and its snapshot is set to the entries' new sum (zero)
 * in the same database transaction.
 */
const negativeBucketsPhase: ReconcilePhase = {
  name: 'user-accounts',
  async batch(pool, ctx, after, limit) {
    const accounts = await pageAccounts(pool, { after: parseAccountCursor(after), limit, ownerId: null, userOnly: true });
    const next = accounts.length < limit ? null : (accounts[accounts.length - 1]?.id ?? null);
    if (accounts.length === 0) return { scanned: 0, found: 0, next };
    const negatives = await findNegativeUserBuckets(
      pool,
      accounts.map((account) => account.id),
    );
    if (ctx.dryRun) {
      await recordItems(
        pool,
        ctx.runId,
        negatives.map((row) => ({
          key: bucketItemKey(row.owner_id, row.bucket, row.currency),
          action: 'COMPENSATING_POSTING',
          status: 'PLANNED',
          ownerId: row.owner_id,
          bucket: row.bucket,
          currency: row.currency,
          snapshotMinor: row.snapshot_minor,
          computedMinor: row.computed_minor,
          amountMinor: -row.computed_minor,
          snapshotAfterMinor: 0n,
          transactionId: null,
          referenceTransactionId: null,
          entries: negativeBucketPosting(row),
          detail: null,
        })),
      );
      return { scanned: accounts.length, found: negatives.length, next };
    }
    const byAccount = groupByAccount(negatives);
    let found = 0;
    for (const account of accounts) {
      if (!byAccount.has(account.id)) continue;
      try {
        found += await withTransaction(pool, async (client) => {
          await lockSnapshots(client, [account.id], true);
          const rows = await findNegativeUserBuckets(client, [account.id]);
          const items: ItemRecord[] = [];
          for (const row of rows) {
            const key = bucketItemKey(row.owner_id, row.bucket, row.currency);
            const entries = negativeBucketPosting(row);
            const posted = await postTransaction(client, {
              idempotencyKey: reconcileIdempotencyKey(ctx.runId, key),
              txType: 'RECONCILIATION',
              referenceType: 'reconciliation_run',
              referenceId: ctx.runId,
              description: `fix-negative-balances: ${key} entries summed to ${row.computed_minor.toString()}`,
              entries,
              allowFrozen: true,
            });
            const [realigned] = await recomputeSnapshots(client, account, [`${row.bucket}/${row.currency}`]);
            assert(realigned === undefined || (realigned.corrected && realigned.computed_minor === 0n), 'the bucket is now zero');
            items.push({
              key,
              action: 'COMPENSATING_POSTING',
              status: 'FIXED',
              ownerId: row.owner_id,
              bucket: row.bucket,
              currency: row.currency,
              snapshotMinor: row.snapshot_minor,
              computedMinor: row.computed_minor,
              amountMinor: -row.computed_minor,
              snapshotAfterMinor: 0n,
              transactionId: posted.transactionId,
              referenceTransactionId: null,
              entries,
              detail: posted.created ? null : 'booked by an earlier attempt of this batch',
            });
          }
          await recordItems(client, ctx.runId, items);
          return items.length;
        });
      } catch (error) {
        if (!(error instanceof DomainError)) throw error;
        // A refusal (not a lost connection) is this account's problem, not the run's: record it
        // and go on. Nothing of this account's transaction was kept.
        const failed = byAccount.get(account.id) ?? [];
        await recordItems(
          pool,
          ctx.runId,
          failed.map((row) => ({
            key: bucketItemKey(row.owner_id, row.bucket, row.currency),
            action: 'COMPENSATING_POSTING',
            status: 'FAILED',
            ownerId: row.owner_id,
            bucket: row.bucket,
            currency: row.currency,
            snapshotMinor: row.snapshot_minor,
            computedMinor: row.computed_minor,
            amountMinor: -row.computed_minor,
            snapshotAfterMinor: null,
            transactionId: null,
            referenceTransactionId: null,
            entries: negativeBucketPosting(row),
            detail: errorDetail(error),
          })),
        );
        found += failed.length;
      }
      ctx.progress();
    }
    return { scanned: accounts.length, found, next };
  },
};

// ---------------------------------------------------------------------------------------------
// Failures booked without their request
// ---------------------------------------------------------------------------------------------

/** A compensating posting names the transaction it reverses: reference (ledger_transaction, id). */
const reversalReferenceType = 'ledger_transaction';

const failureRow = z.object({
  id: z.string().uuid(),
  seq: z.bigint(),
  reference_id: z.string().nullable(),
  has_request: z.boolean(),
  compensated: z.boolean(),
  entries: z.array(
    z.object({
      owner_id: z.string(),
      kind: z.enum(['user', 'system']),
      bucket: bucketEnum,
      currency: currencyEnum,
      amount_minor: z.string(),
    }),
  ),
});
type FailureRow = z.infer<typeof failureRow>;

const failureColumns = `t.id, t.seq, t.reference_id,
       EXISTS (SELECT 1 FROM ledger_transactions r WHERE r.reference_id = t.reference_id AND r.tx_type = $2) AS has_request,
       EXISTS (SELECT 1 FROM ledger_transactions c WHERE c.reference_type = '${reversalReferenceType}'
                  AND c.reference_id = t.id::text AND c.tx_type = 'RECONCILIATION') AS compensated,
       (SELECT json_agg(json_build_object('owner_id', a.owner_id, 'kind', a.kind, 'bucket', e.bucket, 'currency', e.currency,
                                          'amount_minor', e.amount_minor::text) ORDER BY e.id)
          FROM ledger_entries e JOIN ledger_accounts a ON a.id = e.account_id WHERE e.transaction_id = t.id) AS entries`;

const bucketStateRow = z.object({ snapshot_minor: z.bigint(), computed_minor: z.bigint() });

/** One bucket's snapshot and the sum of its entries, in one consistent view. */
export function bucketState(db: Queryable, ownerId: string, bucket: Bucket, currency: Currency) {
  // Zero for an owner the ledger has not seen yet (a settlement row can name one).
  return one(db, bucketStateRow, {
    name: 'reconcile-bucket-state',
    // The account id as a value (not a join), so the filters reach the views' index scans.
    text: `WITH account AS (SELECT a.id FROM ledger_accounts a WHERE a.owner_id = $1)
           SELECT coalesce((SELECT b.amount_minor FROM ledger_bucket_balances b
                             WHERE b.account_id = (SELECT id FROM account) AND b.bucket = $2 AND b.currency = $3), 0) AS snapshot_minor,
                  coalesce((SELECT sum(e.amount_minor) FROM ledger_entries e
                             WHERE e.account_id = (SELECT id FROM account) AND e.bucket = $2 AND e.currency = $3), 0)::bigint AS computed_minor`,
    values: [ownerId, bucket, currency],
  });
}

interface PlannedReversal {
  key: string;
  failure: FailureRow;
  /** The user PENDING leg the failure debited: the compensating credit goes back there. */
  credited: { ownerId: string; bucket: Bucket; currency: Currency; amountMinor: bigint } | null;
  entries: Entry[];
  /** Legs of the reversal that take value out of a user bucket (the ledger checks their funds). */
  userDebits: Entry[];
  skipReason: string | null;
}

function planReversal(failure: FailureRow): PlannedReversal {
  // Every leg negated, debits first (the money model's "from -> to" order).
  const entries: Entry[] = failure.entries
    .map((entry) => ({ ownerId: entry.owner_id, bucket: entry.bucket, currency: entry.currency, amountMinor: -BigInt(entry.amount_minor) }))
    .sort((a, b) => (a.amountMinor < 0n ? 0 : 1) - (b.amountMinor < 0n ? 0 : 1));
  const debitedPending = failure.entries.filter(
    (entry) => entry.kind === 'user' && entry.bucket === 'PENDING' && BigInt(entry.amount_minor) < 0n,
  );
  const [leg] = debitedPending;
  const credited =
    debitedPending.length === 1 && leg !== undefined
      ? { ownerId: leg.owner_id, bucket: leg.bucket, currency: leg.currency, amountMinor: -BigInt(leg.amount_minor) }
      : null;
  let skipReason: string | null = null;
  if (failure.reference_id === null) {
    skipReason = 'the failure has no reference id, so no request can be matched to it: review it by hand';
  } else if (credited === null || entries.length !== 2) {
    skipReason = 'the failure does not have the money model shape (one user PENDING debit and one credit): review it by hand';
  }
  const userDebits: Entry[] = failure.entries
    .filter((entry) => entry.kind === 'user' && BigInt(entry.amount_minor) > 0n)
    .map((entry) => ({
      ownerId: entry.owner_id,
      bucket: entry.bucket,
      currency: entry.currency,
      amountMinor: BigInt(entry.amount_minor),
    }));
  return { key: `reversal/${failure.id}`, failure, credited, entries, userDebits, skipReason };
}

/**
 * fix-failed-pending, ledger side: a failure transaction (REDEEM_FAILED: bearer PENDING ->
 * issuer PROMISED; CHARGE_FAILED: owner PENDING -> world PENDING) whose reference has no request
 * transaction (REDEEM_REQUESTED, CHARGE_CREATED) took PENDING that was never credited. It is
 * reversed by a RECONCILIATION transaction with every leg negated, which credits the PENDING
 * back; the reversal names the failure (reference ledger_transaction/<id>), so a later run sees
 * it compensated.
 */
function ledgerFailuresPhase(name: string, failureType: TxType, requestType: TxType): ReconcilePhase {
  return {
    name,
    async batch(pool, ctx, after, limit) {
      if (after !== null && !/^\d{1,19}$/.test(after)) throw new Error(`transaction cursor ${after} is not a seq`);
      const failures = await many(pool, failureRow, {
        name: 'reconcile-failures-page',
        text: `SELECT ${failureColumns} FROM ledger_transactions t
                WHERE t.tx_type = $1 AND t.seq > $3 ORDER BY t.seq LIMIT $4`,
        values: [failureType, requestType, after ?? '0', limit],
      });
      const next = failures.length < limit ? null : (failures[failures.length - 1]?.seq.toString() ?? null);
      const unmatched = failures.filter((failure) => !failure.has_request && !failure.compensated).map(planReversal);
      let found = 0;
      for (const plan of unmatched) {
        if (ctx.dryRun || plan.skipReason !== null) {
          await recordItems(pool, ctx.runId, [await describeReversal(pool, plan, plan.skipReason === null ? 'PLANNED' : 'SKIPPED')]);
          found += 1;
          continue;
        }
        const outcome = await reverse(pool, ctx, plan, failureType, requestType);
        if (outcome.kind === 'nothing-to-do') continue;
        // A booked reversal was recorded with its posting; a refused one is recorded here.
        if (outcome.kind === 'refused') await recordItems(pool, ctx.runId, [outcome.item]);
        found += 1;
        ctx.progress();
      }
      return { scanned: failures.length, found, next };
    },
  };
}

/**
 * Why the ledger would refuse the reversal now, or null: a user bucket it takes from holds less
 * than the amount (ledger_post checks the snapshot). A dry run reports such an item as FAILED,
 * as the real run would.
 */
async function refusalOf(db: Queryable, plan: PlannedReversal): Promise<string | null> {
  for (const debit of plan.userDebits) {
    const state = await bucketState(db, debit.ownerId, debit.bucket, debit.currency);
    if (state.snapshot_minor < debit.amountMinor) {
      return (
        `would be refused: INSUFFICIENT_FUNDS: ${debit.ownerId} ${debit.bucket} ${debit.currency} holds ` +
        `${state.snapshot_minor.toString()} of the ${debit.amountMinor.toString()} minor units to take back`
      );
    }
  }
  return null;
}

/** The item of a reversal that is not booked: PLANNED (dry run), SKIPPED or FAILED. */
async function describeReversal(
  db: Queryable,
  plan: PlannedReversal,
  requested: 'PLANNED' | 'SKIPPED' | 'FAILED',
  requestedDetail: string | null = plan.skipReason,
): Promise<ItemRecord> {
  const leg = plan.credited ?? legOf(plan.failure);
  const state = await bucketState(db, leg.ownerId, leg.bucket, leg.currency);
  const refusal = requested === 'PLANNED' ? await refusalOf(db, plan) : null;
  const status = refusal === null ? requested : 'FAILED';
  const detail = refusal ?? requestedDetail;
  return {
    key: plan.key,
    action: 'COMPENSATING_POSTING',
    status,
    ownerId: leg.ownerId,
    bucket: leg.bucket,
    currency: leg.currency,
    snapshotMinor: state.snapshot_minor,
    computedMinor: state.computed_minor,
    amountMinor: leg.amountMinor,
    snapshotAfterMinor: status === 'PLANNED' ? state.snapshot_minor + leg.amountMinor : state.snapshot_minor,
    transactionId: null,
    referenceTransactionId: plan.failure.id,
    entries: plan.entries,
    detail,
  };
}

/** The first debited leg of a failure that does not have the expected shape (for the report). */
function legOf(failure: FailureRow): { ownerId: string; bucket: Bucket; currency: Currency; amountMinor: bigint } {
  const entry = failure.entries.find((candidate) => BigInt(candidate.amount_minor) < 0n) ?? failure.entries[0];
  assert(entry !== undefined, 'a ledger transaction has entries');
  const amount = BigInt(entry.amount_minor);
  return { ownerId: entry.owner_id, bucket: entry.bucket, currency: entry.currency, amountMinor: amount < 0n ? -amount : amount };
}

/**
 * Books one reversal. Serialised per failure with a transaction-scoped advisory lock and checked
 * again under it, so two runs never both reverse the same failure.
 */
async function reverse(
  pool: Pool,
  ctx: ReconcileContext,
  plan: PlannedReversal,
  failureType: TxType,
  requestType: TxType,
): Promise<{ kind: 'booked'; item: ItemRecord } | { kind: 'refused'; item: ItemRecord } | { kind: 'nothing-to-do' }> {
  const credited = plan.credited;
  assert(credited !== null, 'only well-formed failures are reversed');
  try {
    return await withTransaction(pool, async (client) => {
      await client.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [`reconcile:${plan.key}`]);
      const current = await maybeOne(client, failureRow, {
        name: 'reconcile-failure-recheck',
        text: `SELECT ${failureColumns} FROM ledger_transactions t WHERE t.id = $1 AND t.tx_type = $3`,
        values: [plan.failure.id, requestType, failureType],
      });
      if (current === null || current.has_request || current.compensated) return { kind: 'nothing-to-do' as const };
      const before = await bucketState(client, credited.ownerId, credited.bucket, credited.currency);
      const posted = await postTransaction(client, {
        idempotencyKey: reconcileIdempotencyKey(ctx.runId, plan.key),
        txType: 'RECONCILIATION',
        referenceType: reversalReferenceType,
        referenceId: plan.failure.id,
        description: `fix-failed-pending: reverses ${failureType} without ${requestType} (run ${ctx.runId})`,
        entries: plan.entries,
        allowFrozen: true,
      });
      const after = await bucketState(client, credited.ownerId, credited.bucket, credited.currency);
      const item: ItemRecord = {
        key: plan.key,
        action: 'COMPENSATING_POSTING',
        status: 'FIXED',
        ownerId: credited.ownerId,
        bucket: credited.bucket,
        currency: credited.currency,
        snapshotMinor: before.snapshot_minor,
        computedMinor: before.computed_minor,
        amountMinor: credited.amountMinor,
        snapshotAfterMinor: after.snapshot_minor,
        transactionId: posted.transactionId,
        referenceTransactionId: plan.failure.id,
        entries: plan.entries,
        detail: null,
      };
      // Recorded with the posting, in the same transaction: both or neither.
      await recordItems(client, ctx.runId, [item]);
      return { kind: 'booked' as const, item };
    });
  } catch (error) {
    // A refusal (e.g. the issuer's PROMISED no longer holds the amount) is this item's problem,
    // not the run's: nothing of it was kept, and it is reported for a person to look at.
    if (!(error instanceof DomainError)) throw error;
    return { kind: 'refused', item: await describeReversal(pool, plan, 'FAILED', errorDetail(error)) };
  }
}

// ---------------------------------------------------------------------------------------------
// Settlement rows whose own booking is missing
// ---------------------------------------------------------------------------------------------

/**
 * What a row repair books: exactly the posting the owning code books for this row (same type,
 * reference and entries), under the owning code's own idempotency key. The owner and the repair
 * can therefore never both book it: whichever comes second gets the first one's transaction back.
 */
interface RowRepairPlan {
  itemKey: string;
  idempotencyKey: string;
  txType: TxType;
  referenceType: string;
  referenceId: string;
  entries: Entry[];
  /** The user bucket the item is about (its snapshot before and after are reported). */
  ownerId: string;
  bucket: Bucket;
  currency: Currency;
  amountMinor: bigint;
  /** The booking this one completes, when it exists in the ledger. */
  referenceTransactionId: string | null;
  description: string;
}

/**
 * A phase over one settlement table (plcs, charges, redemptions) keyed by uuid: `candidates`
 * finds rows whose booking is missing, read-only; a real run then takes each row's lock
 * (`recheck`, with FOR UPDATE), checks again, books the plan, points the row at the booking
 * (`afterPost`) and records the item, all in one database transaction.
 */
interface RowRepairSpec<R> {
  name: string;
  candidates(db: Queryable, ctx: ReconcileContext, after: string | null, limit: number): Promise<R[]>;
  recheck(client: PoolClient, ctx: ReconcileContext, key: string): Promise<R | null>;
  key(row: R): string;
  plan(row: R): RowRepairPlan;
  afterPost(client: PoolClient, row: R, transactionId: string): Promise<void>;
}

function parseUuidCursor(after: string | null): string | null {
  if (after !== null && !uuidPattern.test(after)) throw new Error(`cursor ${after} is not a uuid`);
  return after;
}

/**
 * Why the ledger would refuse the posting now, or null: a user bucket it takes from holds less
 * than the amount (ledger_post checks the snapshot). A dry run reports such an item as FAILED,
 * as the real run would.
 */
async function foreseenRefusal(db: Queryable, entries: readonly Entry[]): Promise<string | null> {
  for (const entry of entries) {
    if (entry.amountMinor >= 0n || isSystemOwner(entry.ownerId)) continue;
    const state = await bucketState(db, entry.ownerId, entry.bucket, entry.currency);
    if (state.snapshot_minor < -entry.amountMinor) {
      return (
        `would be refused: INSUFFICIENT_FUNDS: ${entry.ownerId} ${entry.bucket} ${entry.currency} holds ` +
        `${state.snapshot_minor.toString()} of the ${(-entry.amountMinor).toString()} minor units to take`
      );
    }
  }
  return null;
}

/** The signed change a posting makes to one bucket. */
function deltaOf(entries: readonly Entry[], ownerId: string, bucket: Bucket, currency: Currency): bigint {
  return entries
    .filter((entry) => entry.ownerId === ownerId && entry.bucket === bucket && entry.currency === currency)
    .reduce((sum, entry) => sum + entry.amountMinor, 0n);
}

function rowRepairPhase<R>(spec: RowRepairSpec<R>): ReconcilePhase {
  return {
    name: spec.name,
    async batch(pool, ctx, after, limit) {
      const rows = await spec.candidates(pool, ctx, parseUuidCursor(after), limit);
      const last = rows[rows.length - 1];
      const next = rows.length < limit || last === undefined ? null : spec.key(last);
      let found = 0;
      for (const row of rows) {
        const plan = spec.plan(row);
        if (ctx.dryRun) {
          const state = await bucketState(pool, plan.ownerId, plan.bucket, plan.currency);
          const refusal = await foreseenRefusal(pool, plan.entries);
          await recordItems(pool, ctx.runId, [
            {
              key: plan.itemKey,
              action: 'COMPENSATING_POSTING',
              status: refusal === null ? 'PLANNED' : 'FAILED',
              ownerId: plan.ownerId,
              bucket: plan.bucket,
              currency: plan.currency,
              snapshotMinor: state.snapshot_minor,
              computedMinor: state.computed_minor,
              amountMinor: plan.amountMinor,
              snapshotAfterMinor:
                refusal === null ? state.snapshot_minor + deltaOf(plan.entries, plan.ownerId, plan.bucket, plan.currency) : state.snapshot_minor,
              transactionId: null,
              referenceTransactionId: plan.referenceTransactionId,
              entries: plan.entries,
              detail: refusal ?? plan.description,
            },
          ]);
          found += 1;
          continue;
        }
        try {
          const booked = await withTransaction(pool, async (client) => {
            const current = await spec.recheck(client, ctx, spec.key(row));
            if (current === null) return false;
            const fresh = spec.plan(current);
            const before = await bucketState(client, fresh.ownerId, fresh.bucket, fresh.currency);
            const posted = await postTransaction(client, {
              idempotencyKey: fresh.idempotencyKey,
              txType: fresh.txType,
              referenceType: fresh.referenceType,
              referenceId: fresh.referenceId,
              description: `${fresh.description} (reconcile ${ctx.tool} run ${ctx.runId})`.slice(0, 500),
              entries: fresh.entries,
              // A repair of history: the fact happened, whatever the account's status is now.
              allowFrozen: true,
            });
            await spec.afterPost(client, current, posted.transactionId);
            const afterState = await bucketState(client, fresh.ownerId, fresh.bucket, fresh.currency);
            // Recorded with the posting, in the same transaction: both or neither.
            await recordItems(client, ctx.runId, [
              {
                key: fresh.itemKey,
                action: 'COMPENSATING_POSTING',
                status: 'FIXED',
                ownerId: fresh.ownerId,
                bucket: fresh.bucket,
                currency: fresh.currency,
                snapshotMinor: before.snapshot_minor,
                computedMinor: before.computed_minor,
                amountMinor: fresh.amountMinor,
                snapshotAfterMinor: afterState.snapshot_minor,
                transactionId: posted.transactionId,
                referenceTransactionId: fresh.referenceTransactionId,
                entries: fresh.entries,
                detail: posted.created ? fresh.description : `${fresh.description}; the key had already booked this posting`,
              },
            ]);
            return true;
          });
          if (booked) found += 1;
        } catch (error) {
          // A refusal (funds, a key already used for another posting) is this row's problem, not
          // the run's: nothing of it was kept, and it is reported for a person to look at.
          if (!(error instanceof DomainError)) throw error;
          const state = await bucketState(pool, plan.ownerId, plan.bucket, plan.currency);
          await recordItems(pool, ctx.runId, [
            {
              key: plan.itemKey,
              action: 'COMPENSATING_POSTING',
              status: 'FAILED',
              ownerId: plan.ownerId,
              bucket: plan.bucket,
              currency: plan.currency,
              snapshotMinor: state.snapshot_minor,
              computedMinor: state.computed_minor,
              amountMinor: plan.amountMinor,
              snapshotAfterMinor: state.snapshot_minor,
              transactionId: null,
              referenceTransactionId: plan.referenceTransactionId,
              entries: plan.entries,
              detail: errorDetail(error),
            },
          ]);
          found += 1;
        }
        ctx.progress();
      }
      return { scanned: rows.length, found, next };
    },
  };
}

/** `reference_tx_id`: the row's booking pointer when the ledger holds that transaction (a damaged row may point nowhere). */
const existingTx = (column: string) => `(SELECT lt.id FROM ledger_transactions lt WHERE lt.id = ${column}) AS reference_tx_id`;
const hasTx = (key: string) => `EXISTS (SELECT 1 FROM ledger_transactions lt WHERE lt.idempotency_key = ${key})`;

const plcRepairRow = z.object({
  token_id: z.string().uuid(),
  issuer_owner_id: z.string(),
  amount_minor: z.bigint(),
  currency: currencyEnum,
  status: z.enum(['ISSUED', 'TRANSFERRED', 'REDEEMED', 'EXPIRED', 'CANCELLED']),
  reference_tx_id: z.string().uuid().nullable(),
});
type PlcRepairRow = z.infer<typeof plcRepairRow>;

/** The PLC's release (db/plcs.ts `releasePlc`): PROMISED -> AVAILABLE under `plc:<token_id>:release`. */
function plcReleasePlan(row: PlcRepairRow, kind: 'EXPIRED' | 'CANCELLED', why: string): RowRepairPlan {
  const amount = { issuerId: row.issuer_owner_id, currency: row.currency, amountMinor: row.amount_minor };
  const posting = kind === 'CANCELLED' ? moneyModel.plcCancelled(amount) : moneyModel.plcExpired(amount);
  return {
    itemKey: `plc/${row.token_id}`,
    idempotencyKey: ledgerKeys.plcRelease.of(row.token_id),
    txType: posting.txType,
    referenceType: 'plc',
    referenceId: row.token_id,
    entries: posting.entries,
    ownerId: row.issuer_owner_id,
    bucket: 'AVAILABLE',
    currency: row.currency,
    amountMinor: row.amount_minor,
    referenceTransactionId: row.reference_tx_id,
    description: `release-expired-promises: ${why}; ${posting.txType} books PROMISED -> AVAILABLE`,
  };
}

const plcRepairColumns = `p.token_id, p.issuer_owner_id, p.amount_minor, p.currency, p.status, ${existingTx('p.issue_tx_id')}`;

/**
 * release-expired-promises, first part: PLCs already EXPIRED (or CANCELLED) whose release was
 * never booked (no `plc:<token_id>:release`): their PROMISED amount is stuck. The release is
 * booked with the key releasePlc uses and the PLC's final_tx_id pointed at it.
 */
const releasedPlcsPhase = rowRepairPhase<PlcRepairRow>({
  name: 'released-plcs',
  candidates: (db, _ctx, after, limit) =>
    many(db, plcRepairRow, {
      name: 'reconcile-released-plcs',
      text: `SELECT ${plcRepairColumns} FROM plcs p
              WHERE p.status IN ('EXPIRED', 'CANCELLED') AND ($1::uuid IS NULL OR p.token_id > $1)
                AND NOT ${hasTx(ledgerKeys.plcRelease.sql('p.token_id'))}
              ORDER BY p.token_id LIMIT $2`,
      values: [after, limit],
    }),
  recheck: (client, _ctx, key) =>
    maybeOne(client, plcRepairRow, {
      name: 'reconcile-released-plc-lock',
      text: `SELECT ${plcRepairColumns} FROM plcs p
              WHERE p.token_id = $1 AND p.status IN ('EXPIRED', 'CANCELLED') AND NOT ${hasTx(ledgerKeys.plcRelease.sql('p.token_id'))}
              FOR UPDATE OF p`,
      values: [key],
    }),
  key: (row) => row.token_id,
  plan: (row) =>
    plcReleasePlan(row, row.status === 'CANCELLED' ? 'CANCELLED' : 'EXPIRED', `the PLC is ${row.status} but its release was never booked`),
  afterPost: async (client, row, transactionId) => {
    await exec(client, {
      name: 'reconcile-released-plc-point',
      text: 'UPDATE plcs SET final_tx_id = $2 WHERE token_id = $1',
      values: [row.token_id, transactionId],
    });
  },
});

const overdueCondition = `p.status IN ('ISSUED', 'TRANSFERRED') AND p.redemption_id IS NULL
  AND p.expires_at + make_interval(secs => $2::double precision / 1000) < now()`;

/**
 * release-expired-promises, second part: live PLCs past their expiry (plus the clock tolerance)
 * with no redemption in flight, which neither their own workflow nor the expire-tokens sweep
 * expired. Expired here exactly as releasePlc does it (guarded status change, PLC_EXPIRED under
 * `plc:<token_id>:release`, final_tx_id), so the PLC's workflow, if it still runs, finds it done.
 */
const overduePlcsPhase = rowRepairPhase<PlcRepairRow>({
  name: 'overdue-plcs',
  candidates: (db, ctx, after, limit) =>
    many(db, plcRepairRow, {
      name: 'reconcile-overdue-plcs',
      text: `SELECT ${plcRepairColumns} FROM plcs p
              WHERE ($1::uuid IS NULL OR p.token_id > $1) AND ${overdueCondition}
              ORDER BY p.token_id LIMIT $3`,
      values: [after, ctx.params.expiryGraceMs ?? 0, limit],
    }),
  recheck: (client, ctx, key) =>
    maybeOne(client, plcRepairRow, {
      name: 'reconcile-overdue-plc-lock',
      text: `SELECT ${plcRepairColumns} FROM plcs p WHERE p.token_id = $1 AND ${overdueCondition} FOR UPDATE OF p`,
      values: [key, ctx.params.expiryGraceMs ?? 0],
    }),
  key: (row) => row.token_id,
  plan: (row) => plcReleasePlan(row, 'EXPIRED', `the ${row.status} PLC is past its expiry and was never expired`),
  afterPost: async (client, row, transactionId) => {
    await exec(client, {
      name: 'reconcile-overdue-plc-expire',
      text: `UPDATE plcs SET status = 'EXPIRED', final_tx_id = $2, status_changed_at = now() WHERE token_id = $1`,
      values: [row.token_id, transactionId],
    });
  },
});

/**
 * The per-owner reconcile (POST /api/v1/balance/{owner_id}/reconcile): the owner's live PLCs
 * whose PLC_ISSUED (`plc:<token_id>:issue`, AVAILABLE -> PROMISED) is missing. A PLC and its
 * booking are written in one transaction (db/plcs.ts issuePlc), so normally there are none.
 */
const liveIssuedPlcsPhase = rowRepairPhase<PlcRepairRow>({
  name: 'live-plcs',
  candidates: (db, ctx, after, limit) =>
    many(db, plcRepairRow, {
      name: 'reconcile-live-plcs',
      text: `SELECT ${plcRepairColumns} FROM plcs p
              WHERE p.issuer_owner_id = $1 AND p.status IN ('ISSUED', 'TRANSFERRED') AND ($2::uuid IS NULL OR p.token_id > $2)
                AND NOT ${hasTx(ledgerKeys.plcIssue.sql('p.token_id'))}
              ORDER BY p.token_id LIMIT $3`,
      values: [ctx.params.ownerId ?? null, after, limit],
    }),
  recheck: (client, ctx, key) =>
    maybeOne(client, plcRepairRow, {
      name: 'reconcile-live-plc-lock',
      text: `SELECT ${plcRepairColumns} FROM plcs p
              WHERE p.token_id = $1 AND p.issuer_owner_id = $2 AND p.status IN ('ISSUED', 'TRANSFERRED')
                AND NOT ${hasTx(ledgerKeys.plcIssue.sql('p.token_id'))}
              FOR UPDATE OF p`,
      values: [key, ctx.params.ownerId ?? null],
    }),
  key: (row) => row.token_id,
  plan: (row) => {
    const posting = moneyModel.plcIssued({ issuerId: row.issuer_owner_id, currency: row.currency, amountMinor: row.amount_minor });
    return {
      itemKey: `plc/${row.token_id}`,
      idempotencyKey: ledgerKeys.plcIssue.of(row.token_id),
      txType: posting.txType,
      referenceType: 'plc',
      referenceId: row.token_id,
      entries: posting.entries,
      ownerId: row.issuer_owner_id,
      bucket: 'PROMISED',
      currency: row.currency,
      amountMinor: row.amount_minor,
      referenceTransactionId: null,
      description: `plc-issue-bookings: the ${row.status} PLC has no PLC_ISSUED; books AVAILABLE -> PROMISED`,
    };
  },
  afterPost: async (client, row, transactionId) => {
    await exec(client, {
      name: 'reconcile-live-plc-point',
      text: 'UPDATE plcs SET issue_tx_id = $2 WHERE token_id = $1',
      values: [row.token_id, transactionId],
    });
  },
});

const chargeRepairRow = z.object({
  id: z.string().uuid(),
  owner_id: z.string(),
  amount_minor: z.bigint(),
  currency: currencyEnum,
  reference_tx_id: z.string().uuid().nullable(),
});
type ChargeRepairRow = z.infer<typeof chargeRepairRow>;
const chargeRepairColumns = `c.id, c.owner_id, c.amount_minor, c.currency, ${existingTx('c.created_tx_id')}`;

/**
 * fix-charge-settlements: SETTLED charges without their CHARGE_SETTLED (`charge:<id>:settle`,
 * the key db/charges.ts finishCharge books under): the money model's charge-paid move (owner
 * PENDING reversed, owner AVAILABLE credited from world AVAILABLE, world PENDING closed), booked
 * now with that key and the charge's settle_tx_id pointed at it.
 */
const settledChargesPhase = rowRepairPhase<ChargeRepairRow>({
  name: 'settled-charges',
  candidates: (db, _ctx, after, limit) =>
    many(db, chargeRepairRow, {
      name: 'reconcile-settled-charges',
      text: `SELECT ${chargeRepairColumns} FROM charges c
              WHERE c.status = 'SETTLED' AND ($1::uuid IS NULL OR c.id > $1) AND NOT ${hasTx(ledgerKeys.chargeSettle.sql('c.id'))}
              ORDER BY c.id LIMIT $2`,
      values: [after, limit],
    }),
  recheck: (client, _ctx, key) =>
    maybeOne(client, chargeRepairRow, {
      name: 'reconcile-settled-charge-lock',
      text: `SELECT ${chargeRepairColumns} FROM charges c
              WHERE c.id = $1 AND c.status = 'SETTLED' AND NOT ${hasTx(ledgerKeys.chargeSettle.sql('c.id'))} FOR UPDATE OF c`,
      values: [key],
    }),
  key: (row) => row.id,
  plan: (row) => {
    const posting = moneyModel.chargeSettled({ ownerId: row.owner_id, currency: row.currency, amountMinor: row.amount_minor });
    return {
      itemKey: `charge/${row.id}`,
      idempotencyKey: ledgerKeys.chargeSettle.of(row.id),
      txType: posting.txType,
      referenceType: 'charge',
      referenceId: row.id,
      entries: posting.entries,
      ownerId: row.owner_id,
      bucket: 'AVAILABLE',
      currency: row.currency,
      amountMinor: row.amount_minor,
      referenceTransactionId: row.reference_tx_id,
      description: 'fix-charge-settlements: the charge is SETTLED without CHARGE_SETTLED; books PENDING reversed and AVAILABLE credited',
    };
  },
  afterPost: async (client, row, transactionId) => {
    await exec(client, {
      name: 'reconcile-settled-charge-point',
      text: 'UPDATE charges SET settle_tx_id = $2 WHERE id = $1',
      values: [row.id, transactionId],
    });
  },
});

/**
 * fix-failed-pending, charges: FAILED charges whose CHARGE_CREATED was booked but whose
 * CHARGE_FAILED (`charge:<id>:fail`) never was: the owner's PENDING still shows money that will
 * never come. Booked with finishCharge's key; the charge's fail_tx_id is pointed at it.
 */
const failedChargesPhase = rowRepairPhase<ChargeRepairRow>({
  name: 'failed-charges',
  candidates: (db, _ctx, after, limit) =>
    many(db, chargeRepairRow, {
      name: 'reconcile-failed-charges',
      text: `SELECT ${chargeRepairColumns} FROM charges c
              WHERE c.status = 'FAILED' AND ($1::uuid IS NULL OR c.id > $1)
                AND ${hasTx(ledgerKeys.chargeCreated.sql('c.id'))} AND NOT ${hasTx(ledgerKeys.chargeFail.sql('c.id'))}
              ORDER BY c.id LIMIT $2`,
      values: [after, limit],
    }),
  recheck: (client, _ctx, key) =>
    maybeOne(client, chargeRepairRow, {
      name: 'reconcile-failed-charge-lock',
      text: `SELECT ${chargeRepairColumns} FROM charges c
              WHERE c.id = $1 AND c.status = 'FAILED'
                AND ${hasTx(ledgerKeys.chargeCreated.sql('c.id'))} AND NOT ${hasTx(ledgerKeys.chargeFail.sql('c.id'))}
              FOR UPDATE OF c`,
      values: [key],
    }),
  key: (row) => row.id,
  plan: (row) => {
    const posting = moneyModel.chargeFailed({ ownerId: row.owner_id, currency: row.currency, amountMinor: row.amount_minor });
    return {
      itemKey: `charge/${row.id}`,
      idempotencyKey: ledgerKeys.chargeFail.of(row.id),
      txType: posting.txType,
      referenceType: 'charge',
      referenceId: row.id,
      entries: posting.entries,
      ownerId: row.owner_id,
      bucket: 'PENDING',
      currency: row.currency,
      amountMinor: row.amount_minor,
      referenceTransactionId: row.reference_tx_id,
      description: 'fix-failed-pending: the charge is FAILED without CHARGE_FAILED; books owner PENDING -> world PENDING',
    };
  },
  afterPost: async (client, row, transactionId) => {
    await exec(client, {
      name: 'reconcile-failed-charge-point',
      text: 'UPDATE charges SET fail_tx_id = $2 WHERE id = $1',
      values: [row.id, transactionId],
    });
  },
});

const redemptionRepairRow = z.object({
  id: z.string().uuid(),
  token_id: z.string().uuid(),
  bearer_owner_id: z.string(),
  issuer_owner_id: z.string(),
  amount_minor: z.bigint(),
  currency: currencyEnum,
  reference_tx_id: z.string().uuid().nullable(),
});
type RedemptionRepairRow = z.infer<typeof redemptionRepairRow>;
const redemptionRepairColumns = `r.id, r.token_id, r.bearer_owner_id, r.issuer_owner_id, r.amount_minor, r.currency, ${existingTx('r.request_tx_id')}`;
const failedRedemptionCondition = `r.status = 'FAILED' AND ${hasTx(ledgerKeys.redemptionRequest.sql('r.id'))}
  AND NOT ${hasTx(ledgerKeys.redemptionFail.sql('r.id'))}`;

/**
 * fix-failed-pending, redemptions: FAILED redemptions whose REDEEM_REQUESTED was booked but whose
 * REDEEM_FAILED (`redemption:<id>:fail`) never was: the bearer's PENDING still holds the amount
 * and the issuer's promise was never restored. Booked as finishRedemption books it (bearer
 * PENDING -> issuer PROMISED: the PLC reverted), fail_tx_id pointed at it, and the PLC's
 * redemption mark cleared if it still names this redemption, so the PLC can be redeemed again.
 */
const failedRedemptionsPhase = rowRepairPhase<RedemptionRepairRow>({
  name: 'failed-redemptions',
  candidates: (db, _ctx, after, limit) =>
    many(db, redemptionRepairRow, {
      name: 'reconcile-failed-redemptions',
      text: `SELECT ${redemptionRepairColumns} FROM redemptions r
              WHERE ($1::uuid IS NULL OR r.id > $1) AND ${failedRedemptionCondition}
              ORDER BY r.id LIMIT $2`,
      values: [after, limit],
    }),
  recheck: async (client, _ctx, key) => {
    const row = await maybeOne(client, redemptionRepairRow, {
      name: 'reconcile-failed-redemption-lock',
      text: `SELECT ${redemptionRepairColumns} FROM redemptions r WHERE r.id = $1 AND ${failedRedemptionCondition} FOR UPDATE OF r`,
      values: [key],
    });
    // The PLC after the redemption, in finishRedemption's order.
    if (row !== null) await client.query('SELECT 1 FROM plcs WHERE token_id = $1 FOR UPDATE', [row.token_id]);
    return row;
  },
  key: (row) => row.id,
  plan: (row) => {
    const posting = moneyModel.redeemFailed({
      issuerId: row.issuer_owner_id,
      bearerId: row.bearer_owner_id,
      currency: row.currency,
      amountMinor: row.amount_minor,
    });
    return {
      itemKey: `redemption/${row.id}`,
      idempotencyKey: ledgerKeys.redemptionFail.of(row.id),
      txType: posting.txType,
      referenceType: 'redemption',
      referenceId: row.id,
      entries: posting.entries,
      ownerId: row.bearer_owner_id,
      bucket: 'PENDING',
      currency: row.currency,
      amountMinor: row.amount_minor,
      referenceTransactionId: row.reference_tx_id,
      description: 'fix-failed-pending: the redemption is FAILED without REDEEM_FAILED; books bearer PENDING -> issuer PROMISED (PLC reverted)',
    };
  },
  afterPost: async (client, row, transactionId) => {
    await exec(client, {
      name: 'reconcile-failed-redemption-point',
      text: 'UPDATE redemptions SET fail_tx_id = $2, updated_at = now() WHERE id = $1',
      values: [row.id, transactionId],
    });
    await exec(client, {
      name: 'reconcile-failed-redemption-revert-plc',
      text: 'UPDATE plcs SET redemption_id = NULL WHERE token_id = $1 AND redemption_id = $2',
      values: [row.token_id, row.id],
    });
  },
});

// ---------------------------------------------------------------------------------------------
// The tools
// ---------------------------------------------------------------------------------------------

/**
 * Every ledger tool's phases, in order. Adding a tool: one entry in `src/reconciliation/tools.ts`
 * (the API route comes from it) and its phases here (gateway tools: in
 * db/reconciliation-gateway.ts); adding a part to a tool: one more phase in its list.
 */
const phasesByTool: Record<LedgerReconcileTool, readonly ReconcilePhase[]> = {
  'fix-balance': [snapshotsPhase],
  'recalculate-snapshots': [snapshotsPhase],
  'fix-negative-balances': [negativeBucketsPhase],
  'fix-failed-pending': [
    ledgerFailuresPhase('redeem-failed', 'REDEEM_FAILED', 'REDEEM_REQUESTED'),
    ledgerFailuresPhase('charge-failed', 'CHARGE_FAILED', 'CHARGE_CREATED'),
    failedRedemptionsPhase,
    failedChargesPhase,
  ],
  'release-expired-promises': [releasedPlcsPhase, overduePlcsPhase],
  'fix-charge-settlements': [settledChargesPhase],
  'plc-issue-bookings': [liveIssuedPlcsPhase],
};
