import type { FastifyInstance, RouteOptions } from 'fastify';
import fp from 'fastify-plugin';
import type { ZodType } from 'zod';
import { frameworkStatusByCode } from '../schemas/framework-errors.ts';
import { statusByCode } from './errors.ts';
import { adminGuardErrorCodes, isAdminGuard } from './auth.ts';
import { idempotencyErrorCodes, idempotencyOf, replayedHeaderName } from './idempotency.ts';
import { deviceRateLimitKey } from '../device-id.ts';
import { credentialRateLimitKey, isSignatureGuard, signatureErrorCodes } from '../api-signature.ts';
import { errorResponse, httpValidationError } from '../schemas/common.ts';

/**
 * Every status a route can answer, in its response schema and so in /openapi.json, generated
 * from the places that produce them rather than written route by route:
 *
 * - the framework and the error handler (api/plugins/errors.ts): 500 on every route; 503 while
 *   the app shuts down; 422 on every route (a header PostgreSQL cannot store, api/plugins/
 *   storable-text.ts, and the schemas); 413, 415 on a method that carries a body; 400 and 414 on a
 *   route with path parameters;
 * - the admin guard (api/plugins/auth.ts): 401 and 403, and the bearer security requirement;
 * - the rate limit (a route's `config.rateLimit`): 429 with Retry-After;
 * - the Idempotency-Key (api/plugins/idempotency.ts): 409 while the first request runs, 422 for
 *   a key reused with another body, and `X-Idempotency-Replayed` on a replayed answer.
 *
 * What a route refuses on its own (404, 409, 502, 503 from a domain code) it declares in its
 * schema; this plugin describes those entries by status, and each success from its schema's own
 * description or the operation's summary (`successNote`). The response schema is what Fastify
 * serializes with, so an answer that does not fit the documented body fails loudly. Test apps
 * check that every status a test sees is documented (test/support/app.ts).
 */

export interface ResponseNote {
  description: string;
  headers?: Record<string, { type: 'string' | 'integer'; description: string }>;
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Written by this plugin, read by the OpenAPI transform (api/plugins/openapi.ts). */
    documentedResponses?: Record<string, ResponseNote>;
  }
}

export interface DocumentedResponsesOptions {
  bodyLimitBytes: number;
  maxParamLength: number;
}

const bodyMethods = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

const retryAfterHeader = { 'retry-after': { type: 'integer', description: 'Seconds to wait before trying again.' } } as const;

/** What a domain status means, for the statuses a route declares itself (the operation's description names its own codes). */
const domainNotes: Record<number, ResponseNote> = {
  401: { description: 'Not authenticated: `code` names why (a missing or wrong token or credential; docs/errors.md).' },
  403: { description: 'Refused: `code` names why (docs/errors.md).' },
  404: { description: 'Not found: `code` names what is missing (docs/errors.md).' },
  409: { description: 'Refused in the current state (a conflict): `code` names the refusal (docs/errors.md).' },
  423: {
    description: 'Locked: `PIN_LOCKED`, every attempt is refused until `details.locked_until`; `Retry-After` says in how many seconds (or reset the PIN by e-mail).',
    headers: retryAfterHeader,
  },
  429: {
    description: 'Too many attempts: `code` says which limit (`RATE_LIMITED`, `LOGIN_THROTTLED`, `WEBHOOK_COOLDOWN`); `Retry-After` says when to try again.',
    headers: retryAfterHeader,
  },
  501: { description: 'Not available in this deployment: `PIN_RESET_EMAIL_UNAVAILABLE`, no SMTP server is configured; nothing was done.' },
  502: {
    description:
      'The payment gateway refused the operation (`GATEWAY_REFUSED`; `details` carry its reason) or failed (`GATEWAY_ERROR`: a 5xx, no connection, an answer that cannot be read).',
  },
  503: { description: 'Unavailable for now: `GATEWAY_UNAVAILABLE` where the operation calls the payment gateway; retry later, with the same Idempotency-Key where there is one.' },
  504: {
    description: 'The payment gateway did not answer in time (`GATEWAY_TIMEOUT`): the operation may or may not have happened there; read its state before trying again.',
  },
};

/**
 * What a success answers, for a status no note describes: the response schema's own description
 * when it has one, else what the operation does (its summary) behind the status's meaning, so
 * that no response reads "Default Response" in the interactive docs.
 */
function successNote(route: RouteOptions, status: number, schema: unknown): string {
  const own = (schema as { description?: unknown } | undefined)?.description;
  const summary = typeof route.schema?.summary === 'string' ? route.schema.summary : '';
  const what = typeof own === 'string' && own.length > 0 ? own : summary.length > 0 ? summary : 'the operation';
  const methods = [route.method].flat().map((method) => String(method).toUpperCase());
  switch (status) {
    case 201:
      return `Created: ${what}.`;
    case 202:
      return `Accepted and still running (it goes on in its workflow; the body says where to follow it): ${what}.`;
    case 204:
      return `Done, nothing to answer: ${what}.`;
    default:
      return methods.every((method) => method === 'GET' || method === 'HEAD') ? `OK: ${what}.` : `Done: ${what}.`;
  }
}

