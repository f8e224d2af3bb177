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

  for (const action of ['pay', 'overdue', 'refund'] as const) {
    routes.post(
      `/simulate/payments/:id/${action}`,
      { schema: { tags: ['dev'], summary: `Simulator: ${action} a charge`, params: id, response: responses } },
      async (request) => (await forward('POST', `/sim/payments/${request.params.id}/${action}`, {})) as Record<string, unknown>,
    );
  }
  routes.post(
    '/simulate/transfers/:id/complete',
    { schema: { tags: ['dev'], summary: 'Simulator: complete a Pix payout', params: id, response: responses } },
    async (request) => (await forward('POST', `/sim/transfers/${request.params.id}/complete`, {})) as Record<string, unknown>,
  );
  routes.post(
    '/simulate/transfers/:id/fail',
    {
      schema: {
        tags: ['dev'],
        summary: 'Simulator: fail a Pix payout',
        params: id,
        body: z.strictObject({ reason: z.string().max(200).optional() }).nullish(),
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
        body: z.record(z.string(), z.unknown()),
        response: responses,
      },
    },
    async (request) => (await forward('POST', '/sim/faults', request.body)) as Record<string, unknown>,
  );
  routes.delete(
    '/simulate/faults',
    { schema: { tags: ['dev'], summary: 'Simulator: clear every fault', response: responses } },
    async () => (await forward('DELETE', '/sim/faults')) as Record<string, unknown>,
  );
}
