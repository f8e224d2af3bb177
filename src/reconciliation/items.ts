import { DomainError } from '../errors.ts';
import type { Entry } from '../ledger/money-model.ts';
import type { ReconcileItemReport } from './tools.ts';

/**
 * What a reconcile run records about each thing it found (a row of `reconciliation_items`,
 * written by db/reconciliation/runs.ts `recordItems`), as the tools' pure rules build it.
 */

/**
 * What a phase found or did about one bucket (or one transaction, or, for the gateway audit, one
 * mismatch): a report's item (`ReconcileItemReport`, which says what each field means) with its
 * amounts as bigints, before it is stored.
 */
export interface ItemRecord
  extends Pick<ReconcileItemReport, 'key' | 'action' | 'status' | 'ownerId' | 'bucket' | 'currency' | 'transactionId' | 'referenceTransactionId' | 'detail'> {
  snapshotMinor: bigint | null;
  computedMinor: bigint | null;
  amountMinor: bigint | null;
  snapshotAfterMinor: bigint | null;
  entries: readonly Entry[] | null;
  /** Gateway findings only (action GATEWAY_FINDING): the mismatch and its evidence. */
  finding?: string;
  evidence?: Record<string, unknown>;
}

/** A bucket's snapshot and the sum of its entries, as a phase reads them (db/reconciliation/shared.ts `bucketState`). */
export interface BucketState {
  snapshot_minor: bigint;
  computed_minor: bigint;
}

/** A refusal, as an item's detail says it: the domain code and message. */
export function errorDetail(error: unknown): string {
  if (error instanceof DomainError) return `${error.code}: ${error.message}`;
  return error instanceof Error ? error.message : String(error);
}
