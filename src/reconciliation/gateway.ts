import { paymentOutcome, payoutOutcome, type GatewayOutcome } from '../../gateway/status.ts';
import { assert } from '../errors.ts';
import { ledgerKeys } from '../ledger/keys.ts';
import { moneyModel, type Entry } from '../ledger/money-model.ts';
import type { Currency } from '../money/currency.ts';
import { errorDetail, type BucketState, type ItemRecord } from './items.ts';

/**
 * The gateway reconcile tools' rules, as pure code (docs/reconciliation.md, "Gateway tools"):
 * what a gateway status means for the redemption or charge that waits on it, the shapes a run
 * hands from finding (a batch activity) to handing over (the workflow) to recording (another
 * activity), and what each item records (services/reconcile-gateway.ts runs them). Nothing here
 * books money: every booking is made by the workflow that owns the redemption or charge, or, for
 * a charge whose workflow has ended, by the charge's own database function under the charge's own
 * idempotency keys.
 */

/** What the gateway's status means for the row waiting on it. */
export type Verdict = 'SETTLE' | 'FAIL' | 'OPEN';

const verdicts: Readonly<Record<GatewayOutcome, Verdict>> = { paid: 'SETTLE', failed: 'FAIL', open: 'OPEN' };

/**
 * A transfer (payout) status, as the gateway adapter judges it (`payoutOutcome`): DONE settles;
 * FAILED and CANCELLED fail (the redemption fails and the PLC is reverted); anything else is open.
 */
export function transferVerdict(status: string): Verdict {
  return verdicts[payoutOutcome(status)];
}

/**
 * A payment status, as the gateway adapter judges it (`paymentOutcome`): paid settles; OVERDUE,
 * REFUNDED, DELETED fail (OVERDUE is not final at the gateway: a Boleto can still be paid late,
 * so whoever fails a charge on OVERDUE cancels it there first); anything else is open.
 */
export function paymentVerdict(status: string): Verdict {
  return verdicts[paymentOutcome(status)];
}

/** A status this service gives a charge or a redemption whose gateway resource was never created. */
export const notCreatedStatus = 'NOT_CREATED';

/**
 * A charge with no gateway payment is still being set up by its workflow for this long (the
 * update's quick attempts plus two background series of about 8 minutes each); after that, and
 * with no payment found at the gateway under its reference, nobody can pay it.
 */
export const chargeSetupWindowMs = 30 * 60_000;

/**
 * How long after the end of its due date a PENDING charge counts as stale: the charge workflow's
 * own grace (a Pix is instant; a Boleto paid on its due date clears in 1 to 3 business days), so
 * cancel-stale-charges never cancels a charge its workflow would still wait for.
 */
export const chargeStaleGraceMs = { PIX: 3_600_000, BOLETO: 3 * 86_400_000 } as const;

/**
 * The part of the gateway client the tools use. `GatewayClient` (gateway/index.ts) satisfies it;
 * its errors carry `retryable` (false: a refusal, such as an unknown id or a charge that can no
 * longer be cancelled).
 */
export interface GatewayPort {
  getTransfer(transferId: string): Promise<{ id: string; status: string; failReason: string | null }>;
  /** A boleto payout (bill payment): the same status vocabulary as a transfer. */
  getBillPayment(billPaymentId: string): Promise<{ id: string; status: string; failReason: string | null }>;
  getPayment(paymentId: string): Promise<{ id: string; status: string }>;
  listPayments(input: { externalReference: string; limit: number }): Promise<{ items: { id: string; status: string }[] }>;
  cancelPayment(paymentId: string): Promise<unknown>;
}

/** A gateway error that says "this request will never succeed" rather than "try again". */
export function isGatewayRefusal(error: unknown): boolean {
  return typeof error === 'object' && error !== null && (error as { retryable?: unknown }).retryable === false;
}

/** A gateway refusal in a sentence: its code, when it has one, and its message (bounded). */
export function refusalText(error: unknown): string {
  const code = typeof error === 'object' && error !== null ? (error as { code?: unknown }).code : undefined;
  const message = error instanceof Error ? error.message : String(error);
  return `${typeof code === 'string' ? `${code}: ` : ''}${message}`.slice(0, 300);
}

