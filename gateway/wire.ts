import { z } from 'zod';
import { minorFromWireValue, WireMoneyError } from './money.ts';
import { billPaymentStatusFromWire, paymentStatusFromWire, transferStatusFromWire } from './status.ts';
import {
  paymentBillingTypes,
  pixAddressKeyTypes,
  type GatewayBillPayment,
  type GatewayBoletoIdentificationField,
  type GatewayCancelResult,
  type GatewayCustomer,
  type GatewayPayment,
  type GatewayPixQrCode,
  type GatewayTransfer,
  type GatewayWebhook,
  type PixAddressKeyType,
  type WebhookEvent,
} from './types.ts';

/**
 * The gateway's wire format, kept inside the adapter. Each response schema parses the JSON the
 * gateway sends (`z.input` is the wire shape: reais as JSON numbers, the gateway's field names)
 * and transforms it into the adapter's own shape (`z.output`: centavos as bigint, our names).
 * Unknown fields are dropped, because gateways add fields without notice; fields we rely on are
 * required, so a change that would break us fails loudly at the boundary instead of later.
 */

/** A money field: a JSON number with at most two decimals, read as centavos. */
export const wireMoney = z.number().transform((value, ctx) => {
  try {
    return minorFromWireValue(value);
  } catch (error) {
    ctx.addIssue({ code: 'custom', message: error instanceof WireMoneyError ? error.message : 'invalid amount' });
    return z.NEVER;
  }
});

/** A field real gateways sometimes leave out and sometimes send as null; read as null either way. */
function optionalNull<T extends z.ZodType>(schema: T) {
  return schema.nullish().transform((value) => value ?? null);
}

const id = z.string().min(1).max(200);
const text = z.string().max(10_000);

export const wireErrorBodySchema = z.object({
  errors: z.array(z.object({ code: z.string().max(200).catch('unknown'), description: z.string().max(10_000).catch('') })).max(100),
});
export type WireErrorBody = z.input<typeof wireErrorBodySchema>;

export const customerWireSchema = z
  .object({
    object: z.literal('customer').optional(),
    id,
    dateCreated: z.string(),
    name: text,
    cpfCnpj: optionalNull(z.string()),
    email: optionalNull(z.string()),
    externalReference: optionalNull(z.string()),
    deleted: z.boolean(),
  })
  .transform(
    (wire): GatewayCustomer => ({
      id: wire.id,
      name: wire.name,
      cpfCnpj: wire.cpfCnpj,
      email: wire.email,
      externalReference: wire.externalReference,
      dateCreated: wire.dateCreated,
      deleted: wire.deleted,
    }),
  );
export type CustomerWire = z.input<typeof customerWireSchema>;

export const paymentWireSchema = z
  .object({
    object: z.literal('payment').optional(),
    id,
    dateCreated: z.string(),
    customer: id,
    value: wireMoney,
    netValue: wireMoney,
    billingType: z.enum(paymentBillingTypes),
    status: z.string().min(1).max(100),
    dueDate: z.string(),
    originalDueDate: optionalNull(z.string()),
    paymentDate: optionalNull(z.string()),
    clientPaymentDate: optionalNull(z.string()),
    confirmedDate: optionalNull(z.string()),
    description: optionalNull(text),
    externalReference: optionalNull(z.string()),
    invoiceUrl: optionalNull(z.string()),
    bankSlipUrl: optionalNull(z.string()),
    nossoNumero: optionalNull(z.string()),
    deleted: z.boolean(),
  })
  .transform(
    (wire): GatewayPayment => ({
      id: wire.id,
      customerId: wire.customer,
      billingType: wire.billingType,
      status: paymentStatusFromWire(wire.status),
      gatewayStatus: wire.status,
      amountMinor: wire.value,
      netAmountMinor: wire.netValue,
      dueDate: wire.dueDate,
      originalDueDate: wire.originalDueDate,
      dateCreated: wire.dateCreated,
      paymentDate: wire.paymentDate,
      clientPaymentDate: wire.clientPaymentDate,
      confirmedDate: wire.confirmedDate,
      description: wire.description,
      externalReference: wire.externalReference,
      invoiceUrl: wire.invoiceUrl,
      bankSlipUrl: wire.bankSlipUrl,
      nossoNumero: wire.nossoNumero,
      deleted: wire.deleted,
    }),
  );
export type PaymentWire = z.input<typeof paymentWireSchema>;

export const pixQrCodeWireSchema = z
  .object({
    encodedImage: z.string().max(2_000_000),
    payload: z.string().min(1).max(2_000),
    expirationDate: optionalNull(z.string()),
  })
  .transform((wire): GatewayPixQrCode => ({ ...wire }));
export type PixQrCodeWire = z.input<typeof pixQrCodeWireSchema>;

export const identificationFieldWireSchema = z
  .object({
    identificationField: z.string().regex(/^\d{47,48}$/),
    nossoNumero: z.string(),
    barCode: z.string().regex(/^\d{44}$/),
  })
  .transform((wire): GatewayBoletoIdentificationField => ({ ...wire }));
