import { performance } from 'node:perf_hooks';
import { summarize, type LatencySummary } from './stats.ts';

/**
 * A closed-loop load generator: a fixed number of clients, each running one operation after
 * another as fast as the system answers, for a warm-up (not recorded) and then a fixed measured
 * duration. Throughput counts the operations started inside the measured window, divided by the
 * time from the window's start until the last of them finished.
 */

export interface ClosedLoopOptions<C> {
  name: string;
  /** One entry per concurrent client (e.g. a dedicated database connection each). */
  clients: readonly C[];
  warmupMs: number;
  durationMs: number;
  /**
   * One operation; `sequence` counts this client's operations from 0, warm-up included. Answering
   * 'done' (without doing any work) ends that client's loop: it has nothing left to send.
   */
  operation: (client: C, clientIndex: number, sequence: number) => Promise<void | 'done'>;
  /** Classifies a failed operation for the error tally (default: the error's `code` or name). */
  classifyError?: (error: unknown) => string;
  progress?: (line: string) => void;
  progressEveryMs?: number;
  /** Stops every client after its current operation (e.g. on Ctrl-C). */
  signal?: AbortSignal;
  /** Called when the warm-up ends (to sample CPU counters); awaited before the result. */
  onMeasureStart?: () => Promise<void> | void;
}

export interface ClosedLoopResult {
  name: string;
  clients: number;
  /** Measured wall time, from the end of the warm-up until the last measured operation finished. */
  elapsedMs: number;
  /** Successful operations started inside the measured window. */
  operations: number;
  /** Every operation finished, warm-up included, failed included (to divide whole-run costs by). */
  totalCompleted: number;
  perSecond: number;
  latency: LatencySummary;
  errors: Record<string, number>;
  /** Clients whose operation answered 'done' before the measured window was over. */
  exhaustedClients: number;
}

function defaultClassify(error: unknown): string {
  if (typeof error === 'object' && error !== null) {
    const code = (error as { code?: unknown }).code;
    if (typeof code === 'string' && code !== '') return code;
    if (error instanceof Error) return error.name;
  }
  return 'unknown';
}

export async function runClosedLoop<C>(options: ClosedLoopOptions<C>): Promise<ClosedLoopResult> {
  const classify = options.classifyError ?? defaultClassify;
  const startedAt = performance.now();
  const measureFrom = startedAt + options.warmupMs;
  const measureUntil = measureFrom + options.durationMs;
  const latenciesMs: number[] = [];
  const errors: Record<string, number> = {};
  let lastFinishedAt = measureFrom;
  let completed = 0;
  let completedAtLastTick = 0;
  let lastTickAt = startedAt;
  let exhaustedClients = 0;
  let measureStarted: Promise<void> | undefined;
  const warmupTimer = setTimeout(() => {
    measureStarted = Promise.resolve(options.onMeasureStart?.());
  }, options.warmupMs);

  const ticker = setInterval(() => {
    const now = performance.now();
    const phase = now < measureFrom ? 'warm-up' : 'measure';
    const rate = ((completed - completedAtLastTick) * 1000) / (now - lastTickAt);
    const errorCount = Object.values(errors).reduce((sum, count) => sum + count, 0);
    options.progress?.(
      `  [${options.name}] ${((now - startedAt) / 1000).toFixed(1)}s ${phase}: ${Math.round(rate)}/s now, ${latenciesMs.length} measured, ${errorCount} errors`,
    );
    completedAtLastTick = completed;
    lastTickAt = now;
  }, options.progressEveryMs ?? 1000);

  try {
    await Promise.all(
      options.clients.map(async (client, clientIndex) => {
        for (let sequence = 0; ; sequence += 1) {
          const begin = performance.now();
          if (begin >= measureUntil || options.signal?.aborted === true) return;
          let failed = false;
          try {
            if ((await options.operation(client, clientIndex, sequence)) === 'done') {
              if (performance.now() < measureUntil) exhaustedClients += 1;
              return;
            }
          } catch (error) {
            failed = true;
            if (begin >= measureFrom) errors[classify(error)] = (errors[classify(error)] ?? 0) + 1;
          }
          const end = performance.now();
          completed += 1;
          if (begin >= measureFrom) {
            if (!failed) latenciesMs.push(end - begin);
            if (end > lastFinishedAt) lastFinishedAt = end;
          }
        }
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
    clients: options.clients.length,
    elapsedMs,
    operations: latenciesMs.length,
    totalCompleted: completed,
    perSecond: elapsedMs > 0 ? (latenciesMs.length * 1000) / elapsedMs : 0,
    latency: summarize(latenciesMs),
    errors,
    exhaustedClients,
  };
}
