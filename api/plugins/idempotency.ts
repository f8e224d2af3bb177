import { createHash } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest, RouteOptions } from 'fastify';
import fp from 'fastify-plugin';
import { claimIdempotencyKey, completeIdempotencyKey, releaseIdempotencyKey } from '../../db/idempotency.ts';
import { DomainError, type ErrorCode } from '../../src/errors.ts';

/**
 * Idempotency-Key, one implementation for every route that takes one (the spec's Limits: a 300 s
 * window for create, transfer and redeem; the deposit and the charges require a key). A route
 * declares `config: { idempotency: { scope } }` and the `idempotency-key` header in its schema;
 * this plugin does the rest:
 *
 * - the first request with a key claims it (PostgreSQL, so every replica sees it) before the
 *   handler runs, and the answer it gets is stored: a 2xx, or a refusal (a 4xx other than 422;
 *   a 422 is recomputed, the same input always fails the same way);
 * - a replay within the window with the same body gets that stored answer, status and body, with
 *   `X-Idempotency-Replayed: true`, and runs nothing (no workflow is started, nothing is read);
 * - the same key with another body is refused (422, `IDEMPOTENCY_KEY_REUSED`, loc
 *   `["header", "idempotency-key"]`), and a request while the first is still running with 409
 *   `IDEMPOTENCY_REQUEST_IN_PROGRESS`;
 * - a 5xx or an unanswered request releases the key, so that the client's retry runs again (each
 *   operation is idempotent by its own business key underneath, so the retry cannot do anything
 *   twice);
 * - a route whose request creates something names it by `idempotentObjectId(request)`, an id
 *   derived from the scope, the key and the body, so that a retry with the same key and body
 *   finds what the first attempt created, in its current state, whether that attempt answered,
 *   timed out (a 503 while the work went on) or lost its answer after the commit (this record
 *   never written): the retry answers that object instead of refusing the work as done
 *   (docs/protocol.md 9.4, "A retry finds its result").
 *
 * The claim is made after authentication, validation and the rate limit, so that none of their
 * refusals holds a key.
 */

export interface IdempotencyRouteConfig {
  /** Namespace of the keys: two routes that are one operation (create and its protocol form) share one. */
  scope: string;
}

declare module 'fastify' {
  interface FastifyContextConfig {
    idempotency?: IdempotencyRouteConfig;
  }
  interface FastifyRequest {
    idempotencyClaim: OpenClaim | null;
  }
}

interface OpenClaim {
  scope: string;
  key: string;
  /** `idempotencyRequestHash` of the body. */
  requestHash: string;
  state: 'open' | 'closing' | 'closed';
}

export const idempotencyKeyHeaderName = 'idempotency-key';
export const replayedHeaderName = 'x-idempotency-replayed';
/** The codes this plugin answers with (documented on every idempotent route). */
export const idempotencyErrorCodes = ['IDEMPOTENCY_KEY_REUSED', 'IDEMPOTENCY_REQUEST_IN_PROGRESS'] as const satisfies readonly ErrorCode[];

/** What makes two requests "the same request" for one key: the parsed body. */
export function idempotencyRequestHash(body: unknown): string {
  return createHash('sha256').update(JSON.stringify(body ?? null)).digest('hex');
}

/**
 * The id of what a request creates, derived from its Idempotency-Key: a UUID (version 8, RFC 9562's
 * custom layout) of SHA-256 over the scope, the key and the body's hash, so the same key and body
 * always name the same object and another body under the same key another one. Undefined without
 * a key (the route then picks a random id).
 */
export function idempotentObjectId(request: FastifyRequest): string | undefined {
  const claim = request.idempotencyClaim;
  if (claim === null) return undefined;
  return derivedUuid(`idempotency|${claim.scope}|${claim.key}|${claim.requestHash}`);
}

