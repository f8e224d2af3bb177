import os from 'node:os';
import { performance } from 'node:perf_hooks';
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import type { AdvisoryLeadership } from '../db/advisory-leader.ts';
import type { Pool } from '../db/pool.ts';
import { claimDueStatuses, completeStatus, failStatus, type OutboxRow } from '../db/plc-status-outbox.ts';
import { plcTransferredSignal } from '../workflows/plc-messages.ts';
import { withTemporalDeadline } from '../services/temporal.ts';

/**
 * Delivers the PLC statuses queued in `plc_status_outbox` to the PLC workflows, after the
 * transfer route has answered: the workflow's status search attribute follows the PLC within
 * about one poll interval, and a transfer never waits for Temporal. Every API process runs one,
 * but only the one that holds the dispatchers' advisory lock (`leadership`, db/advisory-leader.ts)
 * delivers: the rate caps below are the deployment's, however many replicas run, and when the
 * leader dies another replica takes the lock within `PLC_STATUS_LEADER_RETRY_MS`. Rows are also
 * claimed with a lease (`FOR UPDATE SKIP LOCKED`), so a process that dies mid-delivery leaves its
 * rows to the next lease, and two dispatchers never deliver one row at once. A failed signal is retried
 * with exponential backoff (capped), never dropped; a workflow that has already ended (expired,
 * cancelled, redeemed) needs no status and its row is done.
 */

export interface PlcStatusDispatcherOptions {
  pool: Pool;
  temporal: Client;
  log: { warn: (object: object, message: string) => void };
  /** Pause between polls while the outbox is empty or only holds rows not yet due. */
  pollMs: number;
  /** Rows claimed per poll; signals of one batch go out concurrently. */
  batchSize: number;
  /**
   * At most this many signals per second from this process. Mirroring a status costs the
   * Temporal server and the worker 15 to 25 CPU-ms per signal, so a burst of first hops must not
   * take the CPU the requests need: under a burst the outbox grows and drains afterwards.
   */
  maxPerSecond?: number;
  /**
   * While this process is busy (its event loop or its host's CPUs at least `utilization` busy
   * since the last poll, 0 to 1), at most `perSecond` signals per second: the requests get the CPU, the outbox grows
   * and drains when the load falls. Nothing is dropped; a row only waits longer. The busy mode
   * lasts until the loop has been below the threshold for `calmMs` (default 2 s): a load that
   * hovers around the threshold must not flip the dispatcher to full speed between two polls.
   */
  whenBusy?: { utilization: number; perSecond: number; calmMs?: number };
  /** How busy since the previous call, 0 to 1 (injected by tests; default: the busier of the event loop and the host's CPUs, `busyMeter`). */
  utilizationSinceLastCall?: () => number;
  /** How long a claimed row stays hidden from other dispatchers. */
  leaseMs?: number;
  /**
   * Deliver only while this process leads (holds the advisory lock); the others ask again every
   * `retryMs` of the election. Without it (tests driving a dispatcher of their own) every poll
   * delivers.
   */
  leadership?: AdvisoryLeadership;
  /** Bound on each signal: a Temporal that does not answer fails the row's delivery (retried with backoff) instead of stalling the poll. */
  signalTimeoutMs?: number;
}

export interface PlcStatusDispatcher {
  /** One poll: claims due rows (at most `limit`, the batch size by default) and delivers them; resolves with how many were claimed. */
  drainOnce(limit?: number): Promise<number>;
  /** Whether this dispatcher led at its latest poll (always true without `leadership`). */
  leading(): boolean;
  /** Stops polling; waits for the poll in flight, at most 2 s; gives up the leadership. */
  stop(): Promise<void>;
}

/** The advisory lock the API processes' dispatchers elect their one leader with ('plc-stat' in ASCII). */
export const plcStatusDispatcherLockKey = 0x706c632d73746174n;

const retryCapMs = 5 * 60_000;
/** How long stop() waits for an in-flight poll. */
const stopWaitMs = 2_000;

export function retryDelayMs(attempts: number): number {
  return Math.min(retryCapMs, 500 * 2 ** Math.min(20, Math.max(0, attempts - 1)));
}

/**
 * How long to wait after a poll: a full batch means more is waiting, so go again as soon as the
 * rate cap allows; otherwise wait for the poll interval (or the rate cap, if longer).
 */
export function pauseAfterPollMs(poll: { claimed: number; elapsedMs: number; batchSize: number; pollMs: number; maxPerSecond: number }): number {
  const rateGapMs = Math.max(0, (poll.claimed * 1000) / poll.maxPerSecond - poll.elapsedMs);
  return poll.claimed >= poll.batchSize ? rateGapMs : Math.max(poll.pollMs, rateGapMs);
}

