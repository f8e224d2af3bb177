import { readFile } from 'node:fs/promises';
import { performance, type EventLoopUtilization } from 'node:perf_hooks';
import pg from 'pg';
import { ownCpuMs, processCpuMs } from '../support/cpu.ts';

/**
 * CPU spent during one phase, by process: this Node process (API, both workers, simulator and
 * load driver share it), the Temporal dev server, the PostgreSQL backends of the bench database
 * (from /proc, local server only), and the whole machine (/proc/stat), so that what others ran
 * meanwhile shows. Also this process's event-loop utilisation.
 */

export interface CpuSnapshot {
  own: number;
  /** This process's main thread only (API, activities, simulator, driver; not the workflow thread or the SDK core). */
  ownMain: number;
  temporal: number | null;
  postgres: Map<number, number>;
  machine: { busyMs: number; totalMs: number } | null;
  elu: EventLoopUtilization;
  at: number;
}

export interface CpuSpent {
  wallMs: number;
  ownMs: number;
  ownMainThreadMs: number;
  temporalMs: number | null;
  postgresMs: number | null;
  /** Busy CPU of the whole machine (all processes, ours included). */
  machineBusyMs: number | null;
  machineCapacityMs: number | null;
  eventLoopUtilization: number;
}

const ticksPerSecond = 100;

function mainThreadCpuMs(): number {
  const usage = process.threadCpuUsage();
  return (usage.user + usage.system) / 1000;
}

async function machineTicks(): Promise<{ busyMs: number; totalMs: number } | null> {
  try {
    const line = (await readFile('/proc/stat', 'utf8')).split('\n')[0] ?? '';
    const values = line.trim().split(/\s+/).slice(1).map(Number);
    if (values.length < 5 || values.some((value) => !Number.isFinite(value))) return null;
    // user nice system idle iowait irq softirq steal (guest is already inside user).
    const total = values.slice(0, 8).reduce((sum, value) => sum + value, 0);
    const idle = (values[3] ?? 0) + (values[4] ?? 0);
    return { busyMs: ((total - idle) * 1000) / ticksPerSecond, totalMs: (total * 1000) / ticksPerSecond };
  } catch {
    return null;
  }
}

export class CpuMeter {
  readonly #admin: pg.Client;
  readonly #database: string;
  readonly #temporalPid: number | undefined;

  private constructor(admin: pg.Client, database: string, temporalPid: number | undefined) {
    this.#admin = admin;
    this.#database = database;
    this.#temporalPid = temporalPid;
  }

  static async open(databaseUrl: string, database: string, temporalPid: number | undefined): Promise<CpuMeter> {
    const admin = new pg.Client({ connectionString: databaseUrl, application_name: 'bench-settlement-cpu' });
    await admin.connect();
    return new CpuMeter(admin, database, temporalPid);
  }

  async close(): Promise<void> {
    await this.#admin.end();
  }

  async snapshot(): Promise<CpuSnapshot> {
    const pids = await this.#admin.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()', [this.#database]);
    const postgres = new Map<number, number>();
    for (const { pid } of pids.rows) {
      const ms = await processCpuMs(pid);
      if (ms !== null) postgres.set(pid, ms);
    }
    return {
      own: ownCpuMs(),
      ownMain: mainThreadCpuMs(),
      temporal: this.#temporalPid === undefined ? null : await processCpuMs(this.#temporalPid),
      postgres,
      machine: await machineTicks(),
      elu: performance.eventLoopUtilization(),
      at: performance.now(),
    };
  }

  static spent(before: CpuSnapshot, after: CpuSnapshot): CpuSpent {
    let postgresMs: number | null = after.postgres.size === 0 ? null : 0;
    for (const [pid, ms] of after.postgres) {
      // A backend that started during the phase spent all of its CPU in it.
      if (postgresMs !== null) postgresMs += ms - (before.postgres.get(pid) ?? 0);
    }
    const machine = before.machine !== null && after.machine !== null ? after.machine : null;
    return {
      wallMs: after.at - before.at,
      ownMs: after.own - before.own,
      ownMainThreadMs: after.ownMain - before.ownMain,
      temporalMs: before.temporal !== null && after.temporal !== null ? after.temporal - before.temporal : null,
      postgresMs,
      machineBusyMs: machine === null || before.machine === null ? null : machine.busyMs - before.machine.busyMs,
      machineCapacityMs: machine === null || before.machine === null ? null : machine.totalMs - before.machine.totalMs,
      eventLoopUtilization: performance.eventLoopUtilization(after.elu, before.elu).utilization,
    };
  }
}
