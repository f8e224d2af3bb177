import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmod, mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startEmbeddedPostgres, templateDirFor, type EmbeddedDatabase, type EmbeddedPostgresOptions } from '../../infra/embedded-postgres.ts';
import { resolveTemporalCli, toolsCacheDir } from '../../infra/temporal-cli.ts';
import { freePort, startTemporalDevServer, type DevServer } from '../../infra/temporal-dev-server.ts';
import type { TransferWire } from '../../gateway/wire.ts';
import { createSimulator, type Simulator } from '../../simulator/app.ts';
import { workerPreloadUrl } from '../../worker/workflow-thread-guard.ts';

/**
 * The service a chaos campaign runs against, started from nothing and owned by the campaign: an
 * embedded PostgreSQL and a Temporal dev server of its own (data in a temporary directory), the
 * gateway simulator in this process (the gateway is the outside world: it is never killed), and
 * the API and the worker as child processes started as production starts them. The campaign can
 * SIGKILL the worker, SIGKILL the whole stack (API, worker, Temporal, PostgreSQL and its
 * backends) and start it again on the same data, and freeze a dependency (SIGSTOP, then SIGCONT)
 * to every one of its processes. Only processes this stack started are ever signalled, by id.
 *
 * Ports: `base` + 0 the API, + 10 the simulator, + 232 PostgreSQL, + 233 Temporal (18000 by
 * default for `npm run chaos`: below the ephemeral range, so a test's free port never takes one);
 * `'free'` picks free ports (the short campaign inside `npm test`).
 */

const root = fileURLToPath(new URL('../..', import.meta.url));

export interface StackOptions {
  ports: number | 'free';
  seed: number;
  log: (line: string) => void;
  /**
   * Where the gateway simulator runs: in this process (the chaos campaign: it reaches into the
   * simulator's state), or as a child process with its state in a SQLite file (the simulation,
   * scripts/sim: it SIGKILLs the gateway too and drives it through its HTTP controls, `gateway`).
   */
  simulatorMode?: 'in-process' | 'process';
}

/** The gateway as the outside world sees it (its API and its /sim controls, over HTTP): both simulator modes. */
export interface GatewayControl {
  /** Every transfer the gateway holds, oldest first (its API, a page of 100 at a time). */
  transfers(filter?: { externalReference?: string }): Promise<TransferWire[]>;
  /** The bank pays out (DONE) or refuses (FAILED) a transfer in BANK_PROCESSING. */
  complete(id: string): Promise<TransferWire>;
  fail(id: string, reason: string): Promise<TransferWire>;
  /** A transfer made by anyone holding the gateway's API key (a rogue one, say). */
  createTransfer(body: { value: number; pixAddressKey: string; pixAddressKeyType: string; description: string; externalReference: string }): Promise<TransferWire>;
  faults(patch: Record<string, unknown>): Promise<void>;
  resetFaults(): Promise<void>;
}

export interface Ports {
  api: number;
  simulator: number;
  postgres: number;
  temporal: number;
}

/** A child process of the stack (API or worker) and the tail of its output, for a report when it fails. */
interface Child {
  name: string;
  process: ChildProcess;
  output: () => string;
}

export interface Stack {
  ports: Ports;
  apiUrl: string;
  databaseUrl: string;
  temporalAddress: string;
  /** The in-process simulator (mode 'in-process'); reading it in mode 'process' throws. */
  simulator: Simulator;
  simulatorUrl: string;
  gateway: GatewayControl;
  webhookToken: string;
  admin: { username: string; password: string };
  taskQueue: string;
  /** SIGKILL the worker, as a crash would; `startWorker` brings one back. */
  killWorker(): Promise<void>;
  startWorker(): Promise<void>;
  /** SIGKILL the API alone and start it again (the worker, Temporal and PostgreSQL keep running). */
  killApi(): Promise<void>;
  /** SIGKILL the gateway simulator (mode 'process' only) and start it again on its state file. */
  killSimulator(): Promise<void>;
  /** SIGKILL the API, the worker, Temporal and every PostgreSQL process at once, then start them again on the same data. */
  killAll(): Promise<void>;
  /** SIGSTOP every process of a dependency, and SIGCONT them after `ms`. */
  freeze(what: 'postgres' | 'temporal', ms: number): Promise<void>;
  stop(): Promise<void>;
}

