import { fork } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { plcToJson, type Plc } from '../../src/protocol/index.ts';
import { runBoundedLoop } from './closed-loop.ts';
import { cpuSince, cpuSnapshot, type CpuSources, type CpuSpent } from './cpu.ts';
import { chainStates, type BenchWallet } from './fixtures.ts';
import type { LoadJob, LoadResult } from './load-generator.ts';

/**
 * Part (b): `POST /api/v1/transfer/` under load, next to the bench-only baseline route.
 *
 * Requests are prepared so that nearly all are real appends: PLCs are created through the API
 * (and, for the long-chain scenario, given their first hops in one registration each), then the
 * bodies are staggered so that every stretch of the run mixes all hop numbers and two requests
 * for one PLC are always hundreds of requests apart. Each body is sent once; if the run
 * outlasts them, the load generator re-registers the full chains (answered "appended 0").
 */

export type Entry = [device: string, body: string, records: number];

export async function postJson(baseUrl: string, route: string, body: string, headers: Record<string, string> = {}): Promise<unknown> {
  const response = await fetch(`${baseUrl}${route}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });
  const text = await response.text();
  if (!response.ok) throw new Error(`${route} answered ${response.status}: ${text.slice(0, 300)}`);
  return JSON.parse(text) as unknown;
}

export interface TransferScenario {
  name: string;
  plcs: number;
  /** Hops registered before the measurement (one request per PLC). */
  preHops: number;
  /** Hops per PLC the measured requests register, one per request. */
  hops: number;
}

export interface PreparedTransfer {
  scenario: TransferScenario;
  bodiesFile: string;
  repeatFile: string;
  bodies: number;
}

const deviceOf = (index: number) => `bench-device-${index}`;

/** Creates the scenario's PLCs through the API (16 clients, one issuer each) and writes the bodies. */
export async function prepareTransfer(options: {
  baseUrl: string;
  scenario: TransferScenario;
  issuers: readonly BenchWallet[];
  wallets: readonly BenchWallet[];
  workDir: string;
  log: (line: string) => void;
}): Promise<PreparedTransfer> {
  const { scenario, issuers, log } = options;
  const clients = Math.min(16, issuers.length);
  const createdAtMs = Date.now();
  const started = performance.now();
  const chains: Plc[][] = Array.from({ length: scenario.plcs }, (_, k) =>
    chainStates(issuers[k % clients] as BenchWallet, options.wallets, scenario.preHops + scenario.hops, createdAtMs),
  );
  log(`  [prepare ${scenario.name}] ${scenario.plcs} PLCs x ${scenario.preHops + scenario.hops} hops signed in ${((performance.now() - started) / 1000).toFixed(1)} s`);

  const perClient = Array.from({ length: clients }, (_, client) => chains.map((_, k) => k).filter((k) => k % clients === client));
  const created = await runBoundedLoop({
    name: `prepare ${scenario.name}: create`,
    items: perClient,
    warmupMs: 0,
    durationMs: 600_000,
    progress: log,
    operation: async (k) => {
      const plc = (chains[k] as Plc[])[0] as Plc;
      await postJson(options.baseUrl, '/api/v1/plc/create', JSON.stringify({ plc: plcToJson(plc) }), { 'x-device-id': deviceOf(k) });
    },
  });
  if (created.operations !== scenario.plcs) throw new Error(`only ${created.operations} of ${scenario.plcs} PLCs were created: ${JSON.stringify(created.errors)}`);
  log(`  [prepare ${scenario.name}] ${created.operations} PLCs created through the API: ${created.perSecond.toFixed(0)}/s`);
  if (scenario.preHops > 0) {
    const registered = await runBoundedLoop({
      name: `prepare ${scenario.name}: first ${scenario.preHops} hops`,
      items: perClient,
      warmupMs: 0,
      durationMs: 600_000,
      progress: log,
      operation: async (k) => {
        const plc = (chains[k] as Plc[])[scenario.preHops] as Plc;
        await postJson(options.baseUrl, '/api/v1/transfer/', JSON.stringify({ plc: plcToJson(plc) }), { 'x-device-id': deviceOf(k) });
      },
    });
    if (registered.operations !== scenario.plcs) throw new Error(`pre-registration failed: ${JSON.stringify(registered.errors)}`);
    log(`  [prepare ${scenario.name}] ${scenario.preHops} hops of each PLC registered (${registered.perSecond.toFixed(0)} requests/s)`);
  }

  // Staggered: PLC k's hop j goes at position k + (j - first) * stride, so after the first
  // `stride` requests every window mixes all hop numbers (first hops, which also signal the
  // workflow, are 1 in `hops`), and a PLC's next hop comes `stride` requests after its previous
  // one: long done, with at most `connections` requests in flight.
  const stride = Math.min(256, scenario.plcs);
  const first = scenario.preHops + 1;
  const positioned: { at: number; entry: Entry }[] = [];
  for (let j = first; j <= scenario.preHops + scenario.hops; j += 1) {
    for (const [k, states] of chains.entries()) {
      positioned.push({ at: k + (j - first) * stride, entry: [deviceOf(k), JSON.stringify({ plc: plcToJson(states[j] as Plc) }), j] });
    }
  }
  const bodies = positioned.sort((a, b) => a.at - b.at).map(({ entry }) => entry);
  const last = scenario.preHops + scenario.hops;
  const repeat: Entry[] = chains.map((states, k) => [deviceOf(k), JSON.stringify({ plc: plcToJson(states[last] as Plc) }), last]);
  const fileName = scenario.name.replace(/[^A-Za-z0-9-]+/g, '_');
  const bodiesFile = path.join(options.workDir, `${fileName}-bodies.json`);
  const repeatFile = path.join(options.workDir, `${fileName}-repeat.json`);
  await writeFile(bodiesFile, JSON.stringify(bodies));
  await writeFile(repeatFile, JSON.stringify(repeat));
  return { scenario, bodiesFile, repeatFile, bodies: bodies.length };
}

export interface LoadRun {
  result: LoadResult;
  cpu: CpuSpent;
}

const generatorPath = fileURLToPath(new URL('./load-generator.ts', import.meta.url));

/** Runs one autocannon job in a child process; CPU is sampled around the measured part only. */
export async function runLoad(
  job: LoadJob,
  cpuSources: CpuSources,
  log: (line: string) => void,
  hooks: { onMeasureStart?: () => Promise<void>; onMeasureEnd?: () => Promise<void> } = {},
): Promise<LoadRun> {
  const child = fork(generatorPath, [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const sources: CpuSources = { ...cpuSources, loadPid: child.pid };
  try {
    return await new Promise<LoadRun>((resolve, reject) => {
      let before: Awaited<ReturnType<typeof cpuSnapshot>> | undefined;
      let settled = false;
      let gotResult = false;
      const finish = (error: Error | null, value?: LoadRun) => {
        if (settled) return;
        settled = true;
        if (error !== null) reject(error);
        else resolve(value as LoadRun);
      };
      child.on('message', (message: { type: string; line?: string; result?: LoadResult; message?: string }) => {
        switch (message.type) {
          case 'progress':
            log(message.line ?? '');
            break;
          case 'warm':
            void (async () => {
              await hooks.onMeasureStart?.();
              before = await cpuSnapshot(sources);
              child.send({ type: 'go' });
            })().catch((error: unknown) => finish(error instanceof Error ? error : new Error(String(error))));
            break;
          case 'result':
            gotResult = true;
            if (before === undefined) {
              finish(new Error('result before the measured run started'));
              break;
            }
            void (async () => {
              const cpu = await cpuSince(before as NonNullable<typeof before>, sources);
              await hooks.onMeasureEnd?.();
              child.send({ type: 'bye' });
              finish(null, { result: message.result as LoadResult, cpu });
            })().catch((error: unknown) => finish(error instanceof Error ? error : new Error(String(error))));
            break;
          case 'failed':
            finish(new Error(`load generator failed: ${message.message ?? ''}`));
            break;
        }
      });
      child.once('exit', (code) => {
        if (!gotResult) finish(new Error(`load generator exited with code ${String(code)} before its result`));
      });
      child.once('error', (error) => finish(error));
      child.send({ type: 'job', job });
    });
  } finally {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  }
}