export type IdentificationFieldWire = z.input<typeof identificationFieldWireSchema>;

export const deletedWireSchema = z
  .object({ deleted: z.boolean(), id })
  .transform((wire): GatewayCancelResult => ({ id: wire.id, deleted: wire.deleted }));
export type DeletedWire = z.input<typeof deletedWireSchema>;

/** A status as the gateway spells it: any short word; the adapter maps it (an unknown one is UNKNOWN, never a parse failure). */
const wireStatus = z.string().min(1).max(100);

/**
 * The destination account of a transfer, as Asaas nests it (`transfer.bankAccount`, the "Transfer
 * events" and "Mechanism for validating transfers via webhooks" pages): a Pix transfer's key is
 * `bankAccount.pixAddressKey`; the bank fields are read for the log only.
 */
const transferBankAccountWireSchema = z.object({
  bank: optionalNull(z.object({ ispb: optionalNull(z.string()), code: optionalNull(z.string()), name: optionalNull(z.string()) })),
  accountName: optionalNull(z.string()),
  ownerName: optionalNull(z.string()),
  cpfCnpj: optionalNull(z.string()),
  agency: optionalNull(z.string()),
  agencyDigit: optionalNull(z.string()),
  account: optionalNull(z.string()),
  accountDigit: optionalNull(z.string()),
  pixAddressKey: optionalNull(z.string().max(200)),
});

/**
 * A transfer (`GET /v3/transfers/{id}`, the answer of `POST /v3/transfers`, the `transfer` of
 * transfer events and of the validation request), as Asaas documents it
 * (https://docs.asaas.com/docs/transfer-events, https://docs.asaas.com/docs/mechanism-for-validating-transfers-via-webhooks):
 * the Pix key inside `bankAccount`, `externalReference` (Asaas's changelog of 2024-10-14),
 * `effectiveDate` a datetime (changelog of 2024-04-15), `status` any word (UNKNOWN when not one
 * of the documented ones).
 */
export const transferWireSchema = z
  .object({
    object: z.literal('transfer').optional(),
    id,
    type: optionalNull(z.string()),
    dateCreated: z.string(),
    value: wireMoney,
    netValue: wireMoney,
    transferFee: wireMoney,
    status: wireStatus,
    effectiveDate: optionalNull(z.string()),
    scheduleDate: optionalNull(z.string()),
    endToEndIdentifier: optionalNull(z.string()),
    authorized: optionalNull(z.boolean()),
    failReason: optionalNull(text),
    transactionReceiptUrl: optionalNull(z.string()),
    operationType: optionalNull(z.string()),
    description: optionalNull(text),
    externalReference: optionalNull(z.string()),
    bankAccount: optionalNull(transferBankAccountWireSchema),
    // Not on Asaas's examples of a transfer read back; kept when present.
    pixAddressKeyType: optionalNull(z.enum(pixAddressKeyTypes)).catch(null),
  })
  .transform(
    (wire): GatewayTransfer => ({
      id: wire.id,
      status: transferStatusFromWire(wire.status),
      gatewayStatus: wire.status,
      amountMinor: wire.value,
      netAmountMinor: wire.netValue,
      feeMinor: wire.transferFee,
      pixAddressKey: wire.bankAccount?.pixAddressKey ?? null,
      pixAddressKeyType: wire.pixAddressKeyType,
      description: wire.description,
      externalReference: wire.externalReference,
      failReason: wire.failReason,
      dateCreated: wire.dateCreated,
      effectiveDate: wire.effectiveDate,
      endToEndIdentifier: wire.endToEndIdentifier,
      authorized: wire.authorized,
      transactionReceiptUrl: wire.transactionReceiptUrl,
    }),
  );
export type TransferWire = z.input<typeof transferWireSchema>;

/**
 * A digitable line as Asaas writes it ("03399.77779 29900.000000 04751.101017 1 81510000002990":
 * dots and spaces), read as its digits (47: bank slip, 48: collection slip).
 */
export const wireDigitableLine = z
  .string()
  .max(100)
  .transform((line) => line.replace(/[.\s]/g, ''))
  .pipe(z.string().regex(/^\d{47,48}$/, 'a digitable line has 47 or 48 digits'));

/** Asaas's `failReasons`: null, a text, or a list of texts; read as one text or null. */
const wireFailReasons = z
  .union([text, z.array(text).max(50)])
  .nullish()
  .transform((reasons) => (reasons === null || reasons === undefined ? null : Array.isArray(reasons) ? reasons.join('; ') || null : reasons));

/**
 * A bill payment (`GET /v3/bill/{id}`, the answer of `POST /v3/bill`, the `bill` of bill events),
 * as Asaas documents it (https://docs.asaas.com/docs/bill-events): status PAID when paid (the
 * adapter's DONE, status.ts `billPaymentStatusFromWire`), the digitable line with dots and spaces,
 * `failReasons`, no `dateCreated` on the event's example, `externalReference` since Asaas's
 * changelog of 2024-07-05.
 */
