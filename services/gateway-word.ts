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
import { findRedemptionForTransfer, type RedemptionRow } from '../db/redemptions.ts';
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
 * - a transfer validation is decided on the gateway's copy of the transfer.
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
 * bill payment (BILL_PAYMENT_* events), read back with `getTransfer` or `getBillPayment`. An event
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

/** How long a validation request waits for the gateway's copy of the transfer: the gateway waits for our answer. */
export const validationReadTimeoutMs = 3000;

/**
 * The transfer validation (the gateway's synchronous authorization before it pays out), decided
 * on the gateway's own copy of the transfer, read with our API key: APPROVED only for a payout
 * this service created and still expects (redemption PENDING_PAYMENT), for the same amount and
 * Pix key, which the gateway still holds PENDING. A request whose transfer differs from the
 * gateway's copy, or names a transfer the gateway does not know, is REFUSED and flagged.
 *
 * When the gateway's copy cannot be read in time (its API down while its validation caller is
 * not): a request that came with the gateway's token (`authenticated`) is decided on the copy it
 * carries, as the gateway's own word; one without (the dual flow's authorization, which the spec
 * lets anyone send) answers 503 GATEWAY_UNAVAILABLE, a failed attempt the gateway repeats. Either
 * way the answer only matters to the gateway that asked: a forged request approves nothing.
 */
export async function decideTransferValidation(
  deps: GatewayWordDeps,
  presented: GatewayTransfer,
  options: { authenticated: boolean },
): Promise<{ answer: TransferValidationAnswer; contradiction: Contradiction | null; verified: boolean }> {
  const { pool, gateway } = deps;
  let verified = true;
  const refuse = (reason: string, contradiction: Contradiction | null = null) => ({
    answer: { status: 'REFUSED' as const, refuseReason: reason.slice(0, 500) },
    contradiction,
    verified,
  });
  let found: Read<GatewayTransfer>;
  try {
    found = await read('transfer', presented.id, () => gateway.getTransfer(presented.id, { signal: AbortSignal.timeout(validationReadTimeoutMs) }));
  } catch {
    if (!options.authenticated) throw new DomainError('GATEWAY_UNAVAILABLE', 'the gateway could not be asked for the transfer in time; ask again');
    verified = false;
    found = { kind: 'found', resource: presented };
  }
  const contradict = (gatewayStatus: string | null, reason: string, tokenId: string | null) =>
    flagContradiction(pool, {
      dedupeKey: `validation-contradiction:${presented.id}`,
      tokenId,
      eventStatus: presented.status,
      gatewayStatus,
      reason,
      details: { transfer_id: presented.id, presented_reference: presented.externalReference, presented_amount_minor: presented.amountMinor.toString() },
    });
  if (found.kind === 'unknown') return refuse(found.reason, await contradict(null, found.reason, null));
  const transfer = found.resource;
  const differs =
    transfer.amountMinor !== presented.amountMinor
      ? 'amount'
      : transfer.pixAddressKey !== presented.pixAddressKey
        ? 'destination'
        : transfer.externalReference !== presented.externalReference
          ? 'reference'
          : null;
  if (differs !== null) {
    const reason = `the request's transfer differs from the gateway's copy (${differs})`;
    return refuse(reason, await contradict(transfer.status, reason, null));
  }
  const redemption = await findRedemptionForTransfer(pool, transfer.id, transfer.externalReference);
  if (redemption === null) return refuse('unknown transfer');
  if (redemption.status !== 'PENDING_PAYMENT') return refuse(`redemption is ${redemption.status}`);
  if (redemption.gateway_transfer_id !== null && redemption.gateway_transfer_id !== transfer.id) return refuse('another transfer is expected');
  if (transfer.externalReference !== redemption.id) return refuse('the transfer is not this redemption\'s');
  if (transfer.status !== 'PENDING') return refuse(`the gateway holds the transfer ${transfer.status}`);
  const expectedMinor = redemption.amount_minor - redemption.fee_minor;
  if (transfer.amountMinor !== expectedMinor) return refuse(`amount ${formatWireDecimal(transfer.amountMinor)} differs from ${formatWireDecimal(expectedMinor)}`);
  if (transfer.pixAddressKey !== redemption.destination) return refuse('destination differs');
  return { answer: { status: 'APPROVED' }, contradiction: null, verified };
}
