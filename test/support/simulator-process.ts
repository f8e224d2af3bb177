import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { GiveUp, waitFor } from './wait.ts';

/**
 * The gateway simulator as a child process, started as `npm run start:simulator` starts it
 * (`node simulator/main.ts`, configured by its environment): its output so far and its exit.
 */
export interface SimulatorProcess {
  child: ChildProcess;
  /** stdout and stderr so far, interleaved. */
  output(): string;
  /** stderr so far. */
  stderr(): string;
  /** Resolves with the exit code once the process has exited. */
  exited: Promise<number | null>;
}

const root = path.resolve(import.meta.dirname, '../..');

export function spawnSimulator(env: Record<string, string>): SimulatorProcess {
  const child = spawn(process.execPath, ['simulator/main.ts'], { cwd: root, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => {
    output += chunk.toString('utf8');
  });
  child.stderr.on('data', (chunk: Buffer) => {
    output += chunk.toString('utf8');
    stderr += chunk.toString('utf8');
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, output: () => output, stderr: () => stderr, exited };
}

/** Waits for the simulator process to log that it listens, and returns its URL. */
export function listeningUrl(simulator: SimulatorProcess): Promise<string> {
  return waitFor(() => {
    if (simulator.child.exitCode !== null) throw new GiveUp(`the simulator process exited with ${simulator.child.exitCode}:\n${simulator.output()}`);
    return /"url":"(http:\/\/[^"]+)".*gateway simulator listening/.exec(simulator.output())?.[1];
  }, {
    what: 'the simulator process to listen',
    intervalMs: 20,
    describe: () => simulator.output().slice(-500),
  });
}
