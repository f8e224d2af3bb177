import { cursorAfter, phaseAt } from '../src/reconciliation/phases.ts';
import { z } from 'zod';
import { assert, DomainError } from '../src/errors.ts';
import { moneyModel, type Entry } from '../src/ledger/money-model.ts';
import { ledgerKeys } from '../src/ledger/keys.ts';
import { currencies, type Currency } from '../src/money/currency.ts';
import {
  chargeSetupWindowMs,
  chargeStaleGraceMs,
  gatewayFacts,
  isGatewayRefusal,
  needsItem,
  notCreatedStatus,
  paymentVerdict,
  transferVerdict,
  type Dispatch,
  type DispatchedHandover,
  type GatewayPort,
  type Handover,
  type Verdict,
} from '../src/reconciliation/gateway.ts';
import { type GatewayReconcileTool, type ReconcileReport } from '../src/reconciliation/tools.ts';
import { finishCharge } from './charges.ts';
import type { Pool, Queryable } from './pool.ts';
import {
  bucketState,
  errorDetail,
  recordItems,
  runDryBatches,
  type DryRunInput,
  type DryRunLimits,
  type ItemRecord,
  type ReconcileContext,
} from './reconciliation.ts';
import { many } from './sql.ts';

/**
 * The gateway reconcile tools' SQL and gateway reads (docs/reconciliation.md, "Gateway tools").
 * A batch has three steps:
 *
 * 1. find (`prepareGatewayBatch`, an activity; read-only but for the cancel tools' gateway
 *    cancellations): a page of PENDING_PAYMENT redemptions or PENDING charges, each with what the
 *    gateway says about its transfer or payment, as `Handover`s;
 * 2. hand over (the workflow): a signal to the owner workflow that runs, or a restart of a
 *    redemption whose workflow ended (`resume: true`);
 * 3. record (`settleGatewayBatch`, an activity): books, through the charge's own database function
 *    and keys, the outcome of a charge whose workflow has ended; waits (bounded) for the owners'
 *    bookings; records one item per redemption or charge.
 *
 * This module books nothing itself but through `finishCharge`: every settlement or failure is
 * the owner's booking under the owner's idempotency key (`redemption:<id>:settle|fail`,
 * `charge:<id>:settle|fail`), so nothing can be booked twice whoever gets there first.
 */

const currencyEnum = z.enum(currencies as [Currency, ...Currency[]]);
const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

type ChargeMode = 'check' | 'cancel-stale' | 'cancel-all';

interface FoundBatch {
  scanned: number;
  handovers: Handover[];
  next: string | null;
}

interface GatewayPhase {
  name: string;
  find(pool: Pool, gateway: GatewayPort, ctx: ReconcileContext, after: string | null, limit: number): Promise<FoundBatch>;
}

export interface GatewayBatch {
  phase: string;
  scanned: number;
  handovers: Handover[];
  /** Where the next batch starts; null when the tool has looked at everything. */
  cursor: string | null;
}

function parseUuidCursor(after: string | null): string | null {
  if (after !== null && !uuidPattern.test(after)) throw new Error(`cursor ${after} is not a uuid`);
  return after;
}

function refusalText(error: unknown): string {
  const code = typeof error === 'object' && error !== null ? (error as { code?: unknown }).code : undefined;
  const message = error instanceof Error ? error.message : String(error);
  return `${typeof code === 'string' ? `${code}: ` : ''}${message}`.slice(0, 300);
}

// ---------------------------------------------------------------------------------------------
// Finding: redemptions
// ---------------------------------------------------------------------------------------------

/**
 * What the gateway says about a redemption's transfer: its status and failure reason, or the
 * problem when the gateway refuses to answer about it (an id it does not know: retrying will not
 * change that, a person looks at it). A transient error (timeout, 5xx) is thrown, for the caller
 * to retry. The pending-transfers tool reads each PENDING_PAYMENT redemption this way, and so
 * does an operator's retry of one (activities/redemption.ts `retryPayout`).
 */
