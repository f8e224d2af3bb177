import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { parseExactJson } from '../../src/money/exact-json.ts';

/**
 * Strict JSON bodies. Bodies are parsed once, never coerced (the zod schemas decide types), and a
 * JSON number is kept only when the binary double holds exactly the decimal the client wrote, so
 * money never rides on a rounded float; `__proto__` and `constructor` keys are refused.
 */

/** Strict JSON (src/money/exact-json.ts): exact numbers only, no prototype keys. */
export function parseStrictJson(text: string): unknown {
  return parseExactJson(text);
}

declare module 'fastify' {
  interface FastifyRequest {
    /** The body's text as received, before parsing: what a signed request's body hash covers (docs/b2b.md); undefined without a body. */
    rawBody?: string;
  }
}

export const jsonBodyPlugin = fp(
  async (app: FastifyInstance) => {
    // JSON only: no text/plain or other parsers that would hand a schema a string body.
    app.removeAllContentTypeParsers();
    app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
      const text = typeof body === 'string' ? body : body.toString('utf8');
      request.rawBody = text;
      if (text.trim() === '') {
        done(Object.assign(new Error('body is empty'), { statusCode: 422, code: 'FST_ERR_CTP_EMPTY_JSON_BODY' }), undefined);
        return;
      }
      try {
        done(null, parseStrictJson(text));
      } catch (error) {
        const message = error instanceof Error ? error.message : 'invalid JSON';
        done(Object.assign(new Error(`invalid JSON: ${message}`), { statusCode: 422, code: 'FST_ERR_CTP_INVALID_JSON_BODY' }), undefined);
      }
    });
  },
  { name: 'json-body' },
);
