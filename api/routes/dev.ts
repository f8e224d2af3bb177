import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { DomainError } from '../../src/errors.ts';
import { errorResponse, standardErrors } from '../schemas/common.ts';

/**
 * `/api/v1/dev/`: development-only handles on the gateway simulator (pay a charge, let it go
 * overdue, refund it, complete or fail a payout, inject faults), forwarded to the simulator's
 * `/sim/` controls at GATEWAY_BASE_URL. Not registered at all when DEV_ENDPOINTS_ENABLED is off,
 * which production configuration enforces.
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
}
