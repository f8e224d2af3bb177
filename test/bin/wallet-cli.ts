/**
 * Runs the wallet program as a user does: a child process per command, Node running bin/wallet.ts
 * directly. Shared by the wallet program's tests (test/bin) and the end-to-end journey (test/e2e).
 */
import { execFile } from 'node:child_process';
import { createServer } from 'node:net';
import { expect } from 'vitest';

export const walletPath = new URL('../../bin/wallet.ts', import.meta.url).pathname;
const commandTimeoutMs = 20_000;

export interface Run {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

export function wallet(dir: string, ...args: string[]): Promise<Run> {
  return new Promise((resolve) => {
    execFile(process.execPath, [walletPath, '--dir', dir, ...args], { timeout: commandTimeoutMs }, (error, stdout, stderr) => {
      const code = error === null ? 0 : typeof error.code === 'number' ? error.code : 1;
      resolve({ code, stdout, stderr });
    });
  });
}

/** Runs a command that must succeed; answers its stdout. */
export async function ok(dir: string, ...args: string[]): Promise<string> {
  const run = await wallet(dir, ...args);
  expect(run.code, `wallet ${args.join(' ')}: ${run.stderr}`).toBe(0);
  return run.stdout;
}

/** Runs a command that must be refused (exit status 1) with `error [code]`; answers the run. */
export async function refused(dir: string, code: string, ...args: string[]): Promise<Run> {
  const run = await wallet(dir, ...args);
  expect(run.code, `wallet ${args.join(' ')} should fail: ${run.stderr}`).toBe(1);
  expect(run.stderr).toContain(`error [${code}]`);
  return run;
}

/** The value of a `name: value` line of a command's output. */
export function field(output: string, name: string): string {
  const match = new RegExp(`^${name}:\\s+(\\S+)`, 'm').exec(output);
  if (match === null) throw new Error(`no ${name} in ${output}`);
  return match[1]!;
}

/** A local URL nothing listens on: a post there fails as a server outage would. */
export async function closedPortUrl(): Promise<string> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const address = probe.address();
  await new Promise((resolve) => probe.close(resolve));
  if (address === null || typeof address === 'string') throw new Error('no probe address');
  return `http://127.0.0.1:${address.port}`;
}
