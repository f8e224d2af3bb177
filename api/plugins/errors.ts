import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { hasZodFastifySchemaValidationErrors, isResponseSerializationError } from 'fastify-type-provider-zod';
import { DomainError, type ErrorCode } from '../../src/errors.ts';
import type { ErrorResponse, HttpValidationError } from '../schemas/common.ts';

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
  UNAUTHENTICATED: 401,
  FORBIDDEN: 403,
  INVALID_CREDENTIALS: 401,
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
  PLC_NOT_TRANSFERABLE: 409,
  PLC_MISMATCH: 409,
  DOUBLE_SPEND_DETECTED: 409,
  SIGNATURE_INVALID: 422,
  AUTHORIZATION_STALE: 422,
  RISK_FLAG_NOT_FOUND: 404,
  PLC_ALREADY_REDEEMED: 409,
  PLC_NOT_REDEEMABLE: 409,
  NOT_CURRENT_BEARER: 409,
  UNSUPPORTED_RAIL: 422,
  GATEWAY_UNAVAILABLE: 503,
  GATEWAY_REFUSED: 502,
  WEBHOOK_UNAUTHORIZED: 401,
  CHARGE_NOT_FOUND: 404,
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

function sendError(reply: FastifyReply, status: number, body: ErrorResponse): FastifyReply {
  return reply.code(status).type('application/json').send(body);
}

export const errorsPlugin = fp(
  async (app: FastifyInstance) => {
    app.setErrorHandler((error: FastifyError, request: FastifyRequest, reply: FastifyReply) => {
      if (error instanceof DomainError) {
        const status = statusByCode[error.code];
        if (status >= 500) request.log.error({ err: error }, 'domain error answered as 5xx');
        if (status === 422) {
          // Input the schema could not judge alone (decimals of a currency, a reused idempotency
          // key): the same HTTPValidationError shape as every other 422, the code as its type.
          const field = typeof error.details?.field === 'string' ? [error.details.field] : [];
          const where = typeof error.details?.location === 'string' ? error.details.location : 'body';
          // A protocol rejection carries its stable reason code (docs/protocol.md) as the type.
          const type = typeof error.details?.reason === 'string' ? `${error.code}.${error.details.reason}` : error.code;
          return reply.code(422).send({ detail: [{ loc: [where, ...field], msg: error.message, type }] });
        }
        if (error.code === 'RATE_LIMITED' && typeof error.details?.retry_after_s === 'number') {
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

    app.setNotFoundHandler((request, reply) =>
      sendError(reply, 404, { code: 'NOT_FOUND', message: `no route ${request.method} ${request.url.split('?')[0] ?? ''}` }),
    );
  },
  { name: 'errors' },
);
