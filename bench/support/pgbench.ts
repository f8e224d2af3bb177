import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

/**
 * The issues' yardstick for this machine: "pgbench TPC-B-like, 8 clients, runs about 4,500
 * transactions/s on this machine's PostgreSQL 15". Machines differ from session to session (and
 * from the one the targets were set on), so the benchmarks run the same pgbench on the same
 * server in the same run and print each absolute target scaled by the ratio, beside the absolute
 * verdict: a target of T per second there is T x (measured tps / 4,500) here.
 */
export const referencePgbenchTps = 4_500;

const run = promisify(execFile);

export interface PgbenchRun {
  tps: number;
  clients: number;
  durationS: number;
}

/** `pgbench -i` at this scale into the database at `url` (its own pgbench_* tables); false when pgbench is not installed. */
export async function pgbenchInit(url: string, scale = 10): Promise<boolean> {
  try {
    await run('pgbench', ['-i', '-q', '-s', String(scale), url], { timeout: 300_000 });
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw error;
  }
}

/** One TPC-B-like run (the default pgbench script) with `clients` clients on 2 threads. */
export async function pgbenchTpcb(url: string, options: { clients?: number; durationS?: number } = {}): Promise<PgbenchRun> {
  const clients = options.clients ?? 8;
  const durationS = options.durationS ?? 10;
  const { stdout } = await run('pgbench', ['-n', '-c', String(clients), '-j', '2', '-T', String(durationS), url], {
    timeout: (durationS + 60) * 1000,
  });
  const match = /tps = ([\d.]+) \(without initial connection time\)/.exec(stdout);
  if (match === null) throw new Error(`pgbench printed no tps:\n${stdout}`);
  return { tps: Number(match[1]), clients, durationS };
}

/** Drops what pgbenchInit created. */
export const pgbenchTablesDrop = 'DROP TABLE IF EXISTS pgbench_accounts, pgbench_branches, pgbench_history, pgbench_tellers';
