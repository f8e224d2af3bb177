import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import { findChargeForPayment, getCharge, type ChargeRow } from '../db/charges.ts';
import {
  chargesPaidTwice,
  forgetAuditObjects,
  paidPaymentsOfFailedCharges,
  paidTransfersOfFailedRedemptions,
  paymentsOfCharge,
  paymentsWithOtherAmount,
  plcsMaybePaidTwice,
  readPaidFailedFacts,
  repairPaidFailedRedemption,
  runStartedAt,
  settledChargesWithoutPaidPayment,
  settledRedemptionsWithoutPaidTransfer,
  storeAuditObjects,
  transfersOfPlc,
  transfersWithOtherAmount,
  unattributedPaidPayments,
  unattributedPaidTransfers,
  type AuditObject,
  type CandidatePage,
} from '../db/gateway-audit.ts';
import type { Pool } from '../db/pool.ts';
import {
  runDryBatches,
  type BatchResult,
  type DryRunInput,
  type DryRunLimits,
  type PhaseBatch,
  type ReconcileContext,
} from '../db/reconciliation/engine.ts';
import { itemRecorded, recordItems } from '../db/reconciliation/runs.ts';
import { findRedemptionForTransfer, getRedemption, type RedemptionRow } from '../db/redemptions.ts';
import { raiseRiskFlag } from '../db/risk-flags.ts';
import {
  formatWireDecimal,
  isGatewayError,
  paymentOutcome,
  payoutOutcome,
  transferPageLimitMax,
  type GatewayCallOptions,
  type GatewayClient,
  type GatewayPayment,
  type GatewayBillPayment,
  type GatewayTransfer,
} from '../gateway/index.ts';
import { DomainError } from '../src/errors.ts';
import type { Currency } from '../src/money/currency.ts';
import {
  auditFindings,
  auditLookbackDaysDefault,
  auditWindowStart,
  chargeFinding,
  findingFlagKey,
  findingKey,
  paidFailedRepair,
  redemptionFinding,
  type AuditFinding,
} from '../src/reconciliation/gateway-audit.ts';
import { errorDetail, type ItemRecord } from '../src/reconciliation/items.ts';
import { batchFrom, offsetCursor } from '../src/reconciliation/phases.ts';
import type { ReconcileReport } from '../src/reconciliation/tools.ts';
import { workflowIds } from '../workflows/ids.ts';
import { plcRedemptionFinishedSignal } from '../workflows/plc-messages.ts';

/**
 * The gateway audit (`gateway-audit`, docs/reconciliation.md "The gateway audit"), with plain
 * arguments: its batches run in the reconciliation activity `reconcileBatch`
 * (activities/reconciliation.ts), its dry runs in the admin route's request. It pages through
 * the gateway's own lists of transfers and payments of the run's window and joins them with our
 * redemptions, charges and ledger. Its phases, each a bounded batch resumable from its cursor:
 *
 * 1. `transfers`, `payments`: one page of the gateway's list each batch (offset paging, 100 a
 *    page), stored as the run's scratch with what the adapter says each status means
 *    (`payoutOutcome`, `paymentOutcome`);
 * 2. one phase per kind of mismatch (src/reconciliation/gateway-audit.ts `auditFindings`): SQL
 *    finds candidates, and each is read again, from the gateway and from our rows, before it
 *    becomes a finding: an item of kind GATEWAY_FINDING with the evidence of both sides;
 * 3. `forget`: the scratch rows are deleted.
 *
 * A dry run reports each finding as PLANNED, saying what a real run would do. A real run repairs
 * the one mismatch whose repair is safe and documented (a FAILED redemption whose own transfer
 * the gateway paid out, its PLC untouched since: the failure reversed, the settlement booked, the
 * PLC REDEEMED: FIXED), and raises every other finding for a person as a GATEWAY_AUDIT_MISMATCH
 * risk flag (SKIPPED, the flag's id in the evidence). Nothing is reported twice in a run; a
 * finding that persists is one flag seen again by every run.
 */

