import type { Bucket } from '../ledger/money-model.ts';
import type { Currency } from '../money/currency.ts';

/**
 * The reconcile tools (interface spec, Administration: /api/v1/admin/reconcile/*, and the
 * per-owner POST /api/v1/balance/{owner_id}/reconcile) as data: their names, which ones address
 * one owner, the `dry_run` default the spec gives them (false where the spec names none, unless
 * said otherwise), and how they work:
 *
 * - `ledger` tools repair the ledger from the database alone, in phases of `db/reconciliation/phases/`;
 * - `gateway` tools check rows against the payment gateway and hand what they find to the
 *   workflow that owns the money (`services/reconcile-gateway.ts`, `workflows/reconciliation.ts`);
 * - the `audit` tool pages through the gateway's own lists and joins them with our books
 *   (`services/gateway-audit.ts`).
 *
 * The API builds one admin route per entry with `adminRoute: true`; the workflow and the
 * activities take the name. Each kind maps every name of its kind to an implementation with a
 * `Record<...>`, so a tool added here without one fails to compile. docs/reconciliation.md
 * describes each tool and how to add one.
 */
export const reconcileTools = {
  'fix-balance': {
    kind: 'ledger',
    ownerScoped: true,
    adminRoute: true,
    dryRunDefault: false,
    summary: "Recompute one owner's balance snapshots from the ledger entries",
  },
  'recalculate-snapshots': {
    kind: 'ledger',
    ownerScoped: false,
    adminRoute: true,
    dryRunDefault: false,
    summary: 'Recompute every balance snapshot from the ledger entries, in batches of accounts',
  },
  'fix-negative-balances': {
    kind: 'ledger',
    ownerScoped: false,
    adminRoute: true,
    dryRunDefault: false,
    summary: 'Bring user buckets whose entries sum below zero back to zero with a compensating RECONCILIATION transaction',
  },
  'fix-failed-pending': {
    kind: 'ledger',
    ownerScoped: false,
    adminRoute: true,
    dryRunDefault: true,
    summary:
      'Book a compensating credit in PENDING where a failure (REDEEM_FAILED, CHARGE_FAILED) was booked without its request, ' +
      'and the missing failure booking of FAILED redemptions and charges',
  },
  'release-expired-promises': {
    kind: 'ledger',
    ownerScoped: false,
    adminRoute: true,
    dryRunDefault: false,
    summary: 'Release the PROMISED amount of expired (or overdue) PLCs whose release was never booked',
  },
  'fix-charge-settlements': {
    kind: 'ledger',
    ownerScoped: false,
    adminRoute: true,
    dryRunDefault: true,
    summary: 'Book the missing settlement (PENDING reversed, AVAILABLE credited) of SETTLED charges',
  },
  'compensate-cancelled-bearers': {
    kind: 'ledger',
    ownerScoped: false,
    adminRoute: true,
    dryRunDefault: true,
    summary:
      "Compensate the bearers of PLCs their issuer cancelled after signing them over (PLC_CANCELLED_AFTER_TRANSFER evidence): the registered amount, or what the issuer has, from the issuer's AVAILABLE to the bearer's, once per evidence",
  },
  'plc-issue-bookings': {
    kind: 'ledger',
    ownerScoped: true,
    // Served as POST /api/v1/balance/{owner_id}/reconcile (api/routes/balance-reconcile.ts).
    adminRoute: false,
    dryRunDefault: false,
    summary: "Book the missing PLC_ISSUED of an owner's live PLCs",
  },
  'pending-payments': {
    kind: 'gateway',
    ownerScoped: false,
    adminRoute: true,
    dryRunDefault: true,
    summary:
      'Check PENDING_PAYMENT redemptions (payout transfers) and PENDING charges (cash-in payments) against the gateway ' +
      'and hand each final status to the workflow that owns it',
  },
  'pending-deposits': {
    kind: 'gateway',
    ownerScoped: false,
    adminRoute: true,
    dryRunDefault: false,
    summary: 'Check PENDING charges (cash-in) against their gateway payments and settle or fail them through their workflows',
  },
  'pending-transfers': {
    kind: 'gateway',
    ownerScoped: false,
    adminRoute: true,
    dryRunDefault: false,
    summary:
      'Check PENDING_PAYMENT redemptions against their gateway transfers; signal running redemptions, resume stalled or crashed ones ' +
      '(same payout idempotency key: never a second payout)',
  },
  'cancel-stale-charges': {
    kind: 'gateway',
    ownerScoped: false,
    adminRoute: true,
    dryRunDefault: false,
    summary: 'Cancel at the gateway the PENDING charges past their due date (or OVERDUE there) and fail them through their workflows',
  },
  'cancel-all-pending-charges': {
    kind: 'gateway',
    ownerScoped: false,
    adminRoute: true,
    // The spec names no default. Every PENDING charge is cancelled, payable ones included: the
    // destructive run must be asked for explicitly with ?dry_run=false.
    dryRunDefault: true,
    summary: 'Cancel every PENDING charge at the gateway and fail it through its workflow (dry run unless ?dry_run=false)',
  },
  'gateway-audit': {
    kind: 'audit',
    ownerScoped: false,
    // An extension of the spec (api/extensions.ts); a Temporal Schedule (`gateway-audit`) runs it periodically.
    adminRoute: true,
    dryRunDefault: true,
    summary:
      "Page through the gateway's transfers and payments and join them with our redemptions, charges and ledger: every mismatch " +
      'is a finding with its evidence; the safe, documented repairs are made (real runs), the rest raised for a person as risk flags',
  },
} as const satisfies Record<
  string,
  { kind: 'ledger' | 'gateway' | 'audit'; ownerScoped: boolean; adminRoute: boolean; dryRunDefault: boolean; summary: string }