export async function readRedemptionTransfer(
  gateway: Pick<GatewayPort, 'getTransfer' | 'getBillPayment'>,
  transferId: string,
  rail: 'pix' | 'boleto' = 'pix',
): Promise<{ status: string; failReason: string | null; problem: string | null }> {
  try {
    // A boleto redemption's payout is a bill payment, read as such (the same status vocabulary).
    const transfer = rail === 'boleto' ? await gateway.getBillPayment(transferId) : await gateway.getTransfer(transferId);
    return { status: transfer.status, failReason: transfer.failReason, problem: null };
  } catch (error) {
    if (!isGatewayRefusal(error)) throw error;
    return {
      status: 'UNKNOWN',
      failReason: null,
      problem: `the gateway refuses to answer for transfer ${transferId}: ${refusalText(error)}; review by hand`,
    };
  }
}

const pendingRedemptionRow = z.object({
  id: z.string().uuid(),
  token_id: z.string().uuid(),
  bearer_pubkey: z.string(),
  bearer_owner_id: z.string(),
  issuer_owner_id: z.string(),
  amount_minor: z.bigint(),
  fee_minor: z.bigint(),
  currency: currencyEnum,
  gateway_transfer_id: z.string().nullable(),
  rail: z.enum(['pix', 'boleto']),
  reference_tx_id: z.string().uuid().nullable(),
});

/**
 * PENDING_PAYMENT redemptions and their transfers. Every one is handed over: a running workflow
 * ignores a status that is not final, and a workflow that has ended is restarted (`resume`),
 * which creates or finds its payout under the same idempotency key and then waits for it.
 */
const redemptionsPhase: GatewayPhase = {
  name: 'redemptions',
  async find(pool, gateway, ctx, after, limit) {
    const rows = await many(pool, pendingRedemptionRow, {
      name: 'reconcile-pending-redemptions',
      text: `SELECT r.id, r.token_id, r.bearer_pubkey, r.bearer_owner_id, r.issuer_owner_id, r.amount_minor, r.fee_minor, r.currency,
                    r.gateway_transfer_id, r.rail, (SELECT lt.id FROM ledger_transactions lt WHERE lt.id = r.request_tx_id) AS reference_tx_id
               FROM redemptions r
              WHERE r.status = 'PENDING_PAYMENT' AND ($1::uuid IS NULL OR r.id > $1)
              ORDER BY r.id LIMIT $2`,
      values: [parseUuidCursor(after), limit],
    });
    const handovers: Handover[] = [];
    for (const row of rows) {
      const { status: gatewayStatus, failReason, problem } =
        row.gateway_transfer_id === null
          ? { status: notCreatedStatus, failReason: null, problem: null }
          : await readRedemptionTransfer(gateway, row.gateway_transfer_id, row.rail);
      const verdict = transferVerdict(gatewayStatus);
      const state = await bucketState(pool, row.bearer_owner_id, 'PENDING', row.currency);
      handovers.push({
        key: `redemption/${row.id}`,
        subject: 'redemption',
        subjectId: row.id,
        workflowId: `redemption-${row.id}`,
        tokenId: row.token_id,
        bearerPubkey: row.bearer_pubkey,
        gatewayId: row.gateway_transfer_id,
        gatewayStatus,
        failReason,
        ownerVerdict: verdict,
        signalStatus: gatewayStatus,
        // Never booked by the run: a redemption whose workflow ended is restarted instead.
        bookVerdict: 'OPEN',
        cancelled: false,
        ownerId: row.bearer_owner_id,
        issuerOwnerId: row.issuer_owner_id,
        currency: row.currency,
        amountMinor: row.amount_minor.toString(),
        feeMinor: row.fee_minor.toString(),
        snapshotMinor: state.snapshot_minor.toString(),
        computedMinor: state.computed_minor.toString(),
        referenceTransactionId: row.reference_tx_id,
        problem,
        note: null,
      });
      ctx.progress();
    }
    const last = rows[rows.length - 1];
    return { scanned: rows.length, handovers, next: rows.length < limit || last === undefined ? null : last.id };
  },
};