export interface GatewayAuditDeps {
  pool: Pool;
  gateway: Pick<GatewayClient, 'listTransfers' | 'listBillPayments' | 'listPayments' | 'getTransfer' | 'getBillPayment' | 'getPayment'>;
  /** Tells a PLC's workflow that a repaired redemption settled (best effort: its expiry finds the PLC REDEEMED anyway). */
  temporal?: Pick<Client, 'workflow'> | undefined;
}

/** What the audit reads at most per list and run: the window is the real bound, this one a backstop. */
export const auditListedMax = 1_000_000;

interface AuditContext extends ReconcileContext {
  /** Gateway resources created on or after this date (YYYY-MM-DD). */
  since: string;
  /** The run's start: our rows created later may have gateway resources the listing did not see. */
  startedAt: Date;
}

interface AuditPhase {
  name: string;
  batch(deps: GatewayAuditDeps, ctx: AuditContext, after: string | null, limit: number): Promise<PhaseBatch>;
}

interface Finding {
  finding: AuditFinding;
  /** What the finding is about: a redemption, charge, transfer, payment or PLC id. */
  subject: string;
  tokenId: string | null;
  ownerId: string | null;
  currency: Currency;
  amountMinor: bigint | null;
  evidence: Record<string, unknown>;
  /** The facts, in a sentence. */
  facts: string;
  /** FAILED_REDEMPTION_PAID: what the repair needs. */
  repair?: { redemption: RedemptionRow; transfer: Payout };
}

/**
 * A payout at the gateway: a Pix transfer, or a bill payment (a boleto redemption's payout). Both
 * share one status vocabulary and are audited alike; the run's scratch holds both as `transfer`.
 */
type Payout = GatewayTransfer | GatewayBillPayment;

function payoutDestination(payout: Payout): string {
  return 'identificationField' in payout ? `boleto ${payout.identificationField}` : (payout.pixAddressKey ?? '?');
}

// ---------------------------------------------------------------------------------------------
// Reading the gateway
// ---------------------------------------------------------------------------------------------

/** Each gateway call is bounded by the client's own timeout; a batch is retried by its activity. */
function callOptions(): GatewayCallOptions {
  return {};
}

/**
 * The gateway's payout of this id: its transfer, else its bill payment (the listing holds both
 * under one kind; ids are unique across them), or null when it knows neither (a refusal);
 * anything retryable is thrown.
 */
async function readTransfer(deps: GatewayAuditDeps, id: string): Promise<Payout | null> {
  try {
    return await deps.gateway.getTransfer(id, callOptions());
  } catch (error) {
    if (!isGatewayError(error) || error.retryable) throw error;
  }
  try {
    return await deps.gateway.getBillPayment(id, callOptions());
  } catch (error) {
    if (isGatewayError(error) && !error.retryable) return null;
    throw error;
  }
}

async function readPayment(deps: GatewayAuditDeps, id: string): Promise<GatewayPayment | null> {
  try {
    return await deps.gateway.getPayment(id, callOptions());
  } catch (error) {
    if (isGatewayError(error) && !error.retryable) return null;
    throw error;
  }
}

function transferEvidence(transfer: Payout | null, id: string): Record<string, unknown> {
  if (transfer === null) return { id, known: false };
  if ('identificationField' in transfer) {
    return {
      id: transfer.id,
      kind: 'bill_payment',
      status: transfer.status,
      amount: formatWireDecimal(transfer.amountMinor),
      external_reference: transfer.externalReference,
      identification_field: transfer.identificationField,
      date_created: transfer.dateCreated,
      payment_date: transfer.paymentDate,
      fail_reason: transfer.failReason,
    };
  }
  return {
    id: transfer.id,
    status: transfer.status,
    amount: formatWireDecimal(transfer.amountMinor),
    external_reference: transfer.externalReference,
    pix_key: transfer.pixAddressKey,
    date_created: transfer.dateCreated,
    effective_date: transfer.effectiveDate,
    end_to_end_id: transfer.endToEndIdentifier,
    fail_reason: transfer.failReason,
  };
}

function paymentEvidence(payment: GatewayPayment | null, id: string): Record<string, unknown> {
  if (payment === null) return { id, known: false };
  return {
    id: payment.id,
    status: payment.status,
    amount: formatWireDecimal(payment.amountMinor),
    external_reference: payment.externalReference,
    billing_type: payment.billingType,
    date_created: payment.dateCreated,
    payment_date: payment.paymentDate,
  };
}