export function startPlcStatusDispatcher(options: PlcStatusDispatcherOptions): PlcStatusDispatcher {
  const leaseMs = options.leaseMs ?? 30_000;
  const signalTimeoutMs = options.signalTimeoutMs ?? 5000;
  const maxPerSecond = options.maxPerSecond ?? Number.POSITIVE_INFINITY;
  const utilization = options.utilizationSinceLastCall ?? busyMeter();
  let lastBusyAt = Number.NEGATIVE_INFINITY;
  const isBusy = (): boolean => {
    if (options.whenBusy === undefined) return false;
    const now = Date.now();
    if (utilization() >= options.whenBusy.utilization) lastBusyAt = now;
    return now - lastBusyAt < (options.whenBusy.calmMs ?? 2000);
  };
  let stopped = false;
  let wake: (() => void) | undefined;
  let timer: NodeJS.Timeout | undefined;

  const deliver = async (row: OutboxRow): Promise<void> => {
    try {
      if (row.status === 'TRANSFERRED') {
        await withTemporalDeadline(options.temporal, Date.now() + signalTimeoutMs, () =>
          options.temporal.workflow.getHandle(`plc-${row.token_id}`).signal(plcTransferredSignal, { chainLength: row.chain_length }),
        );
      }
      await completeStatus(options.pool, row);
    } catch (error) {
      if (error instanceof WorkflowNotFoundError) {
        await completeStatus(options.pool, row);
        return;
      }
      const message = error instanceof Error ? error.message : String(error);
      options.log.warn({ err: error, token_id: row.token_id, attempts: row.attempts }, 'could not signal the PLC workflow; will retry');
      await failStatus(options.pool, row, retryDelayMs(row.attempts), message);
    }
  };

  const drainOnce = async (limit = options.batchSize): Promise<number> => {
    const rows = await claimDueStatuses(options.pool, limit, leaseMs);
    await Promise.all(rows.map((row) => deliver(row).catch((error: unknown) => options.log.warn({ err: error, token_id: row.token_id }, 'outbox bookkeeping failed'))));
    return rows.length;
  };

  const pause = (ms: number) =>
    new Promise<void>((resolve) => {
      wake = resolve;
      timer = setTimeout(resolve, ms);
    }).finally(() => {
      wake = undefined;
    });

  let leading = options.leadership === undefined;
  const loop = (async () => {
    while (!stopped) {
      if (options.leadership !== undefined) {
        leading = await options.leadership.ensure();
        if (stopped) break;
        if (!leading) {
          await pause(options.pollMs);
          continue;
        }
      }
      const started = Date.now();
      // Busy: one row per poll, so that the pause after it is short and the rate follows the load.
      const busy = isBusy();
      const rate = busy && options.whenBusy !== undefined ? Math.min(maxPerSecond, options.whenBusy.perSecond) : maxPerSecond;
      const batchSize = busy ? 1 : options.batchSize;
      let claimed = 0;
      try {
        claimed = await drainOnce(batchSize);
      } catch (error) {
        if (!stopped) options.log.warn({ err: error }, 'PLC status outbox poll failed');
      }
      if (stopped) break;
      const waitMs = pauseAfterPollMs({ claimed, elapsedMs: Date.now() - started, batchSize, pollMs: options.pollMs, maxPerSecond: rate });
      if (waitMs > 0) await pause(waitMs);
    }
  })();

  return {
    drainOnce,
    leading: () => leading,
    async stop() {
      stopped = true;
      if (timer !== undefined) clearTimeout(timer);
      wake?.();
      // Let an in-flight poll finish, but never hang a shutdown on a stuck database or Temporal:
      // whatever it had claimed comes back to a dispatcher when its lease ends.
      let bound: NodeJS.Timeout | undefined;
      await Promise.race([loop, new Promise<void>((resolve) => (bound = setTimeout(resolve, stopWaitMs)))]);
      clearTimeout(bound);
      await options.leadership?.release();
      leading = false;
    },
  };
}

/** Event-loop utilization (0 to 1) between successive calls. */
/**
 * The busier of this process's event loop and the host's CPUs since the previous call: the
 * dispatcher yields when either is busy. The loop alone misses replicas sharing the host (two API
 * processes on two CPUs each run their loops about half busy while the CPUs are saturated), and
 * the signals' cost (the Temporal server and the worker) lands on the same CPUs there.
 */
export function busyMeter(): () => number {
  const loop = eventLoopUtilizationMeter();
  const host = hostCpuUtilizationMeter();
  return () => Math.max(loop(), host());
}

/** The host's CPUs busy since the previous call (0 to 1), from the kernel's per-CPU times. */
export function hostCpuUtilizationMeter(read: () => readonly { times: os.CpuInfo['times'] }[] = os.cpus): () => number {
  let last = read();
  return () => {
    const now = read();
    const since = cpuBusyBetween(last, now);
    last = now;
    return since;
  };
}

/** The share of CPU time spent busy (not idle) between two readings of `os.cpus()`; 0 when no time passed. */
export function cpuBusyBetween(before: readonly { times: os.CpuInfo['times'] }[], after: readonly { times: os.CpuInfo['times'] }[]): number {
  let busy = 0;
  let total = 0;
  after.forEach((cpu, index) => {
    const earlier = before[index];
    if (earlier === undefined) return;
    const idle = cpu.times.idle - earlier.times.idle;
    const all = cpu.times.user + cpu.times.nice + cpu.times.sys + cpu.times.irq + cpu.times.idle - (earlier.times.user + earlier.times.nice + earlier.times.sys + earlier.times.irq + earlier.times.idle);
    busy += all - idle;
    total += all;
  });
  return total <= 0 ? 0 : Math.min(1, Math.max(0, busy / total));
}

export function eventLoopUtilizationMeter(): () => number {
  let last = performance.eventLoopUtilization();
  return () => {
    const now = performance.eventLoopUtilization();
    const since = performance.eventLoopUtilization(now, last);
    last = now;
    return since.utilization;
  };
}
