import { processInboxEvent } from '../../services/webhook-routing.ts';
import { createHash, timingSafeEqual } from 'node:crypto';
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/client';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { finishInboxEvent, storeInboxEvent, type InboxRow } from '../../db/inbox.ts';
import { recordWebhookAuthRefusal } from '../../db/webhook-monitor.ts';
import { classifyGatewayWebhook, type TransferValidationAnswer } from '../../gateway/index.ts';
import { decidePayoutValidation } from '../../services/gateway-word.ts';
import { createAnonymousValidationGuard } from '../../services/validation-guard.ts';
import { settledOnArrival } from '../../services/webhook-intake.ts';
import { DomainError } from '../../src/errors.ts';
import type { webhookEventWorkflow } from '../../workflows/webhook-event.ts';
import { referenceIdKey } from '../../workflows/search-attributes.ts';
import { parseStrictJson } from '../plugins/json-body.ts';
import { errorResponse, standardErrors } from '../schemas/common.ts';

declare module 'fastify' {
  interface FastifyRequest {
    rawBody?: string;
  }
}

/** Constant-time comparison of a presented secret with the configured one (of any lengths). */
export function secretMatches(presented: unknown, expected: string | undefined): boolean {
  if (typeof presented !== 'string' || expected === undefined) return false;
  const a = createHash('sha256').update(presented).digest();
  const b = createHash('sha256').update(expected).digest();
  return timingSafeEqual(a, b) && presented.length === expected.length;
}

/** The interface's header for the gateway's webhook token (the gateway's own is configured: GATEWAY_WEBHOOK_TOKEN_HEADER). */
export const interfaceWebhookTokenHeader = 'gateway-access-token';

/**
 * Whether a request carries the gateway's webhook token in the gateway's header or the
 * interface's. Both headers are compared every time (no early exit on the first), each in
 * constant time, so the answer's timing says nothing about which header or how much matched.
 */
export function gatewayTokenMatches(headers: Record<string, string | string[] | undefined>, gatewayHeader: string, expected: string): boolean {
  const own = secretMatches(headers[gatewayHeader.toLowerCase()], expected);
  const ours = secretMatches(headers[interfaceWebhookTokenHeader], expected);
  return own || ours;
}

const ackResponse = z
  .object({ received: z.literal(true), event_id: z.string(), duplicate: z.boolean() })
  .meta({ id: 'WebhookAck' });
const validationAnswer = z
  .object({ status: z.enum(['APPROVED', 'REFUSED']), refuseReason: z.string().optional() })
  .meta({ id: 'TransferValidationAnswer' });
/** Request examples: what the gateway sends (docs/gateway-wire-api.md). */
const gatewayPaymentEventExample = {
  id: 'evt_5c1e7a9b3d2f',
  event: 'PAYMENT_RECEIVED',
  payment: { id: 'pay_8f3a2c1e9b7d', status: 'RECEIVED', value: 150.0, externalReference: 'c3a1f0e2-5b7d-5e9a-8c4b-1d2e3f4a5b6c', billingType: 'PIX' },
};
const gatewayTransferEventExample = {
  id: 'evt_05b708f961d739ea7eba7e4db318f621&368604920',
  event: 'TRANSFER_DONE',
  transfer: {
    object: 'transfer',
    id: '777eb7c8-b1a2-4356-8fd8-a1b0644b5282',
    status: 'DONE',
    type: 'BANK_ACCOUNT',
    operationType: 'PIX',
    value: 25.0,
    externalReference: '7e4d2c1b-9a8f-4e6d-b5c3-2a1f0e9d8c7b',
    bankAccount: { pixAddressKey: '123e4567-e89b-42d3-a456-556642440000' },
  },
};
const anyJsonObject = z.record(z.string(), z.unknown()).describe('the provider payload, stored as received');

/**
 * Inbound webhooks, as explicit steps: authenticate (constant-time token check), store the raw
 * body in the inbox (unique by event id), route it to the redemption or charge it is about and
 * signal that workflow (services/webhook-routing.ts), then answer 200; when routing fails in the
 * request, a workflow (`webhook-<provider>-<event_id>`) takes the event over. A duplicate is
 * acknowledged and not processed again.
 */
