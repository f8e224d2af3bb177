import { z } from 'zod';
import { minorFromWireValue, WireMoneyError } from './money.ts';
import {
  billPaymentStatuses,
  paymentBillingTypes,
  paymentStatuses,
  pixAddressKeyTypes,
  transferStatuses,
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
    status: z.enum(paymentStatuses),
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
      status: wire.status,
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

export const transferWireSchema = z
  .object({
    object: z.literal('transfer').optional(),
    id,
    type: optionalNull(z.string()),
    dateCreated: z.string(),
    value: wireMoney,
    netValue: wireMoney,
    transferFee: wireMoney,
    status: z.enum(transferStatuses),
    effectiveDate: optionalNull(z.string()),
    scheduleDate: optionalNull(z.string()),
    endToEndIdentifier: optionalNull(z.string()),
    authorized: optionalNull(z.boolean()),
    failReason: optionalNull(text),
    transactionReceiptUrl: optionalNull(z.string()),
    operationType: optionalNull(z.string()),
    description: optionalNull(text),
    externalReference: optionalNull(z.string()),
    pixAddressKey: optionalNull(z.string()),
    pixAddressKeyType: optionalNull(z.enum(pixAddressKeyTypes)),
  })
  .transform(
    (wire): GatewayTransfer => ({
      id: wire.id,
      status: wire.status,
      amountMinor: wire.value,
      netAmountMinor: wire.netValue,
      feeMinor: wire.transferFee,
      pixAddressKey: wire.pixAddressKey,
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

/** A bill payment (`GET /v3/bill/{id}`, the answer of `POST /v3/bill`, the `bill` of bill payment events). */
export const billPaymentWireSchema = z
  .object({
    object: z.literal('bill').optional(),
    id,
    status: z.enum(billPaymentStatuses),
    dateCreated: z.string(),
    value: wireMoney,
    fee: optionalNull(wireMoney),
    identificationField: z.string().regex(/^\d{47,48}$/),
    paymentDate: optionalNull(z.string()),
    failReason: optionalNull(text),
    transactionReceiptUrl: optionalNull(z.string()),
    description: optionalNull(text),
    externalReference: optionalNull(z.string()),
  })
  .transform(
    (wire): GatewayBillPayment => ({
      id: wire.id,
      status: wire.status,
      amountMinor: wire.value,
      feeMinor: wire.fee ?? 0n,
      identificationField: wire.identificationField,
      description: wire.description,
      externalReference: wire.externalReference,
      failReason: wire.failReason,
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
  idempotencyKey: 'Idempotency-Key',
  /** The header Asaas sends a webhook's authToken in, on every event and validation request (https://docs.asaas.com/docs/receive-asaas-events-at-your-webhook-endpoint). */
  webhookToken: 'asaas-access-token',
} as const;
