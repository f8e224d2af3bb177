import { assert, DomainError } from '../src/errors.ts';
import { batchFrom, nextKey, uuidCursor } from '../src/reconciliation/phases.ts';
import {
  bookedNote,
  cancellable,
  chargeHandover,
  chargeStep,
  isFinalStatus,
  isGatewayRefusal,
  notCreatedStatus,
  paymentVerdict,
  plannedItem,
  problemItem,
  redemptionHandover,
  refusalText,
  refusedBookingItem,
  settledItem,
  settleStep,
  transferNotCreated,
  undecidedItem,
  type ChargeCancel,
  type ChargeMode,
  type DispatchedHandover,
  type GatewayPort,
  type Handover,
  type PaymentRead,
  type PendingCharge,
  type TransferRead,
} from '../src/reconciliation/gateway.ts';
import type { ItemRecord } from '../src/reconciliation/items.ts';
import type { GatewayReconcileTool, ReconcileReport } from '../src/reconciliation/tools.ts';
import type { Pool } from '../db/pool.ts';
import { runDryBatches, type DryRunInput, type DryRunLimits, type ReconcileContext } from '../db/reconciliation/engine.ts';
import { finishEndedCharge, pendingCharges, pendingRedemptions, readFinal } from '../db/reconciliation/gateway.ts';
import { recordItems } from '../db/reconciliation/runs.ts';
import { bucketState } from '../db/reconciliation/shared.ts';
import { workflowIds } from '../workflows/ids.ts';

/**
 * The gateway reconcile tools (docs/reconciliation.md, "Gateway tools"), with plain arguments:
 * called by the reconciliation activities (activities/reconciliation.ts) and by the admin
 * route's dry run. A batch has three steps:
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
 * Nothing is booked here but through `finishCharge` (db/reconciliation/gateway.ts): every
 * settlement or failure is the owner's booking under the owner's idempotency key
 * (`redemption:<id>:settle|fail`, `charge:<id>:settle|fail`), so nothing can be booked twice
 * whoever gets there first. The SQL is db/reconciliation/gateway.ts; the rules (verdicts, what
 * each item says) are src/reconciliation/gateway.ts.
 */

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

// ---------------------------------------------------------------------------------------------
// Reading the gateway
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
): Promise<TransferRead> {
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

/** The charge's gateway payment: by its recorded id, else by its reference (a create whose answer was lost). */
async function readPayment(gateway: GatewayPort, charge: Pick<PendingCharge, 'id' | 'gateway_payment_id'>): Promise<PaymentRead> {
  try {
    if (charge.gateway_payment_id !== null) {
      const payment = await gateway.getPayment(charge.gateway_payment_id);
      return { paymentId: payment.id, status: payment.status, note: null, problem: null };
    }
    const page = await gateway.listPayments({ externalReference: charge.id, limit: 10 });
    const found = page.items.find((payment) => payment.status !== 'DELETED') ?? page.items[0];
    if (found === undefined) return { paymentId: null, status: notCreatedStatus, note: null, problem: null };
    return { paymentId: found.id, status: found.status, note: `payment ${found.id} found at the gateway by the charge's reference`, problem: null };
  } catch (error) {
    if (!isGatewayRefusal(error)) throw error;
    return {
      paymentId: charge.gateway_payment_id,
      status: 'UNKNOWN',
      note: null,
      problem: `the gateway refuses to answer for payment ${charge.gateway_payment_id ?? `(reference ${charge.id})`}: ${refusalText(error)}; review by hand`,
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

// ---------------------------------------------------------------------------------------------
// Finding
// ---------------------------------------------------------------------------------------------

/**
 * PENDING_PAYMENT redemptions and their transfers. Every one is handed over: a running workflow
 * ignores a status that is not final, and a workflow that has ended is restarted (`resume`),
 * which finds its payout at the gateway by its reference (the redemption id) before creating one, and then waits for it.
 */
const redemptionsPhase: GatewayPhase = {
  name: 'redemptions',
  async find(pool, gateway, ctx, after, limit) {
    const rows = await pendingRedemptions(pool, uuidCursor(after), limit);
    const handovers: Handover[] = [];
    for (const row of rows) {
      const read = row.gateway_transfer_id === null ? transferNotCreated : await readRedemptionTransfer(gateway, row.gateway_transfer_id, row.rail);
      const pending = await bucketState(pool, row.bearer_owner_id, 'PENDING', row.currency);
      handovers.push(redemptionHandover(row, workflowIds.redemption(row.id), read, pending));
      ctx.progress();
    }
    return { scanned: rows.length, handovers, next: nextKey(rows, limit, (row) => row.id) };
  },
};

/** PENDING charges and their payments: handed over as they are (check), or cancelled first (the cancel tools). */
function chargesPhase(name: string, mode: ChargeMode): GatewayPhase {
  return {
    name,
    async find(pool, gateway, ctx, after, limit) {
      const rows = await pendingCharges(pool, uuidCursor(after), limit);
      const handovers: Handover[] = [];
      for (const row of rows) {
        const read = await readPayment(gateway, row);
        const step = chargeStep(mode, row, read);
        if (step !== 'leave') {
          let cancel: ChargeCancel | null = null;
          if (step === 'cancel') cancel = ctx.dryRun ? { kind: 'would' } : { kind: 'done', ...(await cancelPayment(gateway, read.paymentId as string)) };
          const pending = await bucketState(pool, row.owner_id, 'PENDING', row.currency);
          handovers.push(chargeHandover(row, workflowIds.charge(row.id), read, cancel, pending));
        }
        ctx.progress();
      }
      return { scanned: rows.length, handovers, next: nextKey(rows, limit, (row) => row.id) };
    },
  };
}

/** Every gateway tool's phases, in order (ledger tools: db/reconciliation/phases/index.ts `phasesByTool`). */
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
  const { phase, result, cursor: next } = await batchFrom(gatewayPhasesByTool[ctx.tool], ctx.tool, cursor, limit, (current, after) =>
    current.find(pool, gateway, ctx, after, limit),
  );
  return { phase, scanned: result.scanned, handovers: result.handovers, cursor: next };
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
        const item = handover.problem !== null ? problemItem(handover) : plannedItem(handover, await isRunning(handover.workflowId));
        if (item !== null) items.push(item);
      }
      await recordItems(pool, input.runId, items);
      return { scanned: batch.scanned, found: items.length, cursor: batch.cursor };
    },
    limits,
  );
}