export const billPaymentWireSchema = z
  .object({
    object: z.literal('bill').optional(),
    id,
    status: wireStatus,
    dateCreated: optionalNull(z.string()),
    value: wireMoney,
    discount: optionalNull(wireMoney),
    interest: optionalNull(wireMoney),
    fine: optionalNull(wireMoney),
    fee: optionalNull(wireMoney),
    identificationField: wireDigitableLine,
    dueDate: optionalNull(z.string()),
    scheduleDate: optionalNull(z.string()),
    paymentDate: optionalNull(z.string()),
    companyName: optionalNull(text),
    canBeCancelled: optionalNull(z.boolean()),
    failReasons: wireFailReasons,
    transactionReceiptUrl: optionalNull(z.string()),
    description: optionalNull(text),
    externalReference: optionalNull(z.string()),
  })
  .transform(
    (wire): GatewayBillPayment => ({
      id: wire.id,
      status: billPaymentStatusFromWire(wire.status),
      gatewayStatus: wire.status,
      amountMinor: wire.value,
      feeMinor: wire.fee ?? 0n,
      identificationField: wire.identificationField,
      description: wire.description,
      externalReference: wire.externalReference,
      failReason: wire.failReasons,
      dateCreated: wire.dateCreated,
      paymentDate: wire.paymentDate,
      transactionReceiptUrl: wire.transactionReceiptUrl,
    }),
  );
export type BillPaymentWire = z.input<typeof billPaymentWireSchema>;

export const webhookWireSchema = z
  .object({
    id,
    name: z.string().max(1_000),
    url: z.string().max(2_000),
    email: optionalNull(z.string()),
    enabled: z.boolean(),
    interrupted: z.boolean(),
    penalizedRequestsCount: optionalNull(z.number().int().min(0)),
    apiVersion: optionalNull(z.number().int()),
    sendType: optionalNull(z.string()),
    events: z.array(z.string().max(200)).max(200),
    hasAuthToken: optionalNull(z.boolean()),
  })
  .transform((wire): GatewayWebhook => ({ ...wire }));
export type WebhookWire = z.input<typeof webhookWireSchema>;

export const balanceWireSchema = z.object({ balance: wireMoney });
export type BalanceWire = z.input<typeof balanceWireSchema>;

/** A page of a list: `{object: "list", hasMore, totalCount, limit, offset, data: [...]}`. */
export function listWireSchema<T extends z.ZodType>(item: T) {
  return z.object({
    object: z.literal('list').optional(),
    hasMore: z.boolean(),
    totalCount: z.number().int().min(0),
    limit: z.number().int().min(0),
    offset: z.number().int().min(0),
    // The gateway caps a page at 100; 1000 leaves room without letting a broken answer run away.
    data: z.array(item).max(1_000),
  });
}
export interface ListWire<T> {
  object?: 'list';
  hasMore: boolean;
  totalCount: number;
  limit: number;
  offset: number;
  data: T[];
}

/** Request bodies, as the gateway spells them. The simulator validates these with its own schemas. */

export interface CustomerCreateWire {
  name: string;
  cpfCnpj?: string;
  email?: string;
  externalReference: string;
}

export interface PaymentCreateWire {
  customer: string;
  billingType: 'PIX' | 'BOLETO';
  value: number;
  dueDate: string;
  description?: string;
  externalReference: string;
}

export interface PaymentRefundWire {
  description?: string;
}

/**
 * `POST /v3/transfers` to a Pix key ("Transfer to accounts at another institution (Pix / TED)",
 * https://docs.asaas.com/reference/transfer-to-another-institution-account-or-pix-key): the key
 * and its type at the top level of the request (the transfer read back nests it in `bankAccount`),
 * our redemption id as `externalReference`.
 */
export interface TransferCreateWire {
  value: number;
  operationType: 'PIX';
  pixAddressKey: string;
  pixAddressKeyType: PixAddressKeyType;
  description?: string;
  externalReference: string;
}

export interface BillPaymentCreateWire {
  identificationField: string;
  value: number;
  description?: string;
  externalReference: string;
}

export interface WebhookUpdateWire {
  url?: string;
  email?: string;
  enabled?: boolean;
  interrupted?: boolean;
  events?: WebhookEvent[];
  authToken?: string;
}

/** Header names on the wire. */
export const wireHeaders = {
  apiKey: 'access_token',
  /**
   * Sent on customer and charge creations only. Asaas does not document it: nothing relies on it.
   * A payout's create is never retried blind; a lost answer is found by its externalReference
   * (activities/redemption.ts).
   */
  idempotencyKey: 'Idempotency-Key',
  /** The header Asaas sends a webhook's authToken in, on every event and validation request (https://docs.asaas.com/docs/receive-asaas-events-at-your-webhook-endpoint). */
  webhookToken: 'asaas-access-token',
} as const;
