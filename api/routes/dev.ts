import { randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { getInboxEvent } from '../../db/inbox.ts';
import { releasePlc } from '../../db/plcs.ts';
import { DomainError } from '../../src/errors.ts';
import { examplePubkeys, exampleTokenId } from '../schemas/examples.ts';
import { errorResponse, standardErrors } from '../schemas/common.ts';
import { balanceResponse, idempotencyKeyHeader } from '../schemas/ledger.ts';
import { amountInputSchema, currencySchema, ownerIdSchema, parseMoney } from '../schemas/money.ts';
import { plcStatusSchema } from '../schemas/plc.ts';
import { depositAnswer } from './balance.ts';

/**
 * `/api/v1/dev/`: development-only handles on the gateway simulator (pay a charge, let it go
 * overdue, refund it, complete or fail a payout, inject faults), forwarded to the simulator's
 * `/sim/` controls at GATEWAY_BASE_URL; and handles on the service itself for an integrator who
 * tests end to end without a gateway or a device (docs/b2b.md, "Developer endpoints"): fund an
 * owner, make a PLC expire now, replay a stored webhook. Not registered at all when
 * DEV_ENDPOINTS_ENABLED is off, which production configuration enforces.
 */
export async function devRoutes(app: FastifyInstance): Promise<void> {
  const routes = app.withTypeProvider<ZodTypeProvider>();
  const { config } = app.deps;
  const base = config.GATEWAY_BASE_URL.replace(/\/+$/, '');

  async function forward(method: 'GET' | 'POST' | 'DELETE', path: string, body?: unknown): Promise<unknown> {
    let response: Response;
    try {
      response = await fetch(`${base}${path}`, {
        method,
        headers: body === undefined ? {} : { 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(config.GATEWAY_TIMEOUT_MS),
      });
    } catch {
      throw new DomainError('GATEWAY_UNAVAILABLE', 'the gateway simulator did not answer');
    }
    const text = await response.text();
    const parsed: unknown = text === '' ? null : JSON.parse(text);
    if (response.status === 404) throw new DomainError('NOT_FOUND', 'the simulator does not know this resource');
    if (!response.ok) throw new DomainError('GATEWAY_REFUSED', `the simulator answered ${response.status}`, { simulator: parsed });
    return parsed;
  }

  const id = z.object({ id: z.string().regex(/^[A-Za-z0-9_-]{1,100}$/) });
  const result = z.record(z.string(), z.unknown());
  const responses = { 200: result, 404: errorResponse, 502: errorResponse, 503: errorResponse, ...standardErrors };

  const paymentActions = {
    pay: 'The payer pays the charge: the simulator sends the PAYMENT_RECEIVED (then CONFIRMED) webhooks, and the charge settles.',
    overdue: 'The charge passes its due date unpaid: the simulator sends PAYMENT_OVERDUE, and the charge fails.',
    refund: 'A paid charge is refunded: the simulator sends PAYMENT_REFUNDED.',
  } as const;
  const devNote = ' Development only (never registered in production); forwarded to the gateway simulator at `GATEWAY_BASE_URL` (docs/gateway-wire-api.md).';
  for (const action of ['pay', 'overdue', 'refund'] as const) {
    routes.post(
      `/simulate/payments/:id/${action}`,
      {
        schema: {
          tags: ['dev'],
          summary: `Simulator: ${action} a charge`,
          description: `${paymentActions[action]}${devNote}`,
          params: id,
          requestExample: { params: { id: 'pay_8f3a2c1e9b7d' } },
          response: responses,
        },
      },
      async (request) => (await forward('POST', `/sim/payments/${request.params.id}/${action}`, {})) as Record<string, unknown>,
    );
  }
  routes.post(
    '/simulate/transfers/:id/complete',
    {
      schema: {
        tags: ['dev'],
        summary: 'Simulator: complete a Pix payout',
        description: `The payout is done: the simulator sends TRANSFER_DONE, and the redemption settles.${devNote}`,
        params: id,
        requestExample: { params: { id: 'tra_4b7e9c2a1f3d' } },
        response: responses,
      },
    },
    async (request) => (await forward('POST', `/sim/transfers/${request.params.id}/complete`, {})) as Record<string, unknown>,
  );
  routes.post(
    '/simulate/transfers/:id/fail',
    {
      schema: {
        tags: ['dev'],
        summary: 'Simulator: fail a Pix payout',
        description: `The payout fails with the given reason: the simulator sends TRANSFER_FAILED, and the redemption is reverted (PLC back to its bearer).${devNote}`,
        params: id,
        body: z.strictObject({ reason: z.string().max(200).optional() }).nullish(),
        requestExample: { params: { id: 'tra_4b7e9c2a1f3d' }, body: { reason: 'destination account closed' } },
        response: responses,
      },
    },
    async (request) => (await forward('POST', `/sim/transfers/${request.params.id}/fail`, request.body ?? {})) as Record<string, unknown>,
  );
  routes.post(
    '/simulate/faults',
    {
      schema: {
        tags: ['dev'],
        summary: 'Simulator: inject faults (delayed, duplicated, reordered, dropped webhooks; API errors and timeouts)',
        description: `Merges the given faults into the simulator's: webhook delay, duplicates, reordering, drop rate; API error, lost-response and timeout rates; a seed for its random decisions. The simulator refuses unknown keys or values out of range (502 here).${devNote}`,
        body: z.record(z.string(), z.unknown()),
        requestExample: { body: { webhookDelayMs: 2000, duplicateWebhooks: 2, apiErrorRate: 0.1, seed: 42 } },
        response: responses,
      },
    },
    async (request) => (await forward('POST', '/sim/faults', request.body)) as Record<string, unknown>,
  );
  routes.delete(
    '/simulate/faults',
    {
      schema: {
        tags: ['dev'],
        summary: 'Simulator: clear every fault',
        description: `Clears every fault and restarts the simulator's random sequence from its configured seed.${devNote}`,
        response: responses,
      },
    },
    async () => (await forward('DELETE', '/sim/faults')) as Record<string, unknown>,
  );

  const serviceNote = ' Development only (never registered in production; docs/b2b.md, "Developer endpoints").';

  routes.post(
    '/owners/:owner_id/fund',
    {
      schema: {
        tags: ['dev'],
        summary: 'Fund an owner (a deposit without an admin token), booked by the deposit workflow',
        description: `Credits the owner's AVAILABLE through the same deposit workflow as the admin's \`POST /api/v1/balance/deposit\` (\`deposit-<key>\`), so a wallet or a POS test can issue PLCs at once. The \`Idempotency-Key\` header, when sent, names the deposit (the same key books once); without one each call is a new deposit.${serviceNote}`,
        params: z.object({ owner_id: ownerIdSchema }),
        headers: z.object({ 'idempotency-key': idempotencyKeyHeader.optional() }),
        body: z.strictObject({ amount: amountInputSchema, currency: currencySchema.default('BRL') }),
        requestExample: { params: { owner_id: examplePubkeys.alice }, body: { amount: '500.00', currency: 'BRL' } },
        response: { 200: balanceResponse, 409: errorResponse, ...standardErrors },
      },
      config: { idempotency: { scope: 'dev-fund' } },
    },
    async (request) => {
      const ownerId = request.params.owner_id;
      const { currency } = request.body;
      const amountMinor = parseMoney(request.body.amount, currency, { positive: true });
      const idempotencyKey = request.headers['idempotency-key'] ?? `dev-fund-${randomUUID()}`;
      return depositAnswer(app, { idempotencyKey, ownerId, currency, amountMinor, requestedBy: 'dev' });
    },
  );

  routes.post(
    '/plc/:token_id/expire',
    {
      schema: {
        tags: ['dev'],
        summary: 'Make a PLC expire now: EXPIRED, its PROMISED amount back to the issuer',
        description: `Runs the expiry's own guarded transition (the one the PLC's workflow and the expire-tokens sweep run: PROMISED -> AVAILABLE for the issuer, status EXPIRED) now instead of at \`expires_at\`, so expiry can be tested without waiting hours. The PLC's workflow finds it expired when its timer fires. Only an ISSUED or TRANSFERRED PLC without a redemption in flight expires: 409 \`PLC_NOT_TRANSFERABLE\` otherwise (details.status); 404 \`PLC_NOT_FOUND\`.${serviceNote}`,
        params: z.object({ token_id: z.string().uuid() }),
        requestExample: { params: { token_id: exampleTokenId } },
        response: { 200: z.object({ token_id: z.string().uuid(), status: plcStatusSchema, released: z.boolean() }), 404: errorResponse, 409: errorResponse, ...standardErrors },
      },
    },
    async (request) => {
      const result = await releasePlc(app.deps.pool, request.params.token_id, 'EXPIRED');
      if (result.plc === null) throw new DomainError('PLC_NOT_FOUND', 'no such PLC');
      if (!result.released && result.plc.status !== 'EXPIRED') {
        throw new DomainError('PLC_NOT_TRANSFERABLE', `a ${result.plc.status} PLC cannot be expired`, {
          status: result.plc.status,
          redemption_in_flight: result.plc.redemption_id !== null,
        });
      }
      request.log.info({ token_id: result.plc.token_id, released: result.released }, 'dev: PLC expired now');
      return { token_id: result.plc.token_id, status: result.plc.status, released: result.released };
    },
  );

  /** Where each inbox endpoint was received, and the header its token goes in. */
  const webhookRoutesByEndpoint: Record<string, { url: string; header: string; token: string | undefined }> = {
    'payment/pix': { url: '/api/v1/webhooks/payment/pix', header: 'gateway-access-token', token: config.GATEWAY_WEBHOOK_TOKEN },
    'payment/boleto': { url: '/api/v1/webhooks/payment/boleto', header: 'gateway-access-token', token: config.GATEWAY_WEBHOOK_TOKEN },
    'redemption/gateway': { url: '/api/v1/redemption/webhook/gateway', header: 'gateway-access-token', token: config.GATEWAY_WEBHOOK_TOKEN },
    supabase: { url: '/api/v1/webhooks/supabase', header: 'x-webhook-token', token: config.SUPABASE_WEBHOOK_TOKEN },
  };

  routes.post(
    '/webhooks/:inbox_id/replay',
    {
      schema: {
        tags: ['dev'],
        summary: 'Replay a stored webhook: its raw body delivered again to the route that received it, as a gateway redelivery',
        description: `Takes an event from the webhook inbox (its id: \`GET /api/v1/admin/monitor/inbox/events\` lists them) and posts its body, byte for byte, to the route that received it, with the configured token: what the gateway does when it delivers an event twice. The answer is that route's own (\`duplicate: true\` and nothing processed again, as the inbox's uniqueness promises). 404 \`NOT_FOUND\` for an unknown inbox id.${serviceNote}`,
        params: z.object({ inbox_id: z.string().uuid() }),
        requestExample: { params: { inbox_id: '7a1c2e3f-4b5d-4e6f-8a9b-0c1d2e3f4a5b' } },
        response: {
          200: z.object({ inbox_id: z.string().uuid(), event_id: z.string(), endpoint: z.string(), status_code: z.number().int(), answer: z.unknown() }),
          404: errorResponse,
          ...standardErrors,
        },
      },
    },
    async (request) => {
      const event = await getInboxEvent(app.deps.pool, request.params.inbox_id);
      if (event === null) throw new DomainError('NOT_FOUND', 'no such inbox event');
      const target = webhookRoutesByEndpoint[event.endpoint];
      if (target === undefined) throw new Error(`inbox endpoint ${event.endpoint} has no route to replay to`);
      const answer = await app.inject({
        method: 'POST',
        url: target.url,
        headers: { 'content-type': 'application/json', ...(target.token === undefined ? {} : { [target.header]: target.token }) },
        payload: event.raw_body,
      });
      let body: unknown = answer.body;
      try {
        body = answer.json();
      } catch {
        // Kept as text.
      }
      return { inbox_id: event.id, event_id: event.event_id, endpoint: event.endpoint, status_code: answer.statusCode, answer: body };
    },
  );
}