// ---------------------------------------------------------------------------------------------
// Recording what the owners did (and booking for charges whose workflow has ended)
// ---------------------------------------------------------------------------------------------

/**
 * The outcome of a charge whose workflow has ended, booked through the charge's own guarded
 * transition (db/charges.ts finishCharge). A failure of a charge the gateway could still take
 * payment for is cancelled there first, as the charge workflow does; a charge paid meanwhile is
 * settled instead.
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
  if (verdict === 'FAIL' && handover.gatewayId !== null && !handover.cancelled && cancellable(gatewayStatus)) {
    const outcome = await cancelPayment(gateway, handover.gatewayId);
    gatewayStatus = outcome.status;
    note = outcome.cancelled ? `cancelled the ${handover.gatewayStatus} gateway payment first` : outcome.note;
    verdict = paymentVerdict(gatewayStatus) === 'SETTLE' ? 'SETTLE' : 'FAIL';
  }
  await finishEndedCharge(pool, handover.subjectId, verdict, gatewayStatus, ctx.tool);
  return { verdict, note };
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
    const step = settleStep(entry);
    if (step === 'problem') items.push(problemItem(entry.handover));
    if (step === 'wait') waiting.push({ entry, note: null });
    if (step === 'open') items.push(undecidedItem(entry));
    if (step !== 'book') continue;
    try {
      const booked = await bookEndedCharge(pool, gateway, ctx, entry.handover);
      waiting.push({ entry, note: bookedNote(entry.handover, booked) });
    } catch (error) {
      if (!(error instanceof DomainError)) throw error;
      items.push(refusedBookingItem(entry, error));
    }
    ctx.progress();
  }

  // Wait (bounded) until every handed-over row is final, then record what its owner booked.
  const deadline = Date.now() + options.waitMs;
  const idsOf = (subject: Handover['subject']) =>
    waiting.filter((w) => w.entry.handover.subject === subject).map((w) => w.entry.handover.subjectId);
  let finals = new Map<string, { status: string; txId: string | null }>();
  for (let round = 0; round < 100_000; round += 1) {
    finals = new Map([...(await readFinal(pool, 'redemption', idsOf('redemption'))), ...(await readFinal(pool, 'charge', idsOf('charge')))]);
    const open = waiting.filter((w) => !isFinalStatus(finals.get(w.entry.handover.subjectId)?.status ?? 'PENDING'));
    if (open.length === 0 || Date.now() >= deadline) break;
    ctx.progress();
    await new Promise((resolve) => setTimeout(resolve, options.pollMs));
  }
  for (const { entry, note } of waiting) {
    const { handover } = entry;
    const after = await bucketState(pool, handover.ownerId, 'PENDING', handover.currency);
    items.push(settledItem(entry, note, finals.get(handover.subjectId) ?? null, after.snapshot_minor, options.waitMs));
  }
  await recordItems(pool, ctx.runId, items);
  return { found: items.length };
}
