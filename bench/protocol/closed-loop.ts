import { performance } from 'node:perf_hooks';
import { summarize, type LatencySummary } from '../support/stats.ts';

/**
 * A closed loop bounded by count and by time: each client works through its own list of
 * pre-made items one request at a time; it stops when its list is used up or the time is over.
 * Items started during the warm-up are not recorded. Throughput counts the items started in the
 * measured window, over the time from the window's start until the last of them finished.
 */

export interface BoundedLoopOptions<T> {
  name: string;
  /** One list per client; its length bounds that client's requests. */
  items: readonly (readonly T[])[];
  warmupMs: number;
  durationMs: number;
  operation: (item: T, clientIndex: number) => Promise<void>;
  progress: (line: string) => void;
  /** Called when the warm-up ends (to sample CPU counters). */
  onMeasureStart?: () => Promise<void> | void;
}

export interface BoundedLoopResult {
  name: string;
  clients: number;
  elapsedMs: number;
  operations: number;
  perSecond: number;
  latency: LatencySummary;
  errors: Record<string, number>;
  /** Clients that ran out of items before the time was over. */
  exhaustedClients: number;
}

function classify(error: unknown): string {
  if (error instanceof Error) return error.message.slice(0, 120);
  return String(error).slice(0, 120);
}

export async function runBoundedLoop<T>(options: BoundedLoopOptions<T>): Promise<BoundedLoopResult> {
  const startedAt = performance.now();
  const measureFrom = startedAt + options.warmupMs;
  const measureUntil = measureFrom + options.durationMs;
  const latencies: number[] = [];
  const errors: Record<string, number> = {};
  let lastFinishedAt = measureFrom;
  let exhaustedClients = 0;
  let completed = 0;
  let completedAtTick = 0;
  let tickAt = startedAt;
  let measureStarted: Promise<void> | undefined;

  const ticker = setInterval(() => {
    const now = performance.now();
    const rate = ((completed - completedAtTick) * 1000) / (now - tickAt);
    completedAtTick = completed;
    tickAt = now;
    const errorCount = Object.values(errors).reduce((sum, count) => sum + count, 0);
    options.progress(`  [${options.name}] ${((now - startedAt) / 1000).toFixed(0)}s ${now < measureFrom ? 'warm-up' : 'measure'}: ${Math.round(rate)}/s, ${latencies.length} measured, ${errorCount} errors`);
  }, 1000);
  const warmupTimer = setTimeout(() => {
    measureStarted = Promise.resolve(options.onMeasureStart?.());
  }, options.warmupMs);

  try {
    await Promise.all(
      options.items.map(async (list, clientIndex) => {
        for (const item of list) {
          const begin = performance.now();
          if (begin >= measureUntil) return;
          let failed = false;
          try {
            await options.operation(item, clientIndex);
          } catch (error) {
            failed = true;
            if (begin >= measureFrom) errors[classify(error)] = (errors[classify(error)] ?? 0) + 1;
          }
          const end = performance.now();
          completed += 1;
          if (begin >= measureFrom) {
            if (!failed) latencies.push(end - begin);
            if (end > lastFinishedAt) lastFinishedAt = end;
          }
        }
        if (performance.now() < measureUntil) exhaustedClients += 1;
      }),
    );
  } finally {
    clearInterval(ticker);
    clearTimeout(warmupTimer);
  }
  await measureStarted;
  const elapsedMs = lastFinishedAt - measureFrom;
  return {
    name: options.name,
    clients: options.items.length,
    elapsedMs,
    operations: latencies.length,
    perSecond: elapsedMs > 0 ? (latencies.length * 1000) / elapsedMs : 0,
    latency: summarize(latencies),
    errors,
    exhaustedClients,
  };
}
