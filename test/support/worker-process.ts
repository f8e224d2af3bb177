import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { inject } from 'vitest';
import { workerPreloadUrl } from '../../worker/workflow-thread-guard.ts';
import type { TestApp } from './app.ts';
import { GiveUp, waitFor } from './wait.ts';

/**
 * The worker as a real child process, started as deployed (`node --import ./worker/preload.ts worker/main.ts`), so a test can kill it with SIGKILL
 * in the middle of a workflow, as a crash would, and start another.
 */
export interface WorkerProcess {
  child: ChildProcess;
  output(): string;
  kill(signal?: NodeJS.Signals): Promise<void>;
}

export async function startWorkerProcess(t: TestApp, startedTimeoutMs = 120_000): Promise<WorkerProcess> {
  const file = fileURLToPath(new URL('../../worker/main.ts', import.meta.url));
  const child = spawn(process.execPath, ['--import', workerPreloadUrl, file], {
    env: {
      ...process.env,
      APP_ENV: 'test',
      LOG_LEVEL: 'info',
      DATABASE_URL: t.db.url,
      TEMPORAL_ADDRESS: inject('temporalAddress'),
      TEMPORAL_TASK_QUEUE: t.taskQueue,
      GATEWAY_BASE_URL: t.config.GATEWAY_BASE_URL,
      GATEWAY_API_KEY: t.config.GATEWAY_API_KEY,
      GATEWAY_WEBHOOK_TOKEN: t.config.GATEWAY_WEBHOOK_TOKEN,
      GATEWAY_TIMEOUT_MS: String(t.config.GATEWAY_TIMEOUT_MS),
      SHUTDOWN_GRACE_MS: '1000',
      // Schedules are per namespace, which test files share: no test worker keeps one.
      GATEWAY_AUDIT_INTERVAL_MS: '0',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const collect = (chunk: Buffer): void => {
    output = (output + chunk.toString('utf8')).slice(-20_000);
  };
  child.stdout?.on('data', collect);
  child.stderr?.on('data', collect);
  try {
    await waitFor(
      () => {
        if (child.exitCode !== null) throw new GiveUp(`worker exited early:\n${output}`);
        return output.includes('worker started');
      },
      { what: 'the worker process to start', timeoutMs: startedTimeoutMs, intervalMs: 100, describe: () => output.slice(-2000) },
    );
  } catch (error) {
    child.kill('SIGKILL');
    throw error;
  }
  return {
    child,
    output: () => output,
    kill: (signal: NodeJS.Signals = 'SIGKILL') =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill(signal);
      }),
  };
}