/**
 * What a gateway tool found about one PENDING_PAYMENT redemption or PENDING charge: the gateway's
 * word on it and what its owner workflow should hear. Crosses the Temporal boundary as JSON:
 * amounts are decimal strings of minor units.
 */
export interface Handover {
  /** `redemption/<id>` or `charge/<id>`: the item key. */
  key: string;
  subject: 'redemption' | 'charge';
  subjectId: string;
  /** `redemption-<id>` or `charge-<id>`. */
  workflowId: string;
  /** Redemptions: what a resumed `redemption-<id>` needs and is found by in the UI. */
  tokenId: string | null;
  bearerPubkey: string | null;
  /** The transfer or payment id, null when none was created (or found). */
  gatewayId: string | null;
  /** The gateway's status, or NOT_CREATED. */
  gatewayStatus: string;
  failReason: string | null;
  /** What the owner workflow does when it hears `signalStatus` (OPEN: nothing yet). */
  ownerVerdict: Verdict;
  /** The status sent to a running owner workflow. */
  signalStatus: string;
  /** What this run books for a charge whose workflow has ended (OPEN: nothing). */
  bookVerdict: Verdict;
  /** This run cancelled the gateway charge (cancel tools) before handing it over. */
  cancelled: boolean;
  /** The user whose PENDING the owner's booking takes the amount out of: the bearer, or the charge's owner. */
  ownerId: string;
  /** Redemptions: the issuer, whose PROMISED a failure restores. */
  issuerOwnerId: string | null;
  currency: Currency;
  amountMinor: string;
  /** Redemptions: the fee the settlement books to the fees account. */
  feeMinor: string;
  snapshotMinor: string;
  computedMinor: string;
  /** The booking the owner's settlement or failure completes (REDEEM_REQUESTED, CHARGE_CREATED). */
  referenceTransactionId: string | null;
  /** Why the item cannot be handed over (an answer from the gateway that needs a person). */
  problem: string | null;
  /** What else the finding step learnt (a cancel the gateway refused, a payment found by reference). */
  note: string | null;
}

/**
 * How a handover reached its owner: SIGNALLED (the workflow runs and got the status),
 * RESTARTED (a redemption whose workflow had ended, started again with `resume: true`),
 * ALREADY_RUNNING (someone restarted it first), OWNER_ENDED (a charge whose workflow has ended:
 * the run books the outcome through the charge's database function), NONE (not handed over).
 */
export type Dispatch = 'SIGNALLED' | 'RESTARTED' | 'ALREADY_RUNNING' | 'OWNER_ENDED' | 'NONE';

export interface DispatchedHandover {
  handover: Handover;
  dispatch: Dispatch;
}

/** Whether a handover calls for an item: a running owner told of a status it cannot act on yet is not one. */
export function needsItem(handover: Handover, dispatch: Dispatch): boolean {
  if (handover.problem !== null) return true;
  if (dispatch === 'SIGNALLED') return handover.ownerVerdict !== 'OPEN';
  return true;
}

/** The sentence that says what the gateway said, for an item's detail. */
export function gatewayFacts(handover: Handover): string {
  const what = handover.subject === 'redemption' ? 'transfer' : 'payment';
  const facts =
    handover.gatewayId === null
      ? `no gateway ${what}`
      : `gateway ${what} ${handover.gatewayId} ${handover.gatewayStatus}${handover.failReason === null ? '' : ` (${handover.failReason})`}`;
  const cancelled = handover.cancelled ? '; cancelled at the gateway by this run' : '';
  return `${facts}${cancelled}${handover.note === null ? '' : `; ${handover.note}`}`;
}

// ---------------------------------------------------------------------------------------------
// Finding: what each pending row is handed over with
// ---------------------------------------------------------------------------------------------

/** What the gateway says about a payout: its status and failure reason, or the problem a person looks at. */
export interface TransferRead {
  status: string;
  failReason: string | null;
  problem: string | null;
}