/** Bodies the plugins send, to check that a route's own schema for the same status accepts them. */
const sampleBodies = {
  error: { code: 'SERVICE_UNAVAILABLE', message: 'sample' },
  validation: { detail: [{ loc: ['body'], msg: 'sample', type: 'sample' }] },
};

interface Collected {
  lines: string[];
  schema: ZodType;
  headers?: ResponseNote['headers'];
}

function statusesOfCodes(codes: readonly (keyof typeof statusByCode)[]): number[] {
  return [...new Set(codes.map((code) => statusByCode[code]))];
}

function hooksOf(route: RouteOptions, name: 'onRequest' | 'preValidation' | 'preHandler'): unknown[] {
  const hooks = route[name];
  return hooks === undefined ? [] : Array.isArray(hooks) ? hooks : [hooks];
}

/**
 * An admin route: the guard among its own hooks, or the bearer requirement in its schema (a route
 * group may install the guard for all its routes as a plugin hook, which onRoute cannot see; the
 * OpenAPI test checks both ways that what declares bearer answers 401 without a token).
 */
function isAdminRoute(route: RouteOptions): boolean {
  const security = route.schema?.security as readonly Record<string, unknown>[] | undefined;
  return hooksOf(route, 'onRequest').some(isAdminGuard) || (security?.some((requirement) => 'bearer' in requirement) ?? false);
}

interface RateLimitConfig {
  max?: unknown;
  timeWindow?: unknown;
  keyGenerator?: unknown;
}

function rateLimitOf(route: RouteOptions): RateLimitConfig | undefined {
  const limit = (route.config as { rateLimit?: unknown } | undefined)?.rateLimit;
  return typeof limit === 'object' && limit !== null ? (limit as RateLimitConfig) : undefined;
}

/** What each refusal of the signature check means (docs/b2b.md, "Refusals"). */
const signatureNotes: Record<(typeof signatureErrorCodes)[number], string> = {
  API_SIGNATURE_MISSING: 'a signature header (`X-PLC-Key-Id`, `X-PLC-Timestamp`, `X-PLC-Nonce`, `X-PLC-Signature`) missing, repeated or malformed (`details.header`).',
  API_KEY_UNKNOWN: 'no credential has this key id.',
  API_TIMESTAMP_STALE: 'the timestamp is outside the freshness window.',
  API_SIGNATURE_INVALID: 'the signature does not match the request under the credential.',
  API_KEY_REVOKED: 'the credential was revoked.',
  API_KEY_EXPIRED: 'the credential has expired (a rotated one after its grace period).',
  API_NONCE_REPLAYED: 'the nonce was used before with this credential (a replay).',
  B2B_CUSTOMER_NOT_ACTIVE: 'the customer is pending review, suspended or blocked.',
  API_SCOPE_MISSING: 'the credential does not hold the scope this operation needs (`details.scope`).',
};

