import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createGroupCommit } from '../../db/group-commit.ts';
import { createPgRateLimitStore, tallyIncrements } from '../../db/rate-limit-store.ts';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await db?.drop();
});

type Store = InstanceType<ReturnType<typeof createPgRateLimitStore>>;
const incr = (store: Store, key: string, windowMs: number) =>
  new Promise<{ current: number; ttl: number }>((resolve, reject) =>
    store.incr(key, (error, result) => (error === null && result !== undefined ? resolve(result) : reject(error ?? new Error('no result'))), windowMs),
  );

describe('the PostgreSQL rate-limit store (group commit)', () => {
  it('gives each of many concurrent requests its own position in the count, batched or not', async () => {
    const Store = createPgRateLimitStore(db.pool, { maxBatch: 7, inFlightMax: 2 });
    const store = new Store({ routeKey: 'route-a' });
    const results = await Promise.all(Array.from({ length: 50 }, (_, i) => incr(store, i % 5 === 0 ? 'other' : 'client', 60_000)));
    const client = results.filter((_, i) => i % 5 !== 0).map((r) => r.current);
    const other = results.filter((_, i) => i % 5 === 0).map((r) => r.current);
    expect([...client].sort((a, b) => a - b)).toEqual(Array.from({ length: 40 }, (_, i) => i + 1));
    expect([...other].sort((a, b) => a - b)).toEqual(Array.from({ length: 10 }, (_, i) => i + 1));
    for (const r of results) expect(r.ttl).toBeGreaterThan(50_000);
    const stored = await db.pool.query<{ key: string; hits: number }>(`SELECT key, hits FROM rate_limit_counters WHERE key LIKE 'route-a:%' ORDER BY key`);
    expect(stored.rows).toEqual([
      { key: 'route-a:client', hits: 40 },
      { key: 'route-a:other', hits: 10 },
    ]);
  });

  it('two stores (two API replicas) count against the same window', async () => {
    const A = createPgRateLimitStore(db.pool);
    const B = createPgRateLimitStore(db.pool);
    const a = new A({ routeKey: 'shared' });
    const b = new B({ routeKey: 'shared' });
    const results = await Promise.all(Array.from({ length: 30 }, (_, i) => incr(i % 2 === 0 ? a : b, 'dev', 60_000)));
    expect(results.map((r) => r.current).sort((x, y) => x - y)).toEqual(Array.from({ length: 30 }, (_, i) => i + 1));
  });

  it('starts a new window once the old one has ended', async () => {
    const Store = createPgRateLimitStore(db.pool);
    const store = new Store({ routeKey: 'short' });
    expect((await Promise.all([incr(store, 'k', 300), incr(store, 'k', 300)])).map((r) => r.current).sort()).toEqual([1, 2]);
    await new Promise((resolve) => setTimeout(resolve, 400));
    const next = await incr(store, 'k', 300);
    expect(next.current).toBe(1);
    expect(next.ttl).toBeLessThanOrEqual(300);
  });

  it("a statement failing on one request's key fails that request alone: the others of its batch are counted", async () => {
    const Store = createPgRateLimitStore(db.pool, { maxBatch: 64, inFlightMax: 1 });
    const store = new Store({ routeKey: 'fail' });
    await db.pool.query(`ALTER TABLE rate_limit_counters ADD CONSTRAINT test_no_boom CHECK (key NOT LIKE '%boom%')`);
    try {
      const keys = Array.from({ length: 40 }, (_, i) => (i % 8 === 3 ? `boom-${i}` : `fine-${i % 4}`));
      const outcomes = await Promise.allSettled(keys.map((key) => incr(store, key, 60_000)));
      expect(outcomes.map((o) => o.status)).toEqual(keys.map((key) => (key.startsWith('boom') ? 'rejected' : 'fulfilled')));
      for (const outcome of outcomes) {
        if (outcome.status === 'rejected') expect((outcome.reason as { code?: string }).code).toBe('23514');
      }
    } finally {
      await db.pool.query(`ALTER TABLE rate_limit_counters DROP CONSTRAINT test_no_boom`);
    }
    const stored = await db.pool.query<{ key: string; hits: number }>(`SELECT key, hits FROM rate_limit_counters WHERE key LIKE 'fail:%' ORDER BY key`);
    // 35 good requests over 4 keys (i % 4), the 5 at i % 8 === 3 refused.
    expect(stored.rows).toEqual([
      { key: 'fail:fine-0', hits: 10 },
      { key: 'fail:fine-1', hits: 10 },
      { key: 'fail:fine-2', hits: 10 },
      { key: 'fail:fine-3', hits: 5 },
    ]);
    expect((await incr(store, 'fine-0', 60_000)).current).toBe(11);
  });

  it('refuses a key longer than the table allows before it joins a batch, and counts the rest of the batch', async () => {
    const Store = createPgRateLimitStore(db.pool);
    const store = new Store({ routeKey: 'long' });
    const outcomes = await Promise.allSettled([incr(store, 'x'.repeat(8000), 60_000), ...Array.from({ length: 5 }, () => incr(store, 'short', 60_000))]);
    expect(outcomes[0]).toMatchObject({ status: 'rejected', reason: { message: expect.stringContaining('at most 512') } });
    expect(
      outcomes
        .slice(1)
        .map((o) => (o.status === 'fulfilled' ? o.value.current : -1))
        .sort(),
    ).toEqual([1, 2, 3, 4, 5]);
  });

  it('tallies a batch per key in first-seen order', () => {
    expect(tallyIncrements([{ key: 'b', windowMs: 1 }, { key: 'a', windowMs: 1 }, { key: 'b', windowMs: 1 }])).toEqual([
      { key: 'b', windowMs: 1, count: 2 },
      { key: 'a', windowMs: 1, count: 1 },
    ]);
  });
});

