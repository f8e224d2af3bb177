import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, readdirSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stateFileName, type DevState } from '../../infra/dev-state.ts';
import { resolveTemporalCli } from '../../infra/temporal-cli.ts';
import { freePort } from '../../infra/temporal-dev-server.ts';
import { GiveUp, waitFor, within } from '../support/wait.ts';

/**
 * `npm start` as a person runs it, on ports and a data folder of its own (never the defaults, so
 * it collides with nothing): started through npm in a process group of its own, as a terminal
 * runs a foreground job, and stopped by SIGINT to that whole group, which is what Ctrl-C sends.
 * The API must drain (a deposit in flight when the signal arrives is booked and answered), the
 * worker finish, and only then the simulator, Temporal and PostgreSQL stop, a line per step. On
 * the way: a second `npm start` on the same folder says what runs and where, a worker killed
 * with SIGKILL is restarted by the supervisor while the rest keeps running, and the README's quick
 * start runs as written (its ports and paths swapped for this stack's).
 */

const root = fileURLToPath(new URL('../../', import.meta.url));

interface Stack {
  child: ChildProcess;
  output(): string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  env: Record<string, string>;
  base: string;
  dataDir: string;
}

let stack: Stack | null = null;
let dataDir = '';

function startNpm(env: Record<string, string>): Stack {
  // detached: a process group of its own, like a terminal's foreground job.
  const child = spawn('npm', ['start'], { cwd: root, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  const collect = (chunk: Buffer): void => {
    output += chunk.toString('utf8');
  };
  child.stdout?.on('data', collect);
  child.stderr?.on('data', collect);
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.once('exit', (code, signal) => resolve({ code, signal }));
  });
  return { child, output: () => output, exited, env, base: `http://127.0.0.1:${env.PORT ?? ''}`, dataDir: env.DATA_DIR ?? '' };
}

async function readState(): Promise<DevState> {
  return JSON.parse(await readFile(path.join(dataDir, stateFileName), 'utf8')) as DevState;
}

function startLines(output: string): string[] {
  return output
    .split('\n')
    .filter((line) => line.startsWith('[start] '))
    .map((line) => line.slice('[start] '.length));
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function adminToken(base: string): Promise<string> {
  const password = (await readFile(path.join(dataDir, 'admin-password'), 'utf8')).trim();
  const response = await fetch(`${base}/api/v1/auth/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ username: 'admin', password }),
  });
  expect(response.status).toBe(200);
  return ((await response.json()) as { access_token: string }).access_token;
}

function deposit(base: string, token: string, ownerId: string, idempotencyKey = `dev-start-${randomUUID()}`): Promise<Response> {
  return fetch(`${base}/api/v1/balance/deposit`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}`, 'idempotency-key': idempotencyKey },
    body: JSON.stringify({ owner_id: ownerId, amount: '12.34', currency: 'BRL' }),
  });
}

beforeAll(async () => {
  dataDir = await mkdtemp(path.join(tmpdir(), 'plc-dev-start-'));
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? '',
    HOME: process.env.HOME ?? '',
    ...(process.env.XDG_CACHE_HOME === undefined ? {} : { XDG_CACHE_HOME: process.env.XDG_CACHE_HOME }),
    ...(process.env.PLC_TOOLS_CACHE_DIR === undefined ? {} : { PLC_TOOLS_CACHE_DIR: process.env.PLC_TOOLS_CACHE_DIR }),
    ...(process.env.TEMPORAL_CLI === undefined ? {} : { TEMPORAL_CLI: process.env.TEMPORAL_CLI }),
    DATA_DIR: dataDir,
    PORT: String(await freePort()),
    EMBEDDED_POSTGRES_PORT: String(await freePort()),
    TEMPORAL_DEV_PORT: String(await freePort()),
    TEMPORAL_UI_PORT: String(await freePort()),
    SIMULATOR_PORT: String(await freePort()),
    SMTP_SINK_PORT: String(await freePort()),
    WORKER_METRICS_PORT: String(await freePort()),
    TEMPORAL_METRICS_BIND: `127.0.0.1:${await freePort()}`,
    SHUTDOWN_GRACE_MS: '20000',
  };
  stack = startNpm(env);
  const started = stack;
  await waitFor(() => (started.child.exitCode !== null ? Promise.reject(new GiveUp(`npm start exited:\n${started.output()}`)) : /\[start\] ready in/.test(started.output())), {
    what: 'npm start to be ready',
    timeoutMs: 100_000,
    intervalMs: 200,
    describe: () => started.output().slice(-2000),
  });
});

