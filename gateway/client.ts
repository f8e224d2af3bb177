import { createHash } from 'node:crypto';
import type { z } from 'zod';
import {
  defaultCodeForStatus,
  GatewayError,
  gatewayClientErrorCodes,
  isRetryableStatus,
  type GatewayErrorDetail,
} from './errors.ts';
import { parseWireJson } from './json.ts';
import { wireAmountMinorMax, wireValueFromMinor } from './money.ts';
import {
  billPaymentStatuses,
  billingTypes,
  paymentStatuses,
  pixAddressKeyTypes,
  transferStatuses,
  webhookEvents,
  type CreateBillPaymentInput,
  type CreateCustomerInput,
  type CreatePaymentInput,
  type CreateTransferInput,
  type GatewayBillPayment,
  type GatewayBoletoIdentificationField,
  type GatewayCallOptions,
  type GatewayCancelResult,
  type GatewayCustomer,
  type GatewayHealth,
  type GatewayPage,
  type GatewayPayment,
  type GatewayPixQrCode,
  type GatewayTransfer,
  type GatewayWebhook,
  type ListBillPaymentsInput,
  type ListInput,
  type ListPaymentsInput,
  type ListTransfersInput,
  type RefundPaymentInput,
  type UpdateWebhookInput,
} from './types.ts';
import {
  balanceWireSchema,
  billPaymentWireSchema,
  customerWireSchema,
  deletedWireSchema,
  identificationFieldWireSchema,
  listWireSchema,
  paymentWireSchema,
  pixQrCodeWireSchema,
  transferWireSchema,
  webhookWireSchema,
  wireErrorBodySchema,
  wireHeaders,
  type BillPaymentCreateWire,
  type CustomerCreateWire,
  type PaymentCreateWire,
  type PaymentRefundWire,
  type TransferCreateWire,
  type WebhookUpdateWire,
} from './wire.ts';

/**
 * The payment gateway's typed client: one adapter, its wire types kept in `wire.ts`. Every call
 * is a single HTTP attempt bounded by `timeoutMs` (connect, headers and body together); retries
 * belong to the caller (a Temporal activity), which can retry safely because every create sends
 * an `Idempotency-Key` the caller derived from its business key. Every answer is parsed with zod
 * and money crosses the boundary as centavos (`bigint`). Failures are `GatewayError`s that say
 * whether a retry can help. The wire API is documented in `docs/gateway-wire-api.md`.
 */

export interface GatewayClientOptions {
  /** Origin (and optional path prefix) of the gateway, without `/v3`: "https://api.gateway.example", "http://127.0.0.1:8010". */
  baseUrl: string;
  apiKey: string;
  /** Upper bound of one call, from sending the request to reading the last byte of the answer. */
  timeoutMs: number;
  /** Injected for tests; the global fetch by default. */
  fetch?: typeof fetch;
  userAgent?: string;
  /** Largest answer read; a bigger one is refused as INVALID_RESPONSE. Default 4 MiB. */
  responseBytesMax?: number;
  /** Told of every call once it ends (the metrics, infra/metrics.ts): its operation, duration and failure if any. */
  observe?: (call: { operation: string; seconds: number; error?: unknown }) => void;
}

