import type { Pool } from './pool.ts';

/**
 * A fixed-window counter store for @fastify/rate-limit kept in PostgreSQL, so every API replica
 * counts against the same windows (an in-memory store would give each replica its own limit).
 * One statement per request: an upsert that starts a new window when the old one has ended.
 */

interface IncrResult {
  current: number;
  ttl: number;
}
type Callback = (error: Error | null, result?: IncrResult) => void;

const pruneEveryCalls = 500;
const pruneBatchMax = 1000;

export function createPgRateLimitStore(pool: Pool) {
  let calls = 0;

  async function increment(key: string, timeWindowMs: number): Promise<IncrResult> {
    const result = await pool.query<{ hits: number; ttl_ms: string }>({
      name: 'rate-limit-incr',
      text: `INSERT INTO rate_limit_counters AS c (key, hits, reset_at)
             VALUES ($1, 1, clock_timestamp() + make_interval(secs => $2::double precision / 1000))
             ON CONFLICT (key) DO UPDATE SET
               hits = CASE WHEN c.reset_at <= clock_timestamp() THEN 1 ELSE c.hits + 1 END,
               reset_at = CASE WHEN c.reset_at <= clock_timestamp()
                               THEN clock_timestamp() + make_interval(secs => $2::double precision / 1000)
                               ELSE c.reset_at END
             RETURNING hits, ceil(extract(epoch FROM (reset_at - clock_timestamp())) * 1000)::text AS ttl_ms`,
      values: [key, timeWindowMs],
    });
    const row = result.rows[0];
    if (row === undefined) throw new Error('rate limit upsert returned no row');
    calls += 1;
    if (calls % pruneEveryCalls === 0) {
      // Expired windows are dead weight; drop a bounded batch now and then.
      void pool
        .query(
          `DELETE FROM rate_limit_counters WHERE key IN (
             SELECT key FROM rate_limit_counters WHERE reset_at < clock_timestamp() LIMIT ${pruneBatchMax})`,
        )
        .catch(() => {});
    }
    return { current: row.hits, ttl: Math.max(0, Number(row.ttl_ms)) };
  }

  return class PgRateLimitStore {
    private readonly prefix: string;

    constructor(options?: { routeKey?: string }) {
      this.prefix = options?.routeKey ?? 'global';
    }

    incr(key: string, callback: Callback, timeWindow: number): void {
      increment(`${this.prefix}:${key}`, timeWindow).then(
        (result) => callback(null, result),
        (error: unknown) => callback(error instanceof Error ? error : new Error(String(error))),
      );
    }

    child(routeOptions: { method?: string | string[]; url?: string; config?: { rateLimit?: false | { groupId?: string } } }) {
      const rateLimit = routeOptions.config?.rateLimit;
      const groupId = rateLimit === false || rateLimit === undefined ? undefined : rateLimit.groupId;
      const routeKey = groupId ?? `${String(routeOptions.method)}:${routeOptions.url ?? ''}`;
      return new PgRateLimitStore({ routeKey });
    }
  };
}