/** A PENDING_PAYMENT redemption as the tools find it (a row of db/reconciliation/gateway.ts `pendingRedemptions`). */
export interface PendingRedemption {
  id: string;
  token_id: string;
  bearer_pubkey: string;
  bearer_owner_id: string;
  issuer_owner_id: string;
  currency: Currency;
  amount_minor: bigint;
  fee_minor: bigint;
  /** The payout's id, null when none was recorded. */
  gateway_transfer_id: string | null;
  /** Its REDEEM_REQUESTED, when the ledger holds it. */
  reference_tx_id: string | null;
}

/** What the read of a redemption without a recorded payout says: nothing was created. */
export const transferNotCreated: TransferRead = { status: notCreatedStatus, failReason: null, problem: null };

/**
 * A redemption's handover: every PENDING_PAYMENT redemption is handed over (a running workflow
 * ignores a status that is not final; one that has ended is restarted), never booked by the run.
 * `pending`: the bearer's PENDING bucket.
 */
export function redemptionHandover(redemption: PendingRedemption, workflowId: string, read: TransferRead, pending: BucketState): Handover {
  return {
    key: `redemption/${redemption.id}`,
    subject: 'redemption',
    subjectId: redemption.id,
    workflowId,
    tokenId: redemption.token_id,
    bearerPubkey: redemption.bearer_pubkey,
    gatewayId: redemption.gateway_transfer_id,
    gatewayStatus: read.status,
    failReason: read.failReason,
    ownerVerdict: transferVerdict(read.status),
    signalStatus: read.status,
    // Never booked by the run: a redemption whose workflow ended is restarted instead.
    bookVerdict: 'OPEN',
    cancelled: false,
    ownerId: redemption.bearer_owner_id,
    issuerOwnerId: redemption.issuer_owner_id,
    currency: redemption.currency,
    amountMinor: redemption.amount_minor.toString(),
    feeMinor: redemption.fee_minor.toString(),
    snapshotMinor: pending.snapshot_minor.toString(),
    computedMinor: pending.computed_minor.toString(),
    referenceTransactionId: redemption.reference_tx_id,
    problem: read.problem,
    note: null,
  };
}

/** Which PENDING charges a charge tool acts on: all (check), stale ones (cancel-stale), all, cancelled (cancel-all). */
export type ChargeMode = 'check' | 'cancel-stale' | 'cancel-all';

/** A PENDING charge as the tools find it (a row of db/reconciliation/gateway.ts `pendingCharges`). */
export interface PendingCharge {
  id: string;
  owner_id: string;
  currency: Currency;
  amount_minor: bigint;
  /** The payment's id, null when none was recorded. */
  gateway_payment_id: string | null;
  /** The end of the due date plus the charge workflow's grace has passed. */
  stale: boolean;
  /** Created longer ago than the gateway setup can take (`chargeSetupWindowMs`). */
  setup_over: boolean;
  /** Its CHARGE_CREATED, when the ledger holds it. */
  reference_tx_id: string | null;
}

/** What the gateway says about a charge's payment (found by its id, or by the charge's reference). */
export interface PaymentRead {
  paymentId: string | null;
  status: string;
  note: string | null;
  problem: string | null;
}

/** Whether the gateway can still cancel a payment in this status (it exists and is not gone already). */
export function cancellable(status: string): boolean {
  return status !== 'DELETED' && status !== 'REFUNDED' && status !== notCreatedStatus;
}

/**
 * What a charge tool does with one PENDING charge, given what the gateway said: leave it alone
 * (its workflow is still setting it up; not stale for cancel-stale-charges), hand it over as it
 * is, or cancel it at the gateway first (the cancel tools, a charge that can still be paid).
 */
export function chargeStep(mode: ChargeMode, charge: Pick<PendingCharge, 'stale' | 'setup_over'>, read: Pick<PaymentRead, 'status' | 'problem'>): 'leave' | 'hand-over' | 'cancel' {
  // A charge without a gateway payment is still being set up by its workflow for a while.
  if (read.status === notCreatedStatus && !charge.setup_over) return 'leave';
  if (read.problem !== null || mode === 'check') return 'hand-over';
  if (mode === 'cancel-stale' && !(charge.stale || read.status === 'OVERDUE')) return 'leave';
  return cancellable(read.status) && paymentVerdict(read.status) !== 'SETTLE' ? 'cancel' : 'hand-over';
}

