import type { FastifyInstance, FastifyReply, FastifyRequest, onRequestHookHandler, preHandlerHookHandler, RouteOptions } from 'fastify';
import fp from 'fastify-plugin';
import { DomainError } from '../../src/errors.ts';

/**
 * The dimensions of a device route's rate limit beyond its own key (issue 34, docs/security.md
 * "Rate limits"). `X-Device-ID` is chosen by the caller: keyed on it alone, rotating it lifted the
 * limit. Every device route (`deviceRateLimit`, api/device-id.ts) is therefore counted under:
 *
 * - the client address and device, in `onRequest` (@fastify/rate-limit, `max` a minute);
 * - the client address alone, here (`max` x RATE_LIMIT_ADDRESS_FACTOR a minute, 1 by default: a
 *   caller rotating X-Device-ID gets no more than one device would; behind a NAT the operator
 *   raises the factor, and each device still gets `max`);
 * - the signing key, here, where the request carries one whose signature verifies (`max` a
 *   minute, from any number of addresses): counted only once it verifies, so nobody can spend
 *   someone else's budget by naming their key.
 *
 * A request over any of them is refused with 429 `RATE_LIMITED` and `Retry-After`, in the same
 * PostgreSQL store as the rest (every replica counts against the same windows).
 */
export interface SubjectRateLimit {
  groupId: string;
  max: number;
  /** The request's verified signing key, when it carries one (a public key's hex); undefined otherwise. */
  signer?: (request: FastifyRequest) => string | undefined;
}

const windowMs = 60_000;

/** A route's hooks of one kind, with `hook` last. */
function withHook<H>(existing: H | readonly H[] | undefined, hook: H): H[] {
  if (existing === undefined) return [hook];
  return Array.isArray(existing) ? [...(existing as readonly H[]), hook] : [existing as H, hook];
}

function subjectOf(route: RouteOptions): SubjectRateLimit | undefined {
  return (route.config as { subjectRateLimit?: SubjectRateLimit } | undefined)?.subjectRateLimit;
}

export const subjectRateLimitPlugin = fp<{ addressFactor: number }>(
  async (app: FastifyInstance, options) => {
    app.addHook('onRoute', (route) => {
      const subject = subjectOf(route);
      if (subject === undefined) return;
      const byAddress = app.createRateLimit({ max: subject.max * options.addressFactor, timeWindow: windowMs, keyGenerator: (request) => `addr:${request.ip}` });
      const signers = new WeakMap<FastifyRequest, string | undefined>();
      const signerOf = (request: FastifyRequest) => {
        if (!signers.has(request)) signers.set(request, subject.signer?.(request));
        return signers.get(request);
      };
      const byKey = app.createRateLimit({ max: subject.max, timeWindow: windowMs, keyGenerator: (request) => `key:${signerOf(request) ?? ''}` });
      const refuse = (reply: FastifyReply, result: Awaited<ReturnType<typeof byAddress>>) => {
        if (result.isAllowed || !result.isExceeded) return;
        void reply.header('x-ratelimit-limit', result.max).header('x-ratelimit-remaining', 0).header('retry-after', result.ttlInSeconds);
        throw new DomainError('RATE_LIMITED', `rate limit of ${result.max} requests exceeded; retry in ${result.ttlInSeconds} s`, {
          retry_after_s: result.ttlInSeconds,
          dimension: result.key.startsWith('key:') ? 'signing_key' : 'address',
        });
      };
      // The address in onRequest, with the device's own limit (so a request refused by its schema
      // counts too); the key once the body is parsed and its signature can be checked.
      const checkAddress = async (request: FastifyRequest, reply: FastifyReply) => refuse(reply, await byAddress(request));
      const checkKey = async (request: FastifyRequest, reply: FastifyReply) => {
        if (signerOf(request) !== undefined) refuse(reply, await byKey(request));
      };
      route.onRequest = withHook<onRequestHookHandler>(route.onRequest, checkAddress);
      if (subject.signer !== undefined) route.preHandler = withHook<preHandlerHookHandler>(route.preHandler, checkKey);
    });
  },
  { name: 'subject-rate-limit', dependencies: ['@fastify/rate-limit'] },
);