function redemptionEvidence(row: RedemptionRow): Record<string, unknown> {
  return {
    id: row.id,
    token_id: row.token_id,
    status: row.status,
    amount: formatWireDecimal(row.amount_minor),
    fee: formatWireDecimal(row.fee_minor),
    gateway_transfer_id: row.gateway_transfer_id,
    gateway_status: row.gateway_status,
    failure_reason: row.failure_reason,
    destination: row.destination,
    settle_tx_id: row.settle_tx_id,
    fail_tx_id: row.fail_tx_id,
    created_at: row.created_at.toISOString(),
  };
}

function chargeEvidence(row: ChargeRow): Record<string, unknown> {
  return {
    id: row.id,
    owner_id: row.owner_id,
    status: row.status,
    amount: formatWireDecimal(row.amount_minor),
    gateway_payment_id: row.gateway_payment_id,
    gateway_status: row.gateway_status,
    failure_reason: row.failure_reason,
    settle_tx_id: row.settle_tx_id,
    fail_tx_id: row.fail_tx_id,
    created_at: row.created_at.toISOString(),
  };
}

// ---------------------------------------------------------------------------------------------
// Phases
// ---------------------------------------------------------------------------------------------

function listingPhase(kind: 'transfer' | 'bill' | 'payment'): AuditPhase {
  return {
    name: kind === 'transfer' ? 'transfers' : kind === 'bill' ? 'bill-payments' : 'payments',
    async batch(deps, ctx, after, limit) {
      const offset = offsetCursor(after);
      if (offset >= auditListedMax) return { scanned: 0, found: 0, next: null };
      const page = { dateCreatedFrom: ctx.since, limit: Math.min(limit, transferPageLimitMax), offset };
      const objects: AuditObject[] = [];
      let hasMore: boolean;
      if (kind === 'transfer' || kind === 'bill') {
        // Bill payments are payouts too (boleto redemptions): kept as `transfer` in the scratch.
        const listed = kind === 'transfer' ? await deps.gateway.listTransfers(page, callOptions()) : await deps.gateway.listBillPayments(page, callOptions());
        hasMore = listed.hasMore;
        for (const t of listed.items) {
          objects.push({
            kind: 'transfer',
            gatewayId: t.id,
            status: t.status,
            outcome: payoutOutcome(t.status),
            amountMinor: t.amountMinor,
            externalReference: t.externalReference,
            dateCreated: t.dateCreated ?? '',
          });
        }
      } else {
        const listed = await deps.gateway.listPayments(page, callOptions());
        hasMore = listed.hasMore;
        for (const p of listed.items) {
          objects.push({
            kind: 'payment',
            gatewayId: p.id,
            status: p.status,
            outcome: paymentOutcome(p.status),
            amountMinor: p.amountMinor,
            externalReference: p.externalReference,
            dateCreated: p.dateCreated,
          });
        }
      }
      await storeAuditObjects(deps.pool, ctx.runId, objects);
      ctx.progress();
      return { scanned: objects.length, found: 0, next: hasMore && objects.length > 0 ? String(offset + objects.length) : null };
    },
  };
}

/**
 * A phase over one kind of mismatch: `candidates` pages through the run's SQL candidates;
 * `confirm` reads each again from the gateway and our rows and says what, if anything, it is.
 */
function findingPhase(
  name: string,
  candidates: (deps: GatewayAuditDeps, ctx: AuditContext, page: CandidatePage) => Promise<string[]>,
  confirm: (deps: GatewayAuditDeps, ctx: AuditContext, key: string) => Promise<Finding | null>,
): AuditPhase {
  return {
    name,
    async batch(deps, ctx, after, limit) {
      const keys = await candidates(deps, ctx, { runId: ctx.runId, after, limit });
      let found = 0;
      for (const key of keys) {
        const finding = await confirm(deps, ctx, key);
        ctx.progress();
        if (finding === null) continue;
        if (await report(deps, ctx, finding)) found += 1;
      }
      const last = keys[keys.length - 1];
      return { scanned: keys.length, found, next: keys.length < limit || last === undefined ? null : last };
    },
  };
}

