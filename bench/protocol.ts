/**
 * Protocol benchmark (not a test). Run: `npm run bench:protocol`, or
 * `node --import ./worker/preload.ts bench/protocol.ts [--parts a,b,c] [--duration-s 10] [--warmup-s 2] [--connections 16]
 *   [--create-duration-s 10] [--short-plcs 5000] [--long-plcs 600] [--chains 64] [--rounds 8]
 *   [--status-yield <0..1>] [--worker-cache N] [--chain-memo N] [--replica-rounds 1,2,1,2]`: `--status-yield` sets the API's PLC_STATUS_YIELD_UTILIZATION,
 *   `--worker-cache` both workers' sticky cache (TEMPORAL_MAX_CACHED_WORKFLOWS) and `--chain-memo` the API
 *   processes' PLC_CHAIN_MEMO_MAX (0: no memo), for A/B runs; the service's and the SDK's defaults when absent.
 *
 * (a) chain verification in the library: hops/s for 16-hop chains with @noble/ed25519 and with
 *     the server's node:crypto verifier (infra/ed25519-node.ts), beside node's raw
 *     crypto.verify on the same signatures (bench/protocol/chain-verify.ts).
 * (b) POST /api/v1/transfer/ of the real app under autocannon load (a child process), beside two
 *     bench-only routes on the same app: the floor (the same body schema and decoding, one Ed25519
 *     signature verified by the route's verifier, one row inserted in one transaction; the transfer
 *     route is reported as a ratio to it) and the baseline (one INSERT) (bench/protocol/transfer-load.ts).
 * (r) replicas: the transfer route through 1 and through 2 API processes on one database, rounds
 *     alternating (1, 2, 1, 2 by default; `--replica-rounds 2,1,1,2` for the other order), autocannon's connections spread over the processes; req/s and the
 *     CPU-ms per transfer of each process.
 * (c) PLC create through the API at 2 and 32 clients, beside a bare update-with-start whose
 *     update runs one local activity inserting one row (bench/protocol/create-load.ts,
 *     bare-workflow.ts, bare-activity.ts).
 *
 * (d) POS batch sync: a signed batch of 500 one-hop registrations to POST /api/v1/pos/sync,
 *     beside 500 others posted one by one to POST /api/v1/transfer/ (and from 16 clients), in
 *     alternating rounds (bench/protocol/pos-batch.ts; docs/b2b.md).
 *
 * (b), (c) and (d) run against a fresh database on BENCH_DATABASE_URL (default
 * postgres://postgres@127.0.0.1:5432/postgres) and a Temporal dev server started here, both
 * removed at the end (bench/protocol/services.ts). Prints the machine, progress lines, a table
 * against the targets and the CPU each process spent per request (where the time goes).
 */
import { mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { transferPlcRequest } from '../api/schemas/plc.ts';
import { postTransaction } from '../db/ledger.ts';
import { nodeVerifyEd25519 } from '../infra/ed25519-node.ts';
import { moneyModel } from '../src/ledger/money-model.ts';
import { plcFromJson, verifyPlc, type PlcJson } from '../src/protocol/index.ts';
import { benchChainVerification, type ChainVerifyResult } from './protocol/chain-verify.ts';
import { runCreateScenario, type CreateRun } from './protocol/create-load.ts';
import { waitForQuiet, type CpuSources, type CpuSpent } from './protocol/cpu.ts';
import { newWallet } from './protocol/fixtures.ts';
import { waitForOutboxDrained, type OutboxDrain } from './protocol/outbox.ts';
import type { groupCommitStats } from '../db/group-commit.ts';
import { baselinePath, floorPath, startServices, type ApiProcess, type BenchServices } from './protocol/services.ts';
import type { ApiCpu } from './protocol/api-process.ts';
import { prepareTransfer, runLoad, type Entry, type LoadRun, type PreparedTransfer } from './protocol/transfer-load.ts';
import { runPosBatchPart, type PosBatchRound } from './protocol/pos-batch.ts';
import { parseBenchArgs, positiveInt } from './support/args.ts';
import { commandVersion, formatNumber, formatTable, machineInfo } from './support/report.ts';
import { percentile } from './support/stats.ts';
import { describeWorkflowThreadGuard } from '../worker/workflow-thread-guard.ts';

const targets = { nodeOverRaw: 0.8, transferPerSecond: 1500, transferP99Ms: 50, transferOverFloor: 0.6, createOverBare: 0.7, createP50MsAt2: 80, twoOverOne: 0.9 } as const;

const { values: args } = parseBenchArgs(import.meta.url, {
  options: {
    parts: { type: 'string', default: 'a,b,c' },
    'duration-s': { type: 'string', default: '10' },
    'warmup-s': { type: 'string', default: '2' },
    connections: { type: 'string', default: '16' },
    'create-duration-s': { type: 'string', default: '10' },
    'short-plcs': { type: 'string', default: '5000' },
    repeats: { type: 'string', default: '1' },
    'long-plcs': { type: 'string', default: '600' },
    chains: { type: 'string', default: '64' },
    rounds: { type: 'string', default: '8' },
    'cpu-profile': { type: 'string' },
    'heap-profile': { type: 'string' },
    'status-yield': { type: 'string' },
    'worker-cache': { type: 'string' },
    'metrics-ab': { type: 'boolean', default: false },
    'chain-memo': { type: 'string' },
    'pos-items': { type: 'string', default: '500' },
    'pos-rounds': { type: 'string', default: '2' },
    'replica-rounds': { type: 'string', default: '1,2,1,2' },
  },
  strict: true,
});
const parts = new Set(args.parts.split(',').map((part) => part.trim()));
for (const part of parts) if (!['a', 'b', 'c', 'd', 'r'].includes(part)) throw new Error(`--parts takes a, b, c, d and r, got "${part}"`);
const posItems = positiveInt('pos-items', args['pos-items'], 500);
const posRounds = positiveInt('pos-rounds', args['pos-rounds'], 20);
const durationS = positiveInt('duration-s', args['duration-s'], 600);
const warmupS = positiveInt('warmup-s', args['warmup-s'], 60);
const connections = positiveInt('connections', args.connections, 256);
const createDurationS = positiveInt('create-duration-s', args['create-duration-s'], 600);
const shortPlcs = positiveInt('short-plcs', args['short-plcs'], 50_000);
const repeats = positiveInt('repeats', args.repeats, 9);
/** --metrics-ab: transfer-short rounds alternate (on, off, off, on, ...) between the app with metrics and one without. */
const metricsAb = args['metrics-ab'];
const metricsArm = (round: number): 'on' | 'off' => (metricsAb ? ((['on', 'off', 'off', 'on'] as const)[round % 4] ?? 'on') : 'on');
const longPlcs = positiveInt('long-plcs', args['long-plcs'], 50_000);
const chainCount = positiveInt('chains', args.chains, 10_000);
const roundsMax = positiveInt('rounds', args.rounds, 1000);
const statusYieldUtilization = args['status-yield'] === undefined ? undefined : Number(args['status-yield'].trim() || Number.NaN);
if (statusYieldUtilization !== undefined && !(statusYieldUtilization >= 0 && statusYieldUtilization <= 1)) throw new Error(`--status-yield takes a number from 0 to 1, got "${args['status-yield']}"`);
const workerCache = args['worker-cache'] === undefined ? undefined : Number(args['worker-cache'].trim() || Number.NaN);
if (workerCache !== undefined && !(Number.isSafeInteger(workerCache) && workerCache >= 0)) throw new Error(`--worker-cache takes a whole number of workflows, got "${args['worker-cache']}"`);
/** Part (r)'s rounds, as API process counts: pairs of one 1 and one 2, in either order (2,1,1,2 cancels a drift along the run). */
const replicaPlan = args['replica-rounds'].split(',').map((one) => Number(one.trim()));
if (replicaPlan.length === 0 || replicaPlan.length % 2 !== 0 || replicaPlan.some((count, at) => (count !== 1 && count !== 2) || (at % 2 === 1 && count === replicaPlan[at - 1]))) {
  throw new Error(`--replica-rounds takes pairs of 1 and 2 in either order (1,2,1,2 or 2,1,1,2), got "${args['replica-rounds']}"`);
}
const chainMemo = args['chain-memo'] === undefined ? undefined : Number(args['chain-memo'].trim() || Number.NaN);
if (chainMemo !== undefined && !(Number.isSafeInteger(chainMemo) && chainMemo >= 0)) throw new Error(`--chain-memo takes a whole number of chains, got "${args['chain-memo']}"`);
const profileDir = args['cpu-profile'];
const heapProfileDir = args['heap-profile'];
// Made before anything starts: a profile written into a missing directory would fail the run at its end.
for (const dir of [profileDir, heapProfileDir]) if (dir !== undefined) await mkdir(dir, { recursive: true });
const adminUrl = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

const log = (line: string) => process.stdout.write(`${line}\n`);
const ms = (value: number) => (Number.isFinite(value) ? value.toFixed(1) : 'n/a');
const pct = (value: number) => `${(value * 100).toFixed(0)}%`;
const verdict = (ok: boolean) => (ok ? 'met' : 'MISSED');

/** CPU milliseconds per request of each process, from a window's totals. */
function cpuRow(name: string, requests: number, perSecond: number, cpu: CpuSpent, cpuCount: number): string[] {
  const per = (seconds: number | null) => (seconds === null || requests === 0 ? 'n/a' : ((seconds * 1000) / requests).toFixed(2));
  const total = cpu.apiProcessS + cpu.workersS + cpu.postgresS + (cpu.temporalS ?? 0) + (cpu.loadS ?? 0);
  // What an otherwise idle machine could sustain: all CPUs busy, or the API's one event loop busy.
  const ceiling = requests === 0 ? Number.NaN : Math.min((cpuCount * requests) / total, requests / cpu.apiMainThreadS);
  return [
    name,
    formatNumber(perSecond),
    per(cpu.apiProcessS),
    per(cpu.apiMainThreadS),
    per(cpu.workersS),
    per(cpu.postgresS),
    per(cpu.temporalS),
    per(cpu.loadS),
    per(total),
    `${((total / cpu.wallS) * 100).toFixed(0)}%`,
    `${(cpu.eventLoopUtilization * 100).toFixed(0)}%`,
    formatNumber(ceiling),
  ];
}

/** This thread's CPU time in ms (other processes on the machine do not inflate it). */
function threadCpuMs(): number {
  const usage = process.threadCpuUsage();
  return (usage.user + usage.system) / 1000;
}

/** The route's CPU-only steps, measured here in CPU time on a sample of the very bodies sent (ms per request). */
function requestCpuBreakdown(bodies: readonly Entry[]): { parseMs: number; nobleMs: number; nodeMs: number; records: number } {
  const sample = bodies.filter((_, index) => index % Math.max(1, Math.floor(bodies.length / 200)) === 0).slice(0, 200);
  const parsed = sample.map(([, body]) => plcFromJson((transferPlcRequest.parse(JSON.parse(body)) as { plc: PlcJson }).plc));
  const perRequest = (work: () => void, repeat: number, count: number) => {
    work();
    const started = threadCpuMs();
    for (let i = 0; i < repeat; i += 1) work();
    return (threadCpuMs() - started) / repeat / count;
  };
  const parseMs = perRequest(() => {
    for (const [, body] of sample) plcFromJson((transferPlcRequest.parse(JSON.parse(body)) as { plc: PlcJson }).plc);
  }, 3, sample.length);
  const nodeMs = perRequest(() => {
    for (const plc of parsed) verifyPlc(plc, { verifySignature: nodeVerifyEd25519 });
  }, 3, parsed.length);
  const nobleSample = parsed.slice(0, 10);
  const nobleMs = perRequest(() => {
    for (const plc of nobleSample) verifyPlc(plc);
  }, 1, nobleSample.length);
  const records = sample.reduce((sum, [, , count]) => sum + count, 0) / sample.length;
  return { parseMs, nobleMs, nodeMs, records };
}

async function main(): Promise<void> {
  const machine = machineInfo();
  const startedAt = new Date();
  log(`protocol benchmark: ${startedAt.toISOString()}`);
  log(`command: node bench/protocol.ts ${process.argv.slice(2).join(' ')}`.trimEnd());
  log(`machine: ${machine.cpuModel}, ${machine.cpuCount} CPUs, ${machine.memoryGiB} GiB, ${machine.platform}`);
  log(`load average at start: ${machine.loadAverage} (other work on this machine shares its CPUs)`);
  log(describeWorkflowThreadGuard());
  let postgresVersion = '?';
  try {
    const admin = new pg.Client({ connectionString: adminUrl });
    await admin.connect();
    try {
      postgresVersion = (await admin.query<{ server_version: string }>('SHOW server_version')).rows[0]?.server_version ?? '?';
    } finally {
      await admin.end();
    }
  } catch (error) {
    if (parts.has('b') || parts.has('c') || parts.has('d')) throw error;
  }
  log(`node ${process.version} (OpenSSL ${process.versions.openssl}), PostgreSQL ${postgresVersion}`);

  let chain: ChainVerifyResult | undefined;
  if (parts.has('a')) {
    log('\n(a) chain verification in the library');
    chain = benchChainVerification({ hops: 16, chains: chainCount, wallets: 256, roundsMax, timeBudgetMs: 30_000, coldChains: 16, log });
  }

  let services: BenchServices | undefined;
  const workDir = await mkdtemp(path.join(tmpdir(), 'bench-protocol-'));
  const transfer: { name: string; run: LoadRun; prepared: PreparedTransfer; breakdown: ReturnType<typeof requestCpuBreakdown>; routeUsesNode: boolean }[] = [];
  let baseline: LoadRun | undefined;
  let floor: LoadRun | undefined;
  const replicaRounds: { processes: number; run: LoadRun; apiCpuS: number[] }[] = [];
  const creates: CreateRun[] = [];
  let temporalCliVersion = '?';
  const outboxDrains: OutboxDrain[] = [];
  let posRoundsRun: PosBatchRound[] = [];
  try {
    if (parts.has('b') || parts.has('c') || parts.has('d') || parts.has('r')) {
      log('\nstarting PostgreSQL database, Temporal dev server, workers and the app');
      services = await startServices({ adminUrl, log, appPoolMax: Math.max(20, connections + 4), workerPoolMax: 20, statusYieldUtilization, workerCache, metricsAb, chainMemo });
      temporalCliVersion = commandVersion(services.temporalCli, ['--version']);
      log(`Temporal CLI: ${temporalCliVersion}`);
      const api = services.api;
      const cpuSources: CpuSources = { pool: services.pool, api, databaseName: services.databaseName, temporalPid: services.devServer.process.pid };
      const cpuSourcesOn = cpuSources;
      // Before each measurement: let the previous step's Temporal backlog drain (at most 60 s).
      const quiet = async () => {
        // First the PLC status outbox: the first hops' signals, deferred while the route was busy.
        const drained = await waitForOutboxDrained(services!.pool, log, { maxMs: 600_000 });
        if (drained.rows > 0) {
          log(`  status outbox: ${drained.rows} deferred signals delivered in ${(drained.waitedMs / 1000).toFixed(0)} s${drained.left > 0 ? `, ${drained.left} still waiting` : ''}`);
          outboxDrains.push(drained);
        }
        const state = await waitForQuiet(cpuSources, log, { maxMs: 60_000, busyBelowCpus: 0.1 });
        if (state.waitedMs > 1500) log(`  quiet after ${(state.waitedMs / 1000).toFixed(0)} s (dev server ${state.temporalCpus.toFixed(2)} CPUs, API and workers ${state.apiCpus.toFixed(2)} CPUs)`);
      };

      // Issuers with money: one deposit each, booked directly (the deposit API is not measured here).
      const issuers = Array.from({ length: 32 }, () => newWallet());
      for (const issuer of issuers) {
        const posting = moneyModel.deposit({ ownerId: issuer.pubkey, currency: 'BRL', amountMinor: 10n ** 12n });
        await postTransaction(services.pool, { idempotencyKey: `bench:fund:${issuer.pubkey}`, txType: posting.txType, referenceType: 'bench', entries: posting.entries });
      }
      const wallets = Array.from({ length: 256 }, () => newWallet());
      log(`${issuers.length} issuers funded, ${wallets.length} wallets`);

      if (parts.has('b')) {
        log(`\n(b) POST /api/v1/transfer/ under load: ${connections} connections, ${warmupS} s warm-up + ${durationS} s each`);
        // transfer-short `repeats` times, each round on PLCs of its own (same chain lengths), so
        // that the targets can be checked on the median round of a machine whose runs vary.
        const scenarios = [
          ...Array.from({ length: repeats }, (_, round) => ({
            name: `${repeats === 1 ? 'transfer-short' : `transfer-short #${round + 1}`}${metricsAb ? ` (metrics ${metricsArm(round)})` : ''}`,
            plcs: shortPlcs,
            preHops: 0,
            hops: 4,
          })),
          { name: 'transfer-long', plcs: longPlcs, preHops: 12, hops: 4 },
        ];
        const prepared: PreparedTransfer[] = [];
        for (const scenario of scenarios) {
          prepared.push(await prepareTransfer({ baseUrl: services.baseUrl, scenario, issuers, wallets, workDir, log }));
        }
        // The profile is the API process's main thread.
        const profiled = (name: string) => ({
          onMeasureStart: async () => {
            await api.ask({ type: 'profile-start', dir: profileDir, heapDir: heapProfileDir, name });
          },
          onMeasureEnd: async () => {
            for (const line of await api.ask<string[]>({ type: 'profile-stop' })) log(line);
          },
        });
        const jobOn = (title: string, route: string, files: PreparedTransfer) => ({
          title,
          url: `${services!.baseUrl}${route}`,
          connections,
          warmupS,
          durationS,
          bodiesFile: files.bodiesFile,
          repeatFile: files.repeatFile,
        });
        for (const [index, files] of prepared.entries()) {
          const name = files.scenario.name;
          // --metrics-ab: the rounds marked "metrics off" go to the app without metrics.
          const off = name.endsWith('(metrics off)') ? services.apiWithoutMetrics : undefined;
          const api = off?.api ?? services.api;
          const cpuSources: CpuSources = { ...cpuSourcesOn, api };
          const job = (title: string, route: string, files: PreparedTransfer) => ({ ...jobOn(title, route, files), url: `${off?.baseUrl ?? services!.baseUrl}${route}` });
          await quiet();
          const callsBefore = await api.ask<number>({ type: 'ed25519-calls' });
          log(`\n${name}: ${files.bodies} append requests ready (chains of ${files.scenario.preHops + 1} to ${files.scenario.preHops + files.scenario.hops} records)`);
          const groupsBefore = await api.ask<GroupCommitStats>({ type: 'group-commit' });
          const run = await runLoad(job(name, '/api/v1/transfer/', files), cpuSources, log, profiled(name));
          log(`  [${name}] group commit (warm-up included): ${describeGroupCommits(groupsBefore, await api.ask<GroupCommitStats>({ type: 'group-commit' }))}`);
          const routeUsesNode = (await api.ask<number>({ type: 'ed25519-calls' })) > callsBefore;
          const bodies = JSON.parse(await readFile(files.bodiesFile, 'utf8')) as Entry[];
          transfer.push({ name, run, prepared: files, breakdown: requestCpuBreakdown(bodies), routeUsesNode });
          log(`  [${name}] ${formatNumber(run.result.perSecond)} req/s, p50 ${run.result.latencyP50Ms} ms, p99 ${run.result.latencyP99Ms} ms, non-2xx ${run.result.non2xx}, records appended ${run.result.appendedRecords}, re-registrations ${run.result.unchangedAnswers}`);
          for (const sample of run.result.sampleErrors) log(`    e.g. ${sample}`);
          if (index === 0) {
            log(`\nfloor ${floorPath}: same connections and bodies; parse, one signature verified, one INSERT in a transaction`);
            await quiet();
            floor = await runLoad(job('floor', floorPath, files), cpuSources, log, profiled('floor'));
            log(`  [floor] ${formatNumber(floor.result.perSecond)} req/s, p50 ${floor.result.latencyP50Ms} ms, p99 ${floor.result.latencyP99Ms} ms, non-2xx ${floor.result.non2xx}`);
            log(`\nbaseline ${baselinePath}: same connections and bodies, one INSERT per request`);
            await quiet();
            baseline = await runLoad(job('baseline', baselinePath, files), cpuSources, log, profiled('baseline'));
            log(`  [baseline] ${formatNumber(baseline.result.perSecond)} req/s, p50 ${baseline.result.latencyP50Ms} ms, p99 ${baseline.result.latencyP99Ms} ms, non-2xx ${baseline.result.non2xx}`);
          }
        }
      }

      if (parts.has('r')) {
        log(`\n(r) replicas: the transfer route through 1 and 2 API processes, ${connections} connections, ${warmupS} s warm-up + ${durationS} s each, rounds ${replicaPlan.join(', ')}`);
        const replica = await services.startReplica();
        log(`  second API process ${replica.api.pid} on ${replica.baseUrl} (same settings and database)`);
        const apis: ApiProcess[] = [api, replica.api];
        const bases = [services.baseUrl, replica.baseUrl];
        const plan = replicaPlan;
        const prepared: PreparedTransfer[] = [];
        for (const [round, processes] of plan.entries()) {
          const scenario = { name: `replicas #${round + 1} x${processes}`, plcs: shortPlcs, preHops: 0, hops: 4 };
          prepared.push(await prepareTransfer({ baseUrl: services.baseUrl, scenario, issuers, wallets, workDir, log }));
        }
        for (const [round, processes] of plan.entries()) {
          const files = prepared[round] as PreparedTransfer;
          await quiet();
          let before: ApiCpu[] = [];
          let after: ApiCpu[] = [];
          const snapshot = () => Promise.all(apis.map((one) => one.ask<ApiCpu>({ type: 'cpu' })));
          const groupsBefore = await Promise.all(apis.map((one) => one.ask<GroupCommitStats>({ type: 'group-commit' })));
          const run = await runLoad(
            {
              title: files.scenario.name,
              url: bases.slice(0, processes).map((base) => `${base}/api/v1/transfer/`),
              connections,
              warmupS,
              durationS,
              bodiesFile: files.bodiesFile,
              repeatFile: files.repeatFile,
            },
            cpuSources,
            log,
            {
              onMeasureStart: async () => {
                before = await snapshot();
              },
              onMeasureEnd: async () => {
                after = await snapshot();
              },
            },
          );
          const apiCpuS = apis.map((_, k) => cpuSeconds((after[k] as ApiCpu).process, (before[k] as ApiCpu).process));
          const groupsAfter = await Promise.all(apis.map((one) => one.ask<GroupCommitStats>({ type: 'group-commit' })));
          for (let k = 0; k < processes; k += 1) {
            log(`  [${files.scenario.name}] API ${k + 1} group commit (warm-up included): ${describeGroupCommits(groupsBefore[k] as GroupCommitStats, groupsAfter[k] as GroupCommitStats)}`);
          }
          replicaRounds.push({ processes, run, apiCpuS });
          log(
            `  [${files.scenario.name}] ${formatNumber(run.result.perSecond)} req/s, p50 ${run.result.latencyP50Ms} ms, p99 ${run.result.latencyP99Ms} ms, non-2xx ${run.result.non2xx}, ` +
              `CPU-ms per transfer: API 1 ${perRequestMs(apiCpuS[0] ?? 0, run.result.requests)}, API 2 ${perRequestMs(apiCpuS[1] ?? 0, run.result.requests)}`,
          );
        }
      }

      if (parts.has('c')) {
        log(`\n(c) PLC create through the API vs a bare update-with-start: ${warmupS} s warm-up + ${createDurationS} s each`);
        for (const clients of [2, 32]) {
          for (const kind of ['bare', 'create'] as const) {
            await quiet();
            const run = await runCreateScenario({
              services,
              kind,
              issuers,
              clients,
              perClientMax: clients === 2 ? 1500 : 200,
              warmupMs: warmupS * 1000,
              durationMs: createDurationS * 1000,
              cpuSources,
              log,
              profileDir,
            });
            creates.push(run);
            const { loop } = run;
            log(
              `  [${kind} x${clients}] ${loop.operations} in ${(loop.elapsedMs / 1000).toFixed(1)} s = ${loop.perSecond.toFixed(1)}/s, p50 ${ms(loop.latency.p50Ms)} ms, p99 ${ms(loop.latency.p99Ms)} ms` +
                `${Object.keys(loop.errors).length === 0 ? '' : `, errors ${JSON.stringify(loop.errors)}`}${loop.exhaustedClients > 0 ? `, ${loop.exhaustedClients} clients ran out of items` : ''}`,
            );
          }
        }
      }

      if (parts.has('d')) {
        log(`\n(d) POS batch sync: a signed batch of ${posItems} beside ${posItems} posted one by one to /api/v1/transfer/, ${posRounds} rounds`);
        await quiet();
        posRoundsRun = await runPosBatchPart({ services, issuers, wallets, items: posItems, rounds: posRounds, log });
      }

      const counts = await services.pool.query<{ plcs: bigint; transfers: bigint; bare: bigint; baseline: bigint }>(
        `SELECT (SELECT count(*) FROM plcs) AS plcs, (SELECT count(*) FROM plc_transfers) AS transfers,
                (SELECT count(*) FROM bench_bare_rows) AS bare, (SELECT count(*) FROM bench_baseline_rows) AS baseline`,
      );
      const row = counts.rows[0];
      log(`\ndatabase at the end: ${row?.plcs ?? '?'} PLCs, ${row?.transfers ?? '?'} transfer records, ${row?.bare ?? '?'} bare rows, ${row?.baseline ?? '?'} baseline rows`);
    }
  } finally {
    if (services !== undefined) {
      log('stopping the app, workers, Temporal dev server; dropping the database');
      await services.stop();
    }
    await rm(workDir, { recursive: true, force: true });
  }

  // The report.
  log(`\nresults (${startedAt.toISOString()}; ${machine.cpuModel}, ${machine.cpuCount} CPUs; node ${process.version}; PostgreSQL ${postgresVersion}; Temporal CLI ${temporalCliVersion})`);
  log(`load average at the end: ${machineInfo().loadAverage}`);
  const checks: string[][] = [];
  if (chain !== undefined) {
    log(`\n(a) verifyPlc, chains of ${chain.hops} hops (${chain.chains} chains, ${chain.rounds} interleaved rounds; a hop's cost includes 1/${chain.hops} of the issuer signature)`);
    log(
      formatTable(
        ['verifier', 'hops/s (CPU time)', 'vs raw', 'hops/s (wall)'],
        [
          ['@noble/ed25519 (library default)', formatNumber(chain.nobleHopsPerS), pct(chain.nobleHopsPerS / chain.rawHopsPerS), formatNumber(chain.wall.nobleHopsPerS)],
          ['node:crypto (nodeVerifyEd25519), warm keys', formatNumber(chain.nodeHopsPerS), pct(chain.nodeOverRaw), formatNumber(chain.wall.nodeHopsPerS)],
          ['node:crypto, every key new (cold)', formatNumber(chain.coldNodeHopsPerS), pct(chain.coldNodeOverRaw), ''],
          ['raw crypto.verify, same signatures', formatNumber(chain.rawHopsPerS), '100%', formatNumber(chain.wall.rawHopsPerS)],
          ['raw crypto.verify incl. key import (cold)', formatNumber(chain.coldRawImportHopsPerS), pct(chain.coldRawImportHopsPerS / chain.rawHopsPerS), ''],
        ],
      ),
    );
    log(
      `raw: ${formatNumber(chain.rawVerifiesPerS)} verifications per CPU-second; node / raw per round from ${pct(chain.nodeOverRawRounds.min)} to ${pct(chain.nodeOverRawRounds.max)}; ` +
        `node:crypto is ${chain.nodeOverNoble.toFixed(1)}x noble. CPU time is this thread's, so other processes on the machine do not skew the ratios.`,
    );
    checks.push(['(a) server verification / raw verify (warm keys)', pct(chain.nodeOverRaw), `>= ${pct(targets.nodeOverRaw)}`, verdict(chain.nodeOverRaw >= targets.nodeOverRaw)]);
  }
  if (transfer.length > 0 && baseline !== undefined) {
    log(`\n(b) ${connections} connections, ${durationS} s measured after ${warmupS} s warm-up`);
    log(
      formatTable(
        ['route', 'req/s', 'p50 ms', 'p99 ms', 'max ms', 'non-2xx', 'errors', 'records/req', 'appended', 'known'],
        [
          ...transfer.map(({ name, run }) => [
            name,
            ...loadCells(run.result),
            run.result.meanRecords.toFixed(1),
            String(run.result.appendedRecords),
            String(run.result.unchangedAnswers),
          ]),
          ...(floor === undefined ? [] : [['floor (parse, 1 verify, 1 INSERT in a transaction)', ...loadCells(floor.result), '', '', '']]),
          ['baseline (1 INSERT)', ...loadCells(baseline.result), '', '', ''],
        ],
      ),
    );
    for (const drain of outboxDrains) {
      log(
        `status signals deferred by the busy route (PLC status outbox): ${drain.rows} delivered after the run in ${(drain.waitedMs / 1000).toFixed(0)} s` +
          (drain.left > 0 ? `, ${drain.left} still waiting when the bench gave up` : ''),
      );
    }
    for (const { name, breakdown, routeUsesNode } of transfer) {
      log(
        `${name}: the route verifies with ${routeUsesNode ? 'node:crypto (nodeVerifyEd25519 is wired)' : '@noble/ed25519 (the default: nodeVerifyEd25519 is not wired into api/routes/plc.ts)'}; ` +
          `CPU per request (this thread's CPU time) measured afterwards on a sample of its bodies (${breakdown.records.toFixed(1)} records): JSON + zod + plcFromJson ${breakdown.parseMs.toFixed(2)} ms, ` +
          `verifyPlc noble ${breakdown.nobleMs.toFixed(2)} ms, node ${breakdown.nodeMs.toFixed(2)} ms`,
      );
    }
    if (metricsAb) {
      // The metrics' cost: each arm's mean over its rounds, and the ratios (docs/benchmarks.md).
      const arm = (which: 'on' | 'off') => transfer.filter(({ name }) => name.endsWith(`(metrics ${which})`)).map(({ run }) => run);
      const [on, off] = [arm('on'), arm('off')];
      const mean = (values: readonly number[]) => values.reduce((sum, value) => sum + value, 0) / Math.max(1, values.length);
      // Throughput and latency move with the machine's load; the API's CPU per request much less.
      const summary = (runs: typeof on) => ({
        perSecond: mean(runs.map((run) => run.result.perSecond)),
        p50: mean(runs.map((run) => run.result.latencyP50Ms)),
        p99: mean(runs.map((run) => run.result.latencyP99Ms)),
        apiCpuMs: (1000 * runs.reduce((sum, run) => sum + run.cpu.apiMainThreadS, 0)) / Math.max(1, runs.reduce((sum, run) => sum + run.result.requests, 0)),
      });
      const [a, b] = [summary(on), summary(off)];
      const describe = (x: typeof a) => `${formatNumber(x.perSecond)} req/s, p50 ${x.p50.toFixed(0)} ms, p99 ${x.p99.toFixed(0)} ms, API main thread ${x.apiCpuMs.toFixed(3)} CPU-ms/request`;
      log(`\n(b) metrics on vs off (${on.length} + ${off.length} alternating rounds, means): on ${describe(a)}; off ${describe(b)}`);
      log(`  on/off: throughput ${(a.perSecond / b.perSecond).toFixed(3)}, API CPU per request ${(a.apiCpuMs / b.apiCpuMs).toFixed(3)}`);
      log(`  per round: ${transfer.filter(({ name }) => name.includes('(metrics')).map(({ name, run }) => `${name.replace(/^transfer-short /, '')} ${formatNumber(run.result.perSecond)}/s ${((1000 * run.cpu.apiMainThreadS) / Math.max(1, run.result.requests)).toFixed(3)} CPU-ms`).join(', ')}`);
    }
    // The short rounds: one, or the median of several (throughput and p99 each their own median).
    const shortRounds = transfer.filter(({ name }) => name.startsWith('transfer-short')).map(({ run }) => run.result);
    const perSecond = median(shortRounds.map((round) => round.perSecond));
    const p99 = median(shortRounds.map((round) => round.latencyP99Ms));
    const failed = shortRounds.reduce((sum, round) => sum + round.non2xx + round.errors, 0);
    const of = shortRounds.length === 1 ? '' : `, median of ${shortRounds.length} rounds`;
    checks.push(
      [`(b) transfer req/s (chains of 1-4 records${of})`, formatNumber(perSecond), `>= ${formatNumber(targets.transferPerSecond)}`, verdict(perSecond >= targets.transferPerSecond)],
      [`(b) transfer p99${of}`, `${p99} ms`, `< ${targets.transferP99Ms} ms`, verdict(p99 < targets.transferP99Ms)],
      ['(b) transfer non-2xx', String(failed), '0', verdict(failed === 0)],
    );
    if (floor !== undefined) {
      const first = transfer[0] as (typeof transfer)[number];
      const ratio = first.run.result.perSecond / floor.result.perSecond;
      const cpuRatio = perRequestCpuS(floor) / perRequestCpuS(first.run);
      log(`${first.name} / floor: ${pct(ratio)} of its requests per second; CPU per request (all processes) floor / transfer ${pct(cpuRatio)}`);
      checks.push([`(b) ${first.name} / floor (req/s, same run)`, `${(ratio * 100).toFixed(1)}%`, `>= ${pct(targets.transferOverFloor)}`, verdict(ratio >= targets.transferOverFloor)]);
    }
  }
  if (replicaRounds.length > 0) {
    log(`\n(r) the transfer route through 1 and 2 API processes, ${connections} connections, ${durationS} s measured after ${warmupS} s warm-up (rounds in the order run)`);
    log(
      formatTable(
        ['round', 'API processes', 'req/s', 'p50 ms', 'p99 ms', 'non-2xx', 'CPU-ms/transfer API 1', 'API 2', 'APIs', 'PostgreSQL', 'Temporal', 'workers+bench', 'total'],
        replicaRounds.map(({ processes, run, apiCpuS }, round) => {
          const apisS = apiCpuS.reduce((sum, value) => sum + value, 0);
          const others = run.cpu.workersS + run.cpu.postgresS + (run.cpu.temporalS ?? 0);
          return [
            `#${round + 1}`,
            String(processes),
            formatNumber(run.result.perSecond),
            String(run.result.latencyP50Ms),
            String(run.result.latencyP99Ms),
            String(run.result.non2xx + run.result.errors),
            perRequestMs(apiCpuS[0] ?? 0, run.result.requests),
            perRequestMs(apiCpuS[1] ?? 0, run.result.requests),
            perRequestMs(apisS, run.result.requests),
            perRequestMs(run.cpu.postgresS, run.result.requests),
            perRequestMs(run.cpu.temporalS ?? 0, run.result.requests),
            perRequestMs(run.cpu.workersS, run.result.requests),
            perRequestMs(apisS + others, run.result.requests),
          ];
        }),
      ),
    );
    const pairs: number[] = [];
    for (let round = 0; round + 1 < replicaRounds.length; round += 2) {
      const pair = [replicaRounds[round], replicaRounds[round + 1]];
      const one = pair.find((entry) => entry?.processes === 1);
      const two = pair.find((entry) => entry?.processes === 2);
      if (one !== undefined && two !== undefined) pairs.push(two.run.result.perSecond / one.run.result.perSecond);
    }
    const ratio = median(pairs);
    log(`2 processes / 1 process, per pair of rounds: ${pairs.map(pct).join(', ')} (load gen excluded from the CPU columns; both processes share the one database and the one machine)`);
    checks.push([`(r) transfer req/s through 2 API processes / 1 (median of ${pairs.length} pairs)`, pct(ratio), `>= ${pct(targets.twoOverOne)}`, verdict(ratio >= targets.twoOverOne)]);
  }
  if (creates.length > 0) {
    log(`\n(c) ${createDurationS} s measured after ${warmupS} s warm-up, closed loops`);
    log(
      formatTable(
        ['scenario', 'clients', 'ok', 'per second', 'p50 ms', 'p99 ms', 'errors'],
        creates.map(({ kind, clients, loop }) => [
          kind === 'create' ? 'PLC create (API)' : 'bare update-with-start',
          String(clients),
          String(loop.operations),
          loop.perSecond.toFixed(1),
          ms(loop.latency.p50Ms),
          ms(loop.latency.p99Ms),
          String(Object.values(loop.errors).reduce((sum, count) => sum + count, 0)),
        ]),
      ),
    );
    for (const clients of [2, 32]) {
      const create = creates.find((run) => run.kind === 'create' && run.clients === clients);
      const bare = creates.find((run) => run.kind === 'bare' && run.clients === clients);
      if (create === undefined || bare === undefined) continue;
      const ratio = create.loop.perSecond / bare.loop.perSecond;
      checks.push([`(c) create / bare at ${clients} clients`, pct(ratio), `>= ${pct(targets.createOverBare)}`, verdict(ratio >= targets.createOverBare)]);
      if (clients === 2) {
        checks.push(['(c) create p50 at 2 clients', `${ms(create.loop.latency.p50Ms)} ms`, `< ${targets.createP50MsAt2} ms`, verdict(create.loop.latency.p50Ms < targets.createP50MsAt2)]);
      }
    }
  }

  if (posRoundsRun.length > 0) {
    log(`\n(d) POS batch sync vs one by one (${posItems} one-hop registrations each, wall time of the whole upload)`);
    log(
      formatTable(
        ['round', 'batch items/s', 'one by one items/s', 'batch / one by one', '16 clients items/s'],
        posRoundsRun.map((r) => [String(r.round), r.batchPerS.toFixed(0), r.singlesPerS.toFixed(0), `${(r.batchPerS / r.singlesPerS).toFixed(2)}x`, r.parallelPerS.toFixed(0)]),
      ),
    );
    const slowest = Math.min(...posRoundsRun.map((r) => r.batchPerS / r.singlesPerS));
    checks.push(['(d) batch / one by one, items/s (worst round)', `${slowest.toFixed(2)}x`, '> 1x', verdict(slowest > 1)]);
  }

  const cpuRows: string[][] = [];
  for (const { name, run } of transfer) cpuRows.push(cpuRow(name, run.result.requests, run.result.perSecond, run.cpu, machine.cpuCount));
  if (floor !== undefined) cpuRows.push(cpuRow('floor', floor.result.requests, floor.result.perSecond, floor.cpu, machine.cpuCount));
  if (baseline !== undefined) cpuRows.push(cpuRow('baseline', baseline.result.requests, baseline.result.perSecond, baseline.cpu, machine.cpuCount));
  for (const run of creates) cpuRows.push(cpuRow(`${run.kind} x${run.clients}`, run.loop.operations, run.loop.perSecond, run.cpu, machine.cpuCount));
  if (cpuRows.length > 0) {
    log(`\nwhere the time goes: CPU ms per request by process (of ${machine.cpuCount} CPUs = ${machine.cpuCount * 1000} CPU-ms per second)`);
    log(formatTable(['scenario', 'req/s', 'API', 'of it main thread', 'workers+bench', 'PostgreSQL', 'Temporal', 'load gen', 'total', 'CPU busy', 'API loop busy', 'ceiling/s'], cpuRows));
    log('API: the API process (Fastify, verification, pg client, Temporal client; bench/protocol/api-process.ts); main thread: its JS event loop, the rest');
    log("being the garbage collector's helpers and the Temporal client's core; workers+bench: this process (both workers: activities, workflow threads,");
    log('Temporal SDK core; and the bench: part c runs its loops here); PostgreSQL: the backends of the bench database; Temporal: the dev server;');
    log('load gen: autocannon (part b) or nothing (part c: the loops run in this process). CPU busy: all of them over the wall time');
    log(`(100% = one CPU). ceiling/s: what ${machine.cpuCount} otherwise idle CPUs could sustain at these CPU costs, or one API event loop, whichever is less.`);
  }
  if (checks.length > 0) {
    log('\ntargets');
    log(formatTable(['check', 'value', 'target', 'verdict'], checks));
  }
}

main().then(
  // Everything was stopped in finally blocks; exit even if a library keeps an idle handle.
  () => process.exit(process.exitCode ?? 0),
  (error: unknown) => {
    process.stderr.write(`protocol benchmark failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exit(1);
  },
);

/** Items per statement of each group commit between two `groupCommitStats()` readings. */
type GroupCommitStats = ReturnType<typeof groupCommitStats>;

/** The columns every load run fills in part (b)'s table: rate, latencies, failures. */
function loadCells(result: LoadRun['result']): string[] {
  return [
    formatNumber(result.perSecond),
    String(result.latencyP50Ms),
    String(result.latencyP99Ms),
    String(result.latencyMaxMs),
    String(result.non2xx),
    String(result.errors),
  ];
}

function cpuSeconds(end: NodeJS.CpuUsage, start: NodeJS.CpuUsage): number {
  return (end.user - start.user + end.system - start.system) / 1e6;
}

function perRequestMs(seconds: number, requests: number): string {
  return requests === 0 ? 'n/a' : ((seconds * 1000) / requests).toFixed(2);
}

/** CPU seconds per request of a load run, every process but the load generator. */
function perRequestCpuS(run: LoadRun): number {
  const { cpu } = run;
  return (cpu.apiProcessS + cpu.workersS + cpu.postgresS + (cpu.temporalS ?? 0)) / Math.max(1, run.result.requests);
}

/** The nearest-rank median: an observed value (the lower middle one of an even count). */
function median(values: readonly number[]): number {
  return percentile([...values].sort((a, b) => a - b), 50);
}

function describeGroupCommits(before: GroupCommitStats, after: GroupCommitStats): string {
  return Object.entries(after)
    .map(([name, counter]) => {
      const batches = counter.batches - (before[name]?.batches ?? 0);
      const items = counter.items - (before[name]?.items ?? 0);
      const runMs = counter.runMs - (before[name]?.runMs ?? 0);
      const queued = counter.queuedBatches - (before[name]?.queuedBatches ?? 0);
      if (batches === 0) return `${name}: none`;
      return `${name} ${items} in ${batches} statements (${(items / batches).toFixed(1)} per statement, ${(runMs / batches).toFixed(1)} ms each, ${((queued / batches) * 100).toFixed(0)}% waited for a slot)`;
    })
    .join(', ');
}
