import type { Pool } from '../../db/pool.ts';

/**
 * The PLC status outbox after a transfer run: the first hops' status signals that the dispatcher
 * deferred while the route was busy (api/plc-status-dispatcher.ts). They are part of what the
 * run cost, so the bench waits for them and reports how many there were and how long they took.
 */
export interface OutboxDrain {
  rows: number;
  waitedMs: number;
  left: number;
}

export async function waitForOutboxDrained(pool: Pool, log: (line: string) => void, options: { maxMs: number }): Promise<OutboxDrain> {
  const count = async () => Number((await pool.query<{ n: string }>(`SELECT count(*)::text AS n FROM plc_status_outbox`)).rows[0]?.n ?? 0);
  const started = performance.now();
  const rows = await count();
  let left = rows;
  for (let second = 1; left > 0 && performance.now() - started < options.maxMs; second += 1) {
    await new Promise((resolve) => setTimeout(resolve, 1000));
    left = await count();
    if (second % 10 === 0) log(`  waiting for the status outbox to drain: ${left} of ${rows} left after ${second} s`);
  }
  return { rows, waitedMs: performance.now() - started, left };
}
