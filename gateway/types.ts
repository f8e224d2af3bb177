/**
 * The gateway's vocabulary and the shapes the adapter hands to the rest of the system. Money is
 * in centavos (`bigint`, names ending in `Minor`); ids and statuses are the gateway's own words,
 * unchanged, so a log line or an admin screen can be matched against the gateway's dashboard.
 * The wire shapes (numbers in reais, field names as the gateway spells them) stay in `wire.ts`.
 */

/** Billing types we create charges with. */
export const billingTypes = ['PIX', 'BOLETO'] as const;
export type BillingType = (typeof billingTypes)[number];

/**
 * Billing types a charge read back may carry. The account may hold charges we did not create
 * (card payments made through the gateway's own checkout), and reading a list must not fail on them.
 */
export const paymentBillingTypes = ['PIX', 'BOLETO', 'CREDIT_CARD', 'DEBIT_CARD', 'TRANSFER', 'DEPOSIT', 'UNDEFINED'] as const;
export type PaymentBillingType = (typeof paymentBillingTypes)[number];

/** Charge statuses, in the order a Pix or Boleto charge moves through them (see webhooks.ts for the ranks). */
export const paymentStatuses = [
  'PENDING',
  'AWAITING_RISK_ANALYSIS',
  'OVERDUE',
  'DUNNING_REQUESTED',
  'RECEIVED',
  'RECEIVED_IN_CASH',
  'DUNNING_RECEIVED',
  'CONFIRMED',
  'CHARGEBACK_REQUESTED',
  'CHARGEBACK_DISPUTE',
  'AWAITING_CHARGEBACK_REVERSAL',
  'REFUND_REQUESTED',
  'REFUND_IN_PROGRESS',
  'REFUNDED',
  'DELETED',
] as const;
export type PaymentStatus = (typeof paymentStatuses)[number];

/** Pix payout (transfer) statuses. DONE, FAILED and CANCELLED are final. */
export const transferStatuses = ['PENDING', 'BANK_PROCESSING', 'DONE', 'FAILED', 'CANCELLED'] as const;
export type TransferStatus = (typeof transferStatuses)[number];

export const pixAddressKeyTypes = ['CPF', 'CNPJ', 'EMAIL', 'PHONE', 'EVP'] as const;
export type PixAddressKeyType = (typeof pixAddressKeyTypes)[number];

export const paymentEvents = [
  'PAYMENT_CREATED',
  'PAYMENT_RECEIVED',
  'PAYMENT_CONFIRMED',
  'PAYMENT_OVERDUE',
  'PAYMENT_REFUNDED',
  'PAYMENT_DELETED',
] as const;
export type PaymentEvent = (typeof paymentEvents)[number];

export const transferEvents = [
  'TRANSFER_CREATED',
  'TRANSFER_PENDING',
  'TRANSFER_IN_BANK_PROCESSING',
  'TRANSFER_DONE',
  'TRANSFER_FAILED',
  'TRANSFER_CANCELLED',
] as const;
export type TransferEvent = (typeof transferEvents)[number];

/**
 * Bill payment (a boleto paid out of the account) statuses: the same five as a transfer, with the
 * same meaning (DONE paid, FAILED refused by the bank, CANCELLED never sent), so that one payout
 * vocabulary serves both rails (docs/gateway-wire-api.md 5.3). Its own lifecycle: no validation
 * request; PENDING, then BANK_PROCESSING, then DONE or FAILED.
 */
export const billPaymentStatuses = transferStatuses;
export type BillPaymentStatus = TransferStatus;

export const billPaymentEvents = [
  'BILL_PAYMENT_CREATED',
  'BILL_PAYMENT_BANK_PROCESSING',
  'BILL_PAYMENT_DONE',
  'BILL_PAYMENT_FAILED',
  'BILL_PAYMENT_CANCELLED',
] as const;
export type BillPaymentEvent = (typeof billPaymentEvents)[number];

/** Every event a webhook can subscribe to; the service subscribes to all of them. */
export const webhookEvents = [...paymentEvents, ...transferEvents, ...billPaymentEvents] as const;
export type WebhookEvent = PaymentEvent | TransferEvent | BillPaymentEvent;

export interface GatewayCustomer {
  id: string;
  name: string;
  cpfCnpj: string | null;
  email: string | null;
  externalReference: string | null;
  /** YYYY-MM-DD, the gateway's calendar date. */
  dateCreated: string;
  deleted: boolean;
}

export interface GatewayPayment {
  id: string;
  customerId: string;
  billingType: PaymentBillingType;
  status: PaymentStatus;
  amountMinor: bigint;
  /** What reaches the account after the gateway's fee. */
  netAmountMinor: bigint;
  /** YYYY-MM-DD. */
  dueDate: string;
  originalDueDate: string | null;
  dateCreated: string;
  paymentDate: string | null;
  clientPaymentDate: string | null;
  confirmedDate: string | null;
  description: string | null;
  externalReference: string | null;
  invoiceUrl: string | null;
  bankSlipUrl: string | null;
  nossoNumero: string | null;
  deleted: boolean;
}