export interface GatewayClient {
  createCustomer(input: CreateCustomerInput, options?: GatewayCallOptions): Promise<GatewayCustomer>;
  getCustomer(customerId: string, options?: GatewayCallOptions): Promise<GatewayCustomer>;
  createPayment(input: CreatePaymentInput, options?: GatewayCallOptions): Promise<GatewayPayment>;
  getPayment(paymentId: string, options?: GatewayCallOptions): Promise<GatewayPayment>;
  getPixQrCode(paymentId: string, options?: GatewayCallOptions): Promise<GatewayPixQrCode>;
  getBoletoIdentificationField(paymentId: string, options?: GatewayCallOptions): Promise<GatewayBoletoIdentificationField>;
  /** Cancels (deletes) a PENDING or OVERDUE charge. Cancelling a charge already deleted answers the same again. */
  cancelPayment(paymentId: string, options?: GatewayCallOptions): Promise<GatewayCancelResult>;
  /** Refunds a received charge in full. Refunding a charge already REFUNDED returns it unchanged. */
  refundPayment(paymentId: string, input?: RefundPaymentInput, options?: GatewayCallOptions): Promise<GatewayPayment>;
  /** One page of the account's charges, oldest first; filters are exact matches, dates inclusive. */
  listPayments(input?: ListPaymentsInput, options?: GatewayCallOptions): Promise<GatewayPage<GatewayPayment>>;
  /**
   * Creates a Pix transfer. Not idempotent (Asaas documents no idempotency key on transfers): a
   * caller that lost the answer lists by `externalReference` before it creates again.
   */
  createTransfer(input: CreateTransferInput, options?: GatewayCallOptions): Promise<GatewayTransfer>;
  getTransfer(transferId: string, options?: GatewayCallOptions): Promise<GatewayTransfer>;
  /** One page of the account's transfers (payouts), oldest first; filters are exact matches, dates inclusive. */
  listTransfers(input?: ListTransfersInput, options?: GatewayCallOptions): Promise<GatewayPage<GatewayTransfer>>;
  /** Pays a boleto (its digitable line) from the account: the boleto rail's payout. Not idempotent: as createTransfer. */
  createBillPayment(input: CreateBillPaymentInput, options?: GatewayCallOptions): Promise<GatewayBillPayment>;
  getBillPayment(billPaymentId: string, options?: GatewayCallOptions): Promise<GatewayBillPayment>;
  /** One page of the account's bill payments, oldest first; filters are exact matches, dates inclusive. */
  listBillPayments(input?: ListBillPaymentsInput, options?: GatewayCallOptions): Promise<GatewayPage<GatewayBillPayment>>;
  listWebhooks(options?: GatewayCallOptions): Promise<GatewayWebhook[]>;
  updateWebhook(webhookId: string, input: UpdateWebhookInput, options?: GatewayCallOptions): Promise<GatewayWebhook>;
  /** Clears the webhook queue's penalty and interruption; the gateway refuses a second removal within 5 minutes (429). */
  removeWebhookBackoff(webhookId: string, options?: GatewayCallOptions): Promise<GatewayWebhook>;
  /** One authenticated, cheap call (the account balance); never throws. */
  health(options?: GatewayCallOptions): Promise<GatewayHealth>;
}

export const defaultResponseBytesMax = 4 * 1024 * 1024;
export const paymentPageLimitMax = 100;
export const transferPageLimitMax = 100;
export const webhookPageLimitMax = 100;
const offsetMax = 1_000_000_000;
const idempotencyKeyPattern = /^[\x21-\x7e]{1,255}$/;
const resourceIdPattern = /^[A-Za-z0-9_-]{1,100}$/;
const datePattern = /^\d{4}-\d{2}-\d{2}$/;

/**
 * Builds the idempotency key for a create from the caller's business key, e.g.
 * `gatewayIdempotencyKey('payment', redemptionId)`. Deterministic by construction: a retried
 * activity computes the same key and so gets the same charge or transfer back. Keys that would be
 * too long or carry characters a header cannot hold are replaced by a SHA-256 of the same text.
 */
export function gatewayIdempotencyKey(scope: string, businessKey: string): string {
  const plain = `${scope}:${businessKey}`;
  if (idempotencyKeyPattern.test(plain) && plain.length <= 200) return plain;
  return `${scope.slice(0, 40).replace(/[^\x21-\x7e]/g, '_')}:sha256:${createHash('sha256').update(plain, 'utf8').digest('hex')}`;
}

