import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { inject } from 'vitest';
import { resolveTemporalCli } from '../../infra/temporal-cli.ts';
import { waitFor } from './wait.ts';

const run = promisify(execFile);

/** Runs the Temporal CLI against the test run's dev server and parses its JSON output. */
export async function temporalCliJson(args: string[]): Promise<unknown> {
  const cli = await resolveTemporalCli({ configured: process.env.TEMPORAL_CLI, allowBuild: false, progress: () => {} });
  if (cli === null) throw new Error('no Temporal CLI');
  const { stdout } = await run(cli.path, [...args, '--address', inject('temporalAddress'), '--output', 'json'], {
    maxBuffer: 16 * 1024 * 1024,
  });
  return JSON.parse(stdout) as unknown;
}

/** Polls `check` until it returns a value (visibility is eventually consistent); test/support/wait.ts's deadline. */
export async function eventually<T>(check: () => Promise<T | undefined>, timeoutMs = 30_000, what = 'an eventually consistent read'): Promise<T> {
  return waitFor(check, { what, timeoutMs, intervalMs: 200 });
}
