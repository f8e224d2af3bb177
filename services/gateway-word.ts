import {
  isGatewayError,
  paymentEventContradicts,
  formatWireDecimal,
  paymentOutcome,
  paymentStatusDecides,
  payoutEventContradicts,
  payoutOutcome,
  type GatewayBillPayment,
  type GatewayCallOptions,
  type GatewayPayment,
  type GatewayTransfer,
  type TransferValidationAnswer,
} from '../gateway/index.ts';
import { findChargeForPayment, type ChargeRow } from '../db/charges.ts';
import type { Pool } from '../db/pool.ts';
import { claimPayout, findOpenPayoutIntent, recordFoundPayout } from '../db/payout-intents.ts';
import { findRedemptionForTransfer, type RedemptionRow } from '../db/redemptions.ts';
import type { AnonymousValidationGuard } from './validation-guard.ts';
import { raiseRiskFlag } from '../db/risk-flags.ts';
import { DomainError } from '../src/errors.ts';

/**
 * Money moves on the gateway's word, never on a message's (hyperswitch's rule: an unverified
 * webhook is a reason to re-read the status, never a fact). Whatever a webhook event or a
 * validation request says about a transfer or a payment, the service reads that transfer or
 * payment back from the gateway (with its own API key) and acts on the answer:
 *
 * - a final transfer event or a decisive payment event is routed with the gateway's status, not
 *   the event's;
 * - an event the gateway contradicts (gateway/status.ts `payoutEventContradicts`,
 *   `paymentEventContradicts`) raises a WEBHOOK_CONTRADICTS_GATEWAY risk flag and is recorded
 *   CONTRADICTED in the inbox; it moves money only as far as the gateway's own status does (a
 *   TRANSFER_FAILED about a transfer the gateway holds DONE settles the redemption: the gateway
 *   says the money went out);
 * - a payout validation (transfer or bill payment) is decided on our payout intents first, then on
 *   the gateway's copy, and approves one payout per redemption (`decidePayoutValidation`).
 *
 * A gateway that cannot be reached is a retryable failure (the caller retries; the webhook
 * workflow ends DEAD after its attempts, the validation answers 503 so the gateway asks again); a
 * gateway that does not know the transfer or payment the message names is a contradiction.
 */

/** The part of the gateway client the checks use. */
export interface GatewayReader {
  getTransfer(transferId: string, options?: GatewayCallOptions): Promise<GatewayTransfer>;
  getBillPayment(billPaymentId: string, options?: GatewayCallOptions): Promise<GatewayBillPayment>;
  getPayment(paymentId: string, options?: GatewayCallOptions): Promise<GatewayPayment>;
}

export interface GatewayWordDeps {
  pool: Pool;
  gateway: GatewayReader;
}

/** What the inbox and the risk flag record about an event the gateway contradicted. */
export interface Contradiction {
  /** The status the event announced. */
  eventStatus: string;
  /** What the gateway says now; null when it does not know the transfer or payment. */
  gatewayStatus: string | null;
  reason: string;
  riskFlagId: string;
}

type Read<T> = { kind: 'found'; resource: T } | { kind: 'unknown'; reason: string };

/** Reads a resource; a refusal (an id the gateway does not know) is an answer, anything retryable is thrown. */
async function read<T>(what: string, id: string, call: () => Promise<T>): Promise<Read<T>> {
  try {
    return { kind: 'found', resource: await call() };
  } catch (error) {
    if (isGatewayError(error) && !error.retryable) {
      return { kind: 'unknown', reason: `the gateway does not know ${what} ${id.slice(0, 100)} (${error.code})` };
    }
    throw error;
  }
}

async function flagContradiction(
  pool: Pool,
  input: { dedupeKey: string; tokenId: string | null; eventStatus: string; gatewayStatus: string | null; reason: string; details: Record<string, unknown> },
): Promise<Contradiction> {
  const flag = await raiseRiskFlag(pool, {
    flagType: 'WEBHOOK_CONTRADICTS_GATEWAY',
    // A contradicted final event would have moved money: a leaked webhook token or a gateway
    // that sends false events, either of which a person must look at today.
    severity: 'high',
    subjectPubkey: null,
    tokenId: input.tokenId,
    dedupeKey: input.dedupeKey,
    details: { ...input.details, event_status: input.eventStatus, gateway_status: input.gatewayStatus, reason: input.reason },
  });
  return { eventStatus: input.eventStatus, gatewayStatus: input.gatewayStatus, reason: input.reason, riskFlagId: flag.id };
}

