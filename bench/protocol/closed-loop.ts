import { runClosedLoop, type ClosedLoopResult } from '../support/timing.ts';

/**
 * A closed loop bounded by count and by time: each client works through its own list of
 * pre-made items one request at a time; it stops when its list is used up or the time is over.
 * `runClosedLoop` underneath: items started during the warm-up are not recorded, and throughput
 * counts the items started in the measured window, over the time from the window's start until
 * the last of them finished.
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

export type BoundedLoopResult = ClosedLoopResult;

/** Errors tallied by message: the API's answers say more than an error class would. */
function classify(error: unknown): string {
  if (error instanceof Error) return error.message.slice(0, 120);
  return String(error).slice(0, 120);
}

export function runBoundedLoop<T>(options: BoundedLoopOptions<T>): Promise<BoundedLoopResult> {
  return runClosedLoop({
    name: options.name,
    clients: options.items,
    warmupMs: options.warmupMs,
    durationMs: options.durationMs,
    classifyError: classify,
    progress: options.progress,
    onMeasureStart: options.onMeasureStart,
    operation: async (list, clientIndex, sequence) => {
      const item = list[sequence];
      if (sequence >= list.length || item === undefined) return 'done';
      await options.operation(item, clientIndex);
    },
  });
}
