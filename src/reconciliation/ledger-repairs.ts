import { assert } from '../errors.ts';
import { ledgerKeys, type LedgerKey } from '../ledger/keys.ts';
import { moneyModel, worldOwnerId, type Bucket, type Entry, type Posting, type TxType } from '../ledger/money-model.ts';
import type { Currency } from '../money/currency.ts';
import type { BucketState, ItemRecord } from './items.ts';
import { bucketItemKey } from './tools.ts';

/**
 * The ledger tools' rules (docs/reconciliation.md), as pure code: what a wrong snapshot, a
 * negative user bucket, a failure booked without its request and a settlement row without its
 * own booking each call for. The phases in db/reconciliation/phases/ find the rows and book what
 * these rules plan, under the locks; nothing here reads or books.
 */

// ---------------------------------------------------------------------------------------------
// Snapshots
// ---------------------------------------------------------------------------------------------

export const negativeUserBucketDetail =
  'the entries of this user bucket sum below zero, which a snapshot cannot hold: run fix-negative-balances';

/** A bucket whose snapshot differs from the sum of its entries. */
export interface SnapshotDiff {
  bucket: Bucket;
  currency: Currency;
  snapshot_minor: bigint;
  computed_minor: bigint;
}

/** Whether a snapshot can be set to what its entries sum to: a user bucket cannot hold less than zero. */
export function snapshotWritable(kind: 'user' | 'system', computedMinor: bigint): boolean {
  return kind === 'system' || computedMinor >= 0n;
}

/** The item of a snapshot correction: `status` when the snapshot can hold the sum, else SKIPPED for fix-negative-balances. */
export function snapshotItem(ownerId: string, kind: 'user' | 'system', diff: SnapshotDiff, status: 'PLANNED' | 'FIXED'): ItemRecord {
  const writable = snapshotWritable(kind, diff.computed_minor);
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

/** Rows grouped by their account, in the order met. */
export function groupByAccount<T extends { account_id: string }>(rows: readonly T[]): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const row of rows) {
    const group = groups.get(row.account_id);
    if (group === undefined) groups.set(row.account_id, [row]);
    else group.push(row);
  }
  return groups;
}

// ---------------------------------------------------------------------------------------------
// Negative user buckets
// ---------------------------------------------------------------------------------------------

/** A user bucket whose entries sum below zero, with its snapshot. */
export interface NegativeBucket extends SnapshotDiff {
  owner_id: string;
}

/** fix-negative-balances' posting: system:world AVAILABLE -X -> the bucket +X, where the entries sum to -X. */
export function negativeBucketPosting(row: NegativeBucket): Entry[] {
  const amountMinor = -row.computed_minor;
  assert(amountMinor > 0n, 'a negative bucket is brought up by a positive amount');
  return [
    { ownerId: worldOwnerId, bucket: 'AVAILABLE', currency: row.currency, amountMinor: -amountMinor },
    { ownerId: row.owner_id, bucket: row.bucket, currency: row.currency, amountMinor },
  ];
}

/**
 * The item of a negative bucket: PLANNED (dry run: the bucket would be zero), FIXED (booked; the
 * bucket is zero) or FAILED (refused: the snapshot stays); `entries` are the posting's legs.
 */
export function negativeBucketItem(
  row: NegativeBucket,
  outcome:
    | { status: 'PLANNED' }
    | { status: 'FIXED'; transactionId: string; created: boolean }
    | { status: 'FAILED'; detail: string },
): ItemRecord {
  return {
    key: bucketItemKey(row.owner_id, row.bucket, row.currency),
    action: 'COMPENSATING_POSTING',
    status: outcome.status,
    ownerId: row.owner_id,
    bucket: row.bucket,
    currency: row.currency,
    snapshotMinor: row.snapshot_minor,
    computedMinor: row.computed_minor,
    amountMinor: -row.computed_minor,
    snapshotAfterMinor: outcome.status === 'FAILED' ? null : 0n,
    transactionId: outcome.status === 'FIXED' ? outcome.transactionId : null,
    referenceTransactionId: null,
    entries: negativeBucketPosting(row),
    detail:
      outcome.status === 'FAILED'
        ? outcome.detail
        : outcome.status === 'FIXED' && !outcome.created
          ? 'booked by an earlier attempt of this batch'
          : null,
  };
}

// ---------------------------------------------------------------------------------------------
// Failures booked without their request
// ---------------------------------------------------------------------------------------------

/** A compensating posting names the transaction it reverses: reference (ledger_transaction, id). */
export const reversalReferenceType = 'ledger_transaction';

/** A failure transaction (REDEEM_FAILED, CHARGE_FAILED) as the ledger holds it: its legs, in order. */
export interface FailureFacts {
  id: string;
  reference_id: string | null;
  entries: { owner_id: string; kind: 'user' | 'system'; bucket: Bucket; currency: Currency; amount_minor: string }[];
}

