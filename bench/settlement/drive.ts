import { nowMs } from './probes.ts';

/**
 * A closed loop bounded by count and by time: `concurrency` clients, each taking the next
 * prepared item and running one whole operation (request through final state) before taking
 * another, until the items run out, `maxOps` have been taken, or `durationMs` has passed since
 * the start (no new operation starts after it; running ones finish). Throughput is successful
 * operations divided by the time from the start until the last one finished.
 */

export interface OpRecord {
  id: string;
  /** The client sent the request. */
  sentAt: number;
  /** The API answered (redemption open, PENDING_PAYMENT). */
  respondedAt: number;
  /** The client saw the workflow closed with its final status. */
  doneAt: number;
}

export interface PhaseRun {
  name: string;
  concurrency: number;
  startedAt: number;
  elapsedMs: number;
  ops: OpRecord[];
  errors: Record<string, number>;
  stoppedBy: 'count' | 'time';
  perSecond: number;
}

export interface PhaseOptions {
  name: string;
  concurrency: number;
  durationMs: number;
  maxOps: number;
  itemCount: number;
  operation: (itemIndex: number, client: number) => Promise<OpRecord>;
  progress: (line: string) => void;
  progressEveryMs: number;
  /** Extra text for each progress line (queue depths). */
  status?: () => string;
}

export async function runPhase(options: PhaseOptions): Promise<PhaseRun> {
  const startedAt = nowMs();
  const limit = Math.min(options.maxOps, options.itemCount);
  const ops: OpRecord[] = [];
  const errors: Record<string, number> = {};
  let taken = 0;
  let stoppedBy: 'count' | 'time' = 'count';
  let lastFinished = startedAt;
  let seenAtTick = 0;
  let lastTick = startedAt;
  const ticker = setInterval(() => {
    const now = nowMs();
    const rate = ((ops.length - seenAtTick) * 1000) / (now - lastTick);
    const errorCount = Object.values(errors).reduce((sum, n) => sum + n, 0);
    options.progress(
      `  [${options.name}] ${((now - startedAt) / 1000).toFixed(1)} s: ${ops.length} done, ${Math.round(rate)}/s now, ${taken - ops.length - errorCount} in flight, ${errorCount} errors${options.status === undefined ? '' : `, ${options.status()}`}`,
    );
    seenAtTick = ops.length;
    lastTick = now;
  }, options.progressEveryMs);
  try {
    await Promise.all(
      Array.from({ length: options.concurrency }, async (_, client) => {
        for (;;) {
          if (taken >= limit) return;
          if (nowMs() - startedAt >= options.durationMs) {
            stoppedBy = 'time';
            return;
          }
          const index = taken;
          taken += 1;
          try {
            const op = await options.operation(index, client);
            ops.push(op);
            if (op.doneAt > lastFinished) lastFinished = op.doneAt;
          } catch (error) {
            const key = error instanceof Error ? error.message.slice(0, 120) : String(error);
            errors[key] = (errors[key] ?? 0) + 1;
            lastFinished = Math.max(lastFinished, nowMs());
          }
        }
      }),
    );
  } finally {
    clearInterval(ticker);
  }
  const elapsedMs = lastFinished - startedAt;
  return {
    name: options.name,
    concurrency: options.concurrency,
    startedAt,
    elapsedMs,
    ops,
    errors,
    stoppedBy,
    perSecond: elapsedMs > 0 ? (ops.length * 1000) / elapsedMs : 0,
  };
}
