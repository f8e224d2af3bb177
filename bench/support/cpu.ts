import { readFile } from 'node:fs/promises';

/**
 * CPU time, which a busy machine does not distort the way it distorts wall-clock throughput:
 * of this process (`process.cpuUsage`) and of local PostgreSQL backends (`/proc/<pid>/stat`,
 * Linux only, readable when the server runs on this machine as a user we may inspect).
 */

/** Linux reports utime/stime in clock ticks; USER_HZ is 100 on every mainstream kernel build. */
const ticksPerSecond = 100;

/** User + system CPU milliseconds of one process, or null when /proc cannot tell. */
export async function processCpuMs(pid: number): Promise<number | null> {
  try {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name (which may contain spaces) start at "state" (field 3).
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const utime = Number(fields[11]);
    const stime = Number(fields[12]);
    if (!Number.isFinite(utime) || !Number.isFinite(stime)) return null;
    return ((utime + stime) * 1000) / ticksPerSecond;
  } catch {
    return null;
  }
}

/** Total CPU milliseconds of several processes, or null if any cannot be read. */
export async function processesCpuMs(pids: readonly number[]): Promise<number | null> {
  const values = await Promise.all(pids.map(processCpuMs));
  if (values.some((value) => value === null)) return null;
  return values.reduce<number>((sum, value) => sum + (value ?? 0), 0);
}

/** This process's user + system CPU milliseconds. */
export function ownCpuMs(): number {
  const usage = process.cpuUsage();
  return (usage.user + usage.system) / 1000;
}
