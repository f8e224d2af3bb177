import { randomBytes, randomInt, randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { wireValueFromMinor } from '../gateway/money.ts';
import type { AsaasBillStatus, BillingType, BillPaymentEvent, PaymentEvent, PaymentStatus, PixAddressKeyType, TransferEvent, TransferStatus } from '../gateway/types.ts';
import {
  transferValidationAnswerSchema,
  type BillPaymentEventWire,
  type BillValidationRequestWire,
  type PaymentEventWire,
  type TransferEventWire,
  type TransferValidationRequestWire,
} from '../gateway/webhooks.ts';
import { parseWireJson } from '../gateway/json.ts';
import type {
  BillPaymentWire,
  CustomerWire,
  DeletedWire,
  IdentificationFieldWire,
  PaymentWire,
  PixQrCodeWire,
  TransferWire,
} from '../gateway/wire.ts';
import { wireHeaders } from '../gateway/wire.ts';
import { buildBoleto, buildPixPayload, renderPlaceholderQrPng, type BoletoNumbers } from './documents.ts';
import { memoryStore, type ResourceKind, type SimulatorStore } from './store.ts';
import type { WebhookDispatcher } from './webhook-queue.ts';

/**
 * The simulated gateway's state and rules: customers, charges, Pix transfers, idempotency keys,
 * the account balance, and the events each change sends. Reads come from memory; every change is
 * also written to the store (simulator/store.ts) in one transaction with the events it queues,
 * before the simulator answers: with a file store (npm start) the state survives a restart, and a
 * transfer still PENDING then has its validation scheduled again. Resource ids are random, so a
 * simulator that starts empty never hands out an id the service already holds. Every collection
 * is bounded.
 */

/** A refusal the API answers as `{errors: [{code, description}]}` with this HTTP status. */
export class SimulatorApiError extends Error {
  readonly status: number;
  readonly code: string;
  readonly headers: Record<string, string>;
  constructor(status: number, code: string, description: string, headers: Record<string, string> = {}) {
    super(description);
    this.name = 'SimulatorApiError';
    this.status = status;
    this.code = code;
    this.headers = headers;
  }
}

export const resourcesMax = 100_000;
export const validationLogMax = 2_000;
/** The account starts with this balance, so payouts work before any charge is paid. */
export const initialBalanceMinor = 100_000_000n;
/** Fees the simulated gateway keeps: netValue = value - fee. */
export const chargeFeeMinor: Readonly<Record<BillingType, bigint>> = { PIX: 99n, BOLETO: 199n };
export const transferFeeMinor = 0n;
/** The simulated gateway's fee on a bill payment, debited on top of its value. */
export const billPaymentFeeMinor = 0n;
const publicBase = 'https://sandbox.gateway-simulator.invalid';

interface CustomerRecord {
  id: string;
  name: string;
  cpfCnpj: string | null;
  email: string | null;
  externalReference: string | null;
  dateCreated: string;
}

interface PaymentRecord {
  id: string;
  customerId: string;
  billingType: BillingType;
  status: PaymentStatus;
  valueMinor: bigint;
  netValueMinor: bigint;
  dueDate: string;
  dateCreated: string;
  paymentDate: string | null;
  clientPaymentDate: string | null;
  confirmedDate: string | null;
  description: string | null;
  externalReference: string | null;
  nossoNumero: string;
  deleted: boolean;
  pixPayload: string | null;
  pixExpirationDate: string | null;
  boleto: BoletoNumbers | null;
}

interface TransferRecord {
  id: string;
  status: TransferStatus;
  valueMinor: bigint;
  feeMinor: bigint;
  pixAddressKey: string;
  pixAddressKeyType: PixAddressKeyType;
  description: string | null;
  externalReference: string | null;
  failReason: string | null;
  dateCreated: string;
  effectiveDate: string | null;
  endToEndIdentifier: string | null;
  authorized: boolean | null;
  validationAttempts: number;
}

interface BillPaymentRecord {
  id: string;
  /** Asaas's own word (PAID when paid), as the wire carries it. */
  status: AsaasBillStatus;
  valueMinor: bigint;
  feeMinor: bigint;
  identificationField: string;
  description: string | null;
  externalReference: string | null;
  failReason: string | null;
  dateCreated: string;
  paymentDate: string | null;
}

export interface ValidationLogEntry {
  at: string;
  transferId: string;
  attempt: number;
  outcome: 'APPROVED' | 'REFUSED' | 'FAILED' | 'SKIPPED';
  httpStatus: number | null;
  error: string | null;
}

export interface CustomerCreate {
  name: string;
  cpfCnpj: string | null;
  email: string | null;
  externalReference: string | null;
}

export interface PaymentCreate {
  customerId: string;
  billingType: BillingType;
  valueMinor: bigint;
  dueDate: string;
  description: string | null;
  externalReference: string | null;
}

export interface TransferCreate {
  valueMinor: bigint;
  pixAddressKey: string;
  pixAddressKeyType: PixAddressKeyType;
  description: string | null;
  externalReference: string | null;
}

export interface BillPaymentCreate {
  valueMinor: bigint;
  identificationField: string;
  description: string | null;
  externalReference: string | null;
}

export interface Created<T> {
  resource: T;
  /** True when an idempotency key found an earlier create. */
  replayed: boolean;
}

/** The filters and paging of every list: `dateCreated[ge]`, `dateCreated[le]` as YYYY-MM-DD, inclusive. */
export interface ListQueryOf<Status extends string> {
  status?: Status;
  externalReference?: string;
  dateCreatedGe?: string;
  dateCreatedLe?: string;
  limit: number;
  offset: number;
}

/** A list of charges filters by customer too. */
export interface ListQuery extends ListQueryOf<PaymentStatus> {
  customer?: string;
}

export type TransferListQuery = ListQueryOf<TransferStatus>;

/** One page of a list, oldest first (creation order): a resource created while a client pages goes to the end. */
function pageOf<R, W>(all: Iterable<R>, keep: (record: R) => boolean, toWire: (record: R) => W, { limit, offset }: { limit: number; offset: number }) {
  const matching = [...all].filter(keep);
  const page = matching.slice(offset, offset + limit);
  return { data: page.map(toWire), totalCount: matching.length, hasMore: offset + page.length < matching.length };
}

/** Whether a record passes the filters every list has (status, external reference, creation dates). */
function listed(record: { status: string; externalReference: string | null; dateCreated: string }, query: ListQueryOf<string>): boolean {
  return (
    (query.status === undefined || record.status === query.status) &&
    (query.externalReference === undefined || record.externalReference === query.externalReference) &&
    (query.dateCreatedGe === undefined || record.dateCreated >= query.dateCreatedGe) &&
    (query.dateCreatedLe === undefined || record.dateCreated <= query.dateCreatedLe)
  );
}

export interface GatewayStateOptions {
  dispatcher: WebhookDispatcher;
  logger: Logger | null;
  webhookToken: string;
  validationUrl: string | null;
  validationDelayMs: number;
  validationTimeoutMs: number;
  validationAttempts: number;
  autoSettle: boolean;
  /** Fault injection: whether the bank refuses this bill payment (decided when it is processed). */
  billPaymentFails?: () => boolean;
  /** Where changes are written; memory (nothing kept) by default. */
  store?: SimulatorStore;
  now?: () => Date;
  fetch?: typeof fetch;
}

/** JSON with bigints (money) kept exact: written as {"$bigint": "123"}. */
function toStoredJson(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) => (typeof v === 'bigint' ? { $bigint: v.toString() } : v));
}

