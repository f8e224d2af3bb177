import { createGroupCommit } from './group-commit.ts';
import { z } from 'zod';
import type { Pool } from './pool.ts';
import { exec, many } from './sql.ts';

const counterRow = z.object({ key: z.string(), hits: z.number().int(), ttl_ms: z.string() });

/**
 * A fixed-window counter store for @fastify/rate-limit kept in PostgreSQL, so every API replica
 * counts against the same windows (an in-memory store would give each replica its own limit).
 * The counts of the requests that arrive together are added in one upsert (group commit, see
 * db/group-commit.ts): one statement per batch, which starts a new window for a key whose old
 * one has ended. Each request of a batch gets its own position in the count, so a limit of N
 * lets exactly N requests through per window however they were batched.
 *
 * One request never fails another of its batch. A key the table would refuse (longer than its
 * CHECK's 512 characters) is refused before it joins a batch, with its own error; and should a
 * statement still fail on an item's fault, the group commit splits the batch down to that item
 * (db/group-commit.ts). The API validates what goes into a key before this (api/device-id.ts).
 */

interface IncrResult {
  current: number;
  ttl: number;
}
type Callback = (error: Error | null, result?: IncrResult) => void;

const pruneEveryCalls = 500;
/** The table's CHECK on `key` (migration 1). */
export const rateLimitKeyLengthMax = 512;
const pruneBatchMax = 1000;

interface Increment {
  key: string;
  windowMs: number;
}

export interface PgRateLimitStoreOptions {
  /** Increments per statement at most. */
  maxBatch?: number;
  /** Statements running at once at most. */
  inFlightMax?: number;
}

/**
 * Counts per key in first-seen order: what one upsert adds. A key is one route's (its prefix),
 * so its window is the same in every increment; the first one seen is used.
 */
export function tallyIncrements(items: readonly Increment[]): { key: string; windowMs: number; count: number }[] {
  const tally = new Map<string, { key: string; windowMs: number; count: number }>();
  for (const item of items) {
    const entry = tally.get(item.key);
    if (entry === undefined) tally.set(item.key, { key: item.key, windowMs: item.windowMs, count: 1 });
    else entry.count += 1;
  }
  return [...tally.values()];
}

export function createPgRateLimitStore(pool: Pool, options: PgRateLimitStoreOptions = {}) {
  let calls = 0;

  const counter = createGroupCommit<Increment, IncrResult>(
    async (items) => {
      const tally = tallyIncrements(items);
      // Keys sorted, so that two replicas' batches lock the counters in the same order.
      const rows = await many(pool, counterRow, {
        name: 'rate-limit-incr-batch',
        prepare: true,
        text: `INSERT INTO rate_limit_counters AS c (key, hits, reset_at)
               SELECT i.key, i.n, clock_timestamp() + make_interval(secs => i.window_ms / 1000)
                 FROM unnest($1::text[], $2::int[], $3::double precision[]) AS i(key, n, window_ms)
                ORDER BY i.key
               ON CONFLICT (key) DO UPDATE SET
                 hits = CASE WHEN c.reset_at <= clock_timestamp() THEN EXCLUDED.hits ELSE c.hits + EXCLUDED.hits END,
                 reset_at = CASE WHEN c.reset_at <= clock_timestamp() THEN EXCLUDED.reset_at ELSE c.reset_at END
               RETURNING key, hits, ceil(extract(epoch FROM (reset_at - clock_timestamp())) * 1000)::text AS ttl_ms`,
        values: [tally.map((t) => t.key), tally.map((t) => t.count), tally.map((t) => t.windowMs)],
      });
      const after = new Map(rows.map((row) => [row.key, row]));
      // The batch's requests for one key take the last `count` positions of its new total, in order.
      const next = new Map(tally.map((t) => [t.key, (after.get(t.key)?.hits ?? 0) - t.count + 1]));
      calls += items.length;
      if (calls >= pruneEveryCalls) {
        calls = 0;
        // Expired windows are dead weight; drop a bounded batch now and then.
        void exec(pool, {
          name: 'rate-limit-prune',
          text: `DELETE FROM rate_limit_counters WHERE key IN (
                   SELECT key FROM rate_limit_counters WHERE reset_at < clock_timestamp() LIMIT ${pruneBatchMax})`,
        }).catch(() => {});
      }
      return items.map((item) => {
        const row = after.get(item.key);
        if (row === undefined) return new Error('rate limit upsert returned no row for a key');
        const current = next.get(item.key) as number;
        next.set(item.key, current + 1);
        return { current, ttl: Math.max(0, Number(row.ttl_ms)) };
      });
    },
    { name: 'rate-limit', maxBatch: options.maxBatch ?? 256, inFlightMax: options.inFlightMax ?? 2 },
  );

  const increment = (key: string, timeWindowMs: number): Promise<IncrResult> => {
    if (key.length > rateLimitKeyLengthMax) {
      return Promise.reject(new Error(`rate-limit key of ${key.length} characters refused: at most ${rateLimitKeyLengthMax}`));
    }
    return counter.submit({ key, windowMs: timeWindowMs });
  };

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
      // A limiter from `app.createRateLimit(options)` has no route: its key generator names its keys.
      const routeKey = groupId ?? (routeOptions.url === undefined ? 'limiter' : `${String(routeOptions.method)}:${routeOptions.url}`);
      return new PgRateLimitStore({ routeKey });
    }
  };
}