// ---------------------------------------------------------------------------------------------
// Finding: charges
// ---------------------------------------------------------------------------------------------

const pendingChargeRow = z.object({
  id: z.string().uuid(),
  owner_id: z.string(),
  amount_minor: z.bigint(),
  currency: currencyEnum,
  gateway_payment_id: z.string().nullable(),
  /** The end of the due date plus the charge workflow's grace has passed. */
  stale: z.boolean(),
  /** Created longer ago than the gateway setup can take. */
  setup_over: z.boolean(),
  reference_tx_id: z.string().uuid().nullable(),
});
type PendingChargeRow = z.infer<typeof pendingChargeRow>;

/** The charge's gateway payment: by its recorded id, else by its reference (a create whose answer was lost). */
async function readPayment(
  gateway: GatewayPort,
  row: PendingChargeRow,
): Promise<{ paymentId: string | null; status: string; note: string | null; problem: string | null }> {
  try {
    if (row.gateway_payment_id !== null) {
      const payment = await gateway.getPayment(row.gateway_payment_id);
      return { paymentId: payment.id, status: payment.status, note: null, problem: null };
    }
    const page = await gateway.listPayments({ externalReference: row.id, limit: 10 });
    const found = page.items.find((payment) => payment.status !== 'DELETED') ?? page.items[0];
    if (found === undefined) return { paymentId: null, status: notCreatedStatus, note: null, problem: null };
    return { paymentId: found.id, status: found.status, note: `payment ${found.id} found at the gateway by the charge's reference`, problem: null };
  } catch (error) {
    if (!isGatewayRefusal(error)) throw error;
    return {
      paymentId: row.gateway_payment_id,
      status: 'UNKNOWN',
      note: null,
      problem: `the gateway refuses to answer for payment ${row.gateway_payment_id ?? `(reference ${row.id})`}: ${refusalText(error)}; review by hand`,
    };
  }
}

/**
 * Cancels a gateway charge (idempotent: a deleted charge answers the same again). The gateway
 * refuses to cancel a charge that is paid or refunded; its status is then read and returned.
 */
async function cancelPayment(gateway: GatewayPort, paymentId: string): Promise<{ status: string; cancelled: boolean; note: string | null }> {
  try {
    await gateway.cancelPayment(paymentId);
    return { status: 'DELETED', cancelled: true, note: null };
  } catch (error) {
    if (!isGatewayRefusal(error)) throw error;
    const payment = await gateway.getPayment(paymentId);
    return { status: payment.status, cancelled: false, note: `the gateway refused to cancel it (${refusalText(error)})` };
  }
}

function chargesPhase(name: string, mode: ChargeMode): GatewayPhase {
  return {
    name,
    async find(pool, gateway, ctx, after, limit) {
      const rows = await many(pool, pendingChargeRow, {
        name: 'reconcile-pending-charges',
        text: `SELECT c.id, c.owner_id, c.amount_minor, c.currency, c.gateway_payment_id,
                      ((c.due_date + 1)::timestamp AT TIME ZONE 'America/Sao_Paulo')
                        + make_interval(secs => (CASE WHEN c.billing_type = 'PIX' THEN $3 ELSE $4 END)::double precision / 1000)
                        < now() AS stale,
                      c.created_at + make_interval(secs => $5::double precision / 1000) < now() AS setup_over,
                      (SELECT lt.id FROM ledger_transactions lt WHERE lt.id = c.created_tx_id) AS reference_tx_id
                 FROM charges c
                WHERE c.status = 'PENDING' AND ($1::uuid IS NULL OR c.id > $1)
                ORDER BY c.id LIMIT $2`,
        values: [parseUuidCursor(after), limit, chargeStaleGraceMs.PIX, chargeStaleGraceMs.BOLETO, chargeSetupWindowMs],
      });
      const handovers: Handover[] = [];
      for (const row of rows) {
        const handover = await chargeHandover(pool, gateway, ctx, row, mode);
        if (handover !== null) handovers.push(handover);
        ctx.progress();
      }
      const last = rows[rows.length - 1];
      return { scanned: rows.length, handovers, next: rows.length < limit || last === undefined ? null : last.id };
    },
  };
}