function fromStoredJson<T>(text: string): T {
  return JSON.parse(text, (_key, v: unknown) => {
    if (typeof v === 'object' && v !== null && !Array.isArray(v)) {
      const entries = Object.entries(v);
      const [first] = entries;
      if (entries.length === 1 && first !== undefined && first[0] === '$bigint' && typeof first[1] === 'string') return BigInt(first[1]);
    }
    return v;
  }) as T;
}

export class GatewayState {
  readonly #options: GatewayStateOptions;
  readonly #now: () => Date;
  #customers = new Map<string, CustomerRecord>();
  #payments = new Map<string, PaymentRecord>();
  #transfers = new Map<string, TransferRecord>();
  #billPayments = new Map<string, BillPaymentRecord>();
  #idempotency = new Map<string, { fingerprint: string; resourceId: string }>();
  #validations: ValidationLogEntry[] = [];
  #balanceMinor = initialBalanceMinor;
  #timers = new Set<NodeJS.Timeout>();
  #abort = new AbortController();
  #closed = false;
  readonly #store: SimulatorStore;

  constructor(options: GatewayStateOptions) {
    this.#options = options;
    this.#now = options.now ?? (() => new Date());
    this.#store = options.store ?? memoryStore();
    const stored = this.#store.load();
    for (const body of stored.resources.customer) {
      const customer = fromStoredJson<CustomerRecord>(body);
      this.#customers.set(customer.id, customer);
    }
    for (const body of stored.resources.payment) {
      const payment = fromStoredJson<PaymentRecord>(body);
      this.#payments.set(payment.id, payment);
    }
    for (const body of stored.resources.transfer) {
      const transfer = fromStoredJson<TransferRecord>(body);
      this.#transfers.set(transfer.id, transfer);
    }
    for (const body of stored.resources.billPayment) {
      const bill = fromStoredJson<BillPaymentRecord>(body);
      this.#billPayments.set(bill.id, bill);
    }
    for (const { key, fingerprint, resourceId } of stored.idempotency) this.#idempotency.set(key, { fingerprint, resourceId });
    if (stored.balanceMinor !== null) this.#balanceMinor = stored.balanceMinor;
  }

  /** Kept transfers that were waiting for their validation when the simulator stopped: ask again. */
  resumePending(): number {
    let resumed = 0;
    for (const transfer of this.#transfers.values()) {
      if (transfer.status !== 'PENDING') continue;
      this.#scheduleValidation(transfer, transfer.validationAttempts + 1);
      resumed += 1;
    }
    for (const bill of this.#billPayments.values()) {
      if (bill.status === 'PENDING') this.#scheduleBillValidation(bill, 1);
      else if (bill.status === 'BANK_PROCESSING') this.#scheduleBillProcessing(bill);
      else continue;
      resumed += 1;
    }
    return resumed;
  }

  /** Forgets everything (the store too), cancels pending validations. */
  reset(): void {
    this.#clearTimers();
    this.#abort.abort();
    this.#abort = new AbortController();
    this.#customers = new Map();
    this.#payments = new Map();
    this.#transfers = new Map();
    this.#billPayments = new Map();
    this.#idempotency = new Map();
    this.#validations = [];
    this.#balanceMinor = initialBalanceMinor;
    this.#store.clear();
  }

  close(): void {
    this.#closed = true;
    this.#clearTimers();
    this.#abort.abort();
  }

  /** Where the state is kept (a file), or null when it lives in memory only. */
  get storeLocation(): string | null {
    return this.#store.location;
  }

  // Customers

