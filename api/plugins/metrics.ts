import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { bearerMatches, metricsContentType, type ServiceMetrics } from '../../infra/metrics.ts';
import { replayedHeaderName } from './idempotency.ts';

/**
 * The API's Prometheus metrics (infra/metrics.ts; docs/operations.md): every answered request
 * observed by method, route template (`/api/v1/plc/:token_id`, never the path with its ids; a
 * request no route matched counts as `unmatched`) and status; 429s of the rate limiter and
 * Idempotency-Key replays counted by route. `GET /metrics` (outside /api/v1, not in the OpenAPI)
 * serves them, behind `Authorization: Bearer <token>` when a token is given; the caller decides
 * whether to register the plugin at all (`apiMetricsServed`: never in production without a token).
 */
export const metricsPlugin = fp<{ metrics: ServiceMetrics; token: string | undefined; serve: boolean }>(
  async (app: FastifyInstance, options) => {
    const { metrics, token } = options;
    app.addHook('onResponse', async (request, reply) => {
      const route = request.routeOptions.url ?? 'unmatched';
      const status = reply.statusCode;
      metrics.httpRequestDuration.observe({ method: request.method, route, status_code: String(status) }, reply.elapsedTime / 1000);
      if (status === 429 && reply.hasHeader('x-ratelimit-limit')) metrics.rateLimitRefusals.inc({ route });
      if (reply.getHeader(replayedHeaderName) === 'true') metrics.idempotentReplays.inc({ route });
    });
    if (!options.serve) return;
    app.get('/metrics', { schema: { hide: true } }, async (request, reply) => {
      if (token !== undefined && !bearerMatches(request.headers.authorization, token)) {
        // Answered here in the ErrorResponse shape: the route has no response schema for the errors plugin.
        return reply
          .code(401)
          .header('www-authenticate', 'Bearer')
          .type('application/json')
          .send(JSON.stringify({ code: 'UNAUTHENTICATED', message: 'GET /metrics needs Authorization: Bearer METRICS_TOKEN', details: {} }));
      }
      return reply.type(metricsContentType).send(await metrics.render());
    });
  },
  { name: 'metrics' },
);