/** A cancel made at the gateway before the handover (a dry run only says it would make one). */
export type ChargeCancel = { kind: 'would' } | { kind: 'done'; status: string; cancelled: boolean; note: string | null };

/**
 * A charge's handover, after its cancel if `chargeStep` called for one. `pending`: the owner's
 * PENDING bucket. Nothing at the gateway after the setup window means nobody can ever pay it:
 * its running workflow is left to its own setup and abandonment; one that ended gets the charge
 * failed by the run.
 */
export function chargeHandover(charge: PendingCharge, workflowId: string, read: PaymentRead, cancel: ChargeCancel | null, pending: BucketState): Handover {
  const status = cancel?.kind === 'done' ? cancel.status : read.status;
  const notes: string[] = read.note === null ? [] : [read.note];
  let ownerVerdict = paymentVerdict(status);
  let bookVerdict: Verdict = status === notCreatedStatus ? 'FAIL' : ownerVerdict;
  let signalStatus = status;
  if (cancel?.kind === 'would') {
    notes.push('would be cancelled at the gateway');
    ownerVerdict = 'FAIL';
    bookVerdict = 'FAIL';
    signalStatus = 'DELETED';
  }
  if (cancel?.kind === 'done' && cancel.note !== null) notes.push(cancel.note);
  return {
    key: `charge/${charge.id}`,
    subject: 'charge',
    subjectId: charge.id,
    workflowId,
    tokenId: null,
    bearerPubkey: null,
    gatewayId: read.paymentId,
    gatewayStatus: status,
    failReason: null,
    ownerVerdict,
    signalStatus,
    bookVerdict,
    cancelled: cancel?.kind === 'done' && cancel.cancelled,
    ownerId: charge.owner_id,
    issuerOwnerId: null,
    currency: charge.currency,
    amountMinor: charge.amount_minor.toString(),
    feeMinor: '0',
    snapshotMinor: pending.snapshot_minor.toString(),
    computedMinor: pending.computed_minor.toString(),
    referenceTransactionId: charge.reference_tx_id,
    problem: read.problem,
    note: notes.length === 0 ? null : notes.join('; '),
  };
}

// ---------------------------------------------------------------------------------------------
// Items: what a run records about each handover
// ---------------------------------------------------------------------------------------------

/** The owner's booking for an outcome: what the redemption's or charge's own code books. */
export function ownerPosting(handover: Handover, outcome: 'SETTLE' | 'FAIL'): Entry[] {
  const amountMinor = BigInt(handover.amountMinor);
  const currency = handover.currency;
  if (handover.subject === 'redemption') {
    const issuerId = handover.issuerOwnerId;
    assert(issuerId !== null, 'a redemption names its issuer');
    return outcome === 'SETTLE'
      ? moneyModel.redeemSettled({ bearerId: handover.ownerId, currency, amountMinor, feeMinor: BigInt(handover.feeMinor) }).entries
      : moneyModel.redeemFailed({ issuerId, bearerId: handover.ownerId, currency, amountMinor }).entries;
  }
  return outcome === 'SETTLE'
    ? moneyModel.chargeSettled({ ownerId: handover.ownerId, currency, amountMinor }).entries
    : moneyModel.chargeFailed({ ownerId: handover.ownerId, currency, amountMinor }).entries;
}

/** An item about the handover's PENDING bucket. */
function itemOf(
  handover: Handover,
  fields: { status: ItemRecord['status']; entries: Entry[] | null; snapshotAfterMinor: bigint | null; transactionId: string | null; detail: string },
): ItemRecord {
  return {
    key: handover.key,
    action: 'COMPENSATING_POSTING',
    status: fields.status,
    ownerId: handover.ownerId,
    bucket: 'PENDING',
    currency: handover.currency,
    snapshotMinor: BigInt(handover.snapshotMinor),
    computedMinor: BigInt(handover.computedMinor),
    amountMinor: BigInt(handover.amountMinor),
    snapshotAfterMinor: fields.snapshotAfterMinor,
    transactionId: fields.transactionId,
    referenceTransactionId: handover.referenceTransactionId,
    entries: fields.entries,
    detail: fields.detail,
  };
}

