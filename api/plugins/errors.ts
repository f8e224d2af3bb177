import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { hasZodFastifySchemaValidationErrors, isResponseSerializationError } from 'fastify-type-provider-zod';
import { databaseOutageOf } from '../../db/pool.ts';
import { DomainError, type ErrorCode } from '../../src/errors.ts';
import { temporalOutageOf } from '../../services/temporal.ts';
import type { ErrorResponse, HttpValidationError } from '../schemas/common.ts';
import { frameworkStatusByCode, type FrameworkErrorCode } from '../schemas/framework-errors.ts';

/**
 * The single error handler. Every domain code maps to exactly one status here; the Record type
 * makes the mapping exhaustive at compile time. Validation problems answer 422 in the spec's
 * HTTPValidationError shape; anything unexpected answers 500 with the request id and nothing
 * else, and is logged in full.
 */
export const statusByCode: Record<ErrorCode, number> = {
  NOT_FOUND: 404,
  CONFLICT: 409,
  RATE_LIMITED: 429,
  SERVICE_UNAVAILABLE: 503,
  INVALID_HEADER: 422,
  DEPENDENCY_TIMEOUT: 503,
  DEPENDENCY_UNAVAILABLE: 503,
  UNAUTHENTICATED: 401,
  FORBIDDEN: 403,
  INVALID_CREDENTIALS: 401,
  LOGIN_THROTTLED: 429,
  ADMIN_USER_NOT_FOUND: 404,
  ADMIN_USER_EXISTS: 409,
  LAST_SUPER_ADMIN: 409,
  FEATURE_NOT_ENABLED: 403,
  INVALID_AMOUNT: 422,
  UNSUPPORTED_CURRENCY: 422,
  INSUFFICIENT_FUNDS: 409,
  ACCOUNT_FROZEN: 409,
  ACCOUNT_NOT_FOUND: 404,
  LEDGER_UNBALANCED: 500,
  LEDGER_INVALID_POSTING: 500,
  IDEMPOTENCY_KEY_REUSED: 422,
  IDEMPOTENCY_REQUEST_IN_PROGRESS: 409,
  PLC_NOT_FOUND: 404,
  PLC_INVALID: 422,
  PLC_ALREADY_EXISTS: 409,
  PLC_AMOUNT_ABOVE_MAXIMUM: 422,
  PLC_DAILY_LIMIT_EXCEEDED: 409,
  PLC_NOT_FRESH: 422,
  PLC_EXPIRED: 409,
  PLC_NOT_CANCELLABLE: 409,
  PLC_CANCELLED_AFTER_TRANSFER: 409,
  PLC_NOT_TRANSFERABLE: 409,
  PLC_MISMATCH: 409,
  DOUBLE_SPEND_DETECTED: 409,
  SIGNATURE_INVALID: 422,
  AUTHORIZATION_STALE: 422,
  AUTHORIZATION_REPLAYED: 409,
  RISK_FLAG_NOT_FOUND: 404,
  KEY_BLOCKED: 409,
  KEY_NOT_BLOCKED: 404,
  PLC_ALREADY_REDEEMED: 409,
  PLC_NOT_REDEEMABLE: 409,
  NOT_CURRENT_BEARER: 409,
  UNSUPPORTED_RAIL: 422,
  BOLETO_INVALID: 422,
  BOLETO_AMOUNT_MISMATCH: 422,
  GATEWAY_UNAVAILABLE: 503,
  GATEWAY_REFUSED: 502,
  WEBHOOK_UNAUTHORIZED: 401,
  CHARGE_NOT_FOUND: 404,
  WEBHOOK_NOT_FOUND: 404,
  WEBHOOK_COOLDOWN: 429,
  GATEWAY_ERROR: 502,
  GATEWAY_TIMEOUT: 504,
  PIN_NOT_REGISTERED: 404,
  PIN_ALREADY_REGISTERED: 409,
  PIN_INCORRECT: 403,
  // RFC 4918's Locked: the PIN exists and may be right, but no attempt is evaluated until the lock ends.
  PIN_LOCKED: 423,
  // The spec (Errors 1): no simulated success when this deployment cannot send e-mail.
  PIN_RESET_EMAIL_UNAVAILABLE: 501,
  PIN_RESET_TOKEN_INVALID: 422,
  KEY_BACKUP_NOT_FOUND: 404,
  KEY_BACKUP_SIGNATURE_REQUIRED: 409,
  KEY_BACKUP_DEVICES_EXCEEDED: 409,
  REDEMPTION_NOT_FOUND: 404,
  REDEMPTION_ALREADY_SETTLED: 409,
  REDEMPTION_FAILED_FINAL: 409,
  REDEMPTION_NOT_STALLED: 409,
  RETRY_NOT_SUPPORTED: 409,
  TAX_ID_INVALID: 422,
  B2B_CUSTOMER_NOT_FOUND: 404,
  B2B_CUSTOMER_EXISTS: 409,
  B2B_TRANSITION_INVALID: 409,
  B2B_CUSTOMER_NOT_ACTIVE: 403,
  API_KEY_NOT_FOUND: 404,
  API_KEY_ALREADY_ROTATED: 409,
  API_SCOPE_NOT_IN_PLAN: 422,
  API_SIGNATURE_MISSING: 401,
  API_KEY_UNKNOWN: 401,
  API_KEY_REVOKED: 401,
  API_KEY_EXPIRED: 401,
  API_TIMESTAMP_STALE: 401,
  API_SIGNATURE_INVALID: 401,
  API_NONCE_REPLAYED: 401,
  API_SCOPE_MISSING: 403,
  POS_BATCH_TOO_LARGE: 422,
  POS_BATCH_CONFLICT: 409,
  POS_BATCH_IN_PROGRESS: 409,
  POS_DESTINATION_MISMATCH: 422,
  REPUTATION_NOT_FOUND: 404,
  DEVICE_NOT_FOUND: 404,
  LIMIT_REQUEST_NOT_FOUND: 404,
  LIMIT_REQUEST_ALREADY_OPEN: 409,
  LIMIT_REQUEST_NOT_PENDING: 409,
  LIMIT_INCREASE_NOT_NEEDED: 422,
  LIMIT_ABOVE_CEILING: 422,
  FEE_SCHEDULE_VERSION_UNKNOWN: 404,
  FEE_SCHEDULE_SUPERSEDED: 409,
  FEE_CONSENT_REQUIRED: 409,
  FEE_EXCEEDS_AMOUNT: 409,
};

