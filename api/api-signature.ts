import { timingSafeEqual } from 'node:crypto';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { getCredentialForCheck, claimNonce } from '../db/b2b.ts';
import type { B2bPlanId } from '../src/b2b/plans.ts';
import {
  keyIdPattern,
  noncePattern,
  requestMac,
  signatureHeaders,
  signaturePattern,
  timestampPattern,
} from '../src/b2b/request-signing.ts';
import { hexToBytes } from '../src/protocol/bytes.ts';
import { DomainError, type ErrorCode } from '../src/errors.ts';

/**
 * The check of a signed request (docs/b2b.md, "Signing a request"), a `preValidation` hook: it
 * runs once the body is parsed (its raw text is what the signature covers) and before the
 * route's schema or handler. In order:
 *
 * 1. the four headers, each once and well formed: else 401 `API_SIGNATURE_MISSING`;
 * 2. the key id names a credential: else 401 `API_KEY_UNKNOWN`;
 * 3. the timestamp within `API_SIGNATURE_WINDOW_SECONDS` of now: else 401 `API_TIMESTAMP_STALE`;
 * 4. the signature, compared in constant time: else 401 `API_SIGNATURE_INVALID`;
 * 5. the credential neither revoked nor expired: else 401 `API_KEY_REVOKED`, `API_KEY_EXPIRED`
 *    (only a caller that signs correctly learns the state of the key);
 * 6. the nonce never seen with this key (claimed in PostgreSQL, race-free): else 401 `API_NONCE_REPLAYED`;
 * 7. the customer ACTIVE: else 403 `B2B_CUSTOMER_NOT_ACTIVE`;
 * 8. the route's scope held: else 403 `API_SCOPE_MISSING`.
 */

export interface ApiCaller {
  keyId: string;
  customerId: string;
  planId: B2bPlanId;
  pixKey: string;
  scopes: readonly string[];
}

declare module 'fastify' {
  interface FastifyRequest {
    /** The verified API credential of a signed request; null elsewhere. */
    apiCaller: ApiCaller | null;
  }
}

/** The codes a signed route can be refused with before its handler runs, for its documentation. */
export const signatureErrorCodes = [
  'API_SIGNATURE_MISSING',
  'API_KEY_UNKNOWN',
  'API_TIMESTAMP_STALE',
  'API_SIGNATURE_INVALID',
  'API_KEY_REVOKED',
  'API_KEY_EXPIRED',
  'API_NONCE_REPLAYED',
  'B2B_CUSTOMER_NOT_ACTIVE',
  'API_SCOPE_MISSING',
] as const satisfies readonly ErrorCode[];

const signatureGuards = new WeakSet<object>();
/** Whether a route hook is a signature check made by `requireSignedRequest`. */
export function isSignatureGuard(hook: unknown): boolean {
  return typeof hook === 'function' && signatureGuards.has(hook);
}

function headerOf(request: FastifyRequest, name: string, pattern: RegExp): string {
  const value = request.headers[name];
  if (typeof value !== 'string' || !pattern.test(value)) {
    throw new DomainError('API_SIGNATURE_MISSING', `a signed request needs the header ${name}, once and well formed (docs/b2b.md)`, { header: name });
  }
  return value;
}

export function decorateApiCaller(app: FastifyInstance): void {
  if (!app.hasRequestDecorator('apiCaller')) app.decorateRequest('apiCaller', null);
}

/** The hook that admits a signed request holding `scope` (null: any credential of an ACTIVE customer). */
export function requireSignedRequest(app: FastifyInstance, scope: string | null): (request: FastifyRequest) => Promise<void> {
  const { pool, config } = app.deps;
  const windowS = config.API_SIGNATURE_WINDOW_SECONDS;
  const guard = async (request: FastifyRequest): Promise<void> => {
    const keyId = headerOf(request, signatureHeaders.keyId, keyIdPattern);
    const timestampText = headerOf(request, signatureHeaders.timestamp, timestampPattern);
    const nonce = headerOf(request, signatureHeaders.nonce, noncePattern);
    const signature = headerOf(request, signatureHeaders.signature, signaturePattern);
    const credential = await getCredentialForCheck(pool, keyId);
    if (credential === null) throw new DomainError('API_KEY_UNKNOWN', 'no API credential has this key id');
    const timestamp = Number(timestampText);
    const nowS = Math.floor(Date.now() / 1000);
    if (Math.abs(nowS - timestamp) > windowS) {
      throw new DomainError('API_TIMESTAMP_STALE', `the request must be signed within ${windowS} s of the server's clock`, { server_time: nowS });
    }
    const expected = requestMac(credential.signing_key, {
      method: request.method,
      pathWithQuery: request.url,
      timestamp,
      nonce,
      body: request.rawBody ?? '',
    });
    const presented = hexToBytes(signature.slice(3), 32);
    if (!timingSafeEqual(expected, presented)) throw new DomainError('API_SIGNATURE_INVALID', 'the signature does not match the request under this credential');
    if (credential.revoked_at !== null) throw new DomainError('API_KEY_REVOKED', 'this API credential was revoked');
    if (credential.expires_at !== null && credential.expires_at <= credential.now) {
      throw new DomainError('API_KEY_EXPIRED', 'this API credential has expired', { expired_at: credential.expires_at.toISOString() });
    }
    // Kept past any timestamp that could still be fresh: a replay is refused as long as it could be accepted.
    if (!(await claimNonce(pool, keyId, nonce, 2 * windowS + 1))) {
      throw new DomainError('API_NONCE_REPLAYED', 'this nonce was used before with this credential: sign again with a new one');
    }
    if (credential.customer_status !== 'ACTIVE') {
      throw new DomainError('B2B_CUSTOMER_NOT_ACTIVE', `the customer is ${credential.customer_status}`, { status: credential.customer_status });
    }
    if (scope !== null && !credential.scopes.includes(scope)) {
      throw new DomainError('API_SCOPE_MISSING', `this operation needs the scope ${scope}`, { scope });
    }
    request.apiCaller = {
      keyId,
      customerId: credential.customer_id,
      planId: credential.plan_id,
      pixKey: credential.pix_key,
      scopes: credential.scopes,
    };
  };
  signatureGuards.add(guard);
  return guard;
}

/** The rate-limit key of a signed route: the verified credential (counted after the signature check). */
export function credentialRateLimitKey(request: FastifyRequest): string {
  return `key|${request.apiCaller?.keyId ?? request.ip}`;
}

/** A signed route's rate limit: per credential, counted in PostgreSQL once the request is verified. */
export function credentialRateLimit(groupId: string, max: number) {
  return {
    rateLimit: {
      max,
      timeWindow: 60_000,
      groupId,
      keyGenerator: credentialRateLimitKey,
      hook: 'preHandler' as const,
    },
  };
}
