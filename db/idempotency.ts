import { z } from 'zod';
import type { Queryable } from './pool.ts';
import { exec, maybeOne } from './sql.ts';

/**
 * The Idempotency-Key store (create, transfer, redeem), in PostgreSQL so every API replica sees
 * the same keys. A key is claimed IN_PROGRESS before the work runs, then holds the answer for the
 * window; a claim older than the window is taken over.
 */

const recordRow = z.object({
  request_hash: z.string(),
  state: z.enum(['IN_PROGRESS', 'COMPLETED']),
  response_status: z.number().int().nullable(),
  response_body: z.unknown(),
});

export type Claim =
  | { kind: 'claimed' }
  | { kind: 'replay'; status: number; body: unknown }
  | { kind: 'in_progress' }
  | { kind: 'mismatch' };

export async function claimIdempotencyKey(
  db: Queryable,
  input: { scope: string; key: string; requestHash: string; windowMs: number },
): Promise<Claim> {
  const claimed = await exec(db, {
    name: 'idempotency-claim',
    text: `INSERT INTO idempotency_records AS r (scope, key, request_hash, state, expires_at)
           VALUES ($1, $2, $3, 'IN_PROGRESS', now() + make_interval(secs => $4::double precision / 1000))
           ON CONFLICT (scope, key) DO UPDATE
             SET request_hash = EXCLUDED.request_hash, state = 'IN_PROGRESS', response_status = NULL, response_body = NULL,
                 created_at = now(), expires_at = EXCLUDED.expires_at
             WHERE r.expires_at < now()`,
    values: [input.scope, input.key, input.requestHash, input.windowMs],
  });
  if (claimed === 1) return { kind: 'claimed' };
  const existing = await maybeOne(db, recordRow, {
    name: 'idempotency-get',
    text: 'SELECT request_hash, state, response_status, response_body FROM idempotency_records WHERE scope = $1 AND key = $2',
    values: [input.scope, input.key],
  });
  if (existing === null) return claimIdempotencyKey(db, input);
  if (existing.request_hash !== input.requestHash) return { kind: 'mismatch' };
  if (existing.state === 'IN_PROGRESS' || existing.response_status === null) return { kind: 'in_progress' };
  return { kind: 'replay', status: existing.response_status, body: existing.response_body };
}

export async function completeIdempotencyKey(
  db: Queryable,
  input: { scope: string; key: string; status: number; body: unknown },
): Promise<void> {
  await exec(db, {
    name: 'idempotency-complete',
    text: `UPDATE idempotency_records SET state = 'COMPLETED', response_status = $3, response_body = $4
            WHERE scope = $1 AND key = $2`,
    values: [input.scope, input.key, input.status, JSON.stringify(input.body)],
  });
}

/** An unexpected failure releases the key, so the client's retry can run the work again. */
export async function releaseIdempotencyKey(db: Queryable, input: { scope: string; key: string }): Promise<void> {
  await exec(db, {
    name: 'idempotency-release',
    text: `DELETE FROM idempotency_records WHERE scope = $1 AND key = $2 AND state = 'IN_PROGRESS'`,
    values: [input.scope, input.key],
  });
}
