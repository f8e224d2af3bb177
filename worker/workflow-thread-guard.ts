import { BroadcastChannel, isMainThread, threadId } from 'node:worker_threads';
import vm from 'node:vm';

/**
 * One watchdog for the Temporal SDK's workflow threads, in place of one watchdog thread per call.
 *
 * Why: the SDK runs every call into a workflow's V8 context (`vm.Script#runInContext`) with its
 * isolate execution timeout (5 s), its deadlock detector. Node enforces a vm timeout by creating
 * and joining a thread per call (nodejs/node#47739): 300 µs a call on this project's benchmark
 * machine (a Firecracker VM), against 1 to 3 µs without it, and a workflow task makes a dozen or
 * more such calls. Measured there (docs/benchmarks.md, 2026-11-24 third session): a bare
 * update-with-start at 2 clients answered at p50 87 to 99 ms with the per-call watchdogs and 51 to
 * 55 ms without, and the worker spent 20 to 27 CPU-ms per workflow against 11 to 15.
 *
 * What this module does, when preloaded into the worker process
 * (`node --import ./worker/preload.ts worker/main.ts`; package.json, the compose file and
 * scripts/dev.ts do so; Node runs a preload in every worker thread too):
 * - In each of the SDK's workflow threads it drops the `timeout` of the SDK's vm calls and
 *   instead records, in memory shared with the main thread, when the thread's current call began
 *   and the limit it asked for.
 * - The main thread checks those records every 250 ms. A call past its limit is the deadlock the
 *   SDK would have detected: the guard writes a `fatal` JSON line on stderr and ends the process
 *   with exit code 70. The process supervisor (compose's `restart: unless-stopped`) starts a new
 *   worker; the server hands the stuck workflow's tasks and every other workflow's to it after
 *   their timeouts.
 *
 * The trade-off, stated where operators read it (README, under "Two commands"): the SDK's own detector
 * fails only the workflow task that looped and keeps the worker serving other workflows; this
 * guard ends the whole worker process, so a workflow that loops deterministically would end every
 * worker that picks it up, until it is fixed or terminated (`temporal workflow terminate`).
 * Workflows here are this repository's own code, reviewed and tested; a loop is a bug to fix, and
 * the guard makes it loud. Without the preload (tests run this way) the SDK's per-call timeout
 * stays in force; `workflowThreadGuardInstalled()` tells which is the case.
 *
 * Only threads whose vm calls come from the SDK's workflow runtime are guarded; any other vm use
 * with a timeout keeps Node's own behaviour.
 */

const channelName = 'plc-settlement:workflow-thread-guard';
/** The preload, as `node --import <this> worker/main.ts` takes it (scripts/dev.ts, tests). */
export const workerPreloadUrl = new URL('./preload.ts', import.meta.url).href;
/** How often the main thread looks at the workflow threads' records. */
export const checkIntervalMs = 250;
/** The exit code of a worker ended by the guard (EX_SOFTWARE). */
export const stuckExitCode = 70;

export interface StuckCall {
  /** The workflow thread's id (worker_threads' threadId). */
  threadId: number;
  /** How long its current vm call has been running, and the limit it asked for. */
  runningMs: number;
  limitMs: number;
}

/** Slot layout, per workflow thread: [start of the current call (epoch ms, 0 when none), its limit in ms]. */
interface ThreadRecord {
  threadId: number;
  slot: BigInt64Array;
  reported: boolean;
}

const sdkWorkflowRuntime = /@temporalio[\\/]worker[\\/]lib[\\/]workflow[\\/]/;

let installed = false;

/** A deadlock: one line for the logs (stderr is synchronous for files and pipes), then the exit. */
function endStuckWorker(call: StuckCall): never {
  process.stderr.write(
    `${JSON.stringify({
      level: 'fatal',
      time: new Date().toISOString(),
      msg: 'a workflow thread has been inside one call longer than its limit (a deadlock in workflow code); ending the worker so that its supervisor restarts it',
      ...call,
    })}\n`,
  );
  process.exit(stuckExitCode);
}

/** True when this process was started with the guard preloaded. */
export function workflowThreadGuardInstalled(): boolean {
  return installed;
}

/** The guard's state in a line, for the benchmarks' headers. */
export function describeWorkflowThreadGuard(): string {
  return installed
    ? 'workflow-thread guard: on (worker/preload.ts)'
    : 'workflow-thread guard: off: workflow threads use the SDK per-call timeout; run through npm run, or with --import ./worker/preload.ts';
}

/**
 * The stuck calls among `records` at `nowMs`, each reported once. Exported for the unit test;
 * the watchdog below calls it.
 */
export function findStuck(records: readonly ThreadRecord[], nowMs: number): StuckCall[] {
  const stuck: StuckCall[] = [];
  for (const record of records) {
    const startedAt = Number(Atomics.load(record.slot, 0));
    if (startedAt === 0) {
      record.reported = false;
      continue;
    }
    const limitMs = Number(Atomics.load(record.slot, 1));
    const runningMs = nowMs - startedAt;
    if (runningMs > limitMs && !record.reported) {
      record.reported = true;
      stuck.push({ threadId: record.threadId, runningMs, limitMs });
    }
  }
  return stuck;
}

function installWatchdog(): void {
  const records: ThreadRecord[] = [];
  const channel = new BroadcastChannel(channelName);
  channel.onmessage = (event) => {
    const data = (event as { data: { threadId: number; buffer: SharedArrayBuffer } }).data;
    records.push({ threadId: data.threadId, slot: new BigInt64Array(data.buffer), reported: false });
  };
  channel.unref();
  setInterval(() => {
    for (const call of findStuck(records, Date.now())) endStuckWorker(call);
  }, checkIntervalMs).unref();
}

type RunInContext = typeof vm.Script.prototype.runInContext;

/**
 * In a worker thread: wraps `vm.Script#runInContext`. The first call with a timeout decides, from
 * its stack, whether this is the SDK's workflow thread; if it is, this and every later call with a
 * timeout runs without one, its start and limit recorded in the thread's slot.
 */
function installInWorkflowThread(): void {
  const original: RunInContext = vm.Script.prototype.runInContext;
  let guarded: boolean | undefined;
  let slot: BigInt64Array | undefined;
  let depth = 0;
  vm.Script.prototype.runInContext = function guardedRunInContext(this: vm.Script, context, options) {
    const timeout = options?.timeout;
    if (timeout === undefined) return original.call(this, context, options);
    if (guarded === undefined) {
      guarded = sdkWorkflowRuntime.test(new Error().stack ?? '');
      if (guarded) {
        const buffer = new SharedArrayBuffer(2 * BigInt64Array.BYTES_PER_ELEMENT);
        slot = new BigInt64Array(buffer);
        const channel = new BroadcastChannel(channelName);
        channel.postMessage({ threadId, buffer });
        channel.unref();
      }
    }
    if (!guarded || slot === undefined) return original.call(this, context, options);
    const { timeout: _dropped, ...rest } = options as vm.RunningScriptOptions;
    if (depth === 0) {
      Atomics.store(slot, 1, BigInt(timeout));
      Atomics.store(slot, 0, BigInt(Date.now()));
    }
    depth += 1;
    try {
      return original.call(this, context, rest);
    } finally {
      depth -= 1;
      if (depth === 0) Atomics.store(slot, 0, 0n);
    }
  };
}

/** Installs the guard in this thread; idempotent. worker/preload.ts calls it in every thread. */
export function installWorkflowThreadGuard(): void {
  if (installed) return;
  installed = true;
  if (isMainThread) installWatchdog();
  else installInWorkflowThread();
}