/** One leg of a posting, by its owner's bucket; `amountMinor` positive. */
export interface BucketAmount {
  ownerId: string;
  bucket: Bucket;
  currency: Currency;
  amountMinor: bigint;
}

export interface PlannedReversal<F extends FailureFacts = FailureFacts> {
  key: string;
  failure: F;
  /** The user PENDING leg the failure debited: the compensating credit goes back there. */
  credited: BucketAmount | null;
  /** The reversal: every leg of the failure negated, debits first. */
  entries: Entry[];
  /** Why the reversal is left to a person (the failure cannot be matched or has another shape), or null. */
  skipReason: string | null;
}

/**
 * fix-failed-pending's reversal of a failure whose request is missing: every leg negated (the
 * money model's "from -> to" order, debits first), which credits back the user PENDING the failure
 * took. Only a failure of the money model's shape (one user PENDING debit and one credit) with a
 * reference id is reversed; any other is skipped for a person.
 */
export function planReversal<F extends FailureFacts>(failure: F): PlannedReversal<F> {
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
  return { key: `reversal/${failure.id}`, failure, credited, entries, skipReason };
}

/**
 * The bucket a reversal's item is about: the PENDING it credits back, or, for a failure of
 * another shape, its first debited leg (for the report).
 */
export function reversalLeg(plan: PlannedReversal): BucketAmount {
  if (plan.credited !== null) return plan.credited;
  const entry = plan.failure.entries.find((candidate) => BigInt(candidate.amount_minor) < 0n) ?? plan.failure.entries[0];
  assert(entry !== undefined, 'a ledger transaction has entries');
  const amount = BigInt(entry.amount_minor);
  return { ownerId: entry.owner_id, bucket: entry.bucket, currency: entry.currency, amountMinor: amount < 0n ? -amount : amount };
}

/**
 * The item of a reversal, about the bucket `reversalLeg` names (`before`: its state when found):
 * PLANNED (dry run: the snapshot after the credit), SKIPPED (left to a person), FAILED (refused,
 * or a refusal a dry run foresees) or FIXED (booked; `afterMinor` read then).
 */
export function reversalItem(
  plan: PlannedReversal,
  before: BucketState,
  outcome: { status: 'PLANNED' | 'SKIPPED' | 'FAILED'; detail: string | null } | { status: 'FIXED'; transactionId: string; afterMinor: bigint },
): ItemRecord {
  const leg = reversalLeg(plan);
  let snapshotAfterMinor = before.snapshot_minor;
  if (outcome.status === 'PLANNED') snapshotAfterMinor += leg.amountMinor;
  if (outcome.status === 'FIXED') snapshotAfterMinor = outcome.afterMinor;
  return {
    key: plan.key,
    action: 'COMPENSATING_POSTING',
    status: outcome.status,
    ownerId: leg.ownerId,
    bucket: leg.bucket,
    currency: leg.currency,
    snapshotMinor: before.snapshot_minor,
    computedMinor: before.computed_minor,
    amountMinor: leg.amountMinor,
    snapshotAfterMinor,
    transactionId: outcome.status === 'FIXED' ? outcome.transactionId : null,
    referenceTransactionId: plan.failure.id,
    entries: plan.entries,
    detail: outcome.status === 'FIXED' ? null : outcome.detail,
  };
}

// ---------------------------------------------------------------------------------------------
// Settlement rows whose own booking is missing
// ---------------------------------------------------------------------------------------------

/**
 * What a row repair books: exactly the posting the owning code books for this row (same type,
 * reference and entries), under the owning code's own idempotency key. The owner and the repair
 * can therefore never both book it: whichever comes second gets the first one's transaction back.
 */
