import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { urlForLog } from '../../infra/logger.ts';

/**
 * One log record per request, written when it is answered: method, path, status, time and, for a
 * refusal, the error code the body carries (`code`, or a 422's first `detail[].type`). Used with
 * LOG_FORMAT=pretty, in place of Fastify's two records per request ("incoming request", "request
 * completed"), so that a person at a terminal reads `POST /api/v1/plc/create 409 12 ms
 * INSUFFICIENT_FUNDS` (infra/pretty-log.ts) and nothing else for an expected refusal.
 */

const codes = new WeakMap<FastifyRequest, string>();

/** The stable code of an error body as the errors plugin writes it. */
export function errorCodeOf(payload: unknown): string | undefined {
  if (typeof payload !== 'string' || !payload.startsWith('{')) return undefined;
  try {
    const body = JSON.parse(payload) as { code?: unknown; detail?: { type?: unknown }[] };
    if (typeof body.code === 'string') return body.code;
    const type = Array.isArray(body.detail) ? body.detail[0]?.type : undefined;
    return typeof type === 'string' ? type : undefined;
  } catch {
    return undefined;
  }
}

export const requestLogPlugin = fp(
  async (app: FastifyInstance) => {
    app.addHook('onSend', async (request: FastifyRequest, reply: FastifyReply, payload: unknown) => {
      if (reply.statusCode >= 400) {
        const code = errorCodeOf(payload);
        if (code !== undefined) codes.set(request, code);
      }
      return payload;
    });
    app.addHook('onResponse', async (request: FastifyRequest, reply: FastifyReply) => {
      request.log.info(
        { method: request.method, url: urlForLog(request.url), statusCode: reply.statusCode, responseTimeMs: Math.round(reply.elapsedTime), code: codes.get(request) },
        'request',
      );
    });
  },
  { name: 'request-log' },
);