/** What to tell the owner of one PENDING charge, or null when this tool leaves it alone. */
async function chargeHandover(
  pool: Pool,
  gateway: GatewayPort,
  ctx: ReconcileContext,
  row: PendingChargeRow,
  mode: ChargeMode,
): Promise<Handover | null> {
  const read = await readPayment(gateway, row);
  let status = read.status;
  let cancelled = false;
  const notes: string[] = read.note === null ? [] : [read.note];
  const notCreated = status === notCreatedStatus;
  // A charge without a gateway payment is still being set up by its workflow for a while.
  if (notCreated && !row.setup_over) return null;
  let ownerVerdict: Verdict = paymentVerdict(status);
  let signalStatus = status;
  // Nothing at the gateway after the setup window: nobody can ever pay it. Its running workflow
  // is left to its own setup and abandonment; one that ended gets the charge failed by the run.
  let bookVerdict: Verdict = notCreated ? 'FAIL' : ownerVerdict;
  if (read.problem === null && mode !== 'check') {
    const stale = row.stale || status === 'OVERDUE';
    if (mode === 'cancel-stale' && !stale) return null;
    if (!notCreated && ownerVerdict !== 'SETTLE' && status !== 'DELETED' && status !== 'REFUNDED') {
      if (ctx.dryRun) {
        notes.push('would be cancelled at the gateway');
        ownerVerdict = 'FAIL';
        bookVerdict = 'FAIL';
        signalStatus = 'DELETED';
      } else {
        const outcome = await cancelPayment(gateway, read.paymentId as string);
        status = outcome.status;
        cancelled = outcome.cancelled;
        if (outcome.note !== null) notes.push(outcome.note);
        ownerVerdict = paymentVerdict(status);
        bookVerdict = ownerVerdict;
        signalStatus = status;
      }
    }
  }
  const state = await bucketState(pool, row.owner_id, 'PENDING', row.currency);
  return {
    key: `charge/${row.id}`,
    subject: 'charge',
    subjectId: row.id,
    workflowId: `charge-${row.id}`,
    tokenId: null,
    bearerPubkey: null,
    gatewayId: read.paymentId,
    gatewayStatus: status,
    failReason: null,
    ownerVerdict,
    signalStatus,
    bookVerdict,
    cancelled,
    ownerId: row.owner_id,
    issuerOwnerId: null,
    currency: row.currency,
    amountMinor: row.amount_minor.toString(),
    feeMinor: '0',
    snapshotMinor: state.snapshot_minor.toString(),
    computedMinor: state.computed_minor.toString(),
    referenceTransactionId: row.reference_tx_id,
    problem: read.problem,
    note: notes.length === 0 ? null : notes.join('; '),
  };
}

// ---------------------------------------------------------------------------------------------
// The tools
// ---------------------------------------------------------------------------------------------

/** Every gateway tool's phases, in order (ledger tools: db/reconciliation.ts `phasesByTool`). */
const gatewayPhasesByTool: Record<GatewayReconcileTool, readonly GatewayPhase[]> = {
  'pending-payments': [redemptionsPhase, chargesPhase('charges', 'check')],
  'pending-deposits': [chargesPhase('charges', 'check')],
  'pending-transfers': [redemptionsPhase],
  'cancel-stale-charges': [chargesPhase('stale-charges', 'cancel-stale')],
  'cancel-all-pending-charges': [chargesPhase('pending-charges', 'cancel-all')],
};