const failedRedemptionsPaid = findingPhase(
  'failed-redemptions-paid',
  (deps, _ctx, page) => paidTransfersOfFailedRedemptions(deps.pool, page),
  async (deps, _ctx, transferId) => {
    const transfer = await readTransfer(deps, transferId);
    if (transfer === null || payoutOutcome(transfer.status) !== 'paid') return null;
    const redemption = await findRedemptionForTransfer(deps.pool, transfer.id, transfer.externalReference);
    if (redemption === null || redemptionFinding(redemption.status, 'paid') !== 'FAILED_REDEMPTION_PAID') return null;
    return {
      finding: 'FAILED_REDEMPTION_PAID',
      subject: redemption.id,
      tokenId: redemption.token_id,
      ownerId: redemption.issuer_owner_id,
      currency: redemption.currency,
      amountMinor: transfer.amountMinor,
      evidence: { transfer: transferEvidence(transfer, transferId), redemption: redemptionEvidence(redemption) },
      facts:
        `gateway transfer ${transfer.id} ${transfer.status} (${formatWireDecimal(transfer.amountMinor)}) ` +
        `for redemption ${redemption.id} FAILED (${redemption.failure_reason ?? 'no reason'}) of PLC ${redemption.token_id}`,
      repair: { redemption, transfer },
    };
  },
);

const settledRedemptionsUnpaid = findingPhase(
  'settled-redemptions-unpaid',
  (deps, ctx, page) => settledRedemptionsWithoutPaidTransfer(deps.pool, { ...page, since: ctx.since, before: ctx.startedAt }),
  async (deps, _ctx, redemptionId) => {
    const redemption = await getRedemption(deps.pool, redemptionId);
    if (redemption === null) return null;
    const transfer = redemption.gateway_transfer_id === null ? null : await readTransfer(deps, redemption.gateway_transfer_id);
    if (redemptionFinding(redemption.status, transfer === null ? null : payoutOutcome(transfer.status)) !== 'SETTLED_REDEMPTION_UNPAID') return null;
    const at = redemption.gateway_transfer_id === null ? 'no gateway transfer recorded' : `gateway transfer ${redemption.gateway_transfer_id} ${transfer?.status ?? 'unknown to the gateway'}`;
    return {
      finding: 'SETTLED_REDEMPTION_UNPAID',
      subject: redemption.id,
      tokenId: redemption.token_id,
      ownerId: redemption.bearer_owner_id,
      currency: redemption.currency,
      amountMinor: redemption.amount_minor - redemption.fee_minor,
      evidence: { transfer: transferEvidence(transfer, redemption.gateway_transfer_id ?? ''), redemption: redemptionEvidence(redemption) },
      facts: `redemption ${redemption.id} SETTLED (settlement ${redemption.settle_tx_id ?? '?'}) but ${at}`,
    };
  },
);

const plcsPaidTwice = findingPhase(
  'plcs-paid-twice',
  (deps, _ctx, page) => plcsMaybePaidTwice(deps.pool, page),
  async (deps, ctx, tokenId) => {
    const pairs = await transfersOfPlc(deps.pool, ctx.runId, tokenId);
    const seen = new Set<string>();
    const paid: { transfer: Payout; redemptionId: string }[] = [];
    for (const pair of pairs) {
      if (seen.has(pair.transferId)) continue;
      seen.add(pair.transferId);
      const transfer = await readTransfer(deps, pair.transferId);
      ctx.progress();
      if (transfer !== null && payoutOutcome(transfer.status) === 'paid') paid.push({ transfer, redemptionId: pair.redemptionId });
    }
    if (paid.length < 2) return null;
    const totalMinor = paid.reduce((sum, p) => sum + p.transfer.amountMinor, 0n);
    return {
      finding: 'PLC_PAID_TWICE',
      subject: tokenId,
      tokenId,
      ownerId: null,
      currency: 'BRL',
      amountMinor: totalMinor,
      evidence: { token_id: tokenId, paid: paid.map((p) => ({ redemption_id: p.redemptionId, transfer: transferEvidence(p.transfer, p.transfer.id) })) },
      facts: `PLC ${tokenId} paid out ${paid.length} times: ${paid.map((p) => `transfer ${p.transfer.id} (${formatWireDecimal(p.transfer.amountMinor)}, redemption ${p.redemptionId})`).join(', ')}`,
    };
  },
);