/** A UUID (version 8, variant 10) of SHA-256 over `text`. */
export function derivedUuid(text: string): string {
  const hex = createHash('sha256').update(text).digest('hex');
  const variant = ((parseInt(hex[16]!, 16) & 0x3) | 0x8).toString(16);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-8${hex.slice(13, 16)}-${variant}${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}

/** The route's idempotency declaration, if any. */
export function idempotencyOf(route: Pick<RouteOptions, 'config'>): IdempotencyRouteConfig | undefined {
  return (route.config as { idempotency?: IdempotencyRouteConfig } | undefined)?.idempotency;
}

function declaresKeyHeader(route: RouteOptions): boolean {
  const headers = route.schema?.headers as { shape?: Record<string, unknown> } | undefined;
  return headers?.shape !== undefined && idempotencyKeyHeaderName in headers.shape;
}

/** A stored answer is the response as sent; only JSON answers are stored. */
function storable(status: number, payload: unknown): payload is string {
  return status < 500 && status !== 422 && typeof payload === 'string';
}

export const idempotencyPlugin = fp<{ windowMs: number }>(
  async (app: FastifyInstance, options) => {
    const { pool } = app.deps;
    app.decorateRequest('idempotencyClaim', null);

    // A key the route reads but this plugin does not handle (or the other way round) would be a
    // second, silent implementation: refuse to build such an app.
    app.addHook('onRoute', (route) => {
      if (idempotencyOf(route) !== undefined && !declaresKeyHeader(route)) {
        throw new Error(`${String(route.method)} ${route.url}: config.idempotency needs the ${idempotencyKeyHeaderName} header in its schema`);
      }
      if (idempotencyOf(route) === undefined && declaresKeyHeader(route)) {
        throw new Error(`${String(route.method)} ${route.url}: the ${idempotencyKeyHeaderName} header needs config.idempotency`);
      }
    });

    app.addHook('preHandler', async (request: FastifyRequest, reply: FastifyReply) => {
      const declared = idempotencyOf(request.routeOptions);
      const key = request.headers[idempotencyKeyHeaderName];
      if (declared === undefined || typeof key !== 'string') return;
      const requestHash = idempotencyRequestHash(request.body);
      const claim = await claimIdempotencyKey(pool, { scope: declared.scope, key, requestHash, windowMs: options.windowMs });
      switch (claim.kind) {
        case 'replay':
          return reply.header(replayedHeaderName, 'true').code(claim.status).send(claim.body);
        case 'in_progress':
          throw new DomainError('IDEMPOTENCY_REQUEST_IN_PROGRESS', 'a request with this Idempotency-Key is still being processed');
        case 'mismatch':
          throw new DomainError('IDEMPOTENCY_KEY_REUSED', 'this Idempotency-Key was used with another request body', {
            location: 'header',
            field: idempotencyKeyHeaderName,
          });
        case 'claimed':
          request.idempotencyClaim = { scope: declared.scope, key, requestHash, state: 'open' };
          return undefined;
      }
    });

    app.addHook('onSend', async (request: FastifyRequest, reply: FastifyReply, payload: unknown) => {
      const claim = request.idempotencyClaim;
      if (claim === null || claim.state !== 'open') return payload;
      claim.state = 'closing';
      const status = reply.statusCode;
      if (!storable(status, payload)) {
        await releaseIdempotencyKey(pool, claim).catch((error: unknown) => request.log.warn({ err: error }, 'idempotency key not released'));
        claim.state = 'closed';
        return payload;
      }
      try {
        await completeIdempotencyKey(pool, { scope: claim.scope, key: claim.key, status, body: JSON.parse(payload) });
      } catch (error) {
        // The answer cannot be kept: the client gets a 500 and its retry runs again.
        await releaseIdempotencyKey(pool, claim).catch(() => {});
        throw error;
      } finally {
        claim.state = 'closed';
      }
      return payload;
    });

    // A request that ended without its answer passing through onSend (a hijacked or destroyed
    // reply) must not hold its key for the whole window.
    app.addHook('onResponse', async (request: FastifyRequest) => {
      const claim = request.idempotencyClaim;
      if (claim === null || claim.state !== 'open') return;
      claim.state = 'closed';
      await releaseIdempotencyKey(pool, claim).catch((error: unknown) => request.log.warn({ err: error }, 'idempotency key not released'));
    });
  },
  { name: 'idempotency', dependencies: ['deps'] },
);