/** A payout as both rails' resources share it: a Pix transfer or a bill payment (one status vocabulary). */
type Payout = GatewayTransfer | GatewayBillPayment;

/** A final payout event (a transfer's, or a bill payment's for a boleto redemption), checked against the gateway. */
export type TransferEventVerdict =
  | { kind: 'no_redemption'; reason: string }
  /** The event names a transfer of the redemption other than the one it waits for: not its payout's event. */
  | { kind: 'not_its_transfer'; reason: string; redemption: RedemptionRow }
  | { kind: 'act'; redemption: RedemptionRow; transfer: Payout; contradiction: Contradiction | null }
  | { kind: 'contradicted'; redemption: RedemptionRow; transfer: Payout | null; contradiction: Contradiction };

/**
 * `rail` says which resource the event is about: `pix` a transfer (TRANSFER_* events), `boleto` a
 * bill payment (BILL_* events), read back with `getTransfer` or `getBillPayment`. An event
 * of the other rail than its redemption's moves nothing.
 */
export async function verifyTransferEvent(
  deps: GatewayWordDeps,
  event: { eventId: string; provider: string; transferId: string; externalReference: string | null; status: string; rail?: 'pix' | 'boleto' },
): Promise<TransferEventVerdict> {
  const { pool, gateway } = deps;
  const rail = event.rail ?? 'pix';
  const what = rail === 'boleto' ? 'bill payment' : 'transfer';
  const redemption = await findRedemptionForTransfer(pool, event.transferId, event.externalReference);
  if (redemption === null) return { kind: 'no_redemption', reason: `no redemption for ${what} ${event.transferId}` };
  if (redemption.rail !== rail) {
    return { kind: 'no_redemption', reason: `redemption ${redemption.id} pays out over ${redemption.rail}: a ${what} event is not about its payout` };
  }
  const details = { event_id: event.eventId, transfer_id: event.transferId, redemption_id: redemption.id };
  const contradict = (gatewayStatus: string | null, reason: string) =>
    flagContradiction(pool, {
      dedupeKey: `webhook-contradiction:${event.provider}:${event.eventId}`,
      tokenId: redemption.token_id,
      eventStatus: event.status,
      gatewayStatus,
      reason,
      details,
    });
  const found = await read<Payout>(what, event.transferId, () =>
    rail === 'boleto' ? gateway.getBillPayment(event.transferId) : gateway.getTransfer(event.transferId),
  );
  if (found.kind === 'unknown') {
    return { kind: 'contradicted', redemption, transfer: null, contradiction: await contradict(null, found.reason) };
  }
  const transfer = found.resource;
  if (transfer.externalReference !== redemption.id && redemption.gateway_transfer_id !== transfer.id) {
    const reason = `the gateway's ${what} ${transfer.id} is not redemption ${redemption.id}'s (its reference is ${transfer.externalReference ?? 'none'})`;
    return { kind: 'contradicted', redemption, transfer, contradiction: await contradict(transfer.status, reason) };
  }
  if (redemption.gateway_transfer_id !== null && redemption.gateway_transfer_id !== transfer.id) {
    return {
      kind: 'not_its_transfer',
      redemption,
      reason: `${what} ${transfer.id} is not the payout redemption ${redemption.id} waits for (${redemption.gateway_transfer_id}); the gateway audit reports a second payout`,
    };
  }
  if (redemption.gateway_transfer_id === null) {
    // The redemption recorded no payout (its creation's answer was lost): an event can make one
    // its payout only if it pays the redemption's amount to its destination and the gateway says
    // it is paid; it is then recorded before anything moves. A failure of a payout the redemption
    // never recorded moves nothing (a refused rogue transfer would otherwise fail it).
    const expectedMinor = redemption.amount_minor - redemption.fee_minor;
    if (transfer.amountMinor !== expectedMinor || destinationOf(transfer) !== redemption.destination) {
      return { kind: 'not_its_transfer', redemption, reason: `${what} ${transfer.id} names redemption ${redemption.id} but does not pay its amount to its destination` };
    }
    if (payoutOutcome(transfer.status) !== 'paid') {
      return { kind: 'not_its_transfer', redemption, reason: `${what} ${transfer.id} is not the recorded payout of redemption ${redemption.id} and is not paid: it decides nothing` };
    }
    const recorded = await recordFoundPayout(pool, redemption.id, transfer.id, transfer.status);
    if (recorded.gateway_transfer_id !== transfer.id) {
      return { kind: 'not_its_transfer', redemption, reason: `${what} ${transfer.id} is not the payout redemption ${redemption.id} recorded (${recorded.gateway_transfer_id ?? 'none'})` };
    }
  }
  if (!payoutEventContradicts(event.status, transfer.status)) return { kind: 'act', redemption, transfer, contradiction: null };
  const reason = `the event says ${event.status}; the gateway says ${what} ${transfer.id} is ${transfer.status}`;
  const contradiction = await contradict(transfer.status, reason);
  // The gateway's own final status is a fact: act on it. An open one decides nothing yet.
  return payoutOutcome(transfer.status) === 'open'
    ? { kind: 'contradicted', redemption, transfer, contradiction }
    : { kind: 'act', redemption, transfer, contradiction };
}