/** Finds one batch of a gateway tool from `cursor` (`<phase>:<last id>`; null: the start). */
export async function prepareGatewayBatch(
  pool: Pool,
  gateway: GatewayPort,
  ctx: ReconcileContext & { tool: GatewayReconcileTool },
  cursor: string | null,
  limit: number,
): Promise<GatewayBatch> {
  assert(Number.isInteger(limit) && limit >= 1 && limit <= 1000, 'batch size within 1..1000');
  const phases = gatewayPhasesByTool[ctx.tool];
  const { index, phase, after } = phaseAt(phases, ctx.tool, cursor);
  const found = await phase.find(pool, gateway, ctx, after, limit);
  return { phase: phase.name, scanned: found.scanned, handovers: found.handovers, cursor: cursorAfter(phases, index, found.next) };
}

// ---------------------------------------------------------------------------------------------
// Items
// ---------------------------------------------------------------------------------------------

/** The owner's booking for an outcome: what the redemption's or charge's own code books. */
function ownerPosting(handover: Handover, outcome: 'SETTLE' | 'FAIL'): Entry[] {
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

function signalName(handover: Handover): string {
  return handover.subject === 'redemption' ? 'transferEvent' : 'paymentEvent';
}

function chargeBookingKey(handover: Handover, verdict: 'SETTLE' | 'FAIL'): string {
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

/** The entries a dry run expects the handover to end in (null: none yet). */
function expectedVerdict(handover: Handover, dispatch: Dispatch): Verdict {
  return dispatch === 'OWNER_ENDED' ? handover.bookVerdict : handover.ownerVerdict;
}

/**
 * A dry run of a gateway tool, inside the caller's request: finds every batch (the cancel tools
 * cancel nothing), asks Temporal whether each owner workflow runs (`isRunning`), and records
 * what a real run would do as PLANNED items (SKIPPED where nothing would be booked, FAILED where
 * the gateway refuses to answer). Changes nothing in the ledger, the settlement tables or the gateway.
 */
export async function runDryGatewayReconciliation(
  pool: Pool,
  gateway: GatewayPort,
  isRunning: (workflowId: string) => Promise<boolean>,
  input: DryRunInput & { tool: GatewayReconcileTool },
  limits?: DryRunLimits,
): Promise<ReconcileReport> {
  return runDryBatches(
    pool,
    input,
    async (ctx, cursor) => {
      const batch = await prepareGatewayBatch(pool, gateway, { ...ctx, tool: input.tool }, cursor, input.batchSize);
      const items: ItemRecord[] = [];
      for (const handover of batch.handovers) {
        if (handover.problem !== null) {
          items.push(problemItem(handover));
          continue;
        }
        const running = await isRunning(handover.workflowId);
        const dispatch: Dispatch = running ? 'SIGNALLED' : handover.subject === 'redemption' ? 'RESTARTED' : 'OWNER_ENDED';
        if (!needsItem(handover, dispatch)) continue;
        const verdict = expectedVerdict(handover, dispatch);
        const entries = verdict === 'OPEN' ? null : ownerPosting(handover, verdict);
        items.push(
          itemOf(handover, {
            status: verdict === 'OPEN' && dispatch === 'OWNER_ENDED' ? 'SKIPPED' : 'PLANNED',
            entries,
            snapshotAfterMinor: verdict === 'OPEN' ? null : BigInt(handover.snapshotMinor) - BigInt(handover.amountMinor),
            transactionId: null,
            detail: `${gatewayFacts(handover)}; ${plannedText(handover, dispatch)}`,
          }),
        );
      }
      await recordItems(pool, input.runId, items);
      return { scanned: batch.scanned, found: items.length, cursor: batch.cursor };
    },
    limits,
  );
}

function problemItem(handover: Handover): ItemRecord {
  return itemOf(handover, {
    status: 'FAILED',
    entries: null,
    snapshotAfterMinor: BigInt(handover.snapshotMinor),
    transactionId: null,
    detail: `${gatewayFacts(handover)}; ${handover.problem ?? ''}`,
  });
}

// ---------------------------------------------------------------------------------------------
// Recording what the owners did (and booking for charges whose workflow has ended)
// ---------------------------------------------------------------------------------------------

const finalRow = z.object({
  id: z.string().uuid(),
  status: z.string(),
  /** The settlement or failure booking, when the ledger holds it. */
  tx_id: z.string().uuid().nullable(),
});
type FinalRow = z.infer<typeof finalRow>;

/** The rows' status now, with the booking of a final one. */
async function readFinal(db: Queryable, subject: 'redemption' | 'charge', ids: readonly string[]): Promise<Map<string, FinalRow>> {
  if (ids.length === 0) return new Map();
  const table = subject === 'redemption' ? 'redemptions' : 'charges';
  const rows = await many(db, finalRow, {
    name: `reconcile-final-${table}`,
    text: `SELECT s.id, s.status,
                  (SELECT lt.id FROM ledger_transactions lt
                    WHERE lt.id = CASE s.status WHEN 'SETTLED' THEN s.settle_tx_id WHEN 'FAILED' THEN s.fail_tx_id END) AS tx_id
             FROM ${table} s WHERE s.id = ANY ($1::uuid[])`,
    values: [ids],
  });
  return new Map(rows.map((row) => [row.id, row]));
}

function isFinalStatus(status: string): boolean {
  return status === 'SETTLED' || status === 'FAILED';
}

/**
 * The outcome of a charge whose workflow has ended, booked through the charge's own guarded
 * transition (db/charges.ts finishCharge: `charge:<id>:settle` or `charge:<id>:fail`). A failure
 * of a charge the gateway could still take payment for is cancelled there first, as the charge
 * workflow does; a charge paid meanwhile is settled instead.
 */
async function bookEndedCharge(
  pool: Pool,
  gateway: GatewayPort,
  ctx: ReconcileContext,
  handover: Handover,
): Promise<{ verdict: 'SETTLE' | 'FAIL'; note: string | null }> {
  let verdict = handover.bookVerdict;
  assert(verdict !== 'OPEN', 'only a decided charge is booked');
  let gatewayStatus = handover.gatewayStatus;
  let note: string | null = null;
  const cancellable = gatewayStatus !== 'DELETED' && gatewayStatus !== 'REFUNDED' && gatewayStatus !== notCreatedStatus;
  if (verdict === 'FAIL' && handover.gatewayId !== null && !handover.cancelled && cancellable) {
    const outcome = await cancelPayment(gateway, handover.gatewayId);
    gatewayStatus = outcome.status;
    note = outcome.cancelled ? `cancelled the ${handover.gatewayStatus} gateway payment first` : outcome.note;
    const after = paymentVerdict(gatewayStatus);
    verdict = after === 'SETTLE' ? 'SETTLE' : 'FAIL';
  }
  if (verdict === 'SETTLE') {
    await finishCharge(pool, handover.subjectId, { status: 'SETTLED', gatewayStatus });
  } else {
    const reason =
      gatewayStatus === notCreatedStatus
        ? `reconcile ${ctx.tool}: no gateway payment was ever created`
        : `reconcile ${ctx.tool}: the gateway charge is ${gatewayStatus}`;
    await finishCharge(pool, handover.subjectId, {
      status: 'FAILED',
      gatewayStatus: gatewayStatus === notCreatedStatus ? null : gatewayStatus,
      reason,
    });
  }
  return { verdict, note };
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
 * Records a batch's items after the workflow handed it over: books ended charges' outcomes,
 * waits up to `waitMs` for the owners to book theirs (polling their rows), and records one item
 * each: FIXED with the owner's booking, SKIPPED when the owner has not finished yet (it books
 * when it does) or nothing can be booked yet, FAILED when the gateway or the ledger refused.
 * Items are unique per run and key, so a retried call records nothing twice.
 */
export async function settleGatewayBatch(
  pool: Pool,
  gateway: GatewayPort,
  ctx: ReconcileContext,
  dispatched: readonly DispatchedHandover[],
  options: { waitMs: number; pollMs: number },
): Promise<{ found: number }> {
  const items: ItemRecord[] = [];
  const waiting: { entry: DispatchedHandover; note: string | null }[] = [];
  for (const entry of dispatched) {
    const { handover, dispatch } = entry;
    if (handover.problem !== null || dispatch === 'NONE') {
      items.push(problemItem(handover));
      continue;
    }
    if (!needsItem(handover, dispatch)) continue;
    if (dispatch !== 'OWNER_ENDED') {
      waiting.push({ entry, note: null });
      continue;
    }
    if (handover.bookVerdict === 'OPEN') {
      items.push(
        itemOf(handover, {
          status: 'SKIPPED',
          entries: null,
          snapshotAfterMinor: BigInt(handover.snapshotMinor),
          transactionId: null,
          detail: `${gatewayFacts(handover)}; ${plannedText(handover, dispatch)}`,
        }),
      );
      continue;
    }
    try {
      const booked = await bookEndedCharge(pool, gateway, ctx, handover);
      waiting.push({ entry, note: `booked ${chargeBookingKey(handover, booked.verdict)} through the charge's own finishCharge${booked.note === null ? '' : ` (${booked.note})`}` });
    } catch (error) {
      if (!(error instanceof DomainError)) throw error;
      items.push(
        itemOf(handover, {
          status: 'FAILED',
          entries: ownerPosting(handover, handover.bookVerdict),
          snapshotAfterMinor: BigInt(handover.snapshotMinor),
          transactionId: null,
          detail: `${gatewayFacts(handover)}; ${handedText(entry)}; booking refused: ${errorDetail(error)}`,
        }),
      );
    }
    ctx.progress();
  }

  // Wait (bounded) until every handed-over row is final, then record what its owner booked.
  const deadline = Date.now() + options.waitMs;
  let finals = new Map<string, FinalRow>();
  for (let round = 0; round < 100_000; round += 1) {
    const redemptions = await readFinal(
      pool,
      'redemption',
      waiting.filter((w) => w.entry.handover.subject === 'redemption').map((w) => w.entry.handover.subjectId),
    );
    const charges = await readFinal(
      pool,
      'charge',
      waiting.filter((w) => w.entry.handover.subject === 'charge').map((w) => w.entry.handover.subjectId),
    );
    finals = new Map([...redemptions, ...charges]);
    const open = waiting.filter((w) => !isFinalStatus(finals.get(w.entry.handover.subjectId)?.status ?? 'PENDING'));
    if (open.length === 0 || Date.now() >= deadline) break;
    ctx.progress();
    await new Promise((resolve) => setTimeout(resolve, options.pollMs));
  }
  for (const { entry, note } of waiting) {
    const { handover } = entry;
    const final = finals.get(handover.subjectId);
    const facts = `${gatewayFacts(handover)}; ${handedText(entry)}${note === null ? '' : `; ${note}`}`;
    const after = await bucketState(pool, handover.ownerId, 'PENDING', handover.currency);
    if (final === undefined || !isFinalStatus(final.status)) {
      items.push(
        itemOf(handover, {
          status: 'SKIPPED',
          entries: null,
          snapshotAfterMinor: after.snapshot_minor,
          transactionId: null,
          detail: `${facts}; still ${final?.status ?? 'missing'} after ${Math.round(options.waitMs / 1000)} s: its workflow books when the gateway answers`,
        }),
      );
      continue;
    }
    const outcome = final.status === 'SETTLED' ? 'SETTLE' : 'FAIL';
    if (final.tx_id === null) {
      items.push(
        itemOf(handover, {
          status: 'SKIPPED',
          entries: ownerPosting(handover, outcome),
          snapshotAfterMinor: after.snapshot_minor,
          transactionId: null,
          detail: `${facts}; ${final.status} but its booking is not in the ledger: run fix-failed-pending or fix-charge-settlements`,
        }),
      );
      continue;
    }
    items.push(
      itemOf(handover, {
        status: 'FIXED',
        entries: ownerPosting(handover, outcome),
        snapshotAfterMinor: after.snapshot_minor,
        transactionId: final.tx_id,
        detail: `${facts}; ${final.status}`,
      }),
    );
  }
  await recordItems(pool, ctx.runId, items);
  return { found: items.length };
}