/** A handover that cannot go to its owner (the gateway refused to answer about it): FAILED, for a person. */
export function problemItem(handover: Handover): ItemRecord {
  return itemOf(handover, {
    status: 'FAILED',
    entries: null,
    snapshotAfterMinor: BigInt(handover.snapshotMinor),
    transactionId: null,
    detail: `${gatewayFacts(handover)}; ${handover.problem ?? ''}`,
  });
}

function signalName(handover: Handover): string {
  return handover.subject === 'redemption' ? 'transferEvent' : 'paymentEvent';
}

/** The key the charge's own code books an outcome under (`charge:<id>:settle|fail`). */
export function chargeBookingKey(handover: Handover, verdict: 'SETTLE' | 'FAIL'): string {
  return (verdict === 'SETTLE' ? ledgerKeys.chargeSettle : ledgerKeys.chargeFail).of(handover.subjectId);
}

/** What a dry run says it would do about one handover. */
function plannedText(handover: Handover, dispatch: Dispatch): string {
  switch (dispatch) {
    case 'SIGNALLED':
      return `${handover.workflowId} runs: would signal ${signalName(handover)} ${handover.signalStatus}; it would book the ${handover.ownerVerdict === 'SETTLE' ? 'settlement' : 'failure'}`;
    case 'RESTARTED':
    case 'ALREADY_RUNNING':
      return (
        `${handover.workflowId} has ended without a final status: would restart it with resume (same payout idempotency key, no second payout)` +
        (handover.ownerVerdict === 'OPEN' ? '; it waits for the transfer and books when it ends' : '; it would book the outcome')
      );
    case 'OWNER_ENDED':
      return handover.bookVerdict === 'OPEN'
        ? `${handover.workflowId} has ended without a final status and the gateway has not decided: nothing to book yet; a later run books it when paid, cancel-stale-charges fails it once stale`
        : `${handover.workflowId} has ended without a final status: would book ${chargeBookingKey(handover, handover.bookVerdict)} through the charge's own finishCharge`;
    case 'NONE':
      return 'not handed over';
  }
}

/**
 * What a dry run records about a handover without a problem, given whether its owner workflow
 * runs: what a real run would do (PLANNED, with the entries of the booking it expects; SKIPPED
 * where nothing would be booked), or null where a real run makes no item.
 */
export function plannedItem(handover: Handover, ownerRuns: boolean): ItemRecord | null {
  const dispatch: Dispatch = ownerRuns ? 'SIGNALLED' : handover.subject === 'redemption' ? 'RESTARTED' : 'OWNER_ENDED';
  if (!needsItem(handover, dispatch)) return null;
  const verdict = dispatch === 'OWNER_ENDED' ? handover.bookVerdict : handover.ownerVerdict;
  return itemOf(handover, {
    status: verdict === 'OPEN' && dispatch === 'OWNER_ENDED' ? 'SKIPPED' : 'PLANNED',
    entries: verdict === 'OPEN' ? null : ownerPosting(handover, verdict),
    snapshotAfterMinor: verdict === 'OPEN' ? null : BigInt(handover.snapshotMinor) - BigInt(handover.amountMinor),
    transactionId: null,
    detail: `${gatewayFacts(handover)}; ${plannedText(handover, dispatch)}`,
  });
}

function handedText(dispatched: DispatchedHandover): string {
  const { handover, dispatch } = dispatched;
  switch (dispatch) {
    case 'SIGNALLED':
      return `${handover.workflowId} was running: signalled ${signalName(handover)} ${handover.signalStatus}`;
    case 'RESTARTED':
      return `${handover.workflowId} had ended without a final status: restarted with resume (same payout idempotency key)`;
    case 'ALREADY_RUNNING':
      return `${handover.workflowId} had ended, and was restarted by someone else meanwhile`;
    case 'OWNER_ENDED':
      return `${handover.workflowId} had ended without a final status`;
    case 'NONE':
      return 'not handed over';
  }
}