  createCustomer(input: CustomerCreate, idempotencyKey: string | null, fingerprint: string): Created<CustomerWire> {
    return this.#store.atomically(() => {
      const replayed = this.#replay('customer', idempotencyKey, fingerprint, (id) => this.#customers.get(id));
      if (replayed !== undefined) return { resource: customerWire(replayed), replayed: true };
      this.#requireRoom(this.#customers.size);
      const customer: CustomerRecord = {
        id: `cus_${randomDigits(12)}`,
        ...input,
        dateCreated: this.#today(),
      };
      this.#customers.set(customer.id, customer);
      this.#save('customer', customer);
      this.#remember('customer', idempotencyKey, fingerprint, customer.id);
      return { resource: customerWire(customer), replayed: false };
    });
  }

  getCustomer(id: string): CustomerWire {
    const customer = this.#customers.get(id);
    if (customer === undefined) throw notFound('customer', id);
    return customerWire(customer);
  }

  // Charges

  createPayment(input: PaymentCreate, idempotencyKey: string | null, fingerprint: string): Created<PaymentWire> {
    return this.#store.atomically(() => {
      const replayed = this.#replay('payment', idempotencyKey, fingerprint, (id) => this.#payments.get(id));
      if (replayed !== undefined) return { resource: paymentWire(replayed), replayed: true };
      if (!this.#customers.has(input.customerId)) throw new SimulatorApiError(400, 'invalid_customer', `customer ${input.customerId} does not exist`);
      if (input.dueDate < this.#today()) throw new SimulatorApiError(400, 'invalid_dueDate', 'dueDate must not be in the past');
      this.#requireRoom(this.#payments.size);
      const id = `pay_${randomAlnum(16)}`;
      const nossoNumero = randomDigits(10);
      const fee = chargeFeeMinor[input.billingType];
      const payment: PaymentRecord = {
        id,
        customerId: input.customerId,
        billingType: input.billingType,
        status: 'PENDING',
        valueMinor: input.valueMinor,
        netValueMinor: input.valueMinor > fee ? input.valueMinor - fee : 0n,
        dueDate: input.dueDate,
        dateCreated: this.#today(),
        paymentDate: null,
        clientPaymentDate: null,
        confirmedDate: null,
        description: input.description,
        externalReference: input.externalReference,
        nossoNumero,
        deleted: false,
        pixPayload: input.billingType === 'PIX' ? buildPixPayload({ paymentId: id, amountMinor: input.valueMinor, txid: id.replace(/[^A-Za-z0-9]/g, '') }) : null,
        pixExpirationDate: input.billingType === 'PIX' ? `${input.dueDate} 23:59:59` : null,
        boleto:
          input.billingType === 'BOLETO'
            ? buildBoleto({ amountMinor: input.valueMinor, dueDate: input.dueDate, freeField: `${nossoNumero}${randomDigits(15)}` })
            : null,
      };
      this.#payments.set(id, payment);
      this.#save('payment', payment);
      this.#remember('payment', idempotencyKey, fingerprint, id);
      this.#emitPayment('PAYMENT_CREATED', payment);
      return { resource: paymentWire(payment), replayed: false };
    });
  }

  getPayment(id: string): PaymentWire {
    return paymentWire(this.#payment(id));
  }

  listPayments(query: ListQuery): { data: PaymentWire[]; totalCount: number; hasMore: boolean } {
    return pageOf(this.#payments.values(), (p) => (query.customer === undefined || p.customerId === query.customer) && listed(p, query), paymentWire, query);
  }

  getPixQrCode(id: string): PixQrCodeWire {
    const payment = this.#payment(id);
    if (payment.pixPayload === null) throw new SimulatorApiError(400, 'invalid_billingType', 'only PIX charges have a Pix QR code');
    if (payment.deleted) throw new SimulatorApiError(400, 'invalid_action', 'the charge was deleted');
    return { encodedImage: renderPlaceholderQrPng(payment.pixPayload), payload: payment.pixPayload, expirationDate: payment.pixExpirationDate };
  }

  getIdentificationField(id: string): IdentificationFieldWire {
    const payment = this.#payment(id);
    if (payment.boleto === null) throw new SimulatorApiError(400, 'invalid_billingType', 'only BOLETO charges have a digitable line');
    if (payment.deleted) throw new SimulatorApiError(400, 'invalid_action', 'the charge was deleted');
    return { identificationField: payment.boleto.identificationField, nossoNumero: payment.nossoNumero, barCode: payment.boleto.barCode };
  }

  /** DELETE: cancels a PENDING or OVERDUE charge. Deleting again answers the same. */
  deletePayment(id: string): DeletedWire {
    return this.#store.atomically(() => {
      const payment = this.#payment(id);
      if (payment.deleted) return { deleted: true, id };
      if (payment.status !== 'PENDING' && payment.status !== 'OVERDUE') {
        throw new SimulatorApiError(400, 'invalid_action', `a ${payment.status} charge cannot be deleted; refund it instead`);
      }
      payment.status = 'DELETED';
      payment.deleted = true;
      this.#save('payment', payment);
      this.#emitPayment('PAYMENT_DELETED', payment);
      return { deleted: true, id };
    });
  }

  /** Full refund of a paid charge. Refunding a REFUNDED charge returns it unchanged. */
  refundPayment(id: string): PaymentWire {
    return this.#store.atomically(() => {
      const payment = this.#payment(id);
      if (payment.status === 'REFUNDED') return paymentWire(payment);
      if (payment.status !== 'RECEIVED' && payment.status !== 'CONFIRMED' && payment.status !== 'RECEIVED_IN_CASH') {
        throw new SimulatorApiError(400, 'invalid_action', `a ${payment.status} charge cannot be refunded`);
      }
      payment.status = 'REFUNDED';
      this.#balanceMinor -= payment.netValueMinor;
      this.#save('payment', payment);
      this.#saveBalance();
      this.#emitPayment('PAYMENT_REFUNDED', payment);
      return paymentWire(payment);
    });
  }

  /** Control: the payer pays. RECEIVED, then CONFIRMED, each with its event. */
  payPayment(id: string): PaymentWire {
    return this.#store.atomically(() => {
      const payment = this.#payment(id);
      if (payment.status !== 'PENDING' && payment.status !== 'OVERDUE') {
        throw new SimulatorApiError(400, 'invalid_action', `a ${payment.status} charge cannot be paid`);
      }
      const today = this.#today();
      payment.status = 'RECEIVED';
      payment.paymentDate = today;
      payment.clientPaymentDate = today;
      this.#balanceMinor += payment.netValueMinor;
      this.#emitPayment('PAYMENT_RECEIVED', payment);
      payment.status = 'CONFIRMED';
      payment.confirmedDate = today;
      this.#save('payment', payment);
      this.#saveBalance();
      this.#emitPayment('PAYMENT_CONFIRMED', payment);
      return paymentWire(payment);
    });
  }

  /** Control: the due date passes unpaid. */
  overduePayment(id: string): PaymentWire {
    return this.#store.atomically(() => {
      const payment = this.#payment(id);
      if (payment.status !== 'PENDING') throw new SimulatorApiError(400, 'invalid_action', `a ${payment.status} charge cannot go overdue`);
      payment.status = 'OVERDUE';
      this.#save('payment', payment);
      this.#emitPayment('PAYMENT_OVERDUE', payment);
      return paymentWire(payment);
    });
  }

  // Transfers

  createTransfer(input: TransferCreate, idempotencyKey: string | null, fingerprint: string): Created<TransferWire> {
    return this.#store.atomically(() => {
      const replayed = this.#replay('transfer', idempotencyKey, fingerprint, (id) => this.#transfers.get(id));
      if (replayed !== undefined) return { resource: transferWire(replayed), replayed: true };
      this.#requireRoom(this.#transfers.size);
      // The account is debited `value`; the recipient gets netValue = value - transferFee.
      const debit = input.valueMinor;
      if (debit > this.#balanceMinor) throw new SimulatorApiError(400, 'insufficient_balance', 'the account balance does not cover this transfer');
      const transfer: TransferRecord = {
        id: randomUUID(),
        status: 'PENDING',
        valueMinor: input.valueMinor,
        feeMinor: transferFeeMinor,
        pixAddressKey: input.pixAddressKey,
        pixAddressKeyType: input.pixAddressKeyType,
        description: input.description,
        externalReference: input.externalReference,
        failReason: null,
        dateCreated: this.#today(),
        effectiveDate: null,
        endToEndIdentifier: null,
        authorized: null,
        validationAttempts: 0,
      };
      this.#balanceMinor -= debit;
      this.#transfers.set(transfer.id, transfer);
      this.#save('transfer', transfer);
      this.#saveBalance();
      this.#remember('transfer', idempotencyKey, fingerprint, transfer.id);
      this.#emitTransfer('TRANSFER_CREATED', transfer);
      this.#scheduleValidation(transfer, 1);
      return { resource: transferWire(transfer), replayed: false };
    });
  }

  getTransfer(id: string): TransferWire {
    return transferWire(this.#transfer(id));
  }

  listTransfers(query: TransferListQuery): { data: TransferWire[]; totalCount: number; hasMore: boolean } {
    return pageOf(this.#transfers.values(), (t) => listed(t, query), transferWire, query);
  }

  /** Control: the bank confirms the payout. */
  completeTransfer(id: string): TransferWire {
    return this.#store.atomically(() => {
      const transfer = this.#transfer(id);
      if (transfer.status !== 'PENDING' && transfer.status !== 'BANK_PROCESSING') {
        throw new SimulatorApiError(400, 'invalid_action', `a ${transfer.status} transfer cannot be completed`);
      }
      this.#settle(transfer);
      return transferWire(transfer);
    });
  }

  /** Control: the bank rejects the payout. */
  failTransfer(id: string, reason: string): TransferWire {
    return this.#store.atomically(() => {
      const transfer = this.#transfer(id);
      if (transfer.status !== 'PENDING' && transfer.status !== 'BANK_PROCESSING') {
        throw new SimulatorApiError(400, 'invalid_action', `a ${transfer.status} transfer cannot fail`);
      }
      transfer.status = 'FAILED';
      transfer.failReason = reason;
      this.#balanceMinor += transfer.valueMinor;
      this.#save('transfer', transfer);
      this.#saveBalance();
      this.#emitTransfer('TRANSFER_FAILED', transfer);
      return transferWire(transfer);
    });
  }

  // Bill payments (the boleto rail's payouts)

  /**
   * Pays a boleto from the account: debits value + fee at once (given back if it fails), answers
   * PENDING with BILL_CREATED, asks the validation URL about it (`type: "BILL"`, as a transfer),
   * and once approved processes it: BANK_PROCESSING, PAID when `autoSettle` (else a control
   * completes or fails it). A line
   * that carries an amount is paid that amount only (400 `invalid_value` otherwise).
   */
  createBillPayment(input: BillPaymentCreate, idempotencyKey: string | null, fingerprint: string): Created<BillPaymentWire> {
    return this.#store.atomically(() => {
      const replayed = this.#replay('bill', idempotencyKey, fingerprint, (id) => this.#billPayments.get(id));
      if (replayed !== undefined) return { resource: billPaymentWire(replayed), replayed: true };
      this.#requireRoom(this.#billPayments.size);
      const written = lineAmountMinor(input.identificationField);
      if (written !== null && written !== input.valueMinor) {
        throw new SimulatorApiError(400, 'invalid_value', `the boleto is for ${wireValueFromMinor(written)}; a bill is paid in full`);
      }
      const debit = input.valueMinor + billPaymentFeeMinor;
      if (debit > this.#balanceMinor) throw new SimulatorApiError(400, 'insufficient_balance', 'the account balance does not cover this bill payment');
      const bill: BillPaymentRecord = {
        id: randomUUID(),
        status: 'PENDING',
        valueMinor: input.valueMinor,
        feeMinor: billPaymentFeeMinor,
        identificationField: input.identificationField,
        description: input.description,
        externalReference: input.externalReference,
        failReason: null,
        dateCreated: this.#today(),
        paymentDate: null,
      };
      this.#balanceMinor -= debit;
      this.#billPayments.set(bill.id, bill);
      this.#save('billPayment', bill);
      this.#saveBalance();
      this.#remember('bill', idempotencyKey, fingerprint, bill.id);
      this.#emitBillPayment('BILL_CREATED', bill);
      this.#scheduleBillValidation(bill, 1);
      return { resource: billPaymentWire(bill), replayed: false };
    });
  }

  getBillPayment(id: string): BillPaymentWire {
    return billPaymentWire(this.#billPayment(id));
  }

  listBillPayments(query: TransferListQuery): { data: BillPaymentWire[]; totalCount: number; hasMore: boolean } {
    return pageOf(this.#billPayments.values(), (b) => listed(b, query), billPaymentWire, query);
  }

  /** Control: the bank confirms the bill paid. */
  completeBillPayment(id: string): BillPaymentWire {
    return this.#store.atomically(() => {
      const bill = this.#billPayment(id);
      if (bill.status !== 'PENDING' && bill.status !== 'BANK_PROCESSING') {
        throw new SimulatorApiError(400, 'invalid_action', `a ${bill.status} bill payment cannot be completed`);
      }
      this.#payBill(bill);
      return billPaymentWire(bill);
    });
  }

  /** Control: the bank refuses the bill (expired, already paid, unknown line); the account gets the money back. */
  failBillPayment(id: string, reason: string): BillPaymentWire {
    return this.#store.atomically(() => {
      const bill = this.#billPayment(id);
      if (bill.status !== 'PENDING' && bill.status !== 'BANK_PROCESSING') {
        throw new SimulatorApiError(400, 'invalid_action', `a ${bill.status} bill payment cannot fail`);
      }
      this.#refuseBill(bill, reason);
      return billPaymentWire(bill);
    });
  }

  /** Control: cancels a bill payment not yet sent to the bank (PENDING); the account gets the money back. */
  cancelBillPayment(id: string): BillPaymentWire {
    return this.#store.atomically(() => {
      const bill = this.#billPayment(id);
      if (bill.status !== 'PENDING') throw new SimulatorApiError(400, 'invalid_action', `a ${bill.status} bill payment cannot be cancelled`);
      bill.status = 'CANCELLED';
      bill.failReason = 'cancelled before it was sent to the bank';
      this.#balanceMinor += bill.valueMinor + bill.feeMinor;
      this.#save('billPayment', bill);
      this.#saveBalance();
      this.#emitBillPayment('BILL_CANCELLED', bill);
      return billPaymentWire(bill);
    });
  }

  // Account

  get balanceMinor(): bigint {
    return this.#balanceMinor;
  }

  setBalance(balanceMinor: bigint): void {
    this.#store.atomically(() => {
      this.#balanceMinor = balanceMinor;
      this.#saveBalance();
    });
  }

  snapshot(limit: number): {
    balance: number;
    customers: CustomerWire[];
    payments: PaymentWire[];
    transfers: (TransferWire & { validationAttempts: number })[];
    billPayments: BillPaymentWire[];
    validations: ValidationLogEntry[];
    counts: { customers: number; payments: number; transfers: number; billPayments: number; idempotencyKeys: number };
  } {
    const newest = <T>(map: Map<string, T>): T[] => [...map.values()].slice(-limit);
    return {
      balance: wireValueFromMinor(this.#balanceMinor),
      customers: newest(this.#customers).map(customerWire),
      payments: newest(this.#payments).map(paymentWire),
      transfers: newest(this.#transfers).map((t) => ({ ...transferWire(t), validationAttempts: t.validationAttempts })),
      billPayments: newest(this.#billPayments).map(billPaymentWire),
      validations: this.#validations.slice(-limit),
      counts: {
        customers: this.#customers.size,
        payments: this.#payments.size,
        transfers: this.#transfers.size,
        billPayments: this.#billPayments.size,
        idempotencyKeys: this.#idempotency.size,
      },
    };
  }

  // Internals

  #payment(id: string): PaymentRecord {
    const payment = this.#payments.get(id);
    if (payment === undefined) throw notFound('payment', id);
    return payment;
  }

  #transfer(id: string): TransferRecord {
    const transfer = this.#transfers.get(id);
    if (transfer === undefined) throw notFound('transfer', id);
    return transfer;
  }

  #billPayment(id: string): BillPaymentRecord {
    const bill = this.#billPayments.get(id);
    if (bill === undefined) throw notFound('bill payment', id);
    return bill;
  }

  #requireRoom(size: number): void {
    if (size >= resourcesMax) {
      throw new SimulatorApiError(400, 'simulator_full', `the simulator holds at most ${resourcesMax} of each resource; POST /sim/reset`);
    }
  }

  /**
   * Finds the resource an idempotency key already created. The same key with a different body is
   * refused (409), never answered with the other request's resource.
   */
  #replay<T>(scope: string, key: string | null, fingerprint: string, find: (id: string) => T | undefined): T | undefined {
    if (key === null) return undefined;
    const seen = this.#idempotency.get(`${scope}:${key}`);
    if (seen === undefined) return undefined;
    if (seen.fingerprint !== fingerprint) {
      throw new SimulatorApiError(409, 'idempotency_key_reused', 'this Idempotency-Key was used with a different request body');
    }
    return find(seen.resourceId);
  }

  #remember(scope: string, key: string | null, fingerprint: string, resourceId: string): void {
    if (key === null) return;
    this.#idempotency.set(`${scope}:${key}`, { fingerprint, resourceId });
    this.#store.putIdempotency(`${scope}:${key}`, fingerprint, resourceId);
  }

  #save(kind: ResourceKind, record: CustomerRecord | PaymentRecord | TransferRecord | BillPaymentRecord): void {
    this.#store.putResource(kind, record.id, toStoredJson(record));
  }

  #saveBalance(): void {
    this.#store.putBalance(this.#balanceMinor);
  }

  #today(): string {
    return this.#now().toISOString().slice(0, 10);
  }

  #eventTime(): string {
    return this.#now().toISOString().slice(0, 19).replace('T', ' ');
  }

  #emitPayment(event: PaymentEvent, payment: PaymentRecord): void {
    const id = eventId();
    const body: PaymentEventWire = { id, event, dateCreated: this.#eventTime(), payment: paymentWire(payment) };
    this.#options.dispatcher.publish({ id, event, resourceId: payment.id, billingType: payment.billingType, body: JSON.stringify(body) });
  }

  #emitTransfer(event: TransferEvent, transfer: TransferRecord): void {
    const id = eventId();
    const body: TransferEventWire = { id, event, dateCreated: this.#eventTime(), transfer: transferWire(transfer) };
    this.#options.dispatcher.publish({ id, event, resourceId: transfer.id, billingType: null, body: JSON.stringify(body) });
  }

  #emitBillPayment(event: BillPaymentEvent, bill: BillPaymentRecord): void {
    const id = eventId();
    const body: BillPaymentEventWire = { id, event, dateCreated: this.#eventTime(), bill: billPaymentWire(bill) };
    this.#options.dispatcher.publish({ id, event, resourceId: bill.id, billingType: null, body: JSON.stringify(body) });
  }

  /**
   * A bill payment's validation, as a transfer's (Asaas validates every cash-out once the mechanism
   * is on: https://docs.asaas.com/docs/mecanismo-para-validacao-de-transferencias): `{type: "BILL",
   * bill}` to the validation URL after the same delay; APPROVED sends it to the bank, REFUSED
   * cancels it, and `validationAttempts` failed attempts cancel it. No validation URL: straight to
   * the bank.
   */
  #scheduleBillValidation(bill: BillPaymentRecord, attempt: number): void {
    const { validationUrl, validationDelayMs } = this.#options;
    if (validationUrl === null) {
      this.#scheduleBillProcessing(bill);
      return;
    }
    this.#after(validationDelayMs, async () => {
      if (bill.status !== 'PENDING' || this.#billPayments.get(bill.id) !== bill) return;
      const signal = this.#abort.signal;
      const request: BillValidationRequestWire = { type: 'BILL', bill: billPaymentWire(bill) };
      const answer = await this.#askValidation(validationUrl, request, signal);
      if (signal.aborted || bill.status !== 'PENDING' || this.#billPayments.get(bill.id) !== bill) return;
      if (answer.kind === 'APPROVED') {
        this.#logValidation({ transferId: bill.id, attempt, outcome: 'APPROVED', httpStatus: answer.httpStatus, error: null });
        this.#scheduleBillProcessing(bill);
      } else if (answer.kind === 'REFUSED') {
        this.#logValidation({ transferId: bill.id, attempt, outcome: 'REFUSED', httpStatus: answer.httpStatus, error: null });
        this.#cancelBill(bill, answer.reason);
      } else {
        this.#logValidation({ transferId: bill.id, attempt, outcome: 'FAILED', httpStatus: answer.httpStatus, error: answer.error });
        if (attempt >= this.#options.validationAttempts) this.#cancelBill(bill, `bill payment validation failed after ${attempt} attempts (last: ${answer.error})`);
        else this.#scheduleBillValidation(bill, attempt + 1);
      }
    });
  }

  #cancelBill(bill: BillPaymentRecord, reason: string): void {
    bill.status = 'CANCELLED';
    bill.failReason = reason.slice(0, 500);
    this.#balanceMinor += bill.valueMinor + bill.feeMinor;
    this.#store.atomically(() => {
      this.#save('billPayment', bill);
      this.#saveBalance();
      this.#emitBillPayment('BILL_CANCELLED', bill);
    });
  }

  /** A bill payment's own path once validated: to the bank at once (BANK_PROCESSING), paid at once when auto-settling. */
  #scheduleBillProcessing(bill: BillPaymentRecord): void {
    this.#after(0, async () => {
      if (this.#billPayments.get(bill.id) !== bill) return;
      this.#store.atomically(() => {
        if (bill.status === 'PENDING') {
          bill.status = 'BANK_PROCESSING';
          this.#save('billPayment', bill);
          this.#emitBillPayment('BILL_BANK_PROCESSING', bill);
        }
        if (bill.status !== 'BANK_PROCESSING') return;
        if (this.#options.billPaymentFails?.() === true) this.#refuseBill(bill, 'the bank refused the bill payment (injected fault)');
        else if (this.#options.autoSettle) this.#payBill(bill);
      });
    });
  }

  #refuseBill(bill: BillPaymentRecord, reason: string): void {
    bill.status = 'FAILED';
    bill.failReason = reason.slice(0, 500);
    this.#balanceMinor += bill.valueMinor + bill.feeMinor;
    this.#store.atomically(() => {
      this.#save('billPayment', bill);
      this.#saveBalance();
      this.#emitBillPayment('BILL_FAILED', bill);
    });
  }

  #payBill(bill: BillPaymentRecord): void {
    bill.status = 'PAID';
    bill.paymentDate = this.#today();
    this.#store.atomically(() => {
      this.#save('billPayment', bill);
      this.#emitBillPayment('BILL_PAID', bill);
    });
  }

  #after(ms: number, task: () => Promise<void>): void {
    if (this.#closed) return;
    const timer = setTimeout(() => {
      this.#timers.delete(timer);
      task().catch((error: unknown) => this.#options.logger?.error({ err: error }, 'simulator task failed'));
    }, ms);
    this.#timers.add(timer);
  }

  #clearTimers(): void {
    for (const timer of this.#timers) clearTimeout(timer);
    this.#timers.clear();
  }

  #logValidation(entry: Omit<ValidationLogEntry, 'at'>): void {
    this.#validations.push({ at: this.#now().toISOString(), ...entry });
    if (this.#validations.length > validationLogMax) this.#validations.splice(0, this.#validations.length - validationLogMax);
  }

  /**
   * The transfer validation: `validationDelayMs` after the transfer is created the gateway POSTs
   * `{type: "TRANSFER", transfer}` to the validation URL. APPROVED lets the transfer go on;
   * REFUSED cancels it at once with the reason; no usable answer (non-2xx, timeout, connection
   * error, a body that is not an answer) is retried after the same delay, and after
   * `validationAttempts` failed attempts the transfer is cancelled.
   */
  #scheduleValidation(transfer: TransferRecord, attempt: number): void {
    const { validationUrl, validationDelayMs } = this.#options;
    if (validationUrl === null) {
      this.#after(0, async () => {
        if (transfer.status !== 'PENDING') return;
        this.#logValidation({ transferId: transfer.id, attempt: 0, outcome: 'SKIPPED', httpStatus: null, error: null });
        this.#approve(transfer);
      });
      return;
    }
    this.#after(validationDelayMs, async () => {
      if (transfer.status !== 'PENDING' || this.#transfers.get(transfer.id) !== transfer) return;
      transfer.validationAttempts = attempt;
      this.#save('transfer', transfer);
      const signal = this.#abort.signal;
      const answer = await this.#askValidation(validationUrl, { type: 'TRANSFER', transfer: transferWire(transfer) }, signal);
      // The transfer may have been completed or failed by a control, or the state reset, meanwhile.
      if (signal.aborted || transfer.status !== 'PENDING' || this.#transfers.get(transfer.id) !== transfer) return;
      if (answer.kind === 'APPROVED') {
        this.#logValidation({ transferId: transfer.id, attempt, outcome: 'APPROVED', httpStatus: answer.httpStatus, error: null });
        this.#approve(transfer);
      } else if (answer.kind === 'REFUSED') {
        this.#logValidation({ transferId: transfer.id, attempt, outcome: 'REFUSED', httpStatus: answer.httpStatus, error: null });
        this.#cancel(transfer, answer.reason);
      } else {
        this.#logValidation({ transferId: transfer.id, attempt, outcome: 'FAILED', httpStatus: answer.httpStatus, error: answer.error });
        if (attempt >= this.#options.validationAttempts) {
          this.#cancel(transfer, `transfer validation failed after ${attempt} attempts (last: ${answer.error})`);
        } else {
          this.#scheduleValidation(transfer, attempt + 1);
        }
      }
    });
  }

  async #askValidation(
    url: string,
    body: TransferValidationRequestWire | BillValidationRequestWire,
    closeSignal: AbortSignal,
  ): Promise<{ kind: 'APPROVED'; httpStatus: number } | { kind: 'REFUSED'; httpStatus: number; reason: string } | { kind: 'FAILED'; httpStatus: number | null; error: string }> {
    const fetchImpl = this.#options.fetch ?? globalThis.fetch;
    try {
      const response = await fetchImpl(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', [wireHeaders.webhookToken]: this.#options.webhookToken, 'user-agent': 'gateway-simulator-validation/1' },
        body: JSON.stringify(body),
        signal: AbortSignal.any([AbortSignal.timeout(this.#options.validationTimeoutMs), closeSignal]),
        redirect: 'manual',
      });
      // Bounded in time by the signal; the answer is a few bytes, anything long is not an answer.
      const text = (await response.text()).slice(0, 64 * 1024);
      if (response.status < 200 || response.status > 299) return { kind: 'FAILED', httpStatus: response.status, error: `HTTP ${response.status}` };
      let json: unknown;
      try {
        json = parseWireJson(text);
      } catch {
        return { kind: 'FAILED', httpStatus: response.status, error: 'the answer is not JSON' };
      }
      const parsed = transferValidationAnswerSchema.safeParse(json);
      if (!parsed.success) return { kind: 'FAILED', httpStatus: response.status, error: 'the answer has no valid status' };
      return parsed.data.status === 'APPROVED'
        ? { kind: 'APPROVED', httpStatus: response.status }
        : { kind: 'REFUSED', httpStatus: response.status, reason: parsed.data.refuseReason };
    } catch (error) {
      return { kind: 'FAILED', httpStatus: null, error: error instanceof Error ? `${error.name}: ${error.message}` : String(error) };
    }
  }

  #approve(transfer: TransferRecord): void {
    this.#store.atomically(() => {
      transfer.authorized = true;
      transfer.status = 'BANK_PROCESSING';
      this.#save('transfer', transfer);
      this.#emitTransfer('TRANSFER_IN_BANK_PROCESSING', transfer);
      if (this.#options.autoSettle) this.#settle(transfer);
    });
  }

  #settle(transfer: TransferRecord): void {
    const now = this.#now();
    transfer.status = 'DONE';
    // A datetime since Asaas's changelog of 2024-04-15 ("YYYY-MM-DD HH:mm:ss").
    transfer.effectiveDate = now.toISOString().slice(0, 19).replace('T', ' ');
    // E + ISPB (8) + yyyyMMddHHmm + 11 characters: the shape of a Pix end-to-end id.
    transfer.endToEndIdentifier = `E99999999${now.toISOString().replace(/\D/g, '').slice(0, 12)}${randomAlnum(11)}`;
    this.#store.atomically(() => {
      this.#save('transfer', transfer);
      this.#emitTransfer('TRANSFER_DONE', transfer);
    });
  }

  #cancel(transfer: TransferRecord, reason: string): void {
    transfer.status = 'CANCELLED';
    transfer.authorized = false;
    transfer.failReason = reason.slice(0, 500);
    this.#balanceMinor += transfer.valueMinor;
    this.#store.atomically(() => {
      this.#save('transfer', transfer);
      this.#saveBalance();
      this.#emitTransfer('TRANSFER_CANCELLED', transfer);
    });
  }
}