export interface RowRepairPlan {
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

/** The signed change a posting makes to one bucket. */
export function deltaOf(entries: readonly Entry[], ownerId: string, bucket: Bucket, currency: Currency): bigint {
  return entries
    .filter((entry) => entry.ownerId === ownerId && entry.bucket === bucket && entry.currency === currency)
    .reduce((sum, entry) => sum + entry.amountMinor, 0n);
}

/**
 * The item of a row repair: PLANNED (a dry run: the snapshot after the posting), FIXED (booked,
 * `after` read then) or FAILED (refused, or a refusal a dry run foresees: the snapshot stays).
 */
export function rowRepairItem(
  plan: RowRepairPlan,
  before: BucketState,
  outcome:
    | { status: 'PLANNED' }
    | { status: 'FIXED'; transactionId: string; created: boolean; afterMinor: bigint }
    | { status: 'FAILED'; detail: string },
): ItemRecord {
  let snapshotAfterMinor = before.snapshot_minor;
  if (outcome.status === 'PLANNED') snapshotAfterMinor += deltaOf(plan.entries, plan.ownerId, plan.bucket, plan.currency);
  if (outcome.status === 'FIXED') snapshotAfterMinor = outcome.afterMinor;
  let detail = plan.description;
  if (outcome.status === 'FAILED') detail = outcome.detail;
  if (outcome.status === 'FIXED' && !outcome.created) detail = `${plan.description}; the key had already booked this posting`;
  return {
    key: plan.itemKey,
    action: 'COMPENSATING_POSTING',
    status: outcome.status,
    ownerId: plan.ownerId,
    bucket: plan.bucket,
    currency: plan.currency,
    snapshotMinor: before.snapshot_minor,
    computedMinor: before.computed_minor,
    amountMinor: plan.amountMinor,
    snapshotAfterMinor,
    transactionId: outcome.status === 'FIXED' ? outcome.transactionId : null,
    referenceTransactionId: plan.referenceTransactionId,
    entries: plan.entries,
    detail,
  };
}

/** A row repair's plan: the owner's `posting`, under its key `key.of(id)`, reported about the user bucket `about`. */
function repairPlan(
  row: { kind: 'plc' | 'charge' | 'redemption' | 'plc-evidence'; id: string; key: LedgerKey; referenceTransactionId: string | null },
  posting: Posting,
  about: Pick<RowRepairPlan, 'ownerId' | 'bucket' | 'currency' | 'amountMinor'>,
  description: string,
): RowRepairPlan {
  return {
    itemKey: `${row.kind}/${row.id}`,
    idempotencyKey: row.key.of(row.id),
    txType: posting.txType,
    referenceType: row.kind,
    referenceId: row.id,
    entries: posting.entries,
    ...about,
    referenceTransactionId: row.referenceTransactionId,
    description,
  };
}

/** A PLC as its repairs need it; `referenceTransactionId`: its PLC_ISSUED, when the ledger holds it. */
export interface PlcRepairFacts {
  tokenId: string;
  issuerId: string;
  currency: Currency;
  amountMinor: bigint;
  status: string;
  referenceTransactionId: string | null;
}

/** The PLC's release (db/plcs.ts `releasePlc`): PROMISED -> AVAILABLE under `plc:<token_id>:release`. */
export function plcReleasePlan(plc: PlcRepairFacts, kind: 'EXPIRED' | 'CANCELLED', why: string): RowRepairPlan {
  const amount = { issuerId: plc.issuerId, currency: plc.currency, amountMinor: plc.amountMinor };
  const posting = kind === 'CANCELLED' ? moneyModel.plcCancelled(amount) : moneyModel.plcExpired(amount);
  return repairPlan(
    { kind: 'plc', id: plc.tokenId, key: ledgerKeys.plcRelease, referenceTransactionId: plc.referenceTransactionId },
    posting,
    { ownerId: plc.issuerId, bucket: 'AVAILABLE', currency: plc.currency, amountMinor: plc.amountMinor },
    `release-expired-promises: ${why}; ${posting.txType} books PROMISED -> AVAILABLE`,
  );
}

/** release-expired-promises, first part: an EXPIRED or CANCELLED PLC whose release was never booked. */
export function releasedPlcPlan(plc: PlcRepairFacts): RowRepairPlan {
  return plcReleasePlan(plc, plc.status === 'CANCELLED' ? 'CANCELLED' : 'EXPIRED', `the PLC is ${plc.status} but its release was never booked`);
}

/** release-expired-promises, second part: a live PLC past its expiry that nobody expired. */
export function overduePlcPlan(plc: PlcRepairFacts): RowRepairPlan {
  return plcReleasePlan(plc, 'EXPIRED', `the ${plc.status} PLC is past its expiry and was never expired`);
}

/** plc-issue-bookings: a live PLC without its PLC_ISSUED (`plc:<token_id>:issue`, AVAILABLE -> PROMISED). */
export function plcIssuePlan(plc: PlcRepairFacts): RowRepairPlan {
  return repairPlan(
    // It completes no booking: it is the PLC's first.
    { kind: 'plc', id: plc.tokenId, key: ledgerKeys.plcIssue, referenceTransactionId: null },
    moneyModel.plcIssued({ issuerId: plc.issuerId, currency: plc.currency, amountMinor: plc.amountMinor }),
    { ownerId: plc.issuerId, bucket: 'PROMISED', currency: plc.currency, amountMinor: plc.amountMinor },
    `plc-issue-bookings: the ${plc.status} PLC has no PLC_ISSUED; books AVAILABLE -> PROMISED`,
  );
}

/** A charge as its repairs need it; `referenceTransactionId`: its CHARGE_CREATED, when the ledger holds it. */
export interface ChargeRepairFacts {
  chargeId: string;
  ownerId: string;
  currency: Currency;
  amountMinor: bigint;
  referenceTransactionId: string | null;
}

/** What a charge's own code books for each outcome (db/charges.ts finishCharge), and the bucket its item is about. */
const chargeOutcomes = {
  // fix-charge-settlements: the money model's charge-paid move.
  SETTLE: {
    key: ledgerKeys.chargeSettle,
    posting: moneyModel.chargeSettled,
    bucket: 'AVAILABLE',
    description: 'fix-charge-settlements: the charge is SETTLED without CHARGE_SETTLED; books PENDING reversed and AVAILABLE credited',
  },
  // fix-failed-pending, charges: owner PENDING -> world PENDING.
  FAIL: {
    key: ledgerKeys.chargeFail,
    posting: moneyModel.chargeFailed,
    bucket: 'PENDING',
    description: 'fix-failed-pending: the charge is FAILED without CHARGE_FAILED; books owner PENDING -> world PENDING',
  },
} as const;

/**
 * A charge whose status says SETTLED (or FAILED) without its CHARGE_SETTLED (`charge:<id>:settle`;
 * or CHARGE_FAILED, `charge:<id>:fail`): that booking, as db/charges.ts finishCharge books it.
 */
export function chargeRepairPlan(charge: ChargeRepairFacts, outcome: 'SETTLE' | 'FAIL'): RowRepairPlan {
  const { key, posting, bucket, description } = chargeOutcomes[outcome];
  const amount = { ownerId: charge.ownerId, currency: charge.currency, amountMinor: charge.amountMinor };
  return repairPlan(
    { kind: 'charge', id: charge.chargeId, key, referenceTransactionId: charge.referenceTransactionId },
    posting(amount),
    { ...amount, bucket },
    description,
  );
}

/** A redemption as its repair needs it; `referenceTransactionId`: its REDEEM_REQUESTED, when the ledger holds it. */
export interface RedemptionRepairFacts {
  redemptionId: string;
  bearerId: string;
  issuerId: string;
  currency: Currency;
  amountMinor: bigint;
  referenceTransactionId: string | null;
}

/**
 * fix-failed-pending, redemptions: a FAILED redemption without its REDEEM_FAILED
 * (`redemption:<id>:fail`): bearer PENDING -> issuer PROMISED, the PLC reverted, as finishRedemption books it.
 */
export function redemptionFailPlan(redemption: RedemptionRepairFacts): RowRepairPlan {
  const { bearerId, issuerId, currency, amountMinor } = redemption;
  return repairPlan(
    { kind: 'redemption', id: redemption.redemptionId, key: ledgerKeys.redemptionFail, referenceTransactionId: redemption.referenceTransactionId },
    moneyModel.redeemFailed({ issuerId, bearerId, currency, amountMinor }),
    { ownerId: bearerId, bucket: 'PENDING', currency, amountMinor },
    'fix-failed-pending: the redemption is FAILED without REDEEM_FAILED; books bearer PENDING -> issuer PROMISED (PLC reverted)',
  );
}

/** A cancel-after-transfer evidence as its compensation needs it (db/reconciliation/phases/evidence.ts). */
export interface CompensationFacts {
  evidenceId: string;
  tokenId: string;
  issuerId: string;
  bearerId: string;
  currency: Currency;
  /** The PLC's registered amount: what the bearer was promised. */
  amountMinor: bigint;
  /** What the issuer has in AVAILABLE now. */
  issuerAvailableMinor: bigint;
}

/**
 * compensate-cancelled-bearers: the bearer of a PLC its issuer cancelled after signing it over is
 * paid, from the issuer's AVAILABLE, the registered amount or what the issuer has if less (never
 * below zero); null when the issuer has nothing (the evidence stays open for a later run).
 */
export function compensationPlan(facts: CompensationFacts): RowRepairPlan | null {
  const amountMinor = facts.issuerAvailableMinor < facts.amountMinor ? facts.issuerAvailableMinor : facts.amountMinor;
  if (amountMinor <= 0n) return null;
  const partial = amountMinor < facts.amountMinor ? ` (partial: the issuer has ${facts.issuerAvailableMinor} of ${facts.amountMinor})` : '';
  return repairPlan(
    { kind: 'plc-evidence', id: facts.evidenceId, key: ledgerKeys.bearerCompensation, referenceTransactionId: null },
    moneyModel.bearerCompensated({ issuerId: facts.issuerId, bearerId: facts.bearerId, currency: facts.currency, amountMinor }),
    { ownerId: facts.bearerId, bucket: 'AVAILABLE', currency: facts.currency, amountMinor },
    `compensate-cancelled-bearers: PLC ${facts.tokenId} was cancelled by its issuer after it signed it over (evidence ${facts.evidenceId}); ` +
      `books ${amountMinor} from the issuer's AVAILABLE to the bearer's${partial}`,
  );
}