export async function webhookRoutes(app: FastifyInstance): Promise<void> {
  const routes = app.withTypeProvider<ZodTypeProvider>();
  const { pool, temporal, config, gateway } = app.deps;

  // The raw body is what we store: parse JSON ourselves and keep the text (this plugin only).
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    const text = typeof body === 'string' ? body : body.toString('utf8');
    request.rawBody = text;
    try {
      done(null, parseStrictJson(text));
    } catch (error) {
      done(Object.assign(new Error(`invalid JSON: ${error instanceof Error ? error.message : 'parse error'}`), { statusCode: 422, code: 'FST_ERR_CTP_INVALID_JSON_BODY' }), undefined);
    }
  });

  /** Refuses a delivery without the right token, counting it for /admin/webhooks/diagnostics. */
  async function requireToken(provider: 'gateway' | 'supabase', presented: unknown, expected: string | undefined, header: string): Promise<void> {
    if (secretMatches(presented, expected)) return;
    await recordWebhookAuthRefusal(pool, provider).catch((error: unknown) => app.log.warn({ err: error }, 'could not count a refused webhook'));
    throw new DomainError('WEBHOOK_UNAUTHORIZED', `missing or invalid ${header}`);
  }

  /**
   * The gateway's token, in the gateway's own header (GATEWAY_WEBHOOK_TOKEN_HEADER, Asaas's
   * `asaas-access-token`) or in the interface's `gateway-access-token`: both compared, each in
   * constant time, whichever is present (docs/gateway-wire-api.md, "Authentication").
   */
  function gatewayTokenPresented(request: FastifyRequest): boolean {
    return gatewayTokenMatches(request.headers, config.GATEWAY_WEBHOOK_TOKEN_HEADER, config.GATEWAY_WEBHOOK_TOKEN);
  }

  async function requireGatewayToken(request: FastifyRequest): Promise<void> {
    if (gatewayTokenPresented(request)) return;
    await requireToken('gateway', undefined, config.GATEWAY_WEBHOOK_TOKEN, `${config.GATEWAY_WEBHOOK_TOKEN_HEADER} (or gateway-access-token)`);
  }

  function eventIdOf(body: Record<string, unknown>, raw: string): string {
    for (const key of ['event_id', 'id']) {
      const value = body[key];
      if (typeof value === 'string' && value.length > 0 && value.length <= 200) return value;
    }
    // No id in the payload: identical bodies are the same event.
    return `sha256:${createHash('sha256').update(raw).digest('hex')}`;
  }

  async function ingest(request: FastifyRequest, endpoint: string): Promise<z.infer<typeof ackResponse>> {
    const body = request.body as Record<string, unknown>;
    const raw = request.rawBody ?? JSON.stringify(body);
    const eventId = eventIdOf(body, raw);
    const eventType = typeof body.event === 'string' ? body.event.slice(0, 100) : typeof body.type === 'string' ? body.type.slice(0, 100) : null;
    // An event that by its content alone needs nothing done (a non-final transfer status: the
    // gateway sends CREATED and IN_BANK_PROCESSING before DONE) is stored already IGNORED, with
    // its reason, and starts no workflow.
    const settled = settledOnArrival(raw);
    const { row, duplicate } = await storeInboxEvent(pool, { provider: 'gateway', endpoint, eventId, eventType, rawBody: raw, settled });
    if (!duplicate ? settled === undefined : row.status === 'RECEIVED') await startProcessing(row);
    request.log.info({ event_id: eventId, event_type: eventType, duplicate }, 'webhook stored');
    return { received: true, event_id: eventId, duplicate };
  }

  /** Budgets of what validation requests without the gateway's token may cost (services/validation-guard.ts). */
  const guard = createAnonymousValidationGuard({
    readsPerMinute: config.GATEWAY_VALIDATION_ANON_READS_PER_MINUTE,
    flagsPerWindow: config.GATEWAY_VALIDATION_ANON_FLAGS_PER_WINDOW,
  });

  /**
   * A payout validation (the gateway's authorization before it pays out: a TRANSFER or a BILL),
   * decided on our payout intents first and then on the gateway's own copy
   * (services/gateway-word.ts `decidePayoutValidation`): the body is only a hint. Any other
   * cash-out type is refused: this service makes none.
   */
  async function validatePayout(request: FastifyRequest, authenticated: boolean): Promise<TransferValidationAnswer> {
    const classified = classifyGatewayWebhook(request.body);
    const presented =
      classified.kind === 'transfer_validation'
        ? { rail: 'pix' as const, payout: classified.transfer }
        : classified.kind === 'bill_validation'
          ? { rail: 'boleto' as const, payout: classified.billPayment }
          : null;
    if (presented === null) {
      const reason = classified.kind === 'unknown' ? classified.reason : `${classified.kind} is not a validation request`;
      request.log.warn({ reason, authenticated }, 'validation request refused: not a transfer or bill payment of ours');
      return { status: 'REFUSED', refuseReason: `not a payout this service makes (${reason})`.slice(0, 500) };
    }
    const decision = await decidePayoutValidation({ pool, gateway, guard }, presented, { authenticated, source: request.ip });
    const log = { payout_id: presented.payout.id, rail: presented.rail, authenticated, gateway_read: decision.gatewayRead };
    if (!decision.verified) request.log.warn(log, "payout validation decided on the request's copy: the gateway could not be read");
    if (decision.answer.status === 'REFUSED') request.log.warn({ ...log, reason: decision.answer.refuseReason, risk_flag_id: decision.riskFlagId }, 'payout validation refused');
    else request.log.info(log, 'payout validation approved');
    return decision.answer;
  }

  /**
   * Processes the stored event before it is acknowledged (services/webhook-routing.ts): routed,
   * its workflow signalled, its outcome recorded, with no workflow of its own. When a step fails,
   * the event's own workflow takes it over and retries it (and ends it DEAD for an operator).
   */
  async function startProcessing(row: InboxRow): Promise<void> {
    try {
      await processInboxEvent({ pool, gateway, temporal }, { inboxId: row.id });
      return;
    } catch (error) {
      app.log.warn({ err: error, event_id: row.event_id }, 'webhook not processed in the request: its workflow takes it over');
    }
    try {
      await temporal.workflow.start<typeof webhookEventWorkflow>('webhookEventWorkflow', {
        workflowId: `webhook-${row.provider}-${row.event_id}`,
        taskQueue: config.TEMPORAL_TASK_QUEUE,
        args: [{ inboxId: row.id }],
        typedSearchAttributes: [{ key: referenceIdKey, value: row.event_id }],
      });
    } catch (error) {
      // Started already by an earlier delivery of the same event: nothing more to do.
      if (!(error instanceof WorkflowExecutionAlreadyStartedError)) throw error;
    }
  }

  for (const rail of ['pix', 'boleto'] as const) {
    routes.post(
      `/webhooks/payment/${rail}`,
      {
        schema: {
          tags: ['webhooks'],
          summary: `Gateway payment events (${rail}): token checked, stored, routed to its charge, acknowledged`,
          description:
            "For the payment gateway, not for clients. The gateway's header `asaas-access-token` (GATEWAY_WEBHOOK_TOKEN_HEADER) or the interface's `gateway-access-token` must hold the configured webhook token, compared in constant time (401 `WEBHOOK_UNAUTHORIZED` otherwise). The raw body is stored in the inbox, unique by the event's id (a redelivery is acknowledged with `duplicate: true` and not processed again), the event is routed to its charge's workflow and recorded before the answer (a workflow `webhook-gateway-<event_id>` takes it over when that fails; docs/settlement.md, \"Webhooks in\"), and the charge's workflow applies it (docs/charges.md).",
          body: anyJsonObject,
          requestExample: { body: gatewayPaymentEventExample },
          response: { 200: ackResponse, 401: errorResponse, ...standardErrors },
        },
      },
      async (request) => {
        await requireGatewayToken(request);
        return ingest(request, `payment/${rail}`);
      },
    );
  }

  routes.post(
    '/redemption/webhook/gateway',
    {
      schema: {
        tags: ['webhooks'],
        summary:
          'Dual flow: a body with `type` and no `event` is a synchronous authorization (no token required; a TRANSFER or BILL is decided on our payout intents, then on the gateway\'s copy; ' +
          'any other type REFUSED); a body with `event` is a notification (token required, stored, checked against the gateway, processed)',
        description:
          "For the payment gateway, not for clients. A body with `type` and no `event` is the gateway's synchronous authorization of a cash-out (Asaas's validation request), answered without requiring a token and never with a 401 (a 401 would make the gateway refuse the payout): a TRANSFER or a BILL is decided as /webhooks/transfer/validate decides it, first on our own records (a payout whose `externalReference` is not one of our open payout intents is REFUSED without reading the gateway), then on the gateway's own copy read with our API key, and one payout per redemption is approved (the first, claimed before the answer leaves; any other REFUSED and flagged). A request without the gateway's token spends its address's budgets: gateway reads per minute (503 `GATEWAY_UNAVAILABLE` once spent, or when the gateway cannot be read in time: the gateway asks again) and risk flags, one per address and reason in a window; one with the token (`asaas-access-token` or `gateway-access-token`) is the gateway's own. Any other type is REFUSED: this service makes no other cash-out. A body with `event` is a notification: the token is required in `asaas-access-token` or `gateway-access-token` (401 otherwise), the event is stored in the inbox (keyed by its `id`, or by the SHA-256 of its body when it has none) and processed before the answer, as for the payment webhooks (routed and signalled in the request, a workflow `webhook-gateway-<event_id>` taking it over when that fails), which reads the transfer, bill payment or payment back from the gateway and acts on the gateway's status; an event the gateway contradicts is stored CONTRADICTED and flagged (docs/settlement.md).",
        body: anyJsonObject,
        requestExample: { body: gatewayTransferEventExample },
        response: { 200: z.union([ackResponse, validationAnswer]), 401: errorResponse, 503: errorResponse, ...standardErrors },
      },
    },
    async (request) => {
      const body = request.body;
      if (!('event' in body) && 'type' in body) {
        // Authentication 5: no token required here, and never a 401 (it would make the gateway
        // refuse the operation). A request that carries the gateway's token is the gateway's own;
        // one without is decided on our payout intents first and spends its address's budgets
        // (services/validation-guard.ts). A TRANSFER or a BILL is a payout leaving our account,
        // decided like /webhooks/transfer/validate decides it; any other cash-out type is refused.
        return validatePayout(request, gatewayTokenPresented(request));
      }
      await requireGatewayToken(request);
      return ingest(request, 'redemption/gateway');
    },
  );

  routes.post(
    '/webhooks/transfer/validate',
    {
      schema: {
        tags: ['webhooks'],
        summary:
          'Gateway transfer validation: APPROVED only for a payout this service created and still expects, same amount and destination, ' +
          "decided on the gateway's own copy of the transfer (503 when the gateway cannot be read: it asks again)",
        description:
          "For the payment gateway, not for clients: it asks about 5 s after a payout (a transfer, `type: TRANSFER`, or a bill payment, `type: BILL`) is created whether to carry it out (Asaas's \"Mechanism for validating transfers via webhooks\"). The token is required in the gateway's header `asaas-access-token` (GATEWAY_WEBHOOK_TOKEN_HEADER) or in `gateway-access-token`. APPROVED only for the payout a PENDING_PAYMENT redemption recorded its intent for (its `externalReference` is the redemption id; anything else REFUSED without reading the gateway), as the gateway's own copy read with our API key shows it: still PENDING, the intent's amount and destination (the Pix key in `bankAccount.pixAddressKey`, or the boleto's digitable line), and the first payout approved for the redemption (claimed atomically before the answer leaves; any other payout for the same redemption is REFUSED and flagged). Anything else is REFUSED with the reason (three refusals and the gateway cancels the payout); a request that differs from the gateway's copy is also flagged (WEBHOOK_CONTRADICTS_GATEWAY). When the gateway cannot be read in time the request's own copy decides.",
        body: anyJsonObject,
        requestExample: { body: { type: 'TRANSFER', transfer: gatewayTransferEventExample.transfer } },
        response: { 200: validationAnswer, 401: errorResponse, 503: errorResponse, ...standardErrors },
      },
    },
    async (request): Promise<TransferValidationAnswer> => {
      await requireGatewayToken(request);
      return validatePayout(request, true);
    },
  );

  routes.post(
    '/webhooks/supabase',
    {
      schema: {
        tags: ['webhooks'],
        summary: 'Database-event webhook: token required (x-webhook-token), stored in the inbox',
        description:
          'For the realtime/database provider. The header `x-webhook-token` must hold `SUPABASE_WEBHOOK_TOKEN` (401 otherwise); the event is stored in the inbox, unique by its id, and marked IGNORED: no action is tied to database events.',
        body: anyJsonObject,
        requestExample: { body: { type: 'INSERT', table: 'plcs', record: { token_id: '6f1c2a4e-8d3b-4c7a-9e2f-5b8a1d4c3e7f' }, id: 'evt_db_0001' } },
        response: { 200: ackResponse, 401: errorResponse, ...standardErrors },
      },
    },
    async (request) => {
      await requireToken('supabase', request.headers['x-webhook-token'], config.SUPABASE_WEBHOOK_TOKEN, 'x-webhook-token');
      const body = request.body;
      const raw = request.rawBody ?? JSON.stringify(body);
      const eventId = eventIdOf(body, raw);
      const { row, duplicate } = await storeInboxEvent(pool, {
        provider: 'supabase',
        endpoint: 'supabase',
        eventId,
        eventType: typeof body.type === 'string' ? body.type.slice(0, 100) : null,
        rawBody: raw,
      });
      if (!duplicate) await finishInboxEvent(pool, row.id, { status: 'IGNORED', result: { reason: 'stored only: no action is tied to database events' } });
      return { received: true as const, event_id: eventId, duplicate };
    },
  );

  routes.get(
    '/redemption/transfer/:transfer_id',
    {
      schema: {
        tags: ['redemption'],
        summary: "A payout's status at the gateway, a Pix transfer or a boleto's bill payment (public: no user data)",
        description:
          "Reads the payout's status from the gateway (PENDING, DONE, FAILED with its reason): the transfer of this id, else the bill payment of this id (a boleto redemption's payout, its `gateway_transfer_id`); answers nothing about who was paid. 404 `NOT_FOUND` when the gateway knows neither, 503 `GATEWAY_UNAVAILABLE` when it does not answer.",
        params: z.object({ transfer_id: z.string().regex(/^[A-Za-z0-9_-]{1,100}$/) }),
        requestExample: { params: { transfer_id: 'tra_4b7e9c2a1f3d' } },
        response: {
          200: z.object({ transfer_id: z.string(), status: z.string(), fail_reason: z.string().nullable() }).meta({ id: 'TransferStatusResponse' }),
          404: errorResponse,
          503: errorResponse,
          ...standardErrors,
        },
      },
    },
    async (request) => {
      const notFound = (error: unknown): boolean => (error as { status?: number }).status === 404;
      try {
        const transfer = await gateway.getTransfer(request.params.transfer_id);
        return { transfer_id: transfer.id, status: transfer.status, fail_reason: transfer.failReason };
      } catch (error) {
        if (!notFound(error)) throw new DomainError('GATEWAY_UNAVAILABLE', 'the gateway did not answer');
      }
      // Not a transfer: a boleto redemption's payout is a bill payment (ids are unique across both).
      try {
        const bill = await gateway.getBillPayment(request.params.transfer_id);
        return { transfer_id: bill.id, status: bill.status, fail_reason: bill.failReason };
      } catch (error) {
        if (notFound(error)) throw new DomainError('NOT_FOUND', 'no such transfer or bill payment at the gateway');
        throw new DomainError('GATEWAY_UNAVAILABLE', 'the gateway did not answer');
      }
    },
  );

  routes.get(
    '/redemption/health/gateway',
    {
      schema: {
        tags: ['redemption'],
        summary: 'Connectivity with the gateway',
        description: "Calls the gateway once and answers whether it answered, how long it took and, when it failed, the adapter's error code.",
        response: { 200: z.object({ ok: z.boolean(), latency_ms: z.number(), code: z.string().optional() }).meta({ id: 'GatewayHealthResponse' }) },
      },
    },
    async () => {
      const health = await gateway.health();
      return health.ok ? { ok: true, latency_ms: health.latencyMs } : { ok: false, latency_ms: health.latencyMs, code: health.code };
    },
  );

  routes.get(
    '/redemption/webhook/token-check',
    {
      schema: {
        tags: ['redemption'],
        summary: 'Whether the webhook token is configured (never its value)',
        description: "Whether a webhook token is configured, and whether it is the simulator's development default (which must never reach production); the token itself is never answered.",
        response: { 200: z.object({ configured: z.boolean(), simulator_default: z.boolean() }).meta({ id: 'TokenCheckResponse' }) },
      },
    },
    async () => ({ configured: config.GATEWAY_WEBHOOK_TOKEN.length > 0, simulator_default: config.GATEWAY_WEBHOOK_TOKEN.startsWith('sim-') }),
  );
}