const unknownPayouts = findingPhase(
  'unknown-payouts',
  (deps, _ctx, page) => unattributedPaidTransfers(deps.pool, page),
  async (deps, _ctx, transferId) => {
    const transfer = await readTransfer(deps, transferId);
    if (transfer === null || payoutOutcome(transfer.status) !== 'paid') return null;
    if ((await findRedemptionForTransfer(deps.pool, transfer.id, transfer.externalReference)) !== null) return null;
    return {
      finding: 'UNKNOWN_PAYOUT',
      subject: transfer.id,
      tokenId: null,
      ownerId: null,
      currency: 'BRL',
      amountMinor: transfer.amountMinor,
      evidence: { transfer: transferEvidence(transfer, transferId) },
      facts: `gateway transfer ${transfer.id} ${transfer.status} (${formatWireDecimal(transfer.amountMinor)} to ${payoutDestination(transfer)}, reference ${transfer.externalReference ?? 'none'}): no redemption of ours`,
    };
  },
);

const payoutAmounts = findingPhase(
  'payout-amounts',
  (deps, _ctx, page) => transfersWithOtherAmount(deps.pool, page),
  async (deps, _ctx, transferId) => {
    const transfer = await readTransfer(deps, transferId);
    if (transfer === null || payoutOutcome(transfer.status) === 'failed') return null;
    const redemption = await findRedemptionForTransfer(deps.pool, transfer.id, transfer.externalReference);
    if (redemption === null) return null;
    const expectedMinor = redemption.amount_minor - redemption.fee_minor;
    if (transfer.amountMinor === expectedMinor) return null;
    return {
      finding: 'PAYOUT_AMOUNT_DIFFERS',
      subject: transfer.id,
      tokenId: redemption.token_id,
      ownerId: redemption.bearer_owner_id,
      currency: redemption.currency,
      amountMinor: transfer.amountMinor,
      evidence: { transfer: transferEvidence(transfer, transferId), redemption: redemptionEvidence(redemption), expected: formatWireDecimal(expectedMinor) },
      facts: `gateway transfer ${transfer.id} ${transfer.status} for ${formatWireDecimal(transfer.amountMinor)}; redemption ${redemption.id} (${redemption.status}) pays out ${formatWireDecimal(expectedMinor)}`,
    };
  },
);

const failedChargesPaid = findingPhase(
  'failed-charges-paid',
  (deps, _ctx, page) => paidPaymentsOfFailedCharges(deps.pool, page),
  async (deps, _ctx, paymentId) => {
    const payment = await readPayment(deps, paymentId);
    if (payment === null || paymentOutcome(payment.status) !== 'paid') return null;
    const charge = await findChargeForPayment(deps.pool, payment.id, payment.externalReference);
    if (charge === null || chargeFinding(charge.status, 'paid', payment.status) !== 'FAILED_CHARGE_PAID') return null;
    return {
      finding: 'FAILED_CHARGE_PAID',
      subject: charge.id,
      tokenId: null,
      ownerId: charge.owner_id,
      currency: charge.currency,
      amountMinor: payment.amountMinor,
      evidence: { payment: paymentEvidence(payment, paymentId), charge: chargeEvidence(charge) },
      facts: `gateway payment ${payment.id} ${payment.status} (${formatWireDecimal(payment.amountMinor)}) for charge ${charge.id} FAILED (${charge.failure_reason ?? 'no reason'})`,
    };
  },
);

const settledChargesUnpaid = findingPhase(
  'settled-charges-unpaid',
  (deps, ctx, page) => settledChargesWithoutPaidPayment(deps.pool, { ...page, since: ctx.since, before: ctx.startedAt }),
  async (deps, _ctx, chargeId) => {
    const charge = await getCharge(deps.pool, chargeId);
    if (charge === null) return null;
    const payment = charge.gateway_payment_id === null ? null : await readPayment(deps, charge.gateway_payment_id);
    const finding = chargeFinding(charge.status, payment === null ? null : paymentOutcome(payment.status), payment?.status ?? null);
    if (finding === null) return null;
    return {
      finding,
      subject: charge.id,
      tokenId: null,
      ownerId: charge.owner_id,
      currency: charge.currency,
      amountMinor: charge.amount_minor,
      evidence: { payment: paymentEvidence(payment, charge.gateway_payment_id ?? ''), charge: chargeEvidence(charge) },
      facts: `charge ${charge.id} SETTLED but gateway payment ${charge.gateway_payment_id ?? '(none recorded)'} is ${payment?.status ?? 'unknown to the gateway'}`,
    };
  },
);

