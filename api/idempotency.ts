import { createHash } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { claimIdempotencyKey, completeIdempotencyKey, releaseIdempotencyKey } from '../db/idempotency.ts';
import type { Pool } from '../db/pool.ts';
import { DomainError } from '../src/errors.ts';
import { statusByCode } from './plugins/errors.ts';

/**
 * Idempotency-Key for create, transfer and redeem (the spec's Limits: a 300 s window). The first
 * request with a key claims it and its answer is stored, refusals included; a replay within the
 * window gets that stored answer with `X-Idempotency-Replayed: true`; the same key with another
 * body is refused; an unexpected failure releases the key so that the retry runs again.
 */
export async function idempotent<T>(
  request: FastifyRequest,
  reply: FastifyReply,
  options: { pool: Pool; scope: string; windowMs: number },
  work: () => Promise<T>,
): Promise<T> {
  const header = request.headers['idempotency-key'];
  const key = typeof header === 'string' ? header : undefined;
  if (key === undefined) return work();
  const requestHash = createHash('sha256').update(JSON.stringify(request.body ?? null)).digest('hex');
  const claim = await claimIdempotencyKey(options.pool, { scope: options.scope, key, requestHash, windowMs: options.windowMs });
  switch (claim.kind) {
    case 'replay':
      void reply.header('x-idempotency-replayed', 'true');
      void reply.code(claim.status);
      return claim.body as T;
    case 'in_progress':
      throw new DomainError('IDEMPOTENCY_REQUEST_IN_PROGRESS', 'a request with this Idempotency-Key is still being processed');
    case 'mismatch':
      throw new DomainError('IDEMPOTENCY_KEY_REUSED', 'this Idempotency-Key was used with another request body', {
        location: 'header',
        field: 'idempotency-key',
      });
    case 'claimed':
      break;
  }
  try {
    const body = await work();
    await completeIdempotencyKey(options.pool, { scope: options.scope, key, status: reply.statusCode, body });
    return body;
  } catch (error) {
    const status = error instanceof DomainError ? statusByCode[error.code] : 500;
    if (error instanceof DomainError && status < 500 && status !== 422) {
      // A refusal is an answer too: the same request gets the same refusal (a 422 is recomputed,
      // the same input always fails the same way).
      await completeIdempotencyKey(options.pool, {
        scope: options.scope,
        key,
        status,
        body: { code: error.code, message: error.message, ...(error.details === undefined ? {} : { details: error.details }) },
      });
    } else {
      await releaseIdempotencyKey(options.pool, { scope: options.scope, key }).catch(() => {});
    }
    throw error;
  }
}
