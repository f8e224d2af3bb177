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
/** A charge status as the adapter hands it on: a documented one, or UNKNOWN (open: never paid, never failed) for one it does not know. */
export type PaymentStatus = (typeof paymentStatuses)[number] | 'UNKNOWN';

/**
 * Transfer (payout) statuses Asaas documents (https://docs.asaas.com/docs/transfer-events, "Retrieve
 * a single transfer"): DONE, FAILED and CANCELLED are final; BLOCKED waits (Asaas holds it for
 * review).
 */
export const transferStatuses = ['PENDING', 'BANK_PROCESSING', 'BLOCKED', 'DONE', 'FAILED', 'CANCELLED'] as const;
/**
 * A payout status as the adapter hands it on (both rails): the documented ones, or UNKNOWN for a
 * status the adapter does not know, which is open (never final, never moves money) and is
 * flagged where it is read (`GatewayTransfer.gatewayStatus` keeps the gateway's word).
 */
export type TransferStatus = (typeof transferStatuses)[number] | 'UNKNOWN';

export const pixAddressKeyTypes = ['CPF', 'CNPJ', 'EMAIL', 'PHONE', 'EVP'] as const;
export type PixAddressKeyType = (typeof pixAddressKeyTypes)[number];

/**
 * Every payment (charge) event Asaas documents (https://docs.asaas.com/docs/payment-events). The
 * ones that announce a status are mapped in status.ts (`paymentStatusByEvent`); the others (views,
 * updates, splits, card-only steps) announce none: the payment object's status decides.
 */
export const paymentEvents = [
  'PAYMENT_CREATED',
  'PAYMENT_AWAITING_RISK_ANALYSIS',
  'PAYMENT_APPROVED_BY_RISK_ANALYSIS',
  'PAYMENT_REPROVED_BY_RISK_ANALYSIS',
  'PAYMENT_AUTHORIZED',
  'PAYMENT_UPDATED',
  'PAYMENT_CONFIRMED',
  'PAYMENT_RECEIVED',
  'PAYMENT_CREDIT_CARD_CAPTURE_REFUSED',
  'PAYMENT_ANTICIPATED',
  'PAYMENT_OVERDUE',
  'PAYMENT_DELETED',
  'PAYMENT_RESTORED',
  'PAYMENT_REFUNDED',
  'PAYMENT_PARTIALLY_REFUNDED',
  'PAYMENT_REFUND_IN_PROGRESS',
  'PAYMENT_RECEIVED_IN_CASH_UNDONE',
  'PAYMENT_CHARGEBACK_REQUESTED',
  'PAYMENT_CHARGEBACK_DISPUTE',
  'PAYMENT_AWAITING_CHARGEBACK_REVERSAL',
  'PAYMENT_DUNNING_RECEIVED',
  'PAYMENT_DUNNING_REQUESTED',
  'PAYMENT_BANK_SLIP_VIEWED',
  'PAYMENT_CHECKOUT_VIEWED',
  'PAYMENT_SPLIT_CANCELLED',
  'PAYMENT_SPLIT_DIVERGENCE_BLOCK',
  'PAYMENT_SPLIT_DIVERGENCE_BLOCK_FINISHED',
] as const;
export type PaymentEvent = (typeof paymentEvents)[number];

/** The payment events a Pix or Boleto charge of ours can take a decision from; the webhook subscribes to these. */
export const subscribedPaymentEvents = [
  'PAYMENT_CREATED',
  'PAYMENT_RECEIVED',
  'PAYMENT_CONFIRMED',
  'PAYMENT_OVERDUE',
  'PAYMENT_REFUNDED',
  'PAYMENT_DELETED',
  'PAYMENT_RESTORED',
] as const satisfies readonly PaymentEvent[];

/** Every transfer event Asaas documents (https://docs.asaas.com/docs/transfer-events). */
export const transferEvents = [
  'TRANSFER_CREATED',
  'TRANSFER_PENDING',
  'TRANSFER_IN_BANK_PROCESSING',
  'TRANSFER_BLOCKED',
  'TRANSFER_DONE',
  'TRANSFER_FAILED',
  'TRANSFER_CANCELLED',
] as const;
export type TransferEvent = (typeof transferEvents)[number];

/**
 * A bill payment's (a boleto paid out of the account) statuses as Asaas sends them
 * (https://docs.asaas.com/docs/bill-events, the bill object of "Pay a bill"): PENDING,
 * BANK_PROCESSING, PAID, FAILED, CANCELLED, REFUNDED, and the risk analysis wait. The adapter
 * normalises them into the one payout vocabulary both rails share (`BillPaymentStatus`, the
 * transfer's: PAID is DONE, REFUNDED is FAILED, the risk analysis is PENDING; status.ts
 * `billPaymentStatusFromWire`), so everything after the adapter is the same for both rails.
 */
export const asaasBillStatuses = ['PENDING', 'BANK_PROCESSING', 'PAID', 'FAILED', 'CANCELLED', 'REFUNDED', 'AWAITING_CHECKOUT_RISK_ANALYSIS_REQUEST'] as const;
export type AsaasBillStatus = (typeof asaasBillStatuses)[number];
export const billPaymentStatuses = transferStatuses;
export type BillPaymentStatus = TransferStatus;

/** Every bill payment event Asaas documents (https://docs.asaas.com/docs/bill-events). */
export const billPaymentEvents = [
  'BILL_CREATED',
  'BILL_PENDING',
  'BILL_BANK_PROCESSING',
  'BILL_PAID',
  'BILL_CANCELLED',
  'BILL_FAILED',
  'BILL_REFUNDED',
] as const;
export type BillPaymentEvent = (typeof billPaymentEvents)[number];

/** Every event the service's webhook subscribes to: each exists at Asaas (the lists above are theirs). */
export const webhookEvents = [...subscribedPaymentEvents, ...transferEvents, ...billPaymentEvents] as const;
/** Any event Asaas documents for the families the service reads (a webhook may be subscribed to any of them). */
export const documentedWebhookEvents = [...paymentEvents, ...transferEvents, ...billPaymentEvents] as const;
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
  /** The status exactly as the gateway sent it (`status` is UNKNOWN when the adapter does not know it). */
  gatewayStatus: string;
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
  /** When the transfer was carried out: a datetime ("YYYY-MM-DD HH:mm:ss") since Asaas's changelog of 2024-04-15; a date before. */
  effectiveDate: string | null;
  endToEndIdentifier: string | null;
  /** The status exactly as the gateway sent it (`status` is UNKNOWN when the adapter does not know it). */
  gatewayStatus: string;
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

/** Inputs. Customer and charge creates carry an idempotency key derived from the caller's business key; payouts do not (see CreateTransferInput). */

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
  /** The boleto's digitable line, digits only (47: bank slip, 48: collection slip); Asaas writes it with dots and spaces. */
  identificationField: string;
  description: string | null;
  externalReference: string | null;
  /** Why a FAILED or CANCELLED bill payment did not go through (Asaas: `failReasons`); null otherwise. */
  failReason: string | null;
  /** Absent from Asaas's bill event example; null then. */
  dateCreated: string | null;
  /** The status exactly as the gateway sent it (PAID, REFUNDED...); `status` is its normalised payout status. */
  gatewayStatus: string;
  paymentDate: string | null;
  transactionReceiptUrl: string | null;
}

/** No idempotency key: Asaas documents none on bill payments (see GatewayClient.createBillPayment). */
export interface CreateBillPaymentInput {
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

/** No idempotency key: Asaas documents none on transfers (see GatewayClient.createTransfer). */
export interface CreateTransferInput {
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