const chargesPaidTwicePhase = findingPhase(
  'charges-paid-twice',
  (deps, _ctx, page) => chargesPaidTwice(deps.pool, page),
  async (deps, ctx, chargeId) => {
    const charge = await getCharge(deps.pool, chargeId);
    if (charge === null) return null;
    const paid: GatewayPayment[] = [];
    for (const id of await paymentsOfCharge(deps.pool, ctx.runId, chargeId)) {
      const payment = await readPayment(deps, id);
      ctx.progress();
      if (payment !== null && paymentOutcome(payment.status) === 'paid') paid.push(payment);
    }
    if (paid.length < 2) return null;
    return {
      finding: 'CHARGE_PAID_TWICE',
      subject: charge.id,
      tokenId: null,
      ownerId: charge.owner_id,
      currency: charge.currency,
      amountMinor: paid.reduce((sum, p) => sum + p.amountMinor, 0n),
      evidence: { charge: chargeEvidence(charge), paid: paid.map((p) => paymentEvidence(p, p.id)) },
      facts: `charge ${charge.id} (${charge.status}) paid ${paid.length} times: ${paid.map((p) => `${p.id} ${formatWireDecimal(p.amountMinor)}`).join(', ')}`,
    };
  },
);

const unknownPayments = findingPhase(
  'unknown-payments',
  (deps, _ctx, page) => unattributedPaidPayments(deps.pool, page),
  async (deps, _ctx, paymentId) => {
    const payment = await readPayment(deps, paymentId);
    if (payment === null || paymentOutcome(payment.status) !== 'paid') return null;
    if ((await findChargeForPayment(deps.pool, payment.id, payment.externalReference)) !== null) return null;
    return {
      finding: 'UNKNOWN_PAYMENT',
      subject: payment.id,
      tokenId: null,
      ownerId: null,
      currency: 'BRL',
      amountMinor: payment.amountMinor,
      evidence: { payment: paymentEvidence(payment, paymentId) },
      facts: `gateway payment ${payment.id} ${payment.status} (${formatWireDecimal(payment.amountMinor)}, reference ${payment.externalReference ?? 'none'}): no charge of ours`,
    };
  },
);

const chargeAmounts = findingPhase(
  'charge-amounts',
  (deps, _ctx, page) => paymentsWithOtherAmount(deps.pool, page),
  async (deps, _ctx, paymentId) => {
    const payment = await readPayment(deps, paymentId);
    if (payment === null || paymentOutcome(payment.status) === 'failed') return null;
    const charge = await findChargeForPayment(deps.pool, payment.id, payment.externalReference);
    if (charge === null || charge.amount_minor === payment.amountMinor) return null;
    return {
      finding: 'CHARGE_AMOUNT_DIFFERS',
      subject: payment.id,
      tokenId: null,
      ownerId: charge.owner_id,
      currency: charge.currency,
      amountMinor: payment.amountMinor,
      evidence: { payment: paymentEvidence(payment, paymentId), charge: chargeEvidence(charge) },
      facts: `gateway payment ${payment.id} ${payment.status} for ${formatWireDecimal(payment.amountMinor)}; charge ${charge.id} (${charge.status}) is for ${formatWireDecimal(charge.amount_minor)}`,
    };
  },
);

const forgetPhase: AuditPhase = {
  name: 'forget',
  async batch(deps, ctx) {
    await forgetAuditObjects(deps.pool, ctx.runId);
    return { scanned: 0, found: 0, next: null };
  },
};

