import { createHash, timingSafeEqual } from 'node:crypto';
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/client';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { finishInboxEvent, storeInboxEvent, type InboxRow } from '../../db/inbox.ts';
import { getRedemption, getRedemptionByTransfer } from '../../db/redemptions.ts';
import { classifyGatewayWebhook, formatWireDecimal, type TransferValidationAnswer } from '../../gateway/index.ts';
import { settledOnArrival } from '../../activities/webhooks.ts';
import { DomainError } from '../../src/errors.ts';
import { webhookEventWorkflow } from '../../workflows/webhook-event.ts';
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

const ackResponse = z
  .object({ received: z.literal(true), event_id: z.string(), duplicate: z.boolean() })
  .meta({ id: 'WebhookAck' });
const validationAnswer = z
  .object({ status: z.enum(['APPROVED', 'REFUSED']), refuseReason: z.string().optional() })
  .meta({ id: 'TransferValidationAnswer' });
const anyJsonObject = z.record(z.string(), z.unknown()).describe('the provider payload, stored as received');

/**
 * Inbound webhooks, as explicit steps: authenticate (constant-time token check), store the raw
 * body in the inbox (unique by event id), answer 200 at once, and let a workflow
 * (`webhook-<provider>-<event_id>`) route it to the redemption or charge it is about. A duplicate
 * is acknowledged and not processed again.
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

  function requireGatewayToken(request: FastifyRequest): void {
    if (!secretMatches(request.headers['gateway-access-token'], config.GATEWAY_WEBHOOK_TOKEN)) {
      throw new DomainError('WEBHOOK_UNAUTHORIZED', 'missing or invalid gateway-access-token');
    }
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

  async function startProcessing(row: InboxRow): Promise<void> {
    try {
      await temporal.workflow.start(webhookEventWorkflow, {
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
          summary: `Gateway payment events (${rail}): token checked, stored, acknowledged at once, processed after`,
          body: anyJsonObject,
          response: { 200: ackResponse, 401: errorResponse, ...standardErrors },
        },
      },
      async (request) => {
        requireGatewayToken(request);
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
          'Dual flow: a body with `type` and no `event` is a synchronous authorization (answered APPROVED, no token); a body with `event` is a notification (token required, stored, processed)',
        body: anyJsonObject,
        response: { 200: z.union([ackResponse, validationAnswer]), 401: errorResponse, ...standardErrors },
      },
    },
    async (request) => {
      const body = request.body;
      if (!('event' in body) && 'type' in body) {
        // Authentication 5: answering 401 here would make the gateway refuse the operation.
        request.log.info({ type: String(body.type).slice(0, 50) }, 'synchronous gateway authorization approved');
        return { status: 'APPROVED' as const };
      }
      requireGatewayToken(request);
      return ingest(request, 'redemption/gateway');
    },
  );

  routes.post(
    '/webhooks/transfer/validate',
    {
      schema: {
        tags: ['webhooks'],
        summary: 'Gateway transfer validation: APPROVED only for a payout this service created and still expects, same amount and destination',
        body: anyJsonObject,
        response: { 200: validationAnswer, 401: errorResponse, ...standardErrors },
      },
    },
    async (request): Promise<TransferValidationAnswer> => {
      requireGatewayToken(request);
      const classified = classifyGatewayWebhook(request.body);
      if (classified.kind !== 'transfer_validation') return { status: 'REFUSED', refuseReason: 'not a transfer validation request' };
      const { transfer } = classified;
      const redemption =
        (await getRedemptionByTransfer(pool, transfer.id)) ??
        (transfer.externalReference === null ? null : await getRedemption(pool, transfer.externalReference).catch(() => null));
      const refuse = (reason: string): TransferValidationAnswer => {
        request.log.warn({ transfer_id: transfer.id, reason }, 'transfer validation refused');
        return { status: 'REFUSED', refuseReason: reason };
      };
      if (redemption === null) return refuse('unknown transfer');
      if (redemption.status !== 'PENDING_PAYMENT') return refuse(`redemption is ${redemption.status}`);
      if (redemption.gateway_transfer_id !== null && redemption.gateway_transfer_id !== transfer.id) return refuse('another transfer is expected');
      const expectedMinor = redemption.amount_minor - redemption.fee_minor;
      if (transfer.amountMinor !== expectedMinor) {
        return refuse(`amount ${formatWireDecimal(transfer.amountMinor)} differs from ${formatWireDecimal(expectedMinor)}`);
      }
      if (transfer.pixAddressKey !== redemption.destination) return refuse('destination differs');
      return { status: 'APPROVED' };
    },
  );

  routes.post(
    '/webhooks/supabase',
    {
      schema: {
        tags: ['webhooks'],
        summary: 'Database-event webhook: token required (x-webhook-token), stored in the inbox',
        body: anyJsonObject,
        response: { 200: ackResponse, 401: errorResponse, ...standardErrors },
      },
    },
    async (request) => {
      if (!secretMatches(request.headers['x-webhook-token'], config.SUPABASE_WEBHOOK_TOKEN)) {
        throw new DomainError('WEBHOOK_UNAUTHORIZED', 'missing or invalid x-webhook-token');
      }
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
        summary: "A Pix payout's status at the gateway (public: no user data)",
        params: z.object({ transfer_id: z.string().regex(/^[A-Za-z0-9_-]{1,100}$/) }),
        response: {
          200: z.object({ transfer_id: z.string(), status: z.string(), fail_reason: z.string().nullable() }).meta({ id: 'TransferStatusResponse' }),
          404: errorResponse,
          503: errorResponse,
          ...standardErrors,
        },
      },
    },
    async (request) => {
      try {
        const transfer = await gateway.getTransfer(request.params.transfer_id);
        return { transfer_id: transfer.id, status: transfer.status, fail_reason: transfer.failReason };
      } catch (error) {
        const status = (error as { status?: number }).status;
        if (status === 404) throw new DomainError('NOT_FOUND', 'no such transfer at the gateway');
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
        response: { 200: z.object({ configured: z.boolean(), simulator_default: z.boolean() }).meta({ id: 'TokenCheckResponse' }) },
      },
    },
    async () => ({ configured: config.GATEWAY_WEBHOOK_TOKEN.length > 0, simulator_default: config.GATEWAY_WEBHOOK_TOKEN.startsWith('sim-') }),
  );
}