function notFound(what: string, id: string): SimulatorApiError {
  return new SimulatorApiError(404, 'not_found', `${what} ${id.slice(0, 100)} not found`);
}

function eventId(): string {
  return `evt_${randomBytes(16).toString('hex')}`;
}

function randomDigits(length: number): string {
  let text = '';
  for (let i = 0; i < length; i += 1) text += String(randomInt(10));
  return text;
}

const alnum = 'abcdefghijklmnopqrstuvwxyz0123456789';
function randomAlnum(length: number): string {
  let text = '';
  for (let i = 0; i < length; i += 1) text += alnum[randomInt(alnum.length)];
  return text;
}

function customerWire(customer: CustomerRecord): CustomerWire {
  return {
    object: 'customer',
    id: customer.id,
    dateCreated: customer.dateCreated,
    name: customer.name,
    cpfCnpj: customer.cpfCnpj,
    email: customer.email,
    externalReference: customer.externalReference,
    deleted: false,
  };
}

function paymentWire(payment: PaymentRecord): PaymentWire {
  return {
    object: 'payment',
    id: payment.id,
    dateCreated: payment.dateCreated,
    customer: payment.customerId,
    value: wireValueFromMinor(payment.valueMinor),
    netValue: wireValueFromMinor(payment.netValueMinor),
    billingType: payment.billingType,
    status: payment.status,
    dueDate: payment.dueDate,
    originalDueDate: payment.dueDate,
    paymentDate: payment.paymentDate,
    clientPaymentDate: payment.clientPaymentDate,
    confirmedDate: payment.confirmedDate,
    description: payment.description,
    externalReference: payment.externalReference,
    invoiceUrl: `${publicBase}/i/${payment.id}`,
    bankSlipUrl: payment.billingType === 'BOLETO' ? `${publicBase}/b/pdf/${payment.id}` : null,
    nossoNumero: payment.nossoNumero,
    deleted: payment.deleted,
  };
}

