import { z } from 'zod';
import { parseWireJson } from './json.ts';
import {
  billPaymentEvents,
  paymentEvents,
  transferEvents,
  type BillPaymentEvent,
  type GatewayBillPayment,
  type GatewayPayment,
  type GatewayTransfer,
  type PaymentEvent,
  type TransferEvent,
} from './types.ts';
import { billPaymentWireSchema, paymentWireSchema, transferWireSchema, type BillPaymentWire, type PaymentWire, type TransferWire } from './wire.ts';

/**
 * What the gateway sends us, and the rules for acting on it. The service's webhook route
 * authenticates (the gateway's `asaas-access-token` header, or the interface's `gateway-access-token`), stores the raw body, and then calls
 * `classifyGatewayWebhook` to learn what it is; acting on it is the caller's job. The ordering
 * helpers let callers enforce "a final status never moves backwards": webhooks arrive late,
 * twice and out of order, so a status is applied only when it moves forward.
 *
 * An event whose body cannot be classified is not a fact; if it names a payment or a transfer the
 * caller should treat it as a hint to read the status from the gateway (`getPayment`, `getTransfer`).
 */

/**
 * The envelope's `id` and `dateCreated`: Asaas's pages show events with them ("Receive Asaas events
 * at your webhook endpoint", the Portuguese transfer events page) and without them (the English
 * "Transfer events" and "Bill events" examples). Both are read: an event without an id is keyed by
 * the SHA-256 of its body (api/routes/webhooks.ts), and like every event it moves nothing until the
 * gateway's own copy of the transfer, bill payment or charge confirms it (services/gateway-word.ts).
 */
const eventId = z.string().min(1).max(200).nullish().transform((value) => value ?? null);
const eventDate = z.string().max(100).nullish().transform((value) => value ?? null);

export const paymentEventWireSchema = z.object({
  id: eventId,
  event: z.enum(paymentEvents),
  dateCreated: eventDate,
  payment: paymentWireSchema,
});
export type PaymentEventWire = z.input<typeof paymentEventWireSchema>;

export const transferEventWireSchema = z.object({
  id: eventId,
  event: z.enum(transferEvents),
  dateCreated: eventDate,
  transfer: transferWireSchema,
});
export type TransferEventWire = z.input<typeof transferEventWireSchema>;

/** A bill payment event: `{id?, event: BILL_*, dateCreated?, bill}` (https://docs.asaas.com/docs/bill-events). */
export const billPaymentEventWireSchema = z.object({
  id: eventId,
  event: z.enum(billPaymentEvents),
  dateCreated: eventDate,
  bill: billPaymentWireSchema,
});
export type BillPaymentEventWire = z.input<typeof billPaymentEventWireSchema>;

/**
 * The synchronous authorization the gateway asks for before it moves money out
 * (https://docs.asaas.com/docs/mechanism-for-validating-transfers-via-webhooks): `{type: "TRANSFER", transfer}`
 * for a transfer, `{type: "BILL", bill}` for a bill payment (a boleto payout); other cash-outs
 * (QR code payments, phone recharges) have other types, which this service never makes.
 */
export const transferValidationRequestWireSchema = z.object({
  type: z.literal('TRANSFER'),
  transfer: transferWireSchema,
});
export type TransferValidationRequestWire = z.input<typeof transferValidationRequestWireSchema>;

export const billValidationRequestWireSchema = z.object({
  type: z.literal('BILL'),
  bill: billPaymentWireSchema,
});
export type BillValidationRequestWire = z.input<typeof billValidationRequestWireSchema>;

/** Our answer to a validation request. REFUSED cancels the transfer at once with `refuseReason`. */
export type TransferValidationAnswer = { status: 'APPROVED' } | { status: 'REFUSED'; refuseReason: string };

export const transferValidationAnswerSchema = z.union([
  z.object({ status: z.literal('APPROVED') }),
  z.object({ status: z.literal('REFUSED'), refuseReason: z.string().min(1).max(500) }),
]);

/** `eventId` and `dateCreated` are null when the event's body has none (see `eventId` above). */
export type GatewayWebhookClassification =
  | { kind: 'payment_event'; eventId: string | null; event: PaymentEvent; dateCreated: string | null; payment: GatewayPayment }
  | { kind: 'transfer_event'; eventId: string | null; event: TransferEvent; dateCreated: string | null; transfer: GatewayTransfer }
  | { kind: 'bill_payment_event'; eventId: string | null; event: BillPaymentEvent; dateCreated: string | null; billPayment: GatewayBillPayment }
  | { kind: 'transfer_validation'; transfer: GatewayTransfer }
  | { kind: 'bill_validation'; billPayment: GatewayBillPayment }
  | {
      kind: 'unknown';
      /** Why the body was not recognised, for the log and the dead-letter record. */
      reason: string;
      eventId: string | null;
      event: string | null;
      type: string | null;
      /** Ids found in the body even though it did not parse: hints to re-read status from the gateway. */
      paymentId: string | null;
      transferId: string | null;
      billPaymentId: string | null;
    };

