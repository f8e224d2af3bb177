import { readFileSync } from 'node:fs';
import { open, readFile, rename, rm, writeFile } from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import { stopLeftoverPostgres } from './embedded-postgres.ts';
import { isAlive, waitGone } from './pids.ts';

/**
 * `npm start`'s claim on its data folder: `<DATA_DIR>/npm-start.json`, created exclusively at
 * start and removed at the end, says which supervisor runs the stack there and where each part
 * listens. A second `npm start` on the same folder reads it and says what is running and where
 * instead of failing on a locked cluster. A file left by a supervisor that was killed is stale:
 * the processes it lists that still run (PostgreSQL, Temporal, a draining child) are stopped,
 * and the new start goes on.
 */

export const stateFileName = 'npm-start.json';

export interface Endpoint {
  /** What listens: "API", "PostgreSQL (embedded)". */
  what: string;
  /** Where: a URL or host:port. */
  where: string;
  /** The port it needs free, and the variable that sets it, when the stack itself listens there. */
  port?: { host: string; port: number; variable: string };
}

export interface DevState {
  pid: number;
  startedAt: string;
  dataDir: string;
  endpoints: Endpoint[];
  /** The stack's processes by name, so a later start can stop what a killed supervisor left. */
  processes: Record<string, number | null>;
}

export class AlreadyRunningError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'AlreadyRunningError';
  }
}

/** The process's command line where /proc has it; null elsewhere (macOS), where we trust the pid. */
function commandLine(pid: number): string[] | null {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
  } catch {
    return null;
  }
}

export function runs(pid: number, fragment: string): boolean {
  if (!isAlive(pid)) return false;
  const line = commandLine(pid);
  return line === null || line.some((part) => part.includes(fragment));
}

export function describeRunning(state: DevState): string {
  const width = Math.max(...state.endpoints.map((endpoint) => endpoint.what.length), 'data folder'.length);
  const lines = [
    `npm start is already running with this data folder (pid ${state.pid}, since ${state.startedAt}):`,
    ...state.endpoints.map((endpoint) => `  ${endpoint.what.padEnd(width)}  ${endpoint.where}`),
    `  ${'data folder'.padEnd(width)}  ${state.dataDir}`,
    `Stop it first (Ctrl-C in its terminal, or kill -INT ${state.pid}), or start this one with its own DATA_DIR and ports`,
    '(PORT, EMBEDDED_POSTGRES_PORT, TEMPORAL_DEV_PORT, TEMPORAL_UI_PORT, SIMULATOR_PORT, SMTP_SINK_PORT).',
  ];
  return lines.join('\n');
}

/** Stops what a killed supervisor left running: its children first, PostgreSQL last. */
async function cleanUpAfter(state: DevState | null, dataDir: string, say: (line: string) => void): Promise<void> {
  const fragments: Record<string, string> = { api: 'api/server.ts', worker: 'worker/main.ts', simulator: 'simulator/main.ts', temporal: 'start-dev' };
  for (const [name, fragment] of Object.entries(fragments)) {
    const pid = state?.processes[name] ?? null;
    if (pid === null || !runs(pid, fragment)) continue;
    say(`stopping the ${name} an earlier npm start left running (pid ${pid})`);
    process.kill(pid, 'SIGTERM');
    if (!(await waitGone(pid, 15_000))) process.kill(pid, 'SIGKILL');
  }
  await stopLeftoverPostgres(dataDir, say);
}

export interface DataDirClaim {
  /** Records the processes' pids (rewritten atomically). */
  update(processes: Record<string, number | null>): Promise<void>;
  release(): Promise<void>;
}

/**
 * Claims `dataDir` for this supervisor. Throws AlreadyRunningError (its message says what runs
 * and where) when a live `npm start` holds it; cleans up after a dead one.
 */
export async function claimDataDir(options: {
  dataDir: string;
  endpoints: Endpoint[];
  say: (line: string) => void;
  /** A fragment of the supervisor's command line (default `dev.ts`; `npm run start:cluster`: `cluster.ts`). */
  program?: string;
}): Promise<DataDirClaim> {
  const file = path.join(options.dataDir, stateFileName);
  const state: DevState = {
    pid: process.pid,
    startedAt: new Date().toISOString(),
    dataDir: options.dataDir,
    endpoints: options.endpoints,
    processes: {},
  };
  for (let attempt = 0; ; attempt += 1) {
    try {
      const handle = await open(file, 'wx', 0o600);
      try {
        await handle.writeFile(`${JSON.stringify(state, null, 2)}\n`);
      } finally {
        await handle.close();
      }
      break;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST' || attempt > 0) throw error;
    }
    let previous: DevState | null = null;
    try {
      previous = JSON.parse(await readFile(file, 'utf8')) as DevState;
    } catch {
      previous = null;
    }
    if (previous !== null && previous.pid !== process.pid && runs(previous.pid, options.program ?? 'dev.ts')) {
      throw new AlreadyRunningError(describeRunning(previous));
    }
    options.say(`an earlier npm start (pid ${String(previous?.pid ?? 'unknown')}) ended without stopping: cleaning up after it`);
    await cleanUpAfter(previous, options.dataDir, options.say);
    await rm(file, { force: true });
  }
  // Another program on a port the stack needs would fail the start later with a vaguer error.
  const taken: string[] = [];
  for (const endpoint of options.endpoints) {
    if (endpoint.port !== undefined && (await answers(endpoint.port.host, endpoint.port.port))) {
      taken.push(`  ${endpoint.port.host}:${endpoint.port.port} (${endpoint.what}; set ${endpoint.port.variable} to another port)`);
    }
  }
  if (taken.length > 0) {
    await rm(file, { force: true });
    throw new AlreadyRunningError(
      [`another program already listens where npm start needs to (another npm start with another DATA_DIR, or a system service):`, ...taken].join('\n'),
    );
  }
  return {
    update: async (processes) => {
      state.processes = processes;
      const staging = `${file}.${process.pid}.tmp`;
      await writeFile(staging, `${JSON.stringify(state, null, 2)}\n`, { mode: 0o600 });
      await rename(staging, file);
    },
    release: () => rm(file, { force: true }),
  };
}

function answers(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host, port });
    const done = (value: boolean): void => {
      socket.destroy();
      resolve(value);
    };
    socket.setTimeout(1000, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}
