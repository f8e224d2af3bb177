import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { Worker as Thread } from 'node:worker_threads';
import { Client, Connection } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { findStuck, workerPreloadUrl as preload } from '../../worker/workflow-thread-guard.ts';
import { GiveUp, waitFor } from '../support/wait.ts';

/**
 * The workflow-thread guard (worker/workflow-thread-guard.ts): its bookkeeping, that it leaves
 * other vm users' timeouts alone, and, against the dev server, a worker process preloaded as
 * deployed running workflows and ending itself (exit 70) when one never yields, where the SDK's
 * own per-call detector (no preload) keeps the process alive.
 */

const guardWorker = fileURLToPath(new URL('./fixtures/guard-worker.ts', import.meta.url));

function slot(startedAtMs: number, limitMs: number): BigInt64Array {
  return BigInt64Array.from([BigInt(startedAtMs), BigInt(limitMs)]);
}

describe('findStuck', () => {
  it('reports a call past its limit once, and again only after the thread went idle', () => {
    const records = [
      { threadId: 1, slot: slot(0, 5000), reported: false },
      { threadId: 2, slot: slot(10_000, 5000), reported: false },
      { threadId: 3, slot: slot(14_000, 5000), reported: false },
    ];
    expect(findStuck(records, 15_000)).toEqual([]);
    expect(findStuck(records, 15_001)).toEqual([{ threadId: 2, runningMs: 5001, limitMs: 5000 }]);
    expect(findStuck(records, 16_000)).toEqual([]);
    Atomics.store(records[1]!.slot, 0, 0n);
    Atomics.store(records[2]!.slot, 0, 0n);
    expect(findStuck(records, 16_100)).toEqual([]);
    Atomics.store(records[1]!.slot, 0, 20_000n);
    expect(findStuck(records, 25_001)).toEqual([{ threadId: 2, runningMs: 5001, limitMs: 5000 }]);
  });
});

describe('a preloaded thread that is not a workflow thread', () => {
  it('keeps Node vm timeouts for its own calls', async () => {
    const thread = new Thread(
      `const vm = require('node:vm');
       const { parentPort } = require('node:worker_threads');
       try { vm.runInContext('for (;;) {}', vm.createContext({}), { timeout: 100 }); parentPort.postMessage('returned'); }
       catch (error) { parentPort.postMessage(error.code); }`,
      { eval: true, execArgv: ['--import', preload] },
    );
    const answer = await new Promise((resolve, reject) => {
      thread.once('message', resolve);
      thread.once('error', reject);
    });
    await thread.terminate();
    expect(answer).toBe('ERR_SCRIPT_EXECUTION_TIMEOUT');
  });
});

interface Child {
  process: ChildProcess;
  output(): string;
  exited: Promise<number | null>;
}

async function startGuardWorker(taskQueue: string, withPreload: boolean): Promise<Child> {
  const child = spawn(process.execPath, [...(withPreload ? ['--import', preload] : []), guardWorker], {
    env: { ...process.env, TEMPORAL_ADDRESS: inject('temporalAddress'), TASK_QUEUE: taskQueue },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  await waitFor(
    () => {
      if (child.exitCode !== null) throw new GiveUp(`guard worker exited early:\n${output}`);
      return /guard (on|off)/.test(output);
    },
    { what: 'the guard worker to start', timeoutMs: 120_000, describe: () => output.slice(-2000) },
  );
  return { process: child, output: () => output, exited };
}

describe('a worker process against the dev server', () => {
  let connection: Connection;
  let client: Client;
  const children: Child[] = [];
  beforeAll(async () => {
    connection = await Connection.connect({ address: inject('temporalAddress') });
    client = new Client({ connection });
  });
  afterAll(async () => {
    for (const child of children) if (child.process.exitCode === null) child.process.kill('SIGKILL');
    await connection?.close();
  });

  it('with the preload: runs workflows, and ends itself with exit code 70 when one never yields', async () => {
    const taskQueue = `guard-${randomUUID()}`;
    const child = await startGuardWorker(taskQueue, true);
    children.push(child);
    expect(child.output()).toContain('guard on');
    await expect(client.workflow.execute('answers', { taskQueue, workflowId: `answers-${randomUUID()}`, args: [41] })).resolves.toBe(42);

    const started = Date.now();
    const spinning = await client.workflow.start('spinsForever', { taskQueue, workflowId: `spins-${randomUUID()}`, args: [] });
    const code = await child.exited;
    const tookMs = Date.now() - started;
    await spinning.terminate('test over');
    expect(code).toBe(70);
    // The SDK's limit (5 s) passed first: it is the guard that ended it, not a crash.
    expect(tookMs).toBeGreaterThanOrEqual(5000);
    const fatal = child.output().split('\n').find((line) => line.includes('"level":"fatal"'));
    expect(fatal).toBeDefined();
    expect(JSON.parse(fatal as string)).toMatchObject({ limitMs: 5000, msg: expect.stringContaining('deadlock') });
  });

  it('without it: the SDK times the call out itself and the process stays up', async () => {
    const taskQueue = `guard-off-${randomUUID()}`;
    const child = await startGuardWorker(taskQueue, false);
    children.push(child);
    expect(child.output()).toContain('guard off');
    const spinning = await client.workflow.start('spinsForever', { taskQueue, workflowId: `spins-${randomUUID()}`, args: [] });
    // The SDK's own limit (5 s) fails the workflow task; the process lives on.
    await waitFor(
      async () => {
        const history = await spinning.fetchHistory();
        return (history.events ?? []).some((event) => event.workflowTaskFailedEventAttributes !== undefined && event.workflowTaskFailedEventAttributes !== null);
      },
      { what: 'the SDK to fail the spinning workflow task', intervalMs: 250 },
    );
    expect(child.process.exitCode).toBeNull();
    await spinning.terminate('test over');
    child.process.kill('SIGTERM');
    await child.exited;
  });
});