export interface GatewayPixQrCode {
  /** Base64 of a PNG image of the QR code. */
  encodedImage: string;
  /** The Pix copy-and-paste (BR Code, EMV) string, "000201...". */
  payload: string;
  /** "YYYY-MM-DD HH:mm:ss" in the gateway's time zone, or null when the code does not expire. */
  expirationDate: string | null;
}

export interface GatewayBoletoIdentificationField {
  /** The digitable line: 47 digits. */
  identificationField: string;
  nossoNumero: string;
  /** The bar code: 44 digits. */
  barCode: string;
}

export interface GatewayCancelResult {
  id: string;
  deleted: boolean;
}

export interface GatewayPage<T> {
  items: T[];
  hasMore: boolean;
  totalCount: number;
  limit: number;
  offset: number;
}

export interface GatewayTransfer {
  id: string;
  status: TransferStatus;
  amountMinor: bigint;
  netAmountMinor: bigint;
  feeMinor: bigint;
  pixAddressKey: string | null;
  pixAddressKeyType: PixAddressKeyType | null;
  description: string | null;
  externalReference: string | null;
  /** Why a FAILED or CANCELLED transfer did not go through; null otherwise. */
  failReason: string | null;
  dateCreated: string;
  effectiveDate: string | null;
  endToEndIdentifier: string | null;
  authorized: boolean | null;
  transactionReceiptUrl: string | null;
}

export interface GatewayWebhook {
  id: string;
  name: string;
  url: string;
  email: string | null;
  enabled: boolean;
  /** The gateway stopped delivering after repeated failures; see removeWebhookBackoff. */
  interrupted: boolean;
  /** Consecutive failed deliveries counted against the queue; null when the gateway does not say. */
  penalizedRequestsCount: number | null;
  apiVersion: number | null;
  sendType: string | null;
  /** Subscribed events; kept as strings because the gateway may add events we do not know yet. */
  events: string[];
  /** Whether an auth token is configured. The token itself is never returned. */
  hasAuthToken: boolean | null;
}

/** Inputs. Every create carries an idempotency key derived from the caller's business key. */

export interface CreateCustomerInput {
  idempotencyKey: string;
  name: string;
  /** CPF (11 digits) or CNPJ (14 digits), digits only. */
  cpfCnpj?: string;
  email?: string;
  externalReference: string;
}

export interface CreatePaymentInput {
  idempotencyKey: string;
  customerId: string;
  billingType: BillingType;
  amountMinor: bigint;
  /** YYYY-MM-DD. */
  dueDate: string;
  description?: string;
  externalReference: string;
}

/** The filters and paging every list takes; a list of charges takes a customer too. */
export interface ListInput<Status extends string> {
  status?: Status;
  externalReference?: string;
  /** Created on or after / on or before this date (YYYY-MM-DD, the gateway's calendar): `dateCreated[ge]`, `dateCreated[le]`. */
  dateCreatedFrom?: string;
  dateCreatedTo?: string;
  /** 1 to 100; the gateway's default is 10. */
  limit?: number;
  offset?: number;
}

export interface ListPaymentsInput extends ListInput<PaymentStatus> {
  customerId?: string;
}

export type ListTransfersInput = ListInput<TransferStatus>;

/** A bill payment: the account pays a boleto (its digitable line) for the payout of a redemption. */
export interface GatewayBillPayment {
  id: string;
  status: BillPaymentStatus;
  amountMinor: bigint;
  feeMinor: bigint;
  /** The boleto's digitable line, digits only (47: bank slip, 48: collection slip). */
  identificationField: string;
  description: string | null;
  externalReference: string | null;
  /** Why a FAILED or CANCELLED bill payment did not go through; null otherwise. */
  failReason: string | null;
  dateCreated: string;
  paymentDate: string | null;
  transactionReceiptUrl: string | null;
}

export interface CreateBillPaymentInput {
  idempotencyKey: string;
  /** The amount paid; it must equal the amount the line carries when it carries one. */
  amountMinor: bigint;
  identificationField: string;
  description?: string;
  externalReference: string;
}

export type ListBillPaymentsInput = ListInput<BillPaymentStatus>;

export interface RefundPaymentInput {
  description?: string;
}

export interface CreateTransferInput {
  idempotencyKey: string;
  amountMinor: bigint;
  pixAddressKey: string;
  pixAddressKeyType: PixAddressKeyType;
  description?: string;
  externalReference: string;
}

export interface UpdateWebhookInput {
  url?: string;
  email?: string;
  enabled?: boolean;
  interrupted?: boolean;
  events?: readonly WebhookEvent[];
  /** Write-only: the value the gateway sends back in `asaas-access-token`. */
  authToken?: string;
}

/** Per-call options: a caller's signal (a Temporal activity's cancellation) on top of the client's timeout. */
export interface GatewayCallOptions {
  signal?: AbortSignal;
}

export type GatewayHealth =
  | { ok: true; latencyMs: number }
  | { ok: false; latencyMs: number; status: number | null; code: string; retryable: boolean };