type Location = 'body' | 'query' | 'path' | 'header';

function locationOf(context: string | undefined): Location {
  switch (context) {
    case 'querystring':
      return 'query';
    case 'params':
      return 'path';
    case 'headers':
      return 'header';
    default:
      return 'body';
  }
}

interface ZodLikeIssue {
  instancePath?: string;
  message?: string;
  keyword?: string;
  params?: { issue?: { path?: (string | number)[]; code?: string; message?: string } };
}

export function validationBody(context: string | undefined, issues: readonly ZodLikeIssue[]): HttpValidationError {
  const where = locationOf(context);
  return {
    detail: issues.map((issue) => {
      const zodIssue = issue.params?.issue;
      const path =
        zodIssue?.path ??
        (issue.instancePath ?? '')
          .split('/')
          .filter((segment) => segment !== '')
          .map((segment) => (/^\d+$/.test(segment) ? Number(segment) : segment));
      return {
        loc: [where, ...path.map((p) => (typeof p === 'number' ? p : String(p)))],
        msg: zodIssue?.message ?? issue.message ?? 'invalid value',
        type: zodIssue?.code ?? issue.keyword ?? 'invalid',
      };
    }),
  };
}

/**
 * A failure that says a dependency did not answer in time or could not be reached, as the
 * domain error it is answered with (503, Retry-After); null for any other failure.
 */