/** A payment event, checked against the gateway. */
export type PaymentEventVerdict =
  | { kind: 'no_charge'; reason: string }
  | { kind: 'act'; charge: ChargeRow; paymentId: string; status: string; contradiction: Contradiction | null }
  | { kind: 'contradicted'; charge: ChargeRow; contradiction: Contradiction };

export async function verifyPaymentEvent(
  deps: GatewayWordDeps,
  event: { eventId: string; provider: string; paymentId: string; externalReference: string | null; status: string },
): Promise<PaymentEventVerdict> {
  const { pool, gateway } = deps;
  const charge = await findChargeForPayment(pool, event.paymentId, event.externalReference);
  if (charge === null) return { kind: 'no_charge', reason: `no charge for payment ${event.paymentId}` };
  // A PENDING event (PAYMENT_CREATED) decides nothing: the charge waits either way.
  if (!paymentStatusDecides(event.status)) {
    return { kind: 'act', charge, paymentId: event.paymentId, status: event.status, contradiction: null };
  }
  const contradict = (gatewayStatus: string | null, reason: string) =>
    flagContradiction(pool, {
      dedupeKey: `webhook-contradiction:${event.provider}:${event.eventId}`,
      tokenId: null,
      eventStatus: event.status,
      gatewayStatus,
      reason,
      details: { event_id: event.eventId, payment_id: event.paymentId, charge_id: charge.id },
    });
  const found = await read('payment', event.paymentId, () => gateway.getPayment(event.paymentId));
  if (found.kind === 'unknown') return { kind: 'contradicted', charge, contradiction: await contradict(null, found.reason) };
  const payment = found.resource;
  if (payment.externalReference !== charge.id && charge.gateway_payment_id !== payment.id) {
    const reason = `the gateway's payment ${payment.id} is not charge ${charge.id}'s (its reference is ${payment.externalReference ?? 'none'})`;
    return { kind: 'contradicted', charge, contradiction: await contradict(payment.status, reason) };
  }
  if (!paymentEventContradicts(event.status, payment.status)) {
    return { kind: 'act', charge, paymentId: payment.id, status: payment.status, contradiction: null };
  }
  const reason = `the event says ${event.status}; the gateway says payment ${payment.id} is ${payment.status}`;
  const contradiction = await contradict(payment.status, reason);
  return paymentOutcome(payment.status) === 'open'
    ? { kind: 'contradicted', charge, contradiction }
    : { kind: 'act', charge, paymentId: payment.id, status: payment.status, contradiction };
}

/** How long a validation request waits for the gateway's copy of the payout: the gateway waits for our answer. */
export const validationReadTimeoutMs = 3000;

/** Who asked for a validation: with the gateway's token (`authenticated`) or without, from `source` (the client address). */
export interface ValidationCaller {
  authenticated: boolean;
  source: string;
}

/** A payout the gateway asks us to authorize: a transfer (`type: TRANSFER`) or a bill payment (`type: BILL`). */
export type PresentedPayout = { rail: 'pix'; payout: GatewayTransfer } | { rail: 'boleto'; payout: GatewayBillPayment };

export interface ValidationDecision {
  answer: TransferValidationAnswer;
  contradiction: Contradiction | null;
  /** False when the decision was made on the request's own copy (the gateway could not be read in time). */
  verified: boolean;
  /** Whether the gateway was read for this decision (the tests count them). */
  gatewayRead: boolean;
  /** The risk flag raised, if any. */
  riskFlagId: string | null;
}