export const gatewayAuditPhases: readonly AuditPhase[] = [
  listingPhase('transfer'),
  listingPhase('bill'),
  listingPhase('payment'),
  failedRedemptionsPaid,
  settledRedemptionsUnpaid,
  plcsPaidTwice,
  unknownPayouts,
  payoutAmounts,
  failedChargesPaid,
  settledChargesUnpaid,
  chargesPaidTwicePhase,
  unknownPayments,
  chargeAmounts,
  forgetPhase,
];

// ---------------------------------------------------------------------------------------------
// Reporting: repair, raise, or say what would be done
// ---------------------------------------------------------------------------------------------

function itemOf(ctx: AuditContext, finding: Finding, fields: Partial<ItemRecord> & Pick<ItemRecord, 'status' | 'detail'>, evidence: Record<string, unknown> = {}): ItemRecord {
  return {
    key: findingKey(finding.finding, finding.subject),
    action: 'GATEWAY_FINDING',
    ownerId: finding.ownerId,
    bucket: null,
    currency: finding.currency,
    snapshotMinor: null,
    computedMinor: null,
    amountMinor: finding.amountMinor,
    snapshotAfterMinor: null,
    transactionId: null,
    referenceTransactionId: null,
    entries: null,
    finding: finding.finding,
    evidence: { ...finding.evidence, ...evidence, run_id: ctx.runId, since: ctx.since },
    ...fields,
  };
}

async function raise(deps: GatewayAuditDeps, ctx: AuditContext, finding: Finding, why: string | null): Promise<string> {
  const flag = await raiseRiskFlag(deps.pool, {
    flagType: 'GATEWAY_AUDIT_MISMATCH',
    severity: auditFindings[finding.finding].severity,
    subjectPubkey: null,
    tokenId: finding.tokenId,
    dedupeKey: findingFlagKey(finding.finding, finding.subject),
    details: { finding: finding.finding, facts: finding.facts, ...(why === null ? {} : { not_repaired: why }), evidence: finding.evidence, run_id: ctx.runId },
  });
  return flag.id;
}

/** Records one finding (repairing or raising it in a real run); false when the run had reported it already. */
async function report(deps: GatewayAuditDeps, ctx: AuditContext, finding: Finding): Promise<boolean> {
  const key = findingKey(finding.finding, finding.subject);
  // A retried batch finds what it recorded: nothing is repaired, raised or counted twice.
  if (await itemRecorded(deps.pool, ctx.runId, key)) return false;
  const text = `${finding.facts}: ${auditFindings[finding.finding].text}`;
  if (finding.repair !== undefined) return reportPaidFailed(deps, ctx, finding, finding.repair, text);
  if (ctx.dryRun) {
    await recordItems(deps.pool, ctx.runId, [itemOf(ctx, finding, { status: 'PLANNED', detail: `${text}; would raise a risk flag for a person` })]);
    return true;
  }
  const flagId = await raise(deps, ctx, finding, null);
  await recordItems(deps.pool, ctx.runId, [itemOf(ctx, finding, { status: 'SKIPPED', detail: `${text}; raised for a person: risk flag ${flagId}` }, { risk_flag_id: flagId })]);
  return true;
}

const repairText =
  'booked the reversal of its REDEEM_FAILED (issuer PROMISED -> bearer PENDING) and its REDEEM_SETTLED, the redemption SETTLED, the PLC REDEEMED';