/**
 * The amount a digitable line writes, in centavos, or null when it leaves the amount open (zeros,
 * or a collection slip whose value identifier says reference). The simulator trusts the check
 * digits to its client (the service checks them before it pays).
 */
export function lineAmountMinor(line: string): bigint | null {
  let amount: bigint | null = null;
  if (line.length === 47) amount = BigInt(line.slice(37, 47));
  else if (line.length === 48 && (line[2] === '6' || line[2] === '8')) {
    const barcode = line.slice(0, 11) + line.slice(12, 23) + line.slice(24, 35) + line.slice(36, 47);
    amount = BigInt(barcode.slice(4, 15));
  }
  return amount === null || amount === 0n ? null : amount;
}

/** "03399.77779 29900.000000 04751.101017 1 81510000002990": a digitable line as Asaas writes it (https://docs.asaas.com/docs/bill-events). */
export function formatDigitableLine(line: string): string {
  if (line.length === 47) {
    return `${line.slice(0, 5)}.${line.slice(5, 10)} ${line.slice(10, 15)}.${line.slice(15, 21)} ${line.slice(21, 26)}.${line.slice(26, 32)} ${line.slice(32, 33)} ${line.slice(33)}`;
  }
  // A collection slip: four blocks of 11 digits, each with its check digit.
  return `${line.slice(0, 12)} ${line.slice(12, 24)} ${line.slice(24, 36)} ${line.slice(36)}`;
}

