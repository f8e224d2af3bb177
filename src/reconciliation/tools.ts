import type { Bucket } from '../ledger/money-model.ts';
import type { Currency } from '../money/currency.ts';

/**
 * The reconcile tools (interface spec, Administration: /api/v1/admin/reconcile/*) as data: their
 * names, which ones address one owner, and the `dry_run` default the spec gives them (false where
 * the spec names none). The API builds one route per entry, the workflow and the activities take
 * the name; `db/reconciliation.ts` maps every name to its implementation with a
 * `Record<ReconcileTool, ...>`, so a tool added here without an implementation fails to compile.
 * docs/reconciliation.md describes each tool and how to add one.
 */
export const reconcileTools = {
  'fix-balance': {
    ownerScoped: true,
    dryRunDefault: false,
    summary: "Recompute one owner's balance snapshots from the ledger entries",
  },
  'recalculate-snapshots': {
    ownerScoped: false,
    dryRunDefault: false,
    summary: 'Recompute every balance snapshot from the ledger entries, in batches of accounts',
  },
  'fix-negative-balances': {
    ownerScoped: false,
    dryRunDefault: false,
    summary: 'Bring user buckets whose entries sum below zero back to zero with a compensating RECONCILIATION transaction',
  },
  'fix-failed-pending': {
    ownerScoped: false,
    dryRunDefault: true,
    summary: 'Book a compensating credit in PENDING where a failure (REDEEM_FAILED, CHARGE_FAILED) was booked without its request',
  },
} as const satisfies Record<string, { ownerScoped: boolean; dryRunDefault: boolean; summary: string }>;

export type ReconcileTool = keyof typeof reconcileTools;
export const reconcileToolNames = Object.keys(reconcileTools) as ReconcileTool[];

export function isReconcileTool(value: string): value is ReconcileTool {
  return Object.hasOwn(reconcileTools, value);
}

/** What a tool works on; only `fix-balance` takes an owner. */
export interface ReconcileParams {
  ownerId?: string;
}

/** Accounts (or failure transactions) per batch activity call of a real run. */
export const batchSizeDefault = 100;
export const batchSizeMax = 1000;
/** Items a report (API answer, workflow result) carries; every item is in reconciliation_items. */
export const reportItemsMax = 100;
/** A dry run runs inside the API request: it stops after this long or this many items. */
export const dryRunBudgetMs = 20_000;
export const dryRunItemsMax = 10_000;

/** `reconcile-<tool>-<run_id>`: the workflow id of a real run, findable in the Temporal UI. */
export function reconcileWorkflowId(tool: ReconcileTool, runId: string): string {
  return `reconcile-${tool}-${runId}`;
}

/** One real run per scope at a time: the tool, or tool:owner_id for a one-owner tool. */
export function reconcileScope(tool: ReconcileTool, params: ReconcileParams): string {
  return reconcileTools[tool].ownerScoped ? `${tool}:${params.ownerId ?? ''}` : tool;
}

/** The ledger idempotency key of a posting a run makes for one item: books once per run and item. */
export function reconcileIdempotencyKey(runId: string, itemKey: string): string {
  return `reconcile:${runId}:${itemKey}`;
}

/** Item key of a bucket: `<owner_id>/<bucket>/<currency>`. */
export function bucketItemKey(ownerId: string, bucket: Bucket, currency: Currency): string {
  return `${ownerId}/${bucket}/${currency}`;
}

export const itemActions = ['SNAPSHOT_CORRECTION', 'COMPENSATING_POSTING'] as const;
export type ItemAction = (typeof itemActions)[number];
export const itemStatuses = ['PLANNED', 'FIXED', 'SKIPPED', 'FAILED'] as const;
export type ItemStatus = (typeof itemStatuses)[number];

/**
 * One item of a report. Amounts are decimal strings of minor units (reports cross the Temporal
 * boundary as JSON, where a bigint would not survive); the API formats them per currency.
 */
export interface ReconcileItemReport {
  key: string;
  action: ItemAction;
  status: ItemStatus;
  ownerId: string;
  bucket: Bucket;
  currency: Currency;
  /** The snapshot when the item was found. */
  snapshotMinor: string;
  /** What the entries say the bucket holds. */
  computedMinor: string;
  /** The compensating posting's amount (credited to this bucket), for postings. */
  amountMinor: string | null;
  /** The snapshot after the fix (for a dry run: what it would be). */
  snapshotAfterMinor: string | null;
  transactionId: string | null;
  /** The transaction a posting compensates (fix-failed-pending). */
  referenceTransactionId: string | null;
  /** Every leg of the posting, for postings. */
  entries: { ownerId: string; bucket: Bucket; currency: Currency; amountMinor: string }[] | null;
  detail: string | null;
}

export interface ReconcileCounts {
  /** Accounts or transactions looked at. */
  scanned: number;
  batches: number;
  items: number;
  planned: number;
  fixed: number;
  skipped: number;
  failed: number;
}

export interface ReconcileReport {
  runId: string;
  tool: ReconcileTool;
  scope: string;
  params: ReconcileParams;
  dryRun: boolean;
  status: 'COMPLETED' | 'FAILED';
  requestedBy: string;
  workflowId: string | null;
  startedAt: string;
  finishedAt: string | null;
  /** false when a dry run stopped at its bound before it had looked at everything. */
  complete: boolean;
  counts: ReconcileCounts;
  /** The first `reportItemsMax` items in the order they were found. */
  items: ReconcileItemReport[];
  itemsTruncated: boolean;
  error: string | null;
}