/**
 * What the recording step does with a handed-over row: record its problem (or that it was not
 * handed over), nothing (a running owner told a status it cannot act on yet), wait for its owner
 * to book, record that nothing can be booked yet (an ended charge the gateway has not decided), or
 * book it through the charge's own code (an ended charge the gateway decided) and then wait.
 */
export function settleStep(dispatched: DispatchedHandover): 'problem' | 'nothing' | 'wait' | 'open' | 'book' {
  const { handover, dispatch } = dispatched;
  if (handover.problem !== null || dispatch === 'NONE') return 'problem';
  if (!needsItem(handover, dispatch)) return 'nothing';
  if (dispatch !== 'OWNER_ENDED') return 'wait';
  return handover.bookVerdict === 'OPEN' ? 'open' : 'book';
}

/** The item of an ended charge the gateway has not decided: SKIPPED, nothing to book yet. */
export function undecidedItem(dispatched: DispatchedHandover): ItemRecord {
  const { handover, dispatch } = dispatched;
  return itemOf(handover, {
    status: 'SKIPPED',
    entries: null,
    snapshotAfterMinor: BigInt(handover.snapshotMinor),
    transactionId: null,
    detail: `${gatewayFacts(handover)}; ${plannedText(handover, dispatch)}`,
  });
}

/** The item of an ended charge whose booking the ledger refused: FAILED, nothing kept. */
export function refusedBookingItem(dispatched: DispatchedHandover, error: unknown): ItemRecord {
  const { handover } = dispatched;
  assert(handover.bookVerdict !== 'OPEN', 'only a decided charge is booked');
  return itemOf(handover, {
    status: 'FAILED',
    entries: ownerPosting(handover, handover.bookVerdict),
    snapshotAfterMinor: BigInt(handover.snapshotMinor),
    transactionId: null,
    detail: `${gatewayFacts(handover)}; ${handedText(dispatched)}; booking refused: ${errorDetail(error)}`,
  });
}

/** What the run booked for an ended charge, for its item's detail. */
export function bookedNote(handover: Handover, booked: { verdict: 'SETTLE' | 'FAIL'; note: string | null }): string {
  return `booked ${chargeBookingKey(handover, booked.verdict)} through the charge's own finishCharge${booked.note === null ? '' : ` (${booked.note})`}`;
}

/** A redemption or charge status its owner never leaves. */
export function isFinalStatus(status: string): boolean {
  return status === 'SETTLED' || status === 'FAILED';
}

/**
 * The item of a handed-over row once the wait for its owner is over: FIXED with the owner's
 * booking; SKIPPED when the owner has not finished (it books when the gateway answers) or its
 * row is final without its booking in the ledger. `final`: the row's status and booking now
 * (null: the row is gone); `afterMinor`: its PENDING bucket's snapshot now.
 */
export function settledItem(
  dispatched: DispatchedHandover,
  note: string | null,
  final: { status: string; txId: string | null } | null,
  afterMinor: bigint,
  waitMs: number,
): ItemRecord {
  const { handover } = dispatched;
  const facts = `${gatewayFacts(handover)}; ${handedText(dispatched)}${note === null ? '' : `; ${note}`}`;
  if (final === null || !isFinalStatus(final.status)) {
    return itemOf(handover, {
      status: 'SKIPPED',
      entries: null,
      snapshotAfterMinor: afterMinor,
      transactionId: null,
      detail: `${facts}; still ${final?.status ?? 'missing'} after ${Math.round(waitMs / 1000)} s: its workflow books when the gateway answers`,
    });
  }
  const entries = ownerPosting(handover, final.status === 'SETTLED' ? 'SETTLE' : 'FAIL');
  if (final.txId === null) {
    return itemOf(handover, {
      status: 'SKIPPED',
      entries,
      snapshotAfterMinor: afterMinor,
      transactionId: null,
      detail: `${facts}; ${final.status} but its booking is not in the ledger: run fix-failed-pending or fix-charge-settlements`,
    });
  }
  return itemOf(handover, { status: 'FIXED', entries, snapshotAfterMinor: afterMinor, transactionId: final.txId, detail: `${facts}; ${final.status}` });
}