afterAll(async () => {
  // Only when a test failed half-way: nothing of the stack may outlive the run.
  if (stack !== null && stack.child.exitCode === null && stack.child.pid !== undefined) {
    const state = await readState().catch(() => null);
    try {
      process.kill(-stack.child.pid, 'SIGKILL');
    } catch {
      // already gone
    }
    for (const pid of Object.values(state?.processes ?? {})) {
      if (pid === null) continue;
      try {
        process.kill(-pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
  }
  await rm(dataDir, { recursive: true, force: true });
}, 60_000);

describe('npm start', () => {
  it('answers a second npm start on the same data folder with what runs and where', async () => {
    if (stack === null) throw new Error('not started');
    const second = startNpm(stack.env);
    const exit = await within(second.exited, { what: 'the second npm start to exit', timeoutMs: 30_000 });
    expect(exit.code).toBe(1);
    const output = second.output();
    expect(output).toContain('npm start is already running with this data folder');
    for (const port of ['PORT', 'EMBEDDED_POSTGRES_PORT', 'TEMPORAL_DEV_PORT', 'TEMPORAL_UI_PORT', 'SIMULATOR_PORT', 'SMTP_SINK_PORT', 'WORKER_METRICS_PORT']) {
      expect(output).toContain(`127.0.0.1:${stack.env[port] ?? ''}`);
    }
    expect(output).toContain(dataDir);
    expect(output).not.toContain('start failed');
    // The first one is untouched.
    expect((await fetch(`${stack.base}/readyz`)).status).toBe(200);
  });

  it('restarts a worker killed with SIGKILL; the API and the rest keep running', { timeout: 180_000 }, async () => {
    if (stack === null) throw new Error('not started');
    const before = await readState();
    const workerPid = before.processes.worker;
    const apiPid = before.processes.api;
    if (workerPid === null || workerPid === undefined) throw new Error('no worker pid');
    process.kill(workerPid, 'SIGKILL');
    const current = stack;
    await waitFor(() => /\[start\] worker restarted \(pid \d+\)/.test(current.output()), { what: 'the supervisor to restart the worker', timeoutMs: 30_000 });
    expect(startLines(current.output())).toContainEqual(expect.stringMatching(/^worker exited \(signal SIGKILL\): restarting it in 1\.0 s \(restart 1 of at most 5/));
    const after = await waitFor(async () => {
      const state = await readState();
      return state.processes.worker !== workerPid ? state : undefined;
    }, { what: 'the new worker pid in the state file' });
    expect(after.processes.api).toBe(apiPid);
    // The new worker books a deposit (the workflow runs on it).
    const token = await adminToken(current.base);
    // Until the new worker has bundled its workflows and polls, the deposit's update waits past the
    // API's Temporal deadline and is answered 503 with Retry-After: a client retries it with the
    // same Idempotency-Key, as here, and it is booked once.
    const key = `dev-start-restart-${randomUUID()}`;
    const statuses: number[] = [];
    const booked = await waitFor(
      async () => {
        const response = await deposit(current.base, token, 'dev-start-restart', key);
        statuses.push(response.status);
        return response.status === 503 ? undefined : response;
      },
      { what: 'the restarted worker to book a deposit (503 until it polls)', timeoutMs: 90_000, intervalMs: 1_000 },
    );
    expect(booked.status, `statuses seen: ${statuses.join(', ')}`).toBe(200);
  });

  it('runs the README quick start as written, twice (it can be pasted again), from the deposit to the payout and the Temporal CLI', { timeout: 240_000 }, async () => {
    if (stack === null) throw new Error('not started');
    const readme = await readFile(path.join(root, 'README.md'), 'utf8');
    const section = readme.split(/^## /m).find((part) => part.startsWith('Quick start'));
    if (section === undefined) throw new Error('README.md has no "## Quick start" section');
    const blocks = [...section.matchAll(/```sh\n([\s\S]*?)```/g)].map((match) => match[1] ?? '');
    expect(blocks).toHaveLength(2);
    const cli = await resolveTemporalCli({ configured: process.env.TEMPORAL_CLI, allowBuild: false, progress: () => {} });
    if (cli === null) throw new Error('no Temporal CLI');
    const wallets = path.join(dataDir, 'quickstart-wallets');
    const script = blocks
      .join('\n')
      .replaceAll('http://127.0.0.1:8000', stack.base)
      .replaceAll('http://127.0.0.1:8233', `http://127.0.0.1:${stack.env.TEMPORAL_UI_PORT ?? ''}`)
      .replaceAll('.data/admin-password', path.join(dataDir, 'admin-password'))
      .replaceAll('.wallets/', `${wallets}/`)
      .replaceAll('~/.cache/plc-settlement/tools/temporal-cli-v1.5.1/temporal', cli.path);
    // Every default was swapped: the script must not reach a stack on the default ports.
    expect(script).not.toMatch(/:8000|:8233|\.data\/|\.wallets\/|~\/\.cache/);
    const runScript = () => new Promise<{ code: number | null; output: string }>((resolve) => {
      const child = spawn('bash', ['-euo', 'pipefail', '-c', script], {
        cwd: root,
        // The CLI's default address (localhost:7233) is this stack's Temporal through TEMPORAL_ADDRESS.
        env: { PATH: stack?.env.PATH ?? '', HOME: stack?.env.HOME ?? '', TEMPORAL_ADDRESS: `127.0.0.1:${stack?.env.TEMPORAL_DEV_PORT ?? ''}` },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let output = '';
      child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
      child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
      child.once('exit', (code) => resolve({ code, output }));
    });
    // Pasted twice: the second run's wallets and deposit are its own, so it ends the same way.
    const first = await runScript();
    expect(first.code, first.output).toBe(0);
    const run = await runScript();
    expect(run.code, run.output).toBe(0);
    expect(readdirSync(wallets)).toHaveLength(2);
    expect(run.output).toContain('"available":"50.00"');
    expect(run.output).toMatch(/redemption_id: [0-9a-f-]{36}\nstatus: +PENDING_PAYMENT/);
    expect(run.output).toMatch(/"status":"SETTLED".*"gateway_status":"DONE"/);
    expect(run.output).toMatch(/"status":"REDEEMED"/);
    expect(run.output).toMatch(/"available":"40\.00".*"promised":"0\.00"/);
    // The CLI found the redemption's workflow by its TokenId, the PLC's expiry bucket by its type, and the deposit's.
    expect(run.output).toMatch(/plc-expiry-[0-9T:-]+Z\s+plcExpiryBucketWorkflow/);
    expect(run.output).toMatch(/redemption-[0-9a-f-]{36}\s+redemptionWorkflow/);
    expect(run.output).toContain('WorkflowExecutionStarted');
    expect(run.output).toMatch(/WorkflowId\s+deposit-quickstart-deposit-\d+/);
  });

  it("serves the worker's metrics on a port of its own, ledger postings among them", async () => {
    if (stack === null) throw new Error('not started');
    const workerMetrics = `http://127.0.0.1:${stack.env.WORKER_METRICS_PORT ?? ''}/metrics`;
    const sdkMetrics = `http://${stack.env.TEMPORAL_METRICS_BIND ?? ''}/metrics`;
    expect(startLines(stack.output())).toContainEqual(`metrics:      API ${stack.base}/metrics, worker ${workerMetrics}, Temporal SDK ${sdkMetrics}`);
    const worker = await (await fetch(workerMetrics)).text();
    // The quick start's deposits, PLCs and payouts were posted by the worker's activities.
    expect(worker).toMatch(/^plc_ledger_postings_total\{[^}]*\} [1-9]\d*$/m);
    expect(worker).toMatch(/^plc_redemptions_total\{[^}]*\} [1-9]\d*$/m);
    expect(await (await fetch(sdkMetrics)).text()).toMatch(/^temporal_/m);
    expect((await fetch(`${stack.base}/metrics`)).status).toBe(200);
  });

  it('logs JSON off a terminal, and an expected refusal as one line with its code, not a stack', async () => {
    if (stack === null) throw new Error('not started');
    const current = stack;
    const from = current.output().length;
    const dir = path.join(dataDir, 'refused-wallet');
    const wallet = (...args: string[]) =>
      new Promise<{ code: number | null; stderr: string }>((resolve) => {
        const child = spawn(process.execPath, [path.join(root, 'bin/wallet.ts'), '--dir', dir, ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
        let stderr = '';
        child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
        child.once('exit', (code) => resolve({ code, stderr }));
      });
    expect((await wallet('init')).code).toBe(0);
    // Nothing deposited: the create is refused for insufficient funds.
    const refused = await wallet('create', '--amount', '3.00', '--currency', 'BRL', '--ttl-hours', '2', '--server', `${current.base}/api/v1`);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('INSUFFICIENT_FUNDS');
    // The create is one statement on the request path (docs/plc.md): the API answers the refusal,
    // and its request record is the one line it leaves.
    const logged = await waitFor(() => {
      const lines = current.output().slice(from).split('\n');
      return lines.some((line) => line.includes('"statusCode":409')) ? lines : undefined;
    }, { what: 'the refusal in the logs' });
    const records = logged.filter((line) => line.startsWith('{')).map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(records.some((record) => record.name === 'api' && JSON.stringify(record).includes('/api/v1/plc/create'))).toBe(true);
    // Every line is a record of its own: no stack trace, no multi-line SDK output.
    expect(logged.filter((line) => line !== '' && !line.startsWith('{') && !line.startsWith('[start] '))).toEqual([]);
    expect(logged.join('\n')).not.toMatch(/^\s+at /m);
  });

  it('stops in order on Ctrl-C to the process group: the API drains, the worker finishes, PostgreSQL stops last', async () => {
    if (stack === null || stack.child.pid === undefined) throw new Error('not started');
    const current = stack;
    const group = stack.child.pid;
    const state = await readState();
    const token = await adminToken(current.base);
    const linesBefore = current.output().length;
    // A deposit in flight when the signal arrives: sent, and seen by the API, before Ctrl-C.
    const inFlight = deposit(current.base, token, 'dev-start-drain');
    await waitFor(() => current.output().slice(linesBefore).includes('/api/v1/balance/deposit'), { what: 'the API to take the deposit', intervalMs: 5 });
    process.kill(-group, 'SIGINT');
    const response = await inFlight;
    expect(response.status).toBe(200);
    expect(((await response.json()) as { available: string }).available).toBe('12.34');

    const exit = await within(current.exited, { what: 'npm start to exit after Ctrl-C', timeoutMs: 90_000 });
    // npm re-raises the signal it got once its script has ended, as a terminal shows after Ctrl-C.
    expect(exit).toEqual({ code: null, signal: 'SIGINT' });
    const lines = startLines(current.output());
    const stopAt = lines.findIndex((line) => line.startsWith('stopping (SIGINT)'));
    expect(stopAt).toBeGreaterThan(-1);
    const steps = lines.slice(stopAt);
    // Every step ended by itself: none was forced ("it ended with ...", "killing it").
    expect(steps.map((line) => line.replace(/ in [\d.]+ s/, ''))).toEqual([
      'stopping (SIGINT): api, then worker, then simulator, then mail, then temporal, then postgres',
      'stop 1/6: the API drained its requests and stopped',
      'stop 2/6: the worker finished its activities and stopped',
      'stop 3/6: the gateway simulator stopped (its state kept in the data folder)',
      'stop 4/6: the SMTP sink stopped',
      'stop 5/6: Temporal dev server stopped',
      'stop 6/6: PostgreSQL stopped',
      'stopped',
    ]);
    // Nothing of the stack is left, and the data folder is free for the next start.
    for (const [name, pid] of Object.entries(state.processes)) {
      if (pid !== null) expect(alive(pid), `${name} (pid ${pid}) still running`).toBe(false);
    }
    expect(existsSync(path.join(dataDir, stateFileName))).toBe(false);
    expect(existsSync(path.join(dataDir, 'postgres', 'postmaster.pid'))).toBe(false);
    // PostgreSQL was up until its own step: no connection of the API or the worker was cut.
    expect(current.output()).not.toMatch(/terminating connection due to administrator command|ECONNREFUSED/);
    stack = null;
  });
});
