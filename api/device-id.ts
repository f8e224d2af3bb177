import type { FastifyRequest } from 'fastify';
import { DomainError } from '../src/errors.ts';
import { deviceIdSchema } from './schemas/plc.ts';
import type { SubjectRateLimit } from './plugins/subject-rate-limit.ts';

/**
 * `X-Device-ID`, validated before any use. The rate limiter builds its key from it in an
 * `onRequest` hook, before the route's schema has looked at the headers: an 8,000-character
 * header used to reach the rate-limit counters' `CHECK (char_length(key) <= 512)` and fail the
 * whole group-committed statement, honest requests of the same batch with it. Every route that
 * keys a rate limit or a record by the device goes through `deviceRateLimit` and `deviceIdOf`,
 * so the header is judged once, by the same rule the schemas state (`deviceIdSchema`).
 */

/**
 * The request's device id, or undefined when it sent none. A malformed one (too long, characters
 * outside the schema's, the header repeated) is refused with a 422 naming the header.
 */
export function deviceIdOf(request: Pick<FastifyRequest, 'headers'>): string | undefined {
  const header = request.headers['x-device-id'];
  if (header === undefined) return undefined;
  const parsed = deviceIdSchema.safeParse(header);
  if (!parsed.success) {
    throw new DomainError('INVALID_HEADER', 'X-Device-ID: 1 to 128 characters of A-Z a-z 0-9 . _ : -, sent once', {
      location: 'header',
      field: 'x-device-id',
    });
  }
  return parsed.data;
}

/** The rate-limit key of a device route: client address and device id ('-' when none was sent). */
export function deviceRateLimitKey(request: Pick<FastifyRequest, 'headers' | 'ip'>): string {
  return `${request.ip}|${deviceIdOf(request) ?? '-'}`;
}

/**
 * A device route's rate limit (docs/security.md, "Rate limits"): `max` a minute per client address
 * and device id, counted in PostgreSQL (every replica), whose key generator runs first among the
 * route's hooks and refuses a malformed X-Device-ID before anything is counted or stored; and,
 * since the device id is the caller's choice, the same `max` (times RATE_LIMIT_ADDRESS_FACTOR) per
 * client address whatever the device, and `max` per signing key where `signer` names the
 * request's verified key (api/plugins/subject-rate-limit.ts).
 */
export function deviceRateLimit(groupId: string, max: number, signer?: (request: FastifyRequest) => string | undefined) {
  const subjectRateLimit: SubjectRateLimit = signer === undefined ? { groupId, max } : { groupId, max, signer };
  return {
    rateLimit: {
      max,
      timeWindow: 60_000,
      groupId,
      keyGenerator: deviceRateLimitKey,
    },
    subjectRateLimit,
  };
}
