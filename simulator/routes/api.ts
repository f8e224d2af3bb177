import { timingSafeEqual } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { documentedWebhookEvents, paymentStatuses, pixAddressKeyTypes, transferStatuses } from '../../gateway/types.ts';
import {
  wireHeaders,
  wireMoney,
  type CustomerCreateWire,
  type ListWire,
  type PaymentCreateWire,
  type PaymentRefundWire,
  type PaymentWire,
  type TransferCreateWire,
  type BillPaymentCreateWire,
  type BillPaymentWire,
  type TransferWire,
  type WebhookUpdateWire,
  type WebhookWire,
} from '../../gateway/wire.ts';
import { wireValueFromMinor } from '../../gateway/money.ts';
import { isValidCnpj, isValidCpf, isValidPixKey, boletoAmountMinorMax } from '../documents.ts';
import type { FaultInjector } from '../faults.ts';
import { SimulatorApiError, type GatewayState, type ListQueryOf } from '../gateway-state.ts';
import type { WebhookDispatcher } from '../webhook-queue.ts';

/**
 * The gateway's REST API under /v3, as documented in docs/gateway-wire-api.md. Every route needs
 * the `access_token` header. Faults injected with /sim/faults apply here, after authentication.
 */

export interface ApiRoutesOptions {
  apiKey: string;
  state: GatewayState;
  dispatcher: WebhookDispatcher;
  faults: FaultInjector;
  /** Holds a request for `ms` (or until the simulator closes). */
  hang: (ms: number) => Promise<void>;
  now: () => Date;
}

const idempotencyKeyPattern = /^[\x21-\x7e]{1,255}$/;
const positiveMoney = wireMoney.refine((minor) => minor > 0n, 'must be greater than zero');
const calendarDate = z.string().refine((value) => {
  const date = new Date(`${value}T00:00:00Z`);
  return /^\d{4}-\d{2}-\d{2}$/.test(value) && !Number.isNaN(date.getTime()) && date.toISOString().slice(0, 10) === value;
}, 'must be a calendar date YYYY-MM-DD');

export const customerCreateBody = z.object({
  name: z.string().min(1).max(200),
  cpfCnpj: z
    .string()
    .refine((value) => isValidCpf(value) || isValidCnpj(value), 'is not a valid CPF or CNPJ')
    .optional(),
  email: z.string().min(3).max(254).optional(),
  externalReference: z.string().max(255).optional(),
});

export const paymentCreateBody = z.object({
  customer: z.string().min(1).max(100),
  billingType: z.enum(['PIX', 'BOLETO']),
  value: positiveMoney,
  dueDate: calendarDate,
  description: z.string().max(500).optional(),
  externalReference: z.string().max(255).optional(),
});

export const paymentRefundBody = z.object({ description: z.string().max(500).optional() });

export const transferCreateBody = z.object({
  value: positiveMoney,
  operationType: z.literal('PIX').optional(),
  pixAddressKey: z.string().min(1).max(140),
  pixAddressKeyType: z.enum(pixAddressKeyTypes),
  description: z.string().max(500).optional(),
  externalReference: z.string().max(255).optional(),
});

export const billPaymentCreateBody = z.object({
  identificationField: z.string().regex(/^\d{47,48}$/, 'a digitable line of 47 or 48 digits'),
  value: positiveMoney,
  description: z.string().max(500).optional(),
  externalReference: z.string().max(255).optional(),
});

export const webhookUpdateBody = z.object({
  url: z.string().regex(/^https?:\/\/\S+$/).max(2_000).optional(),
  email: z.string().max(254).optional(),
  enabled: z.boolean().optional(),
  interrupted: z.boolean().optional(),
  events: z.array(z.enum(documentedWebhookEvents)).max(documentedWebhookEvents.length * 2).optional(),
  authToken: z.string().min(1).max(255).optional(),
});