function destinationOf(payout: GatewayTransfer | GatewayBillPayment): string | null {
  return 'identificationField' in payout ? payout.identificationField : payout.pixAddressKey;
}

/**
 * The payout validation (the gateway's synchronous authorization before money leaves the
 * account: Asaas's "Mechanism for validating transfers via webhooks"), in this order:
 *
 * 1. Our own records first: the payout's `externalReference` must name a redemption waiting for
 *    its payout whose current attempt recorded its intent (db/payout-intents.ts), on the same rail.
 *    Anything else is REFUSED without reading the gateway.
 * 2. The gateway's own copy, read with our API key: a request without the gateway's token spends
 *    its source's read budget first (503 once spent: a real gateway asks again); a copy that
 *    differs from the request is REFUSED and flagged.
 * 3. The intent's amount and destination, the gateway's status PENDING.
 * 4. The claim (`claimPayout`): the first payout approved for the intent is recorded, with the
 *    redemption's `gateway_transfer_id`, before the answer leaves; any other payout for the same
 *    redemption is REFUSED and flagged high (a second payout naming the redemption: whoever holds
 *    the API key can create one).
 *
 * Flags raised for unauthenticated requests go through the guard (one per source and reason in a
 * window, bounded). When the gateway cannot be read in time, an authenticated request is decided
 * on the copy it carries (the gateway's own word); an unauthenticated one answers 503.
 */