/** The notes and schemas for one route, keyed by status. */
function collectResponses(route: RouteOptions, options: DocumentedResponsesOptions): Map<number, Collected> {
  const collected = new Map<number, Collected>();
  const add = (status: number, line: string, headers?: ResponseNote['headers']) => {
    const entry = collected.get(status) ?? { lines: [], schema: status === 422 ? httpValidationError : errorResponse };
    if (!entry.lines.includes(line)) entry.lines.push(line);
    if (headers !== undefined) entry.headers = { ...entry.headers, ...headers };
    collected.set(status, entry);
  };
  const methods = [route.method].flat().map((method) => String(method).toUpperCase());

  add(frameworkStatusByCode.INTERNAL, '`INTERNAL`: an unexpected error; the body carries the request id (`request_id`), the log has the rest.');
  add(
    statusByCode.SERVICE_UNAVAILABLE,
    '`SERVICE_UNAVAILABLE`: the server is shutting down; `DEPENDENCY_TIMEOUT`, `DEPENDENCY_UNAVAILABLE`: PostgreSQL or Temporal (`details.dependency`) did not answer within its bound or cannot be reached. Retry after `Retry-After` seconds, on another instance if there is one.',
    { 'retry-after': { type: 'integer', description: 'Seconds to wait before retrying.' } },
  );
  add(422, 'The request failed validation (HTTPValidationError): each item names the field (`loc`) and its stable code (`type`); text PostgreSQL cannot store (a NUL, a lone surrogate) is refused as `text_contains_nul` or `text_lone_surrogate` (docs/errors.md).');
  if (methods.some((method) => bodyMethods.has(method))) {
    add(frameworkStatusByCode.PAYLOAD_TOO_LARGE, `\`PAYLOAD_TOO_LARGE\`: the body is over ${route.bodyLimit ?? options.bodyLimitBytes} bytes.`);
    add(frameworkStatusByCode.UNSUPPORTED_MEDIA_TYPE, '`UNSUPPORTED_MEDIA_TYPE`: a body that is not `application/json`.');
  }
  if (route.url.includes(':')) {
    add(frameworkStatusByCode.MALFORMED_URL, '`MALFORMED_URL`: a path parameter is not valid percent-encoded UTF-8.');
    add(frameworkStatusByCode.URI_TOO_LONG, `\`URI_TOO_LONG\`: a path parameter is longer than ${options.maxParamLength} characters.`);
  }
  if (isAdminRoute(route)) {
    for (const status of statusesOfCodes(adminGuardErrorCodes)) {
      add(
        status,
        status === 401
          ? '`UNAUTHENTICATED`: no bearer token, or one that is malformed, expired, forged, or of a user since disabled (log in again).'
          : "`FORBIDDEN`: the token's role may not use this operation.",
      );
    }
  }
  if (hooksOf(route, 'preValidation').some(isSignatureGuard)) {
    for (const code of signatureErrorCodes) {
      add(statusByCode[code], `\`${code}\`: ${signatureNotes[code]}`);
    }
  }
  const rateLimit = rateLimitOf(route);
  if (rateLimit !== undefined) {
    const max = typeof rateLimit.max === 'number' ? `${rateLimit.max} requests` : 'its limit of requests';
    const windowS = typeof rateLimit.timeWindow === 'number' ? rateLimit.timeWindow / 1000 : 60;
    // The device routes key their limit by address and device, by address alone and by the
    // verified signing key (api/device-id.ts, api/plugins/subject-rate-limit.ts); the others by address.
    const per =
      rateLimit.keyGenerator === deviceRateLimitKey
        ? 'this client address and device (`X-Device-ID`), from this client address whatever the device (times `RATE_LIMIT_ADDRESS_FACTOR`), or under the signing key the request carries once its signature verifies'
        : rateLimit.keyGenerator === credentialRateLimitKey
          ? 'this API credential (`X-PLC-Key-Id`)'
          : 'this client address';
    add(statusByCode.RATE_LIMITED, `\`RATE_LIMITED\`: more than ${max} in ${windowS} s from ${per}; retry after \`Retry-After\` seconds.`, {
      'retry-after': { type: 'integer', description: 'Seconds until the limit lets a request through again.' },
    });
  }
  if (idempotencyOf(route) !== undefined) {
    for (const code of idempotencyErrorCodes) {
      add(
        statusByCode[code],
        code === 'IDEMPOTENCY_REQUEST_IN_PROGRESS'
          ? '`IDEMPOTENCY_REQUEST_IN_PROGRESS`: the first request with this Idempotency-Key is still running; retry it shortly.'
          : '`IDEMPOTENCY_KEY_REUSED` (loc `["header", "idempotency-key"]`): this Idempotency-Key was used with another body.',
      );
    }
  }
  return collected;
}

export const documentedResponsesPlugin = fp<DocumentedResponsesOptions>(
  async (app: FastifyInstance, options) => {
    app.addHook('onRoute', (route) => {
      if (route.schema?.hide === true) return;
      const collected = collectResponses(route, options);
      // Copies, not edits: several routes may share one schema or config object.
      const declared = { ...(route.schema?.response as Record<string, unknown> | undefined) };
      const response: Record<string, unknown> = { ...declared };
      const notes: Record<string, ResponseNote> = {};
      for (const status of Object.keys(declared)) {
        const note = domainNotes[Number(status)];
        if (note !== undefined) notes[status] = note;
      }
      for (const [status, entry] of collected) {
        const key = String(status);
        const own = declared[key] as ZodType | undefined;
        // A route's own schema for a status the plugins also answer must take their body too, or
        // that answer would fail serialization and turn into a 500.
        if (own !== undefined && !own.safeParse(status === 422 ? sampleBodies.validation : sampleBodies.error).success) {
          throw new Error(`${String(route.method)} ${route.url}: its ${status} schema must also accept the ${status === 422 ? 'HTTPValidationError' : 'ErrorResponse'} body the plugins answer with`);
        }
        response[key] ??= entry.schema;
        const lines = [...(notes[key] === undefined ? [] : [notes[key].description]), ...entry.lines];
        const headers = { ...notes[key]?.headers, ...entry.headers };
        notes[key] = { description: lines.join(' '), ...(Object.keys(headers).length === 0 ? {} : { headers }) };
      }
      if (idempotencyOf(route) !== undefined) {
        const success = Object.keys(response).find((status) => status.startsWith('2')) ?? '200';
        notes[success] = {
          description: notes[success]?.description ?? 'Done; a replay of an earlier request carries `X-Idempotency-Replayed: true`.',
          headers: { [replayedHeaderName]: { type: 'string', description: '`true` when this is the stored answer to an earlier request with the same Idempotency-Key (nothing was done again).' } },
        };
      }
      for (const status of Object.keys(response)) notes[status] ??= { description: successNote(route, Number(status), response[status]) };
      const security = isAdminRoute(route) && route.schema?.security === undefined ? { security: [{ bearer: [] }] } : {};
      route.schema = { ...route.schema, ...security, response };
      route.config = { ...route.config, documentedResponses: notes };
    });
  },
  { name: 'documented-responses', dependencies: ['errors'] },
);