const listPage = {
  limit: z.coerce.number().int().min(1).max(100).default(10),
  offset: z.coerce.number().int().min(0).max(1_000_000_000).default(0),
  'dateCreated[ge]': calendarDate.optional(),
  'dateCreated[le]': calendarDate.optional(),
};

const listPaymentsQuery = z.object({
  status: z.enum(paymentStatuses).optional(),
  customer: z.string().max(100).optional(),
  externalReference: z.string().max(255).optional(),
  ...listPage,
});

const listTransfersQuery = z.object({
  status: z.enum(transferStatuses).optional(),
  externalReference: z.string().max(255).optional(),
  ...listPage,
});

/** Parses a list's query string, or throws the gateway's 400 naming the bad parameter (`invalid_limit`). */
function parseListQuery<S extends z.ZodType>(schema: S, query: unknown): z.output<S> {
  const parsed = schema.safeParse(query);
  if (parsed.success) return parsed.data;
  const field = parsed.error.issues[0]?.path[0];
  throw new SimulatorApiError(400, `invalid_${String(field ?? 'query')}`, parsed.error.issues[0]?.message ?? 'invalid query');
}

/** Compile-time check that every body the client sends is one the simulator accepts. */
type Accepts<S extends z.ZodType, _Body extends z.input<S>> = true;
export type ClientBodiesFit = [
  Accepts<typeof customerCreateBody, CustomerCreateWire>,
  Accepts<typeof paymentCreateBody, PaymentCreateWire>,
  Accepts<typeof paymentRefundBody, PaymentRefundWire>,
  Accepts<typeof transferCreateBody, TransferCreateWire>,
  Accepts<typeof billPaymentCreateBody, BillPaymentCreateWire>,
  Accepts<typeof webhookUpdateBody, WebhookUpdateWire>,
];

/** Parses a body with a schema, or throws the gateway's 400 naming each bad field. */
export function parseBody<S extends z.ZodType>(schema: S, body: unknown): z.output<S> {
  if (body === undefined || body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw new SimulatorApiError(400, 'invalid_object', 'the request body must be a JSON object');
  }
  const result = schema.safeParse(body);
  if (result.success) return result.data;
  const issue = result.error.issues[0];
  const field = issue?.path[0];
  throw new SimulatorApiError(
    400,
    field === undefined ? 'invalid_object' : `invalid_${String(field)}`,
    `${issue?.path.join('.') || 'body'}: ${issue?.message ?? 'invalid'}`,
  );
}

/** Canonical JSON with sorted keys: two bodies that mean the same have the same fingerprint. */
export function fingerprintOf(value: unknown): string {
  const canonical = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(canonical);
    if (v !== null && typeof v === 'object') {
      return Object.fromEntries(
        Object.keys(v)
          .sort()
          .map((key) => [key, canonical((v as Record<string, unknown>)[key])]),
      );
    }
    return v;
  };
  return JSON.stringify(canonical(value));
}

function idempotencyKeyOf(request: FastifyRequest): string | null {
  const header = request.headers[wireHeaders.idempotencyKey.toLowerCase()];
  if (header === undefined) return null;
  if (typeof header !== 'string' || !idempotencyKeyPattern.test(header)) {
    throw new SimulatorApiError(400, 'invalid_idempotencyKey', 'Idempotency-Key must be 1 to 255 visible ASCII characters');
  }
  return header;
}

function keysMatch(given: string, expected: string): boolean {
  const a = Buffer.from(given, 'utf8');
  const b = Buffer.from(expected, 'utf8');
  return a.length === b.length && timingSafeEqual(a, b);
}

/** A list's query string as the state's lists take it. */
function listFilter<Status extends string>(query: {
  status?: Status | undefined;
  externalReference?: string | undefined;
  'dateCreated[ge]'?: string | undefined;
  'dateCreated[le]'?: string | undefined;
  limit: number;
  offset: number;
}): ListQueryOf<Status> {
  return {
    status: query.status,
    externalReference: query.externalReference,
    dateCreatedGe: query['dateCreated[ge]'],
    dateCreatedLe: query['dateCreated[le]'],
    limit: query.limit,
    offset: query.offset,
  };
}