>;

export type ReconcileTool = keyof typeof reconcileTools;
export const reconcileToolNames = Object.keys(reconcileTools) as ReconcileTool[];
/** Tools that repair the ledger from the database alone. */
export type LedgerReconcileTool = { [T in ReconcileTool]: (typeof reconcileTools)[T]['kind'] extends 'ledger' ? T : never }[ReconcileTool];
/** Tools that check rows against the payment gateway and hand the outcome to the owning workflow. */
export type GatewayReconcileTool = { [T in ReconcileTool]: (typeof reconcileTools)[T]['kind'] extends 'gateway' ? T : never }[ReconcileTool];

export function isReconcileTool(value: string): value is ReconcileTool {
  return Object.hasOwn(reconcileTools, value);
}

/** Tools that audit the gateway's own lists against our books (src/reconciliation/gateway-audit.ts). */
export type AuditReconcileTool = { [T in ReconcileTool]: (typeof reconcileTools)[T]['kind'] extends 'audit' ? T : never }[ReconcileTool];

export function isGatewayTool(tool: ReconcileTool): tool is GatewayReconcileTool {
  return reconcileTools[tool].kind === 'gateway';
}

export function isAuditTool(tool: ReconcileTool): tool is AuditReconcileTool {
  return reconcileTools[tool].kind === 'audit';
}

/** What a tool works on: one owner for the owner-scoped tools; the PLC expiry grace for release-expired-promises. */
export interface ReconcileParams {
  ownerId?: string;
  /** How long after expires_at a live PLC counts as overdue (the server's clock tolerance). */
  expiryGraceMs?: number;
  /** The gateway audit's window: gateway resources created on or after this date (YYYY-MM-DD, the gateway's calendar). */
  since?: string;
}

/** Accounts (or failure transactions, PLCs, charges) per batch activity call of a real run. */
export const batchSizeDefault = 100;
/**
 * Redemptions or charges per batch of a gateway tool: each is a gateway call plus a signal or a
 * child workflow start in the run's history, so batches are smaller and a run continues as new
 * sooner (`gatewayBatchesPerExecution`).
 */
export const gatewayBatchSizeDefault = 25;
export const gatewayBatchesPerExecution = 20;
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

export const itemActions = ['SNAPSHOT_CORRECTION', 'COMPENSATING_POSTING', 'GATEWAY_FINDING'] as const;
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
  /** The owner and bucket the item is about; a gateway finding names one only when it concerns one. */
  ownerId: string | null;
  bucket: Bucket | null;
  currency: Currency;
  /** The snapshot when the item was found (null for a gateway finding). */
  snapshotMinor: string | null;
  /** What the entries say the bucket holds (null for a gateway finding). */
  computedMinor: string | null;
  /** The amount of the posting the item is about (positive), for postings; `entries` give each leg's direction. */
  amountMinor: string | null;
  /** The snapshot after the fix (for a dry run: what it would be). */
  snapshotAfterMinor: string | null;
  transactionId: string | null;
  /** The transaction a posting compensates or completes (a reversed failure; the request a settlement finishes). */
  referenceTransactionId: string | null;
  /** Every leg of the posting, for postings. */
  entries: { ownerId: string; bucket: Bucket; currency: Currency; amountMinor: string }[] | null;
  detail: string | null;
  /** Gateway findings: the mismatch (src/reconciliation/gateway-audit.ts `auditFindings`) and both sides as read. */
  finding: string | null;
  evidence: Record<string, unknown> | null;
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