export function createGatewayClient(options: GatewayClientOptions): GatewayClient {
  const baseUrl = options.baseUrl.replace(/\/+$/, '');
  if (!/^https?:\/\//.test(baseUrl)) throw new TypeError('gateway baseUrl must be an http(s) URL');
  if (options.apiKey === '') throw new TypeError('gateway apiKey must not be empty');
  if (!Number.isInteger(options.timeoutMs) || options.timeoutMs < 1 || options.timeoutMs > 600_000) {
    throw new TypeError('gateway timeoutMs must be an integer from 1 to 600000');
  }
  const fetchImpl = options.fetch ?? globalThis.fetch;
  const responseBytesMax = options.responseBytesMax ?? defaultResponseBytesMax;
  const userAgent = options.userAgent ?? 'plc-settlement-gateway-client/1';

  interface CallSpec<S extends z.ZodType> {
    operation: string;
    method: 'GET' | 'POST' | 'PUT' | 'DELETE';
    path: string;
    schema: S;
    query?: Record<string, string | number | undefined>;
    body?: unknown;
    idempotencyKey?: string;
    signal?: AbortSignal | undefined;
  }

  async function call<S extends z.ZodType>(spec: CallSpec<S>): Promise<z.output<S>> {
    const observe = options.observe;
    if (observe === undefined) return callOnce(spec);
    const started = performance.now();
    try {
      const answer = await callOnce(spec);
      observe({ operation: spec.operation, seconds: (performance.now() - started) / 1000 });
      return answer;
    } catch (error) {
      observe({ operation: spec.operation, seconds: (performance.now() - started) / 1000, error });
      throw error;
    }
  }

  async function callOnce<S extends z.ZodType>(spec: CallSpec<S>): Promise<z.output<S>> {
    const url = new URL(`${baseUrl}${spec.path}`);
    for (const [name, value] of Object.entries(spec.query ?? {})) {
      if (value !== undefined) url.searchParams.set(name, String(value));
    }
    const headers: Record<string, string> = {
      [wireHeaders.apiKey]: options.apiKey,
      accept: 'application/json',
      'user-agent': userAgent,
    };
    if (spec.body !== undefined) headers['content-type'] = 'application/json';
    if (spec.idempotencyKey !== undefined) headers[wireHeaders.idempotencyKey] = spec.idempotencyKey;

    const timeoutSignal = AbortSignal.timeout(options.timeoutMs);
    const signal = spec.signal === undefined ? timeoutSignal : AbortSignal.any([timeoutSignal, spec.signal]);
    let status: number;
    let bodyText: string;
    let retryAfterMs: number | null;
    try {
      const response = await fetchImpl(url, {
        method: spec.method,
        headers,
        body: spec.body === undefined ? null : JSON.stringify(spec.body),
        signal,
        redirect: 'error',
      });
      status = response.status;
      retryAfterMs = parseRetryAfter(response.headers.get('retry-after'));
      bodyText = await readBodyCapped(response, responseBytesMax, spec.operation);
    } catch (error) {
      if (error instanceof GatewayError) throw error;
      // No answer: retryable, since the call may not have happened (a create's key finds it if it did).
      const unanswered = (code: string, message: string): GatewayError =>
        new GatewayError(`${spec.operation}: ${message}`, { operation: spec.operation, status: null, code, retryable: true, cause: error });
      if (timeoutSignal.aborted) throw unanswered(gatewayClientErrorCodes.timeout, `no answer from the gateway within ${options.timeoutMs} ms`);
      if (spec.signal?.aborted === true) throw unanswered(gatewayClientErrorCodes.aborted, 'cancelled by the caller');
      throw unanswered(gatewayClientErrorCodes.network, `could not reach the gateway (${describe(error)})`);
    }

    if (status < 200 || status > 299) throw errorFromAnswer(spec.operation, status, bodyText, retryAfterMs);

    let json: unknown;
    try {
      json = parseWireJson(bodyText);
    } catch (error) {
      throw invalidResponse(spec.operation, status, 'the answer is not JSON', error);
    }
    const parsed = spec.schema.safeParse(json);
    if (!parsed.success) {
      const where = parsed.error.issues
        .slice(0, 3)
        .map((issue) => `${issue.path.join('.') || '(root)'}: ${issue.message}`)
        .join('; ');
      throw invalidResponse(spec.operation, status, `the answer does not match the expected shape (${where})`, parsed.error);
    }
    return parsed.data;
  }

  /** One call of a client method, with the caller's options. */
  function send<S extends z.ZodType>(
    operation: string,
    method: CallSpec<S>['method'],
    path: string,
    schema: S,
    callOptions: GatewayCallOptions | undefined,
    extra: Pick<CallSpec<S>, 'body' | 'idempotencyKey' | 'query'> = {},
  ): Promise<z.output<S>> {
    return call({ operation, method, path, schema, ...extra, signal: callOptions?.signal });
  }

  /**
   * One page of a list: the list's own filters (validated by the caller) first, then those every
   * list takes (external reference, creation dates) and the paging, in that order on the query.
   */
  async function listPage<S extends z.ZodType>(
    operation: string,
    path: string,
    item: S,
    limitMax: number,
    input: ListInput<string>,
    filters: Record<string, string | undefined>,
    callOptions: GatewayCallOptions | undefined,
  ): Promise<GatewayPage<z.output<S>>> {
    if (input.externalReference !== undefined) requireText(operation, 'externalReference', input.externalReference, 1, 255);
    const limit = requireInteger(operation, 'limit', input.limit ?? 10, 1, limitMax);
    const offset = requireInteger(operation, 'offset', input.offset ?? 0, 0, offsetMax);
    const query = { ...filters, externalReference: input.externalReference, ...dateCreatedQuery(operation, input), limit, offset };
    const page = await send(operation, 'GET', path, listWireSchema(item), callOptions, { query });
    return { items: page.data, hasMore: page.hasMore, totalCount: page.totalCount, limit: page.limit, offset: page.offset };
  }

  return {
    async createCustomer(input, callOptions) {
      const operation = 'createCustomer';
      requireIdempotencyKey(operation, input.idempotencyKey);
      requireText(operation, 'name', input.name, 1, 200);
      requireText(operation, 'externalReference', input.externalReference, 1, 255);
      if (input.cpfCnpj !== undefined && !/^(\d{11}|\d{14})$/.test(input.cpfCnpj)) {
        throw invalidRequest(operation, 'cpfCnpj must be 11 (CPF) or 14 (CNPJ) digits');
      }
      if (input.email !== undefined) requireText(operation, 'email', input.email, 3, 254);
      const body: CustomerCreateWire = {
        name: input.name,
        cpfCnpj: input.cpfCnpj,
        email: input.email,
        externalReference: input.externalReference,
      };
      return send(operation, 'POST', '/v3/customers', customerWireSchema, callOptions, { body, idempotencyKey: input.idempotencyKey });
    },

    async getCustomer(customerId, callOptions) {
      const operation = 'getCustomer';
      return send(operation, 'GET', `/v3/customers/${requireId(operation, 'customerId', customerId)}`, customerWireSchema, callOptions);
    },

    async createPayment(input, callOptions) {
      const operation = 'createPayment';
      requireIdempotencyKey(operation, input.idempotencyKey);
      requireId(operation, 'customerId', input.customerId);
      if (!(billingTypes as readonly string[]).includes(input.billingType)) {
        throw invalidRequest(operation, `billingType must be one of ${billingTypes.join(', ')}`);
      }
      requireDate(operation, 'dueDate', input.dueDate);
      requireText(operation, 'externalReference', input.externalReference, 1, 255);
      if (input.description !== undefined) requireText(operation, 'description', input.description, 0, 500);
      const body: PaymentCreateWire = {
        customer: input.customerId,
        billingType: input.billingType,
        value: requireAmount(operation, input.amountMinor),
        dueDate: input.dueDate,
        description: input.description,
        externalReference: input.externalReference,
      };
      return send(operation, 'POST', '/v3/payments', paymentWireSchema, callOptions, { body, idempotencyKey: input.idempotencyKey });
    },

    async getPayment(paymentId, callOptions) {
      const operation = 'getPayment';
      return send(operation, 'GET', `/v3/payments/${requireId(operation, 'paymentId', paymentId)}`, paymentWireSchema, callOptions);
    },

    async getPixQrCode(paymentId, callOptions) {
      const operation = 'getPixQrCode';
      return send(operation, 'GET', `/v3/payments/${requireId(operation, 'paymentId', paymentId)}/pixQrCode`, pixQrCodeWireSchema, callOptions);
    },

    async getBoletoIdentificationField(paymentId, callOptions) {
      const operation = 'getBoletoIdentificationField';
      return send(operation, 'GET', `/v3/payments/${requireId(operation, 'paymentId', paymentId)}/identificationField`, identificationFieldWireSchema, callOptions);
    },

    async cancelPayment(paymentId, callOptions) {
      const operation = 'cancelPayment';
      return send(operation, 'DELETE', `/v3/payments/${requireId(operation, 'paymentId', paymentId)}`, deletedWireSchema, callOptions);
    },

    async refundPayment(paymentId, input, callOptions) {
      const operation = 'refundPayment';
      if (input?.description !== undefined) requireText(operation, 'description', input.description, 0, 500);
      const body: PaymentRefundWire = { description: input?.description };
      return send(operation, 'POST', `/v3/payments/${requireId(operation, 'paymentId', paymentId)}/refund`, paymentWireSchema, callOptions, { body });
    },

    async listPayments(input = {}, callOptions) {
      const operation = 'listPayments';
      requireStatus(operation, 'payment', paymentStatuses, input.status);
      if (input.customerId !== undefined) requireId(operation, 'customerId', input.customerId);
      return listPage(operation, '/v3/payments', paymentWireSchema, paymentPageLimitMax, input, { status: input.status, customer: input.customerId }, callOptions);
    },

    async listTransfers(input = {}, callOptions) {
      const operation = 'listTransfers';
      requireStatus(operation, 'transfer', transferStatuses, input.status);
      return listPage(operation, '/v3/transfers', transferWireSchema, transferPageLimitMax, input, { status: input.status }, callOptions);
    },

    async createTransfer(input, callOptions) {
      const operation = 'createTransfer';
      if (!(pixAddressKeyTypes as readonly string[]).includes(input.pixAddressKeyType)) {
        throw invalidRequest(operation, `pixAddressKeyType must be one of ${pixAddressKeyTypes.join(', ')}`);
      }
      requireText(operation, 'pixAddressKey', input.pixAddressKey, 1, 140);
      requireText(operation, 'externalReference', input.externalReference, 1, 255);
      if (input.description !== undefined) requireText(operation, 'description', input.description, 0, 500);
      const body: TransferCreateWire = {
        value: requireAmount(operation, input.amountMinor),
        operationType: 'PIX',
        pixAddressKey: input.pixAddressKey,
        pixAddressKeyType: input.pixAddressKeyType,
        description: input.description,
        externalReference: input.externalReference,
      };
      // No Idempotency-Key: Asaas documents none on transfers. A caller whose answer was lost finds
      // the transfer by its externalReference (listTransfers) before it creates another.
      return send(operation, 'POST', '/v3/transfers', transferWireSchema, callOptions, { body });
    },

    async getTransfer(transferId, callOptions) {
      const operation = 'getTransfer';
      return send(operation, 'GET', `/v3/transfers/${requireId(operation, 'transferId', transferId)}`, transferWireSchema, callOptions);
    },

    async createBillPayment(input, callOptions) {
      const operation = 'createBillPayment';
      if (!/^\d{47,48}$/.test(input.identificationField)) throw invalidRequest(operation, 'identificationField must be 47 or 48 digits');
      requireText(operation, 'externalReference', input.externalReference, 1, 255);
      if (input.description !== undefined) requireText(operation, 'description', input.description, 0, 500);
      const body: BillPaymentCreateWire = {
        identificationField: input.identificationField,
        value: requireAmount(operation, input.amountMinor),
        description: input.description,
        externalReference: input.externalReference,
      };
      // As a transfer: no Idempotency-Key; a lost answer is found by its externalReference (listBillPayments).
      return send(operation, 'POST', '/v3/bill', billPaymentWireSchema, callOptions, { body });
    },

    async getBillPayment(billPaymentId, callOptions) {
      const operation = 'getBillPayment';
      return send(operation, 'GET', `/v3/bill/${requireId(operation, 'billPaymentId', billPaymentId)}`, billPaymentWireSchema, callOptions);
    },

    async listBillPayments(input = {}, callOptions) {
      const operation = 'listBillPayments';
      requireStatus(operation, 'bill payment', billPaymentStatuses, input.status);
      return listPage(operation, '/v3/bill', billPaymentWireSchema, transferPageLimitMax, input, { status: input.status }, callOptions);
    },

    async listWebhooks(callOptions) {
      const query = { limit: webhookPageLimitMax, offset: 0 };
      const page = await send('listWebhooks', 'GET', '/v3/webhooks', listWireSchema(webhookWireSchema), callOptions, { query });
      return page.data;
    },

    async updateWebhook(webhookId, input, callOptions) {
      const operation = 'updateWebhook';
      if (input.url !== undefined && !/^https?:\/\/\S+$/.test(input.url)) throw invalidRequest(operation, 'url must be an http(s) URL');
      if (input.email !== undefined) requireText(operation, 'email', input.email, 3, 254);
      if (input.authToken !== undefined) requireText(operation, 'authToken', input.authToken, 1, 255);
      if (input.events !== undefined) {
        if (input.events.length > webhookEvents.length) throw invalidRequest(operation, 'too many events');
        for (const event of input.events) {
          if (!(webhookEvents as readonly string[]).includes(event)) throw invalidRequest(operation, `unknown event ${event}`);
        }
      }
      const body: WebhookUpdateWire = {
        url: input.url,
        email: input.email,
        enabled: input.enabled,
        interrupted: input.interrupted,
        events: input.events === undefined ? undefined : [...input.events],
        authToken: input.authToken,
      };
      return send(operation, 'PUT', `/v3/webhooks/${requireId(operation, 'webhookId', webhookId)}`, webhookWireSchema, callOptions, { body });
    },

    async removeWebhookBackoff(webhookId, callOptions) {
      const operation = 'removeWebhookBackoff';
      return send(operation, 'POST', `/v3/webhooks/${requireId(operation, 'webhookId', webhookId)}/removeBackoff`, webhookWireSchema, callOptions);
    },

    async health(callOptions) {
      const startedAt = performance.now();
      const latency = (): number => Math.round(performance.now() - startedAt);
      try {
        await send('health', 'GET', '/v3/finance/balance', balanceWireSchema, callOptions);
        return { ok: true, latencyMs: latency() };
      } catch (error) {
        if (!(error instanceof GatewayError)) throw error;
        return { ok: false, latencyMs: latency(), status: error.status, code: error.code, retryable: error.retryable };
      }
    },
  };
}

function errorFromAnswer(operation: string, status: number, bodyText: string, retryAfterMs: number | null): GatewayError {
  let errors: GatewayErrorDetail[] = [];
  try {
    const parsed = wireErrorBodySchema.safeParse(parseWireJson(bodyText));
    if (parsed.success) errors = parsed.data.errors;
  } catch {
    // An error page that is not JSON (a proxy's HTML, an empty body): the status alone decides.
  }
  const first = errors[0];
  const code = first?.code ?? defaultCodeForStatus(status);
  const description = first?.description ?? '';
  return new GatewayError(`${operation}: gateway answered ${status} ${code}${description === '' ? '' : `: ${description}`}`, {
    operation,
    status,
    code,
    retryable: isRetryableStatus(status),
    errors,
    retryAfterMs,
  });
}

function invalidResponse(operation: string, status: number, message: string, cause: unknown): GatewayError {
  // Not retryable: asking again gets the same unreadable answer. A create that reached this point
  // did happen at the gateway; the caller's idempotency key finds it again once the cause is fixed.
  return new GatewayError(`${operation}: ${message}`, {
    operation,
    status,
    code: gatewayClientErrorCodes.invalidResponse,
    retryable: false,
    cause,
  });
}

function invalidRequest(operation: string, message: string): GatewayError {
  return new GatewayError(`${operation}: ${message}`, {
    operation,
    status: null,
    code: gatewayClientErrorCodes.invalidRequest,
    retryable: false,
  });
}

function requireIdempotencyKey(operation: string, key: string): void {
  if (typeof key !== 'string' || !idempotencyKeyPattern.test(key)) {
    throw invalidRequest(operation, 'idempotencyKey must be 1 to 255 visible ASCII characters (derive it with gatewayIdempotencyKey)');
  }
}

/** A list's status filter: absent, or one of the resource's statuses. */
function requireStatus(operation: string, resource: string, statuses: readonly string[], status: string | undefined): void {
  if (status !== undefined && !statuses.includes(status)) throw invalidRequest(operation, `unknown ${resource} status ${status}`);
}

function requireId(operation: string, name: string, value: string): string {
  // Ids go into the path: only the gateway's id alphabet, so nothing can climb out of the resource.
  if (typeof value !== 'string' || !resourceIdPattern.test(value)) throw invalidRequest(operation, `${name} is not a gateway id`);
  return value;
}

function requireText(operation: string, name: string, value: string, minLength: number, maxLength: number): void {
  if (typeof value !== 'string' || value.length < minLength || value.length > maxLength) {
    throw invalidRequest(operation, `${name} must be ${minLength} to ${maxLength} characters`);
  }
}

function requireInteger(operation: string, name: string, value: number, min: number, max: number): number {
  if (!Number.isInteger(value) || value < min || value > max) throw invalidRequest(operation, `${name} must be an integer from ${min} to ${max}`);
  return value;
}

function requireDate(operation: string, name: string, value: string): void {
  const date = new Date(`${value}T00:00:00Z`);
  if (!datePattern.test(value) || Number.isNaN(date.getTime()) || date.toISOString().slice(0, 10) !== value) {
    throw invalidRequest(operation, `${name} must be a calendar date YYYY-MM-DD`);
  }
}

/** The list filters `dateCreated[ge]` and `dateCreated[le]` (the gateway's bracket syntax). */
function dateCreatedQuery(operation: string, input: { dateCreatedFrom?: string; dateCreatedTo?: string }): Record<string, string | undefined> {
  if (input.dateCreatedFrom !== undefined) requireDate(operation, 'dateCreatedFrom', input.dateCreatedFrom);
  if (input.dateCreatedTo !== undefined) requireDate(operation, 'dateCreatedTo', input.dateCreatedTo);
  return { 'dateCreated[ge]': input.dateCreatedFrom, 'dateCreated[le]': input.dateCreatedTo };
}

function requireAmount(operation: string, amountMinor: bigint): number {
  if (typeof amountMinor !== 'bigint' || amountMinor <= 0n || amountMinor > wireAmountMinorMax) {
    throw invalidRequest(operation, `amountMinor must be a bigint from 1 to ${wireAmountMinorMax.toString()}`);
  }
  return wireValueFromMinor(amountMinor);
}

function parseRetryAfter(header: string | null): number | null {
  if (header === null) return null;
  if (/^\d{1,7}$/.test(header.trim())) return Number(header.trim()) * 1000;
  const at = Date.parse(header);
  return Number.isNaN(at) ? null : Math.max(0, at - Date.now());
}

async function readBodyCapped(response: Response, maxBytes: number, operation: string): Promise<string> {
  const declared = Number(response.headers.get('content-length') ?? '0');
  if (declared > maxBytes) {
    await response.body?.cancel();
    throw invalidResponse(operation, response.status, `the answer is larger than ${maxBytes} bytes`, null);
  }
  if (response.body === null) return '';
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > maxBytes) {
      await reader.cancel();
      throw invalidResponse(operation, response.status, `the answer is larger than ${maxBytes} bytes`, null);
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString('utf8');
}

function describe(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause = error.cause instanceof Error ? `: ${error.cause.message}` : '';
  return `${error.message}${cause}`;
}
