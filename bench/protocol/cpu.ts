import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import type { Pool } from '../../db/pool.ts';
import type { ApiCpu } from './api-process.ts';
import type { ApiProcess } from './services.ts';

/**
 * CPU time per process over a measured window, read from /proc (Linux) or asked over IPC: the
 * API process (and its main thread), this process (the workers and the bench itself), the
 * PostgreSQL backends serving the benchmark's database, the Temporal dev server and the load
 * generator. On a 2-core machine that says where the time goes better than
 * any latency split: whoever burns the CPU is what limits throughput.
 */

const ticksPerSecond = (() => {
  const result = spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' });
  const value = Number(result.stdout?.trim());
  return Number.isFinite(value) && value > 0 ? value : 100;
})();

/**
 * CPU time of a process in seconds, all its threads: utime + stime from /proc/<pid>/stat (clock
 * ticks, 10 ms steps). Null when the process is gone or there is no /proc.
 */
export function processCpuSeconds(pid: number): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / ticksPerSecond;
  } catch {
    return null;
  }
}

/**
 * CPU time of a single-threaded process (a PostgreSQL backend) in seconds, exact: nanoseconds on
 * CPU from /proc/<pid>/schedstat where the kernel has it (a backend's few milliseconds would round
 * to zero in clock ticks), else `processCpuSeconds`.
 */
export function backendCpuSeconds(pid: number): number | null {
  try {
    const onCpuNs = Number(readFileSync(`/proc/${pid}/schedstat`, 'utf8').split(' ')[0]);
    if (Number.isFinite(onCpuNs)) return onCpuNs / 1e9;
  } catch {
    // no schedstat: clock ticks it is
  }
  return processCpuSeconds(pid);
}

export interface CpuSources {
  pool: Pool;
  api: ApiProcess;
  databaseName: string;
  temporalPid: number | undefined;
  loadPid?: number | undefined;
}

export interface CpuSnapshot {
  atMs: number;
  /** This process: the workers, and the bench (part c's load loops). */
  self: NodeJS.CpuUsage;
  api: ApiCpu;
  postgres: Map<number, number>;
  temporal: number | null;
  load: number | null;
}

export interface CpuSpent {
  wallS: number;
  /** CPU seconds in the window: the API process (Fastify, verification, the pg and Temporal clients). */
  apiProcessS: number;
  /** Of which its main thread (its JS event loop; not the garbage collector's helpers or the Temporal client's core). */
  apiMainThreadS: number;
  /** This process: both workers (activities, workflow threads, the Temporal core) and the bench itself. */
  workersS: number;
  postgresS: number;
  temporalS: number | null;
  loadS: number | null;
  /** Share of the window the API process's event loop was busy. */
  eventLoopUtilization: number;
}

async function postgresBackends(sources: CpuSources): Promise<Map<number, number>> {
  const result = await sources.pool.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE datname = $1', [sources.databaseName]);
  const out = new Map<number, number>();
  for (const { pid } of result.rows) {
    const seconds = backendCpuSeconds(pid);
    if (seconds !== null) out.set(pid, seconds);
  }
  return out;
}

export async function cpuSnapshot(sources: CpuSources): Promise<CpuSnapshot> {
  return {
    atMs: performance.now(),
    self: process.cpuUsage(),
    api: await sources.api.ask<ApiCpu>({ type: 'cpu' }),
    postgres: await postgresBackends(sources),
    temporal: sources.temporalPid === undefined ? null : processCpuSeconds(sources.temporalPid),
    load: sources.loadPid === undefined ? null : processCpuSeconds(sources.loadPid),
  };
}

export async function cpuSince(before: CpuSnapshot, sources: CpuSources): Promise<CpuSpent> {
  const after = await cpuSnapshot(sources);
  const self = process.cpuUsage(before.self);
  const seconds = (end: NodeJS.CpuUsage, start: NodeJS.CpuUsage) => (end.user - start.user + end.system - start.system) / 1e6;
  let postgresS = 0;
  // Backends present at both ends (the pools are warm by then); new ones count from zero.
  for (const [pid, seconds] of after.postgres) postgresS += seconds - (before.postgres.get(pid) ?? 0);
  const delta = (a: number | null, b: number | null) => (a === null || b === null ? null : b - a);
  return {
    wallS: (after.atMs - before.atMs) / 1000,
    apiProcessS: seconds(after.api.process, before.api.process),
    apiMainThreadS: seconds(after.api.mainThread, before.api.mainThread),
    workersS: (self.user + self.system) / 1e6,
    postgresS,
    temporalS: delta(before.temporal, after.temporal),
    loadS: delta(before.load, after.load),
    eventLoopUtilization: performance.eventLoopUtilization(after.api.loop, before.api.loop).utilization,
  };
}

/**
 * Waits (at most `maxMs`) until the Temporal dev server, the API and the workers are nearly idle, so a
 * measurement does not pay for the backlog of the step before it (e.g. workflow tasks of the
 * signals sent while preparing). Returns the last second's CPU use, in CPUs.
 */
export async function waitForQuiet(
  sources: CpuSources,
  log: (line: string) => void,
  options: { maxMs: number; busyBelowCpus: number },
): Promise<{ waitedMs: number; temporalCpus: number; apiCpus: number }> {
  const started = performance.now();
  let temporalCpus = Number.NaN;
  let apiCpus = Number.NaN;
  for (let second = 0; performance.now() - started < options.maxMs; second += 1) {
    const before = await cpuSnapshot(sources);
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const spent = await cpuSince(before, sources);
    temporalCpus = (spent.temporalS ?? 0) / spent.wallS;
    apiCpus = (spent.apiProcessS + spent.workersS) / spent.wallS;
    if (temporalCpus < options.busyBelowCpus && apiCpus < options.busyBelowCpus) break;
    if (second % 5 === 0) log(`  waiting for Temporal and the workers to go quiet: dev server ${temporalCpus.toFixed(2)} CPUs, API and workers ${apiCpus.toFixed(2)} CPUs`);
  }
  return { waitedMs: performance.now() - started, temporalCpus, apiCpus };
}