/** The description and external reference a create may carry, null when absent. */
function texts(body: { description?: string | undefined; externalReference?: string | undefined }) {
  return { description: body.description ?? null, externalReference: body.externalReference ?? null };
}

function list<T>(data: T[], totalCount: number, hasMore: boolean, limit: number, offset: number): ListWire<T> {
  return { object: 'list', hasMore, totalCount, limit, offset, data };
}

export async function apiRoutes(app: FastifyInstance, options: ApiRoutesOptions): Promise<void> {
  const { state, dispatcher, faults } = options;
  const lostResponses = new WeakSet<FastifyRequest>();

  app.addHook('onRequest', async (request, reply) => {
    const key = request.headers[wireHeaders.apiKey];
    if (typeof key !== 'string' || !keysMatch(key, options.apiKey)) {
      return reply.code(401).send({ errors: [{ code: 'invalid_access_token', description: 'missing or invalid access_token header' }] });
    }
    return undefined;
  });

  app.addHook('preHandler', async (request, reply) => {
    const fault = faults.apiFault();
    if (fault === 'error') {
      return reply.code(500).send({ errors: [{ code: 'internal_error', description: 'injected fault: internal error' }] });
    }
    if (fault === 'timeout') {
      await options.hang(faults.faults.apiHangMs);
      return reply.code(504).send({ errors: [{ code: 'gateway_timeout', description: 'injected fault: timeout' }] });
    }
    if (fault === 'lost_response') lostResponses.add(request);
    return undefined;
  });

  app.addHook('onSend', async (request, reply, payload) => {
    if (!lostResponses.has(request) || reply.statusCode >= 300) return payload;
    // The work is done and kept; only the answer is lost, as when a connection drops after commit.
    reply.code(500);
    reply.removeHeader('x-idempotency-replayed');
    return JSON.stringify({ errors: [{ code: 'internal_error', description: 'injected fault: the response was lost' }] });
  });

  /** A create, under the request's Idempotency-Key and its body's fingerprint; a replay says so in a header. */
  const create = <T>(request: FastifyRequest, reply: FastifyReply, make: (key: string | null, fingerprint: string) => { resource: T; replayed: boolean }): T => {
    const result = make(idempotencyKeyOf(request), fingerprintOf(request.body));
    if (result.replayed) void reply.header('x-idempotency-replayed', 'true');
    return result.resource;
  };

  // Customers

  app.post('/customers', async (request, reply) => {
    const body = parseBody(customerCreateBody, request.body);
    return create(request, reply, (key, fingerprint) =>
      state.createCustomer(
        { name: body.name, cpfCnpj: body.cpfCnpj ?? null, email: body.email ?? null, externalReference: body.externalReference ?? null },
        key,
        fingerprint,
      ),
    );
  });

  app.get<{ Params: { id: string } }>('/customers/:id', async (request) => state.getCustomer(request.params.id));

  // Charges

  app.post('/payments', async (request, reply) => {
    const body = parseBody(paymentCreateBody, request.body);
    if (body.billingType === 'BOLETO' && body.value > boletoAmountMinorMax) {
      throw new SimulatorApiError(400, 'invalid_value', `a Boleto carries at most ${wireValueFromMinor(boletoAmountMinorMax)}`);
    }
    return create(request, reply, (key, fingerprint) =>
      state.createPayment(
        { customerId: body.customer, billingType: body.billingType, valueMinor: body.value, dueDate: body.dueDate, ...texts(body) },
        key,
        fingerprint,
      ),
    );
  });

  app.get('/payments', async (request): Promise<ListWire<PaymentWire>> => {
    const query = parseListQuery(listPaymentsQuery, request.query);
    const page = state.listPayments({ ...listFilter(query), customer: query.customer });
    return list(page.data, page.totalCount, page.hasMore, query.limit, query.offset);
  });

  app.get<{ Params: { id: string } }>('/payments/:id', async (request) => state.getPayment(request.params.id));
  app.get<{ Params: { id: string } }>('/payments/:id/pixQrCode', async (request) => state.getPixQrCode(request.params.id));
  app.get<{ Params: { id: string } }>('/payments/:id/identificationField', async (request) => state.getIdentificationField(request.params.id));
  app.delete<{ Params: { id: string } }>('/payments/:id', async (request) => state.deletePayment(request.params.id));
  app.post<{ Params: { id: string } }>('/payments/:id/refund', async (request) => {
    if (request.body !== undefined) parseBody(paymentRefundBody, request.body);
    return state.refundPayment(request.params.id);
  });

  // Transfers

  app.post('/transfers', async (request, reply) => {
    const body = parseBody(transferCreateBody, request.body);
    if (!isValidPixKey(body.pixAddressKeyType, body.pixAddressKey)) {
      throw new SimulatorApiError(400, 'invalid_pixAddressKey', `pixAddressKey is not a valid ${body.pixAddressKeyType} key`);
    }
    return create(request, reply, (key, fingerprint) =>
      state.createTransfer({ valueMinor: body.value, pixAddressKey: body.pixAddressKey, pixAddressKeyType: body.pixAddressKeyType, ...texts(body) }, key, fingerprint),
    );
  });

  app.get<{ Params: { id: string } }>('/transfers/:id', async (request) => state.getTransfer(request.params.id));

  app.get('/transfers', async (request): Promise<ListWire<TransferWire>> => {
    const query = parseListQuery(listTransfersQuery, request.query);
    const page = state.listTransfers(listFilter(query));
    return list(page.data, page.totalCount, page.hasMore, query.limit, query.offset);
  });

  // Bill payments (the boleto rail's payouts)

  app.post('/bill', async (request, reply) => {
    const body = parseBody(billPaymentCreateBody, request.body);
    return create(request, reply, (key, fingerprint) =>
      state.createBillPayment({ valueMinor: body.value, identificationField: body.identificationField, ...texts(body) }, key, fingerprint),
    );
  });

  app.get<{ Params: { id: string } }>('/bill/:id', async (request) => state.getBillPayment(request.params.id));

  app.get('/bill', async (request): Promise<ListWire<BillPaymentWire>> => {
    const query = parseListQuery(listTransfersQuery, request.query);
    const page = state.listBillPayments(listFilter(query));
    return list(page.data, page.totalCount, page.hasMore, query.limit, query.offset);
  });

  // Webhooks

  app.get('/webhooks', async (): Promise<ListWire<WebhookWire>> => {
    const hooks = dispatcher.list();
    return list(hooks, hooks.length, false, 100, 0);
  });

  app.get<{ Params: { id: string } }>('/webhooks/:id', async (request) => {
    const hook = dispatcher.get(request.params.id);
    if (hook === null) throw new SimulatorApiError(404, 'not_found', 'webhook not found');
    return hook;
  });

  app.put<{ Params: { id: string } }>('/webhooks/:id', async (request) => {
    const body = parseBody(webhookUpdateBody, request.body);
    const hook = dispatcher.update(request.params.id, body);
    if (hook === null) throw new SimulatorApiError(404, 'not_found', 'webhook not found');
    return hook;
  });

  app.post<{ Params: { id: string } }>('/webhooks/:id/removeBackoff', async (request) => {
    const result = dispatcher.removeBackoff(request.params.id, options.now().getTime());
    if (result.kind === 'not_found') throw new SimulatorApiError(404, 'not_found', 'webhook not found');
    if (result.kind === 'too_soon') {
      const seconds = Math.ceil(result.retryAfterMs / 1000);
      throw new SimulatorApiError(429, 'backoff_removal_too_soon', `the backoff of this webhook was removed less than the cooldown ago; retry in ${seconds} s`, {
        'retry-after': String(seconds),
      });
    }
    return result.webhook;
  });

  // Account

  app.get('/finance/balance', async () => ({ balance: wireValueFromMinor(state.balanceMinor) }));
}