describe('group commit', () => {
  it('batches what arrives together, bounds the batch size and the batches in flight, and keeps answers in order', async () => {
    const batches: number[][] = [];
    let running = 0;
    let maxRunning = 0;
    const group = createGroupCommit<number, number>(
      async (items) => {
        running += 1;
        maxRunning = Math.max(maxRunning, running);
        batches.push([...items]);
        await new Promise((resolve) => setTimeout(resolve, 20));
        running -= 1;
        return items.map((item) => (item === 13 ? new Error('unlucky') : item * 2));
      },
      { name: 'test', maxBatch: 4, inFlightMax: 2 },
    );
    const outcomes = await Promise.allSettled(Array.from({ length: 20 }, (_, i) => group.submit(i)));
    expect(outcomes.map((o) => (o.status === 'fulfilled' ? o.value : (o.reason as Error).message))).toEqual(
      Array.from({ length: 20 }, (_, i) => (i === 13 ? 'unlucky' : i * 2)),
    );
    expect(maxRunning).toBe(2);
    expect(batches.every((batch) => batch.length <= 4)).toBe(true);
    expect(batches.flat().sort((a, b) => a - b)).toEqual(Array.from({ length: 20 }, (_, i) => i));
    // Alone, an item goes at once in a batch of one.
    await expect(group.submit(5)).resolves.toBe(10);
    expect(batches.at(-1)).toEqual([5]);
  });

  it("splits a batch that fails on an item's fault down to that item, and fails a whole batch at once on any other error", async () => {
    const itemError = (item: number) => Object.assign(new Error(`bad item ${item}`), { code: '23514' });
    const runs: number[][] = [];
    let outage = false;
    const committed: number[] = [];
    const group = createGroupCommit<number, number>(
      async (items) => {
        runs.push([...items]);
        if (outage) throw Object.assign(new Error('Query read timeout'));
        const bad = items.find((item) => item % 10 === 7);
        if (bad !== undefined) throw itemError(bad);
        committed.push(...items);
        return items.map((item) => item * 2);
      },
      { name: 'test-isolate', maxBatch: 32, inFlightMax: 1 },
    );
    const outcomes = await Promise.allSettled(Array.from({ length: 32 }, (_, i) => group.submit(i)));
    expect(outcomes.map((o) => (o.status === 'fulfilled' ? o.value : (o.reason as Error).message))).toEqual(
      Array.from({ length: 32 }, (_, i) => (i % 10 === 7 ? `bad item ${i}` : i * 2)),
    );
    expect(committed.sort((a, b) => a - b)).toEqual(Array.from({ length: 32 }, (_, i) => i).filter((i) => i % 10 !== 7));
    // Three bad items of 32: far fewer statements than one per item.
    expect(runs.length).toBeLessThan(32);
    expect(runs[0]).toHaveLength(32);

    runs.length = 0;
    outage = true;
    const down = await Promise.allSettled(Array.from({ length: 8 }, (_, i) => group.submit(i)));
    expect(down.every((o) => o.status === 'rejected' && (o.reason as Error).message === 'Query read timeout')).toBe(true);
    expect(runs).toHaveLength(1);
  });
});