/**
 * Classifies a webhook body already parsed from JSON (money as JSON numbers; a number that was
 * not exactly representable should arrive as NaN, as the API's strict body parser and
 * `parseWireJson` produce, and is then refused). Never throws.
 *
 * A body with `event` is an asynchronous notification; a body with `type` and no `event` is a
 * synchronous authorization request (`type: "TRANSFER"` and `type: "BILL"` are recognised; others
 * come back as unknown with `type` set).
 */
export function classifyGatewayWebhook(body: unknown): GatewayWebhookClassification {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    return unknown('the body is not a JSON object', body);
  }
  const record = body as Record<string, unknown>;
  if ('event' in record) {
    const event = record.event;
    if (typeof event !== 'string') return unknown('`event` is not a string', body);
    if ((paymentEvents as readonly string[]).includes(event)) {
      const parsed = paymentEventWireSchema.safeParse(body);
      if (!parsed.success) return unknown(`malformed ${event}: ${firstIssue(parsed.error)}`, body);
      return {
        kind: 'payment_event',
        eventId: parsed.data.id,
        event: parsed.data.event,
        dateCreated: parsed.data.dateCreated,
        payment: parsed.data.payment,
      };
    }
    if ((transferEvents as readonly string[]).includes(event)) {
      const parsed = transferEventWireSchema.safeParse(body);
      if (!parsed.success) return unknown(`malformed ${event}: ${firstIssue(parsed.error)}`, body);
      return {
        kind: 'transfer_event',
        eventId: parsed.data.id,
        event: parsed.data.event,
        dateCreated: parsed.data.dateCreated,
        transfer: parsed.data.transfer,
      };
    }
    if ((billPaymentEvents as readonly string[]).includes(event)) {
      const parsed = billPaymentEventWireSchema.safeParse(body);
      if (!parsed.success) return unknown(`malformed ${event}: ${firstIssue(parsed.error)}`, body);
      return {
        kind: 'bill_payment_event',
        eventId: parsed.data.id,
        event: parsed.data.event,
        dateCreated: parsed.data.dateCreated,
        billPayment: parsed.data.bill,
      };
    }
    return unknown(`unsupported event ${event.slice(0, 100)}`, body);
  }
  if ('type' in record) {
    if (record.type === 'BILL') {
      const parsed = billValidationRequestWireSchema.safeParse(body);
      if (!parsed.success) return unknown(`malformed bill validation request: ${firstIssue(parsed.error)}`, body);
      return { kind: 'bill_validation', billPayment: parsed.data.bill };
    }
    if (record.type !== 'TRANSFER') {
      return unknown(`unsupported authorization type ${String(record.type).slice(0, 100)}`, body);
    }
    const parsed = transferValidationRequestWireSchema.safeParse(body);
    if (!parsed.success) return unknown(`malformed transfer validation request: ${firstIssue(parsed.error)}`, body);
    return { kind: 'transfer_validation', transfer: parsed.data.transfer };
  }
  return unknown('the body has neither `event` nor `type`', body);
}

/** Parses raw webhook text (as stored in the inbox) strictly and classifies it. Never throws. */
export function classifyGatewayWebhookText(text: string): GatewayWebhookClassification {
  let body: unknown;
  try {
    body = parseWireJson(text);
  } catch {
    return unknown('the body is not valid JSON', null);
  }
  return classifyGatewayWebhook(body);
}

function unknown(reason: string, body: unknown): GatewayWebhookClassification {
  const record = typeof body === 'object' && body !== null && !Array.isArray(body) ? (body as Record<string, unknown>) : {};
  return {
    kind: 'unknown',
    reason,
    eventId: shortString(record.id),
    event: shortString(record.event),
    type: shortString(record.type),
    paymentId: shortString(nested(record.payment, 'id')),
    transferId: shortString(nested(record.transfer, 'id')),
    billPaymentId: shortString(nested(record.bill, 'id')),
  };
}

function nested(value: unknown, key: string): unknown {
  return typeof value === 'object' && value !== null ? (value as Record<string, unknown>)[key] : undefined;
}

function shortString(value: unknown): string | null {
  return typeof value === 'string' && value.length > 0 && value.length <= 200 ? value : null;
}

function firstIssue(error: z.ZodError): string {
  const issue = error.issues[0];
  return issue === undefined ? 'invalid' : `${issue.path.join('.') || '(root)'}: ${issue.message}`;
}


/** Re-exported so a webhook sender (the simulator) can type its bodies against the same wire shapes. */
export type { BillPaymentWire, PaymentWire, TransferWire };
