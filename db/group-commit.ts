import DataLoader from 'dataloader';

/**
 * Group commit: requests that want the same kind of write at about the same time share one
 * statement (and one commit). A batch is dispatched on the next turn of the event loop while
 * fewer than `inFlightMax` batches are running; otherwise it waits for one of them to finish and
 * keeps collecting meanwhile. At low load a batch is one request and nothing waits; under load
 * the statements, round trips and WAL flushes per request fall with the batch size.
 *
 * `run` answers every item, in order, with a value or an Error (that item's caller gets it
 * thrown); if `run` itself throws, every item of the batch gets that error.
 */
export interface GroupCommitOptions {
  /** Names the group in `groupCommitStats()`. */
  name: string;
  /** Items per statement at most. */
  maxBatch: number;
  /** Batches running at once at most (each holds one pool connection). */
  inFlightMax: number;
}

export interface GroupCommit<I, O> {
  submit(item: I): Promise<O>;
}

export interface GroupCommitCounter {
  batches: number;
  items: number;
  /** Milliseconds the batches took, summed (statement and answer, from the batch's start). */
  runMs: number;
  /** Batches that waited for a free slot (all `inFlightMax` were running). */
  queuedBatches: number;
}

/** Counters per group name since the process started (for benchmarks and diagnostics). */
const counters = new Map<string, GroupCommitCounter>();

export function groupCommitStats(): Record<string, GroupCommitCounter> {
  return Object.fromEntries([...counters].map(([name, counter]) => [name, { ...counter }]));
}

export function createGroupCommit<I, O>(run: (items: readonly I[]) => Promise<readonly (O | Error)[]>, options: GroupCommitOptions): GroupCommit<I, O> {
  const counter = counters.get(options.name) ?? { batches: 0, items: 0, runMs: 0, queuedBatches: 0 };
  counters.set(options.name, counter);
  let running = 0;
  const waiting: (() => void)[] = [];
  const loader = new DataLoader<I, O>(
    async (items) => {
      counter.batches += 1;
      counter.items += items.length;
      const started = performance.now();
      try {
        return await run(items);
      } finally {
        counter.runMs += performance.now() - started;
        // Hand this batch's slot straight to the oldest waiting batch, if any.
        const next = waiting.shift();
        if (next === undefined) running -= 1;
        else setImmediate(next);
      }
    },
    {
      cache: false,
      maxBatchSize: options.maxBatch,
      batchScheduleFn: (dispatch) => {
        if (running < options.inFlightMax) {
          running += 1;
          setImmediate(dispatch);
        } else {
          counter.queuedBatches += 1;
          waiting.push(dispatch);
        }
      },
    },
  );
  return { submit: (item) => loader.load(item) };
}