/** A bill payment shaped as Asaas's bill events and "Pay a bill" answers (https://docs.asaas.com/docs/bill-events). */
function billPaymentWire(bill: BillPaymentRecord): BillPaymentWire {
  return {
    object: 'bill',
    id: bill.id,
    status: bill.status,
    value: wireValueFromMinor(bill.valueMinor),
    discount: 0,
    interest: 0,
    fine: 0,
    identificationField: formatDigitableLine(bill.identificationField),
    dueDate: null,
    scheduleDate: bill.dateCreated,
    paymentDate: bill.paymentDate,
    fee: wireValueFromMinor(bill.feeMinor),
    description: bill.description,
    companyName: null,
    transactionReceiptUrl: bill.status === 'PAID' ? `${publicBase}/comprovantes/bill/${bill.id}` : null,
    canBeCancelled: bill.status === 'PENDING',
    failReasons: bill.failReason,
    externalReference: bill.externalReference,
    dateCreated: bill.dateCreated,
  };
}

/**
 * A Pix transfer shaped as Asaas's transfer events, validation request and transfer reads
 * (https://docs.asaas.com/docs/transfer-events, "Example of JSON to be received for bank transfers
 * via Pix"): `type` BANK_ACCOUNT, `operationType` PIX, the key inside `bankAccount`,
 * `effectiveDate` a datetime once carried out, `externalReference` as created.
 */
function transferWire(transfer: TransferRecord): TransferWire {
  return {
    object: 'transfer',
    id: transfer.id,
    type: 'BANK_ACCOUNT',
    dateCreated: transfer.dateCreated,
    value: wireValueFromMinor(transfer.valueMinor),
    netValue: wireValueFromMinor(transfer.valueMinor - transfer.feeMinor),
    transferFee: wireValueFromMinor(transfer.feeMinor),
    status: transfer.status,
    effectiveDate: transfer.effectiveDate,
    scheduleDate: null,
    endToEndIdentifier: transfer.endToEndIdentifier,
    authorized: transfer.authorized,
    failReason: transfer.failReason,
    transactionReceiptUrl: transfer.status === 'DONE' ? `${publicBase}/comprovantes/${transfer.id}` : null,
    bankAccount: {
      bank: { ispb: '00000000', code: null, name: null },
      accountName: null,
      ownerName: null,
      cpfCnpj: null,
      agency: null,
      agencyDigit: null,
      account: null,
      accountDigit: null,
      pixAddressKey: transfer.pixAddressKey,
    },
    operationType: 'PIX',
    description: transfer.description,
    externalReference: transfer.externalReference,
  };
}