export async function decidePayoutValidation(
  deps: GatewayWordDeps & { guard: AnonymousValidationGuard },
  presented: PresentedPayout,
  caller: ValidationCaller,
): Promise<ValidationDecision> {
  const { pool, gateway, guard } = deps;
  const what = presented.rail === 'boleto' ? 'bill payment' : 'transfer';
  const payoutId = presented.payout.id;
  let verified = true;
  let gatewayRead = false;
  let contradiction: Contradiction | null = null;
  let riskFlagId: string | null = null;
  const decision = (answer: TransferValidationAnswer): ValidationDecision => ({ answer, contradiction, verified, gatewayRead, riskFlagId });
  const refuse = (reason: string): ValidationDecision => decision({ status: 'REFUSED', refuseReason: reason.slice(0, 500) });

  /** A flag about this request: deduplicated by the guard for an unauthenticated caller, per payout for the gateway's own. */
  const flag = async (kind: string, reason: string, tokenId: string | null, severity: 'medium' | 'high'): Promise<void> => {
    const dedupeKey = caller.authenticated ? `validation-${kind}:${payoutId}` : guard.admitFlag(caller.source, kind);
    if (dedupeKey === null) return;
    const raised = await raiseRiskFlag(pool, {
      flagType: 'WEBHOOK_CONTRADICTS_GATEWAY',
      severity,
      subjectPubkey: null,
      tokenId,
      dedupeKey,
      details: {
        kind,
        reason,
        rail: presented.rail,
        payout_id: payoutId.slice(0, 100),
        presented_reference: presented.payout.externalReference?.slice(0, 100) ?? null,
        presented_amount_minor: presented.payout.amountMinor.toString(),
        authenticated: caller.authenticated,
        source: caller.authenticated ? null : caller.source.slice(0, 100),
      },
    });
    riskFlagId = raised.id;
  };

  // 1. Our own records: an open payout intent under this reference, or nothing to read.
  const open = await findOpenPayoutIntent(pool, presented.payout.externalReference);
  if (open === null || open.redemption.rail !== presented.rail) {
    const reason = open === null ? `the ${what}'s reference is not one of our open payout intents` : `redemption ${open.redemption.id} pays out over ${open.redemption.rail}`;
    await flag(caller.authenticated ? 'payout_not_ours' : 'unknown_reference', reason, open?.redemption.token_id ?? null, caller.authenticated ? 'high' : 'medium');
    return refuse(reason);
  }
  const { redemption, intent } = open;

  // 2. The gateway's copy.
  if (!caller.authenticated && !guard.takeRead(caller.source)) {
    throw new DomainError('GATEWAY_UNAVAILABLE', 'too many validation requests without the gateway token from this address: ask again later');
  }
  let found: Read<GatewayTransfer | GatewayBillPayment>;
  try {
    gatewayRead = true;
    const options = { signal: AbortSignal.timeout(validationReadTimeoutMs) };
    found = await read<GatewayTransfer | GatewayBillPayment>(what, payoutId, () => (presented.rail === 'boleto' ? gateway.getBillPayment(payoutId, options) : gateway.getTransfer(payoutId, options)));
  } catch {
    if (!caller.authenticated) throw new DomainError('GATEWAY_UNAVAILABLE', `the gateway could not be asked for the ${what} in time; ask again`);
    verified = false;
    found = { kind: 'found', resource: presented.payout };
  }
  if (found.kind === 'unknown') {
    await flag('unknown_to_gateway', found.reason, redemption.token_id, caller.authenticated ? 'high' : 'medium');
    return refuse(found.reason);
  }
  const payout = found.resource;
  const differs =
    payout.amountMinor !== presented.payout.amountMinor
      ? 'amount'
      : destinationOf(payout) !== destinationOf(presented.payout)
        ? 'destination'
        : payout.externalReference !== presented.payout.externalReference
          ? 'reference'
          : null;
  if (differs !== null) {
    const reason = `the request's ${what} differs from the gateway's copy (${differs})`;
    if (caller.authenticated) {
      contradiction = await flagContradiction(pool, {
        dedupeKey: `validation-contradiction:${payoutId}`,
        tokenId: redemption.token_id,
        eventStatus: presented.payout.status,
        gatewayStatus: payout.status,
        reason,
        details: { payout_id: payoutId, presented_reference: presented.payout.externalReference, presented_amount_minor: presented.payout.amountMinor.toString() },
      });
      riskFlagId = contradiction.riskFlagId;
    } else {
      await flag('contradiction', reason, redemption.token_id, 'medium');
    }
    return refuse(reason);
  }

  // 3. The intent's amount and destination, a payout still waiting at the gateway.
  if (payout.status !== 'PENDING') return refuse(`the gateway holds the ${what} ${payout.gatewayStatus}`);
  if (payout.amountMinor !== intent.amount_minor) {
    const reason = `amount ${formatWireDecimal(payout.amountMinor)} differs from ${formatWireDecimal(intent.amount_minor)}`;
    await flag('wrong_payout', reason, redemption.token_id, 'high');
    return refuse(reason);
  }
  // The redemption's own record too: a payout must match both what the activity meant to ask for
  // and what the redemption is owed.
  if (destinationOf(payout) !== intent.destination || destinationOf(payout) !== redemption.destination) {
    await flag('wrong_payout', 'destination differs', redemption.token_id, 'high');
    return refuse('destination differs');
  }
  if (payout.amountMinor !== redemption.amount_minor - redemption.fee_minor) {
    const reason = `amount ${formatWireDecimal(payout.amountMinor)} differs from ${formatWireDecimal(redemption.amount_minor - redemption.fee_minor)}`;
    await flag('wrong_payout', reason, redemption.token_id, 'high');
    return refuse(reason);
  }

  // 4. One payout per redemption: the first approved is claimed before the answer leaves.
  const claim = await claimPayout(pool, { redemptionId: redemption.id, payoutId: payout.id });
  if (!claim.claimed) {
    // A real payout at the gateway (its copy was read) naming a redemption that has its own: a
    // second payout, whoever created it. Flagged per payout whoever asked: the gateway bounds them.
    const raised = await raiseRiskFlag(pool, {
      flagType: 'WEBHOOK_CONTRADICTS_GATEWAY',
      severity: 'high',
      subjectPubkey: null,
      tokenId: redemption.token_id,
      dedupeKey: `second-payout:${payout.id}`,
      details: {
        kind: 'second_payout_refused',
        rail: presented.rail,
        redemption_id: redemption.id,
        payout_id: payout.id,
        claimed_payout_id: claim.claimedPayoutId,
        reason: claim.reason,
        authenticated: caller.authenticated,
      },
    });
    riskFlagId = raised.id;
    return refuse(claim.reason);
  }
  return decision({ status: 'APPROVED' });
}

/** The transfer validation of a Pix payout (kept for its callers): `decidePayoutValidation` on a transfer. */
export function decideTransferValidation(
  deps: GatewayWordDeps & { guard: AnonymousValidationGuard },
  presented: GatewayTransfer,
  caller: ValidationCaller,
): Promise<ValidationDecision> {
  return decidePayoutValidation(deps, { rail: 'pix', payout: presented }, caller);
}