async function pickPorts(ports: number | 'free'): Promise<Ports> {
  if (ports === 'free') return { api: await freePort(), simulator: await freePort(), postgres: await freePort(), temporal: await freePort() };
  return { api: ports, simulator: ports + 10, postgres: ports + 232, temporal: ports + 233 };
}

/** The process and every descendant of it (PostgreSQL's postmaster forks a backend per connection). */
export async function processTree(pid: number): Promise<number[]> {
  const parents = new Map<number, number[]>();
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = await readFile(`/proc/${entry}/stat`, 'utf8');
      // The command name may contain spaces and parentheses: the fields after the last ')' are fixed.
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      const children = parents.get(ppid) ?? [];
      children.push(Number(entry));
      parents.set(ppid, children);
    } catch {
      // The process ended while we looked.
    }
  }
  const tree: number[] = [];
  const queue = [pid];
  for (let i = 0; i < queue.length && i < 10_000; i += 1) {
    const current = queue[i] as number;
    tree.push(current);
    queue.push(...(parents.get(current) ?? []));
  }
  return tree;
}

function signalAll(pids: readonly number[], signal: NodeJS.Signals): void {
  for (const pid of pids) {
    try {
      process.kill(pid, signal);
    } catch {
      // Already gone.
    }
  }
}