async function reportPaidFailed(
  deps: GatewayAuditDeps,
  ctx: AuditContext,
  finding: Finding,
  repair: NonNullable<Finding['repair']>,
  text: string,
): Promise<boolean> {
  const { redemption, transfer } = repair;
  const promised = { ownerId: redemption.issuer_owner_id, bucket: 'PROMISED' as const };
  if (ctx.dryRun) {
    const facts = await readPaidFailedFacts(deps.pool, redemption.id, { id: transfer.id, amountMinor: transfer.amountMinor, externalReference: transfer.externalReference });
    const verdict = facts === null ? { safe: false as const, why: 'the redemption is gone' } : paidFailedRepair(facts.facts);
    await recordItems(deps.pool, ctx.runId, [
      itemOf(ctx, finding, {
        ...promised,
        status: 'PLANNED',
        referenceTransactionId: redemption.fail_tx_id,
        detail: verdict.safe ? `${text}; would repair: ${repairText}` : `${text}; not safe to repair (${verdict.why}): would raise a risk flag for a person`,
      }),
    ]);
    return true;
  }
  try {
    const result = await repairPaidFailedRedemption(deps.pool, {
      runId: ctx.runId,
      itemKey: findingKey(finding.finding, finding.subject),
      redemptionId: redemption.id,
      transferId: transfer.id,
      transferStatus: transfer.status,
      transferAmountMinor: transfer.amountMinor,
      transferReference: transfer.externalReference,
      item: (booked) =>
        itemOf(
          ctx,
          finding,
          {
            ...promised,
            status: 'FIXED',
            snapshotMinor: booked.before.snapshot,
            computedMinor: booked.before.computed,
            snapshotAfterMinor: booked.before.snapshot - redemption.amount_minor,
            transactionId: booked.settleTxId,
            referenceTransactionId: redemption.fail_tx_id,
            entries: booked.entries,
            detail: `${text}; repaired: ${repairText}`,
          },
          { reversal_tx_id: booked.reversalTxId, settle_tx_id: booked.settleTxId },
        ),
    });
    if (result.kind === 'gone') return false;
    if (result.kind === 'repaired') {
      await tellPlc(deps, redemption.token_id);
      return true;
    }
    const flagId = await raise(deps, ctx, finding, result.why);
    await recordItems(deps.pool, ctx.runId, [
      itemOf(ctx, finding, { ...promised, status: 'SKIPPED', detail: `${text}; not safe to repair (${result.why}): raised for a person: risk flag ${flagId}` }, { risk_flag_id: flagId }),
    ]);
    return true;
  } catch (error) {
    // The ledger refused (the issuer's PROMISED no longer holds the amount): nothing was kept.
    if (!(error instanceof DomainError)) throw error;
    const flagId = await raise(deps, ctx, finding, errorDetail(error));
    await recordItems(deps.pool, ctx.runId, [
      itemOf(ctx, finding, { ...promised, status: 'FAILED', detail: `${text}; the repair was refused (${errorDetail(error)}): raised for a person: risk flag ${flagId}` }, { risk_flag_id: flagId }),
    ]);
    return true;
  }
}

/** The PLC's workflow, if it still waits for its expiry, learns its redemption settled and ends. */
async function tellPlc(deps: GatewayAuditDeps, tokenId: string): Promise<void> {
  if (deps.temporal === undefined) return;
  try {
    await deps.temporal.workflow.getHandle(workflowIds.plc(tokenId)).signal(plcRedemptionFinishedSignal, { status: 'REDEEMED' });
  } catch (error) {
    if (!(error instanceof WorkflowNotFoundError)) throw error;
  }
}

// ---------------------------------------------------------------------------------------------
// Batches and dry runs
// ---------------------------------------------------------------------------------------------

async function auditContext(deps: GatewayAuditDeps, ctx: ReconcileContext): Promise<AuditContext> {
  const startedAt = await runStartedAt(deps.pool, ctx.runId);
  return { ...ctx, since: ctx.params.since ?? auditWindowStart(startedAt, auditLookbackDaysDefault), startedAt };
}

/** One batch of the audit from `cursor` (`<phase>:<key>`; null: the start). */
export async function auditBatch(deps: GatewayAuditDeps, ctx: ReconcileContext, cursor: string | null, limit: number): Promise<BatchResult> {
  const context = await auditContext(deps, ctx);
  const { phase, result, cursor: next } = await batchFrom(gatewayAuditPhases, ctx.tool, cursor, limit, (current, after) =>
    current.batch(deps, context, after, limit),
  );
  return { phase, scanned: result.scanned, found: result.found, cursor: next };
}

/** A dry run inside the caller's request: lists and joins, records PLANNED findings, repairs and raises nothing. */
export async function runDryGatewayAudit(deps: GatewayAuditDeps, input: DryRunInput, limits?: DryRunLimits): Promise<ReconcileReport> {
  try {
    return await runDryBatches(deps.pool, input, (ctx, cursor) => auditBatch(deps, ctx, cursor, input.batchSize), limits);
  } finally {
    // A dry run stopped at its bound never reached `forget`.
    await forgetAuditObjects(deps.pool, input.runId).catch(() => 0);
  }
}
