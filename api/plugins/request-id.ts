import { randomUUID } from 'node:crypto';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';

/** A client's X-Request-Id is kept when it is short and plain; otherwise a new one is made. */
export function requestIdFrom(request: { headers: Record<string, string | string[] | undefined> }): string {
  const given = request.headers['x-request-id'];
  if (typeof given === 'string' && /^[A-Za-z0-9._:-]{1,128}$/.test(given)) return given;
  return randomUUID();
}

export const requestIdPlugin = fp(
  async (app: FastifyInstance) => {
    app.addHook('onRequest', async (request: FastifyRequest, reply) => {
      void reply.header('x-request-id', request.id);
    });
  },
  { name: 'request-id' },
);