async function waitGone(pids: readonly number[], timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const alive = pids.filter((pid) => {
      try {
        process.kill(pid, 0);
        return true;
      } catch {
        return false;
      }
    });
    if (alive.length === 0) return;
    if (Date.now() > deadline) throw new Error(`processes ${alive.join(', ')} still alive after SIGKILL`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

async function waitFor(check: () => Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return;
    if (Date.now() > deadline) throw new Error(`${what} within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

export async function startStack(options: StackOptions): Promise<Stack> {
  const { log } = options;
  const ports = await pickPorts(options.ports);
  const dataDir = await mkdtemp(path.join(tmpdir(), 'plc-chaos-'));
  // PostgreSQL runs as its own system user when we are root: it must reach its data directory.
  await chmod(dataDir, 0o755);
  const webhookToken = `chaos-webhook-${randomBytes(12).toString('hex')}`;
  const admin = { username: 'chaos-admin', password: randomBytes(18).toString('base64url') };
  const apiUrl = `http://127.0.0.1:${ports.api}`;
  const taskQueue = 'chaos';
  const cleanups: (() => Promise<void>)[] = [async () => rm(dataDir, { recursive: true, force: true })];
  const children: Child[] = [];
  // Never leave a child behind, however this process ends.
  const killChildren = (): void => {
    for (const child of children) child.process.kill('SIGKILL');
  };
  process.once('exit', killChildren);

  try {
    log(`starting PostgreSQL on ${ports.postgres}, Temporal on ${ports.temporal}, the simulator on ${ports.simulator}, the API on ${ports.api} (data in ${dataDir})`);
    // A cluster copied from the cached template (initdb once per machine, as the tests do); kept
    // durable (fsync on): the campaign kills it and expects it to recover.
    const postgresOptions: EmbeddedPostgresOptions = { dataDir, port: ports.postgres, log: () => {}, templateDir: await templateDirFor(toolsCacheDir()) };
    let database: EmbeddedDatabase = await startEmbeddedPostgres(postgresOptions);
    cleanups.unshift(async () => database.stop(10_000));
    const cli = await resolveTemporalCli({ configured: process.env.TEMPORAL_CLI, allowBuild: false, progress: () => {} });
    if (cli === null) throw new Error('no Temporal CLI found (npm start builds one; or set TEMPORAL_CLI)');
    const temporalOptions = {
      cliPath: cli.path,
      ip: '127.0.0.1',
      port: ports.temporal,
      uiPort: null,
      dbFilename: path.join(dataDir, 'temporal.sqlite'),
      namespace: 'default',
      startTimeoutMs: 60_000,
      log: () => {},
    };
    let temporal: DevServer = await startTemporalDevServer(temporalOptions);
    cleanups.unshift(async () => temporal.stop());

    const simulatorSettings = {
      host: '127.0.0.1',
      port: ports.simulator,
      apiKey: 'chaos-gateway-key',
      webhookUrl: `${apiUrl}/api/v1/redemption/webhook/gateway`,
      validationUrl: `${apiUrl}/api/v1/webhooks/transfer/validate`,
      webhookToken,
      validationDelayMs: 50,
      webhookRetryBaseMs: 100,
      webhookRetryMaxMs: 2000,
      // The campaign stops the API on purpose: the queue must not give up on it meanwhile.
      webhookInterruptAfterFailures: 1_000,
      webhookTimeoutMs: 5_000,
      // The campaign is the bank: it completes or fails each payout itself (campaign.ts).
      autoSettle: false,
      seed: options.seed,
    };
    const simulatorMode = options.simulatorMode ?? 'in-process';
    let inProcess: Simulator | null = null;
    const simulatorUrl = `http://127.0.0.1:${ports.simulator}`;
    if (simulatorMode === 'in-process') {
      inProcess = await createSimulator({ ...simulatorSettings, logger: false });
      await inProcess.listen();
      const started = inProcess;
      cleanups.unshift(async () => started.close());
    }

    const env: Record<string, string> = {
      ...(process.env as Record<string, string>),
      APP_ENV: 'development',
      HOST: '127.0.0.1',
      PORT: String(ports.api),
      LOG_LEVEL: 'warn',
      DATA_DIR: dataDir,
      DATABASE_URL: database.databaseUrl,
      TEMPORAL_ADDRESS: temporal.address,
      TEMPORAL_NAMESPACE: 'default',
      TEMPORAL_TASK_QUEUE: taskQueue,
      JWT_SECRET: randomBytes(32).toString('hex'),
      ADMIN_USERNAME: admin.username,
      ADMIN_PASSWORD: admin.password,
      GATEWAY_BASE_URL: simulatorUrl,
      GATEWAY_API_KEY: 'chaos-gateway-key',
      GATEWAY_WEBHOOK_TOKEN: webhookToken,
      GATEWAY_TIMEOUT_MS: '3000',
      // Lost webhooks are part of the campaign: a redemption asks the gateway itself after 3 s.
      REDEMPTION_WEBHOOK_WAIT_MS: '3000',
      RATE_LIMIT_PLC_PER_MINUTE: '1000000',
      RATE_LIMIT_TRANSFER_PER_MINUTE: '1000000',
      RATE_LIMIT_REDEEM_PER_MINUTE: '1000000',
      PLC_DAILY_LIMIT_MINOR: '1000000000000',
      // The campaign runs the audit itself, after each part.
      GATEWAY_AUDIT_INTERVAL_MS: '0',
      SHUTDOWN_GRACE_MS: '2000',
    };

    const spawnChild = (name: string, file: string, nodeOptions: string[], extraEnv: Record<string, string> = {}): Child => {
      const child = spawn(process.execPath, [...nodeOptions, path.join(root, file)], { env: { ...env, ...extraEnv }, stdio: ['ignore', 'pipe', 'pipe'] });
      let output = '';
      const collect = (chunk: Buffer): void => {
        output = (output + chunk.toString('utf8')).slice(-20_000);
      };
      child.stdout?.on('data', collect);
      child.stderr?.on('data', collect);
      const entry = { name, process: child, output: () => output };
      children.push(entry);
      child.once('exit', () => {
        const index = children.indexOf(entry);
        if (index >= 0) children.splice(index, 1);
      });
      return entry;
    };

    const running = (name: string): Child | undefined => children.find((child) => child.name === name);

    const startApi = async (): Promise<void> => {
      const api = spawnChild('api', 'api/server.ts', []);
      await waitFor(
        async () => {
          if (api.process.exitCode !== null) throw new Error(`the API exited:\n${api.output()}`);
          try {
            return (await fetch(`${apiUrl}/readyz`, { signal: AbortSignal.timeout(2000) })).status === 200;
          } catch {
            return false;
          }
        },
        90_000,
        'the API was not ready',
      );
    };
    const startWorker = async (): Promise<void> => {
      // As production starts it (the workflow-thread guard preloaded), logging at info so that
      // the campaign sees its start line.
      const worker = spawnChild('worker', 'worker/main.ts', ['--import', workerPreloadUrl], { LOG_LEVEL: 'info' });
      await waitFor(
        async () => {
          if (worker.process.exitCode !== null) throw new Error(`the worker exited:\n${worker.output()}`);
          return worker.output().includes('worker started');
        },
        120_000,
        'the worker did not start',
      );
    };
    const kill = async (names: string[]): Promise<void> => {
      const targets = names.map(running).filter((child): child is Child => child !== undefined);
      const pids = targets.map((child) => child.process.pid).filter((pid): pid is number => pid !== undefined);
      signalAll(pids, 'SIGKILL');
      await waitGone(pids, 10_000);
    };

    // The simulator as a process: its state in a SQLite file, so a SIGKILL loses nothing it answered.
    const simulatorEnv: Record<string, string> = {
      SIMULATOR_HOST: simulatorSettings.host,
      SIMULATOR_PORT: String(simulatorSettings.port),
      SIMULATOR_API_KEY: simulatorSettings.apiKey,
      SIMULATOR_LOG_LEVEL: 'warn',
      SIMULATOR_WEBHOOK_URL: simulatorSettings.webhookUrl,
      SIMULATOR_VALIDATION_URL: simulatorSettings.validationUrl,
      SIMULATOR_WEBHOOK_TOKEN: simulatorSettings.webhookToken,
      SIMULATOR_VALIDATION_DELAY_MS: String(simulatorSettings.validationDelayMs),
      SIMULATOR_WEBHOOK_RETRY_BASE_MS: String(simulatorSettings.webhookRetryBaseMs),
      SIMULATOR_WEBHOOK_RETRY_MAX_MS: String(simulatorSettings.webhookRetryMaxMs),
      SIMULATOR_WEBHOOK_INTERRUPT_AFTER: String(simulatorSettings.webhookInterruptAfterFailures),
      SIMULATOR_WEBHOOK_TIMEOUT_MS: String(simulatorSettings.webhookTimeoutMs),
      SIMULATOR_AUTO_SETTLE: 'false',
      SIMULATOR_SEED: String(simulatorSettings.seed),
      SIMULATOR_STATE_FILE: path.join(dataDir, 'simulator.sqlite'),
    };
    const startSimulatorProcess = async (): Promise<void> => {
      const simulatorChild = spawnChild('simulator', 'simulator/main.ts', [], simulatorEnv);
      await waitFor(
        async () => {
          if (simulatorChild.process.exitCode !== null) throw new Error(`the simulator exited:\n${simulatorChild.output()}`);
          try {
            return (await fetch(`${simulatorUrl}/sim/faults`, { signal: AbortSignal.timeout(2000) })).status === 200;
          } catch {
            return false;
          }
        },
        60_000,
        'the simulator was not ready',
      );
    };

    if (simulatorMode === 'process') await startSimulatorProcess();
    await startApi();
    await startWorker();

    const gateway = gatewayControl(simulatorUrl, simulatorSettings.apiKey);

    return {
      ports,
      apiUrl,
      databaseUrl: database.databaseUrl,
      temporalAddress: temporal.address,
      get simulator(): Simulator {
        if (inProcess === null) throw new Error('the simulator runs as a process: use stack.gateway');
        return inProcess;
      },
      simulatorUrl,
      gateway,
      webhookToken,
      admin,
      taskQueue,
      async killWorker() {
        await kill(['worker']);
      },
      startWorker,
      async killApi() {
        await kill(['api']);
        await startApi();
      },
      async killSimulator() {
        if (simulatorMode !== 'process') throw new Error('the in-process simulator cannot be killed: start the stack with simulatorMode process');
        await kill(['simulator']);
        await startSimulatorProcess();
      },
      async killAll() {
        const postgresTree = await processTree(database.pid);
        const temporalPid = temporal.process.pid;
        await kill(['api', 'worker']);
        signalAll([...(temporalPid === undefined ? [] : [temporalPid]), ...postgresTree], 'SIGKILL');
        await waitGone([...(temporalPid === undefined ? [] : [temporalPid]), ...postgresTree], 10_000);
        log('  killed: API, worker, Temporal, PostgreSQL; starting them again on the same data');
        await database.exited;
        database = await startEmbeddedPostgres(postgresOptions);
        temporal = await startTemporalDevServer(temporalOptions);
        await startApi();
        await startWorker();
      },
      async freeze(what, ms) {
        const pid = what === 'postgres' ? database.pid : (temporal.process.pid ?? -1);
        if (pid <= 0) throw new Error(`${what} is not running`);
        const pids = await processTree(pid);
        signalAll(pids, 'SIGSTOP');
        try {
          await new Promise((resolve) => setTimeout(resolve, ms));
        } finally {
          // A backend forked just before the stop is in the tree read after it too.
          signalAll([...new Set([...pids, ...(await processTree(pid))])], 'SIGCONT');
        }
      },
      async stop() {
        for (const child of [...children]) {
          child.process.kill('SIGTERM');
        }
        await waitFor(async () => children.length === 0, 15_000, 'the API and worker did not stop').catch(() => killChildren());
        for (const cleanup of cleanups) await cleanup().catch(() => {});
        process.removeListener('exit', killChildren);
      },
    };
  } catch (error) {
    killChildren();
    for (const cleanup of cleanups) await cleanup().catch(() => {});
    process.removeListener('exit', killChildren);
    throw error;
  }
}

/**
 * The gateway's HTTP controls (its API and its /sim routes) at `simulatorUrl`, with its API key: what
 * a stack's `gateway` is, for a simulator in this process or in its own (and for a test that runs a
 * stack of its own, such as the cluster's).
 */
export function gatewayControl(simulatorUrl: string, apiKey: string): GatewayControl {
  const gatewayCall = async (method: string, url: string, body?: unknown): Promise<unknown> => {
    // The gateway may be down for a moment (killSimulator restarts it): a few tries, bounded.
    let lastError: unknown = null;
    for (let attempt = 0; attempt < 50; attempt += 1) {
      try {
        const response = await fetch(`${simulatorUrl}${url}`, {
          method,
          headers: { access_token: apiKey, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
          ...(body === undefined ? {} : { body: JSON.stringify(body) }),
          signal: AbortSignal.timeout(10_000),
        });
        const text = await response.text();
        // A 5xx is the gateway's own fault (or an injected lost answer): a read or a control is asked again; a create is
        // not (a lost answer may have created it: the caller looks for it).
        const retryable = response.status >= 500 && !(method === 'POST' && url.startsWith('/v3/'));
        if (response.status >= 300 && !retryable) throw Object.assign(new Error(`gateway ${method} ${url} answered ${response.status}: ${text.slice(0, 300)}`), { answered: true });
        if (response.status >= 300) throw new Error(`gateway ${method} ${url} answered ${response.status}: ${text.slice(0, 300)}`);
        return JSON.parse(text) as unknown;
      } catch (error) {
        if ((error as { answered?: boolean }).answered === true) throw error;
        lastError = error;
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
    }
    throw new Error(`the gateway did not answer ${method} ${url}: ${String(lastError)}`);
  };
  return {
    async transfers(filter = {}) {
      const all: TransferWire[] = [];
      for (let offset = 0; ; offset += 100) {
        const query = new URLSearchParams({ limit: '100', offset: String(offset), ...(filter.externalReference === undefined ? {} : { externalReference: filter.externalReference }) });
        const page = (await gatewayCall('GET', `/v3/transfers?${query.toString()}`)) as { data: TransferWire[]; hasMore: boolean };
        all.push(...page.data);
        if (!page.hasMore) return all;
      }
    },
    async complete(id) {
      return ((await gatewayCall('POST', `/sim/transfers/${id}/complete`, {})) as { transfer: TransferWire }).transfer;
    },
    async fail(id, reason) {
      return ((await gatewayCall('POST', `/sim/transfers/${id}/fail`, { reason })) as { transfer: TransferWire }).transfer;
    },
    async createTransfer(body) {
      return (await gatewayCall('POST', '/v3/transfers', body)) as TransferWire;
    },
    async faults(patch) {
      await gatewayCall('POST', '/sim/faults', patch);
    },
    async resetFaults() {
      await gatewayCall('DELETE', '/sim/faults');
    },
  };
}
