import DataLoader from 'dataloader';
import { isItemLevelError } from './pool.ts';

/**
 * Group commit: requests that want the same kind of write at about the same time share one
 * statement (and one commit). A batch is dispatched on the next turn of the event loop while
 * fewer than `inFlightMax` batches are running; otherwise it waits for one of them to finish and
 * keeps collecting meanwhile. At low load a batch is one request and nothing waits; under load
 * the statements, round trips and WAL flushes per request fall with the batch size.
 *
 * `run` answers every item, in order, with a value or an Error (that item's caller gets it
 * thrown). One bad item must not fail the others: when `run` throws an error that `isolate`
 * says belongs to an item (by default a constraint violation, a bad value, a deadlock or a
 * serialization failure: `isItemLevelError`), the batch is split in halves and each half run
 * again, down to the item at fault, which alone gets the error; the others commit. A batch is
 * one statement (or one transaction), so a failed run wrote nothing and running its items again
 * is safe. Splitting costs about 2 x log2(batch) statements for one bad item, against one per
 * item for running them one by one. Any other error (the database unreachable, a timeout) says
 * nothing about the items: every item of the batch gets it, at once, and nothing is retried, so
 * an outage is not multiplied into more waits.
 */
export interface GroupCommitOptions {
  /** Names the group in `groupCommitStats()`. */
  name: string;
  /** Items per statement at most. */
  maxBatch: number;
  /** Batches running at once at most (each holds one pool connection). */
  inFlightMax: number;
  /** Whether a failed run's error may be one item's fault, so that the batch is split to find it. */
  isolate?: (error: unknown) => boolean;
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
  /** Batches split to isolate an item's error, and the statements run again to do it. */
  splitBatches: number;
  splitRuns: number;
}

/** Counters per group name since the process started (for benchmarks and diagnostics). */
const counters = new Map<string, GroupCommitCounter>();

export function groupCommitStats(): Record<string, GroupCommitCounter> {
  return Object.fromEntries([...counters].map(([name, counter]) => [name, { ...counter }]));
}

export function createGroupCommit<I, O>(run: (items: readonly I[]) => Promise<readonly (O | Error)[]>, options: GroupCommitOptions): GroupCommit<I, O> {
  const counter = counters.get(options.name) ?? { batches: 0, items: 0, runMs: 0, queuedBatches: 0, splitBatches: 0, splitRuns: 0 };
  counters.set(options.name, counter);
  const isolate = options.isolate ?? isItemLevelError;
  /** Runs `items`; on an item's error, each half again, down to the item at fault. */
  const runIsolating = async (items: readonly I[], depth: number): Promise<readonly (O | Error)[]> => {
    try {
      if (depth > 0) counter.splitRuns += 1;
      return await run(items);
    } catch (error) {
      if (items.length === 1 || !isolate(error)) {
        if (items.length === 1) return [error instanceof Error ? error : new Error(String(error))];
        throw error;
      }
      if (depth === 0) counter.splitBatches += 1;
      const middle = Math.ceil(items.length / 2);
      // In order, one half after the other: items of one key keep their order (the transfer
      // appender's second append on a PLC must follow its first).
      const head = await runIsolating(items.slice(0, middle), depth + 1);
      const tail = await runIsolating(items.slice(middle), depth + 1);
      return [...head, ...tail];
    }
  };
  let running = 0;
  const waiting: (() => void)[] = [];
  const loader = new DataLoader<I, O>(
    async (items) => {
      counter.batches += 1;
      counter.items += items.length;
      const started = performance.now();
      try {
        return await runIsolating(items, 0);
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