export function dependencyFailure(error: unknown, retryAfterS: number): DomainError | null {
  const database = databaseOutageOf(error);
  const temporal = database === null ? temporalOutageOf(error) : null;
  const outage = database ?? temporal;
  if (outage === null) return null;
  const dependency = database !== null ? 'postgres' : 'temporal';
  const name = dependency === 'postgres' ? 'PostgreSQL' : 'Temporal';
  return outage === 'timeout'
    ? new DomainError('DEPENDENCY_TIMEOUT', `${name} did not answer in time; retry after ${retryAfterS} s`, { dependency, retry_after_s: retryAfterS })
    : new DomainError('DEPENDENCY_UNAVAILABLE', `${name} cannot be reached; retry after ${retryAfterS} s`, { dependency, retry_after_s: retryAfterS });
}

function sendError(reply: FastifyReply, status: number, body: ErrorResponse): FastifyReply {
  return reply.code(status).type('application/json').send(body);
}

/**
 * Fastify's `clientErrorHandler`: what the HTTP server refuses on the connection, before there is
 * a request (Fastify's default writes another body shape). Answered as ErrorResponse too; the
 * connection is closed after it.
 */
export function answerClientError(error: Error & { code?: string }, socket: Socket): void {
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  const code: FrameworkErrorCode =
    error.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 'REQUEST_TIMEOUT' : error.code === 'HPE_HEADER_OVERFLOW' ? 'HEADERS_TOO_LARGE' : 'MALFORMED_REQUEST';
  const status = frameworkStatusByCode[code];
  const messages = {
    MALFORMED_REQUEST: 'the request is not valid HTTP',
    REQUEST_TIMEOUT: 'the request did not arrive in time',
    HEADERS_TOO_LARGE: 'the request line and headers are too large',
  } as const;
  const body = JSON.stringify({ code, message: messages[code as keyof typeof messages] } satisfies ErrorResponse);
  if (socket.writable) {
    socket.write(`HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ''}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
  }
  socket.destroy(error);
}

/**
 * Fastify's `frameworkErrors`: what the router refuses before any route is chosen (a path
 * parameter it cannot decode or that is too long), answered as ErrorResponse like everything else.
 */
export function answerFrameworkError(error: FastifyError, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  switch (error.code) {
    case 'FST_ERR_BAD_URL':
      return sendError(reply, frameworkStatusByCode.MALFORMED_URL, {
        code: 'MALFORMED_URL',
        message: 'a path parameter is not valid percent-encoded UTF-8',
      });
    case 'FST_ERR_MAX_PARAM_LENGTH':
      return sendError(reply, frameworkStatusByCode.URI_TOO_LONG, { code: 'URI_TOO_LONG', message: 'a path parameter is too long' });
    default:
      request.log.error({ err: error }, 'router error');
      return sendError(reply, frameworkStatusByCode.INTERNAL, { code: 'INTERNAL', message: 'internal error', request_id: request.id });
  }
}

export const errorsPlugin = fp(
  async (app: FastifyInstance) => {
    app.setErrorHandler((thrown: FastifyError, request: FastifyRequest, reply: FastifyReply) => {
      const outage = thrown instanceof DomainError ? null : dependencyFailure(thrown, app.deps.config.DEPENDENCY_RETRY_AFTER_SECONDS);
      if (outage !== null) {
        // One line per request, without a stack: during an outage every request says the same.
        request.log.warn({ dependency: outage.details?.dependency, code: outage.code, cause: thrown.message }, 'dependency outage answered 503');
      }
      const error = outage ?? thrown;
      if (error instanceof DomainError) {
        const status = statusByCode[error.code];
        if (status >= 500 && outage === null) request.log.error({ err: error }, 'domain error answered as 5xx');
        if (status === 422) {
          // Input the schema could not judge alone (decimals of a currency, a reused idempotency
          // key): the same HTTPValidationError shape as every other 422, the code as its type, the
          // field as path segments like a schema's (`authorization.signature` -> [..., "authorization", "signature"]).
          const field = typeof error.details?.field === 'string' ? error.details.field.split('.').filter((segment) => segment !== '') : [];
          const where = typeof error.details?.location === 'string' ? error.details.location : 'body';
          // A protocol rejection carries its stable reason code (docs/protocol.md) as the type.
          const type = typeof error.details?.reason === 'string' ? `${error.code}.${error.details.reason}` : error.code;
          // The other details (a limit, a maximum) ride along as the item's `ctx`.
          const { field: _field, location: _location, reason: _reason, ...context } = error.details ?? {};
          const ctx = Object.keys(context).length === 0 ? {} : { ctx: context };
          return reply.code(422).send({ detail: [{ loc: [where, ...field], msg: error.message, type, ...ctx }] });
        }
        if ((status === 429 || status === 503 || error.code === 'PIN_LOCKED') && typeof error.details?.retry_after_s === 'number') {
          void reply.header('retry-after', String(error.details.retry_after_s));
        }
        return sendError(reply, status, {
          code: error.code,
          message: error.message,
          ...(error.details === undefined ? {} : { details: error.details }),
          ...(status >= 500 ? { request_id: request.id } : {}),
        });
      }
      if (hasZodFastifySchemaValidationErrors(error)) {
        return reply.code(422).send(validationBody(error.validationContext, error.validation as ZodLikeIssue[]));
      }
      if (isResponseSerializationError(error)) {
        request.log.error({ err: error, issues: error.cause.issues }, 'response failed its schema');
        return sendError(reply, 500, { code: 'INTERNAL', message: 'internal error', request_id: request.id });
      }
      switch (error.code) {
        case 'FST_ERR_CTP_INVALID_JSON_BODY':
        case 'FST_ERR_CTP_EMPTY_JSON_BODY':
        case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
          return reply.code(422).send({ detail: [{ loc: ['body'], msg: error.message, type: 'json_invalid' }] });
        case 'FST_ERR_CTP_BODY_TOO_LARGE':
          return sendError(reply, 413, { code: 'PAYLOAD_TOO_LARGE', message: 'request body too large' });
        case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
          return sendError(reply, 415, { code: 'UNSUPPORTED_MEDIA_TYPE', message: 'only application/json is accepted' });
        case 'FST_ERR_HANDLER_TIMEOUT':
          // The request outlived HTTP_HANDLER_TIMEOUT_MS (docs/security.md, "Slow requests"): the
          // client is answered; what the request started goes on (each write is its own transaction).
          void reply.header('retry-after', '1');
          return sendError(reply, 503, {
            code: 'SERVICE_UNAVAILABLE',
            message: 'the request took longer than the server allows; retry it (with the same Idempotency-Key where it has one)',
            details: { retry_after_s: 1 },
            request_id: request.id,
          });
        default:
          break;
      }
      if (error.statusCode === 429) {
        return sendError(reply, 429, { code: 'RATE_LIMITED', message: 'too many requests' });
      }
      if (error.validation !== undefined) {
        return reply.code(422).send(validationBody(error.validationContext, error.validation as ZodLikeIssue[]));
      }
      if (typeof error.statusCode === 'number' && error.statusCode >= 400 && error.statusCode < 500) {
        // Framework-level client errors (bad headers and the like): no internals, but honest.
        return reply.code(422).send({ detail: [{ loc: ['request'], msg: error.message, type: 'invalid_request' }] });
      }
      request.log.error({ err: error }, 'unhandled error');
      return sendError(reply, 500, { code: 'INTERNAL', message: 'internal error', request_id: request.id });
    });

    // While the app closes, a request still arriving on an open connection is refused with the
    // same body as every other 503 (Fastify's own closing answer has another shape), so the
    // client retries elsewhere; the requests already running finish.
    let closing = false;
    app.addHook('preClose', async () => {
      closing = true;
    });
    app.addHook('onRequest', async (_request, reply) => {
      if (!closing) return;
      void reply.header('connection', 'close');
      throw new DomainError('SERVICE_UNAVAILABLE', 'the server is shutting down; retry the request', { retry_after_s: 1 });
    });

    app.setNotFoundHandler((request, reply) =>
      sendError(reply, 404, { code: 'NOT_FOUND', message: `no route ${request.method} ${request.url.split('?')[0] ?? ''}` }),
    );
  },
  { name: 'errors' },
);
