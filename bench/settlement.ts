/**
 * Settlement benchmark (not a test). Run: `npm run bench:settlement`, or
 * `node --import ./worker/preload.ts bench/settlement.ts [--duration-s 30] [--max-per-phase 400] [--concurrency 4,16] [--hops 2]
 *   [--plcs-per-issuer 4] [--validation-delay-ms 5] [--sample 40] [--warmup 16] [--metrics on|off]`.
 *
 * In one run, against a fresh database on BENCH_DATABASE_URL (default
 * postgres://postgres@127.0.0.1:5432/postgres) and a Temporal CLI dev server started here (in
 * memory, headless, free port), both removed at the end, with the real app listening and the
 * gateway simulator pointed at it (validation delay 5 ms, auto-settle on, no faults):
 *
 *  redemption  closed-loop redeemers (4, then 16): POST /api/v1/redeem/ with a prepared PLC
 *              (funded issuer, PLC created through the API, hops signed offline, redeem signed
 *              just before the phase), then wait for `redemption-<id>` to close SETTLED.
 *  bare        the same drive against a bench-only settlement of the same shape
 *              (bench/settlement/bare-workflow.ts, own task queue, second worker): an HTTP route
 *              doing update-with-start whose update runs one local activity, one activity, a wait
 *              for one signal sent by a webhook workflow started from a second HTTP route (the
 *              emulated gateway's webhook), one more local activity. 5 activities of the
 *              redemption's kinds (open local, payout regular, settle local, the webhook
 *              workflow's route and record local) and 1 signal, each one INSERT into a scratch table.
 *
 * Each phase is bounded by count (--max-per-phase) and time (--duration-s). Reported: settlements
 * per second, latency from the TRANSFER_DONE webhook leaving the simulator to SETTLED (the row's
 * finished_at) and end to end, CPU per settlement by process, and where the time goes: named
 * points on a sample of settlements from the probes (bench/settlement/probes.ts) and the
 * workflows' histories (`handle.fetchHistory()`), the API's verification cost measured alone.
 */
import { spawnSync } from 'node:child_process';
import { WorkflowNotFoundError } from '@temporalio/client';
import { payoutRailOf } from '../src/settlement/payout-destination.ts';
import { mkdir, writeFile } from 'node:fs/promises';
import { Session } from 'node:inspector/promises';
import path from 'node:path';
import os from 'node:os';
import { randomUUID } from 'node:crypto';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { redeemPlcRequest } from '../api/schemas/redemption.ts';
import { plcFromJson, redeemAuthorizationFromJson, verifyPlc, verifyRedeem } from '../src/protocol/index.ts';
import { parseBenchArgs, positiveInt } from './support/args.ts';
import { commandVersion, formatNumber, formatTable, machineInfo } from './support/report.ts';
import {
  barePoints,
  pointLabels,
  pointSummaries,
  redemptionPoints,
  segmentSummaries,
  summarizeValues,
  type Category,
  type Points,
  type PointKey,
  type Summary,
} from './settlement/analysis.ts';
import { CpuMeter, type CpuSpent } from './settlement/cpu.ts';
import { runPhase, type OpRecord, type PhaseRun } from './settlement/drive.ts';
import { forEachBounded, preparePlcs, signRedeemBodies, type PreparedPlc } from './settlement/fixtures.ts';
import { fetchTimeline } from './settlement/history.ts';
import { nowMs, Probes } from './settlement/probes.ts';
import { bareOpenPath, startServices, type BenchServices } from './settlement/services.ts';
import { describeWorkflowThreadGuard } from '../worker/workflow-thread-guard.ts';

const targets = { redemptionsOverBare: 0.7, webhookToSettledP95Ms: 500 } as const;

const { values: args } = parseBenchArgs(import.meta.url, {
  options: {
    'duration-s': { type: 'string', default: '30' },
    'max-per-phase': { type: 'string', default: '400' },
    concurrency: { type: 'string', default: '4,16' },
    hops: { type: 'string', default: '2' },
    'plcs-per-issuer': { type: 'string', default: '4' },
    'validation-delay-ms': { type: 'string', default: '5' },
    sample: { type: 'string', default: '40' },
    warmup: { type: 'string', default: '16' },
    'prep-concurrency': { type: 'string', default: '16' },
    'settle-timeout-s': { type: 'string', default: '120' },
    'pool-max': { type: 'string', default: '10' },
    'cpu-profile': { type: 'string' },
    metrics: { type: 'string', default: 'on' },
  },
  strict: true,
});
if (args.metrics !== 'on' && args.metrics !== 'off') throw new Error(`--metrics takes on or off, got "${args.metrics}"`);
/** --metrics off: the app and the worker without Prometheus metrics (METRICS_ENABLED=false), for the metrics' cost. */
const metricsOn = args.metrics === 'on';
const durationS = positiveInt('duration-s', args['duration-s'], 600);
const maxPerPhase = positiveInt('max-per-phase', args['max-per-phase'], 20_000);
const concurrencies = args.concurrency.split(',').map((text) => positiveInt('concurrency', text.trim(), 256));
const hops = positiveInt('hops', args.hops, 32);
const plcsPerIssuer = positiveInt('plcs-per-issuer', args['plcs-per-issuer'], 1000);
const validationDelayMs = positiveInt('validation-delay-ms', args['validation-delay-ms'], 10_000, 0);
const sampleSize = positiveInt('sample', args.sample, 1000, 0);
const warmupCount = positiveInt('warmup', args.warmup, 1000, 0);
const prepConcurrency = positiveInt('prep-concurrency', args['prep-concurrency'], 64);
const settleTimeoutMs = positiveInt('settle-timeout-s', args['settle-timeout-s'], 3600) * 1000;
const poolMax = positiveInt('pool-max', args['pool-max'], 100);
/** Investigation only: a V8 CPU profile of the main thread during each measured phase, written to this directory. */
const cpuProfileDir = args['cpu-profile'];
const adminUrl = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const amountMinor = 100n;

const log = (line: string) => process.stdout.write(`${line}\n`);
const ms = (value: number | undefined) => (value !== undefined && Number.isFinite(value) ? value.toFixed(1) : 'n/a');
const pct = (value: number) => (Number.isFinite(value) ? `${(value * 100).toFixed(0)}%` : 'n/a');
const verdict = (ok: boolean) => (ok ? 'met' : 'MISSED');
const sleep = (delayMs: number) => new Promise((resolve) => setTimeout(resolve, delayMs));

/** Other benchmarks distort this one on 2 cores: say so if any runs. */
function otherBenchmarks(): string[] {
  const result = spawnSync('pgrep', ['-af', 'bench/'], { encoding: 'utf8' });
  return result.stdout
    .split('\n')
    .filter((line) => line.trim() !== '')
    .filter((line) => !line.startsWith(`${process.pid} `) && !line.includes('bench/settlement') && !line.includes('pgrep'));
}

interface PhaseResult {
  kind: 'redemption' | 'bare';
  run: PhaseRun;
  cpu: CpuSpent;
  settleWaitMs: number;
  apiLatency: Summary;
  endToEnd: Summary;
  webhookToSettled: Summary;
  webhookToClientSaw: Summary;
  samples: Points[];
  workflowTasks: Summary;
  historyEvents: Summary;
  activities: { name: string; perOp: number; meanMs: number; totalMsPerOp: number }[];
  webhookPosts: { perOp: number; meanMs: number; perSecond: number; maxQueued: number; failed: number };
  webhookStartMs: Summary;
  /** This process's event-loop delay during the phase (ms). */
  loopDelay: { p50: number; p99: number };
}

/** CPU milliseconds per second each process spends with nothing to do (pollers, timers). */
interface IdleRates {
  ownPerS: number;
  temporalPerS: number | null;
  postgresPerS: number | null;
}
let idle: IdleRates | null = null;

/** Waits until nothing is left in flight: simulator queues empty, inbox processed, no redemption pending, bare webhooks done. */
async function settle(s: BenchServices): Promise<number> {
  const started = performance.now();
  for (;;) {
    const queued = s.simulator.dispatcher.queues().reduce((sum, queue) => sum + queue.queued, 0);
    const { rows } = await s.pool.query<{ inbox: number; pending: number; bare: number }>(
      `SELECT (SELECT count(*) FROM webhook_inbox WHERE status NOT IN ('PROCESSED', 'IGNORED'))::int AS inbox,
              (SELECT count(*) FROM redemptions WHERE status = 'PENDING_PAYMENT')::int AS pending,
              (SELECT count(*) FILTER (WHERE step = 'inbox') - count(*) FILTER (WHERE step = 'event-done') FROM bench_settlement_bare)::int AS bare`,
    );
    const row = rows[0];
    if (queued === 0 && row !== undefined && row.inbox === 0 && row.pending === 0 && row.bare === 0) return performance.now() - started;
    if (performance.now() - started > settleTimeoutMs) {
      log(`  (still in flight after ${settleTimeoutMs / 1000} s: queued ${queued}, inbox ${row?.inbox}, pending ${row?.pending}, bare ${row?.bare})`);
      return performance.now() - started;
    }
    await sleep(100);
  }
}

function evenSample<T>(items: readonly T[], count: number): T[] {
  if (items.length <= count) return [...items];
  return Array.from({ length: count }, (_, i) => items[Math.floor((i * items.length) / count)] as T);
}

async function runKind(
  s: BenchServices,
  probes: Probes,
  meter: CpuMeter,
  kind: 'redemption' | 'bare',
  concurrency: number,
  bodies: readonly string[],
  measured: boolean,
): Promise<PhaseResult> {
  const name = `${kind} x${concurrency}${measured ? '' : ' warm-up'}`;
  const itemCount = kind === 'redemption' ? bodies.length : measured ? maxPerPhase : warmupCount;
  probes.resetCounters();
  let maxQueued = 0;
  const queueSampler = setInterval(() => {
    const queued = s.simulator.dispatcher.queues().reduce((sum, queue) => sum + queue.queued, 0);
    if (queued > maxQueued) maxQueued = queued;
  }, 50);
  const loop = monitorEventLoopDelay({ resolution: 10 });
  loop.enable();
  const profiler = measured && cpuProfileDir !== undefined ? new Session() : null;
  if (profiler !== null) {
    profiler.connect();
    await profiler.post('Profiler.enable');
    await profiler.post('Profiler.start');
  }
  const before = await meter.snapshot();
  let run: PhaseRun;
  let settleWaitMs: number;
  try {
    run = await runPhase({
      name,
      concurrency,
      durationMs: measured ? durationS * 1000 : 600_000,
      maxOps: measured ? maxPerPhase : warmupCount,
      itemCount,
      progress: log,
      progressEveryMs: 2000,
      status: () => `webhook queue ${s.simulator.dispatcher.queues().reduce((sum, queue) => sum + queue.queued, 0)}`,
      operation: kind === 'redemption' ? (index, client) => redeemOnce(s, bodies[index] as string, client) : () => bareOnce(s),
    });
    settleWaitMs = await settle(s);
  } finally {
    clearInterval(queueSampler);
    loop.disable();
  }
  const after = await meter.snapshot();
  if (profiler !== null && cpuProfileDir !== undefined) {
    const { profile } = await profiler.post('Profiler.stop');
    profiler.disconnect();
    await mkdir(cpuProfileDir, { recursive: true });
    const file = path.join(cpuProfileDir, `${kind}-x${concurrency}.cpuprofile`);
    await writeFile(file, JSON.stringify(profile));
    log(`  main-thread CPU profile: ${file}`);
  }
  const cpu = CpuMeter.spent(before, after);
  const ops = run.ops;

  // SETTLED times from the database.
  const settledAt = new Map<string, number>();
  const ids = ops.map((op) => op.id);
  if (kind === 'redemption') {
    const { rows } = await s.pool.query<{ id: string; finished_ms: string | null }>(
      `SELECT id::text, (extract(epoch FROM finished_at) * 1000)::text AS finished_ms FROM redemptions WHERE id = ANY($1::uuid[]) AND status = 'SETTLED'`,
      [ids],
    );
    for (const row of rows) if (row.finished_ms !== null) settledAt.set(row.id, Number(row.finished_ms));
  } else {
    const { rows } = await s.pool.query<{ id: string; at_ms: string }>(
      `SELECT id, (extract(epoch FROM at) * 1000)::text AS at_ms FROM bench_settlement_bare WHERE step = 'finish' AND id = ANY($1::text[])`,
      [ids],
    );
    for (const row of rows) settledAt.set(row.id, Number(row.at_ms));
  }
  const webhookSentAt = (op: OpRecord): number | undefined =>
    kind === 'redemption' ? probes.redemptions.get(op.id)?.webhooks.find((send) => send.event === 'TRANSFER_DONE')?.start : probes.bare.get(op.id)?.webhook?.start;
  const webhookToSettled: number[] = [];
  const webhookToClientSaw: number[] = [];
  for (const op of ops) {
    const sent = webhookSentAt(op);
    const settled = settledAt.get(op.id);
    if (sent !== undefined && settled !== undefined) webhookToSettled.push(settled - sent);
    if (sent !== undefined) webhookToClientSaw.push(op.doneAt - sent);
  }

  // A sample of histories, read after the phase (not timed).
  const samples: Points[] = [];
  const workflowTasks: number[] = [];
  const historyEvents: number[] = [];
  const webhookEvents: number[] = [];
  if (measured) {
    await forEachBounded(evenSample(ops, sampleSize), 4, async (op) => {
      try {
        if (kind === 'redemption') {
          const probe = probes.redemptions.get(op.id);
          const timeline = await fetchTimeline(s.driverTemporal, `redemption-${op.id}`);
          const done = probe?.webhooks.find((send) => send.event === 'TRANSFER_DONE');
          // Since issue 38 the webhook signals the redemption in its request: no workflow of its own.
          const webhook =
            done === undefined
              ? null
              : await fetchTimeline(s.driverTemporal, `webhook-gateway-${done.eventId}`).catch((error: unknown) => {
                  // fetchHistory's not-found is the gRPC NOT_FOUND, not WorkflowNotFoundError.
                  if (error instanceof WorkflowNotFoundError || (error as { code?: unknown }).code === 5) return null;
                  throw error;
                });
          webhookEvents.push(webhook?.events ?? 0);
          samples.push(redemptionPoints(op, probe, settledAt.get(op.id) ?? null, timeline, webhook));
          workflowTasks.push(timeline.workflowTasks);
          historyEvents.push(timeline.events);
        } else {
          const probe = probes.bare.get(op.id);
          const timeline = await fetchTimeline(s.driverTemporal, `bare-${op.id}`);
          const webhook = probe?.webhook === undefined ? null : await fetchTimeline(s.driverTemporal, `bare-webhook-${probe.webhook.eventId}`);
          samples.push(barePoints(op, probe, settledAt.get(op.id) ?? null, timeline, webhook));
          workflowTasks.push(timeline.workflowTasks);
          historyEvents.push(timeline.events);
        }
      } catch (error) {
        log(`  (history of ${op.id} unreadable: ${error instanceof Error ? error.message : String(error)})`);
      }
    });
  }

  if (webhookEvents.length > 0) {
    log(`  ${kind}: history events per redemption ${(historyEvents.reduce((a, b) => a + b, 0) / Math.max(1, historyEvents.length)).toFixed(1)}, of its webhook's workflow ${(webhookEvents.reduce((a, b) => a + b, 0) / webhookEvents.length).toFixed(1)} (0: no webhook workflow)`);
  }
  const opCount = Math.max(1, ops.length);
  const activities = [...probes.activityMs.entries()]
    .map(([activity, list]) => {
      const total = list.reduce((sum, value) => sum + value, 0);
      return { name: activity, perOp: list.length / opCount, meanMs: total / Math.max(1, list.length), totalMsPerOp: total / opCount };
    })
    .sort((a, b) => b.totalMsPerOp - a.totalMsPerOp);
  const posts = probes.webhookPosts;
  const result: PhaseResult = {
    kind,
    run,
    cpu,
    settleWaitMs,
    apiLatency: summarizeValues(ops.map((op) => op.respondedAt - op.sentAt)),
    endToEnd: summarizeValues(ops.map((op) => op.doneAt - op.sentAt)),
    webhookToSettled: summarizeValues(webhookToSettled),
    webhookToClientSaw: summarizeValues(webhookToClientSaw),
    samples,
    workflowTasks: summarizeValues(workflowTasks),
    historyEvents: summarizeValues(historyEvents),
    activities,
    webhookPosts: {
      perOp: posts.length / opCount,
      meanMs: posts.reduce((sum, post) => sum + post.durationMs, 0) / Math.max(1, posts.length),
      perSecond: (posts.length * 1000) / Math.max(1, run.elapsedMs + settleWaitMs),
      maxQueued,
      failed: posts.filter((post) => !post.ok).length,
    },
    webhookStartMs: summarizeValues(probes.webhookStartMs),
    loopDelay: { p50: loop.percentile(50) / 1e6, p99: loop.percentile(99) / 1e6 },
  };
  const errorCount = Object.values(run.errors).reduce((sum, n) => sum + n, 0);
  log(
    `  [${name}] ${ops.length} settled in ${(run.elapsedMs / 1000).toFixed(1)} s = ${run.perSecond.toFixed(1)}/s (stopped by ${run.stoppedBy}), ` +
      `webhook->SETTLED p50 ${ms(result.webhookToSettled.p50)} p95 ${ms(result.webhookToSettled.p95)} ms, ${errorCount} errors, ` +
      `settled the tail in ${(settleWaitMs / 1000).toFixed(1)} s`,
  );
  for (const [message, count] of Object.entries(run.errors)) log(`    error x${count}: ${message}`);
  return result;
}

async function redeemOnce(s: BenchServices, body: string, client: number): Promise<OpRecord> {
  const sentAt = nowMs();
  const response = await fetch(`${s.baseUrl}/api/v1/redeem/`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-device-id': `bench-redeemer-${client}` },
    body,
  });
  const text = await response.text();
  const respondedAt = nowMs();
  if (response.status !== 200) throw new Error(`redeem answered ${response.status}: ${text.slice(0, 100)}`);
  const opened = JSON.parse(text) as { redemption_id: string; workflow_id: string };
  const result = (await s.driverTemporal.workflow.getHandle(opened.workflow_id).result()) as { status: string };
  const doneAt = nowMs();
  if (result.status !== 'SETTLED') throw new Error(`redemption closed ${result.status}`);
  return { id: opened.redemption_id, sentAt, respondedAt, doneAt };
}

async function bareOnce(s: BenchServices): Promise<OpRecord> {
  const id = randomUUID();
  const sentAt = nowMs();
  const response = await fetch(`${s.baseUrl}${bareOpenPath}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ id }) });
  const text = await response.text();
  const respondedAt = nowMs();
  if (response.status !== 200) throw new Error(`bare open answered ${response.status}: ${text.slice(0, 100)}`);
  const result = (await s.driverTemporal.workflow.getHandle(`bare-${id}`).result()) as { status: string };
  const doneAt = nowMs();
  if (result.status !== 'SETTLED') throw new Error(`bare settlement closed ${result.status}`);
  return { id, sentAt, respondedAt, doneAt };
}

/** What the redeem handler computes before it calls Temporal, alone on the same bodies (CPU ms per redeem). */
function measureVerification(bodies: readonly string[], toleranceMs: number): { parseMs: number; verifyPlcMs: number; verifyRedeemMs: number; count: number } {
  let parseMs = 0;
  let verifyPlcMs = 0;
  let verifyRedeemMs = 0;
  for (const text of bodies) {
    const t0 = performance.now();
    const body = redeemPlcRequest.parse(JSON.parse(text));
    const plc = plcFromJson(body.plc);
    const authorization = redeemAuthorizationFromJson({ ...body.authorization, settlement_rail: payoutRailOf(body.authorization.settlement_rail, 'authorization.settlement_rail', { signed: true }) });
    const t1 = performance.now();
    const verification = verifyPlc(plc, { clockToleranceMs: toleranceMs });
    const t2 = performance.now();
    const redeemOk = verifyRedeem(authorization);
    const t3 = performance.now();
    if (!verification.ok || !redeemOk) throw new Error('a prepared redeem body does not verify');
    parseMs += t1 - t0;
    verifyPlcMs += t2 - t1;
    verifyRedeemMs += t3 - t2;
  }
  const n = Math.max(1, bodies.length);
  return { parseMs: parseMs / n, verifyPlcMs: verifyPlcMs / n, verifyRedeemMs: verifyRedeemMs / n, count: bodies.length };
}

function cpuRow(result: PhaseResult): string[] {
  const n = Math.max(1, result.run.ops.length);
  const { cpu } = result;
  const wallS = cpu.wallMs / 1000;
  // Net of what each process spends idle over the same wall time.
  const net = (value: number | null, idlePerS: number | null | undefined) =>
    value === null ? null : Math.max(0, value - (idlePerS ?? 0) * wallS);
  const per = (value: number | null) => (value === null ? 'n/a' : (value / n).toFixed(1));
  const ownNet = net(cpu.ownMs, idle?.ownPerS);
  const mainShare = cpu.ownMs > 0 ? cpu.ownMainThreadMs / cpu.ownMs : Number.NaN;
  const temporalNet = net(cpu.temporalMs, idle?.temporalPerS);
  const postgresNet = net(cpu.postgresMs, idle?.postgresPerS);
  const oursNet = (ownNet ?? 0) + (temporalNet ?? 0) + (postgresNet ?? 0);
  const ours = cpu.ownMs + (cpu.temporalMs ?? 0) + (cpu.postgresMs ?? 0);
  const machineBusy = cpu.machineBusyMs === null || cpu.machineCapacityMs === null ? Number.NaN : cpu.machineBusyMs / cpu.machineCapacityMs;
  const others = cpu.machineBusyMs === null || cpu.machineCapacityMs === null ? Number.NaN : (cpu.machineBusyMs - ours) / cpu.machineCapacityMs;
  return [
    `${result.kind} x${result.run.concurrency}`,
    per(ownNet),
    pct(mainShare),
    per(temporalNet),
    per(postgresNet),
    per(oursNet),
    per(ours),
    oursNet > 0 ? ((os.cpus().length * 1000 * n) / oursNet).toFixed(0) : 'n/a',
    pct(cpu.eventLoopUtilization),
    `${result.loopDelay.p50.toFixed(0)}/${result.loopDelay.p99.toFixed(0)}`,
    pct(machineBusy),
    pct(others),
  ];
}

async function main(): Promise<void> {
  const machine = machineInfo();
  const others = otherBenchmarks();
  if (others.length > 0) {
    log('WARNING: other benchmarks are running and will distort these figures on this machine:');
    for (const line of others) log(`  ${line}`);
  }
  log(`settlement benchmark, ${new Date().toISOString()}`);
  log(`machine: ${machine.cpuModel}, ${machine.cpuCount} CPUs, ${machine.memoryGiB} GiB, ${machine.platform}, Node ${machine.node}, load average ${machine.loadAverage}`);
  log(describeWorkflowThreadGuard());
  log(
    `settings: --metrics ${metricsOn ? 'on' : 'off'} --duration-s ${durationS} --max-per-phase ${maxPerPhase} --concurrency ${concurrencies.join(',')} --hops ${hops} --plcs-per-issuer ${plcsPerIssuer} ` +
      `--validation-delay-ms ${validationDelayMs} --sample ${sampleSize} --warmup ${warmupCount} --pool-max ${poolMax}`,
  );

  const probes = new Probes();
  let services: BenchServices | null = null;
  let meter: CpuMeter | null = null;
  try {
    const s = await startServices({ adminUrl, log, probes, appPoolMax: poolMax, workerPoolMax: poolMax, validationDelayMs, metrics: metricsOn });
    services = s;
    const version = await s.pool.query<{ server_version: string }>('SHOW server_version');
    const pgSettings = await s.pool.query<{ name: string; setting: string }>(
      `SELECT name, setting FROM pg_settings WHERE name IN ('shared_buffers', 'synchronous_commit', 'fsync', 'max_connections') ORDER BY name`,
    );
    log(`PostgreSQL ${version.rows[0]?.server_version ?? '?'} (${pgSettings.rows.map((row) => `${row.name}=${row.setting}`).join(', ')})`);
    log(`Temporal CLI: ${commandVersion(s.temporalCli, ['--version'])}`);
    meter = await CpuMeter.open(s.databaseUrl, s.databaseName, s.devServer.process.pid);

    const total = warmupCount + concurrencies.length * maxPerPhase;
    log(`preparing ${total} PLCs (${plcsPerIssuer} per issuer, ${hops} offline hops each, ${amountMinor} minor units)`);
    const prepared = await preparePlcs({
      baseUrl: s.baseUrl,
      adminHeaders: s.adminHeaders,
      count: total,
      plcsPerIssuer,
      hops,
      amountMinor,
      concurrency: prepConcurrency,
      log,
    });
    await settle(s);
    await sleep(1000);
    const idleBefore = await meter.snapshot();
    await sleep(5000);
    const idleSpent = CpuMeter.spent(idleBefore, await meter.snapshot());
    const perS = (value: number | null) => (value === null ? null : (value * 1000) / idleSpent.wallMs);
    idle = { ownPerS: perS(idleSpent.ownMs) ?? 0, temporalPerS: perS(idleSpent.temporalMs), postgresPerS: perS(idleSpent.postgresMs) };
    log(
      `idle for 5 s: node ${idle.ownPerS.toFixed(0)}, Temporal ${idle.temporalPerS?.toFixed(0) ?? 'n/a'}, PostgreSQL ${idle.postgresPerS?.toFixed(0) ?? 'n/a'} CPU ms per s; ` +
        `machine busy ${pct((idleSpent.machineBusyMs ?? Number.NaN) / (idleSpent.machineCapacityMs ?? Number.NaN))}`,
    );
    let offset = 0;
    const take = (count: number): PreparedPlc[] => {
      const slice = prepared.slice(offset, offset + count);
      offset += count;
      return slice;
    };

    if (warmupCount > 0) {
      log(`warm-up: ${warmupCount} redemptions and ${warmupCount} bare settlements at 4 clients (not recorded)`);
      await runKind(s, probes, meter, 'redemption', 4, signRedeemBodies(take(warmupCount)), false);
      await runKind(s, probes, meter, 'bare', 4, [], false);
    }

    const results: PhaseResult[] = [];
    let verification: ReturnType<typeof measureVerification> | null = null;
    for (const concurrency of concurrencies) {
      const slice = take(maxPerPhase);
      const bodies = signRedeemBodies(slice);
      log(`phase: redemptions, ${concurrency} clients, up to ${bodies.length} or ${durationS} s`);
      results.push(await runKind(s, probes, meter, 'redemption', concurrency, bodies, true));
      verification ??= measureVerification(bodies.slice(0, 200), s.config.CLOCK_TOLERANCE_MS);
      log(`phase: bare settlements, ${concurrency} clients, up to ${maxPerPhase} or ${durationS} s`);
      results.push(await runKind(s, probes, meter, 'bare', concurrency, [], true));
    }

    report(results, verification, machine);
  } finally {
    await meter?.close().catch(() => {});
    if (services !== null) {
      log('stopping: simulator, app, workers, Temporal dev server, database');
      await services.stop();
    }
  }
}

function report(results: PhaseResult[], verification: ReturnType<typeof measureVerification> | null, machine: ReturnType<typeof machineInfo>): void {
  log('');
  log(`## Results (${new Date().toISOString()}, ${machine.cpuModel}, ${machine.cpuCount} CPUs, Node ${machine.node}, load average now ${machineInfo().loadAverage})`);
  log('');
  log(
    formatTable(
      ['phase', 'settled', 'seconds', 'per s', 'API answer p50', 'p95', 'request->SETTLED p50', 'p95', 'webhook->SETTLED p50', 'p95', 'p99', 'errors', 'stopped by'],
      results.map((r) => [
        `${r.kind} x${r.run.concurrency}`,
        String(r.run.ops.length),
        (r.run.elapsedMs / 1000).toFixed(1),
        r.run.perSecond.toFixed(1),
        ms(r.apiLatency.p50),
        ms(r.apiLatency.p95),
        ms(r.endToEnd.p50),
        ms(r.endToEnd.p95),
        ms(r.webhookToSettled.p50),
        ms(r.webhookToSettled.p95),
        ms(r.webhookToSettled.p99),
        String(Object.values(r.run.errors).reduce((sum, n) => sum + n, 0)),
        r.run.stoppedBy,
      ]),
    ),
  );
  log('');
  const checks: string[][] = [];
  for (const concurrency of concurrencies) {
    const redemption = results.find((r) => r.kind === 'redemption' && r.run.concurrency === concurrency);
    const bare = results.find((r) => r.kind === 'bare' && r.run.concurrency === concurrency);
    if (redemption === undefined || bare === undefined) continue;
    const ratio = redemption.run.perSecond / bare.run.perSecond;
    checks.push([`redemptions/s / bare/s at ${concurrency} clients`, pct(ratio), `>= ${pct(targets.redemptionsOverBare)}`, verdict(ratio >= targets.redemptionsOverBare)]);
    checks.push([
      `p95 webhook->SETTLED at ${concurrency} clients`,
      `${ms(redemption.webhookToSettled.p95)} ms`,
      `< ${targets.webhookToSettledP95Ms} ms`,
      verdict(redemption.webhookToSettled.p95 < targets.webhookToSettledP95Ms),
    ]);
  }
  log(formatTable(['check', 'value', 'target', 'verdict'], checks));
  log('');
  log(
    `CPU per settlement (ms) by process, net of idle (idle: node ${idle?.ownPerS.toFixed(0) ?? '?'}, Temporal ${idle?.temporalPerS?.toFixed(0) ?? '?'}, ` +
      `PostgreSQL ${idle?.postgresPerS?.toFixed(0) ?? '?'} ms per s), and how busy the machine was ("others" = busy CPU not ours):`,
  );
  log(
    formatTable(
      ['phase', 'node (API+workers+sim+driver)', 'of it main thread', 'Temporal server', 'PostgreSQL', 'ours net', 'ours raw', 'CPU-bound ceiling/s', 'event loop util', 'loop delay p50/p99 ms', 'machine busy', 'others'],
      results.map(cpuRow),
    ),
  );
  log('');

  for (const concurrency of concurrencies) {
    const redemption = results.find((r) => r.kind === 'redemption' && r.run.concurrency === concurrency);
    const bare = results.find((r) => r.kind === 'bare' && r.run.concurrency === concurrency);
    if (redemption === undefined || bare === undefined) continue;
    log(`Timeline at ${concurrency} clients: ms since the request was sent, median (p95), over ${redemption.samples.length} + ${bare.samples.length} sampled histories:`);
    const rp = pointSummaries(redemption.samples);
    const bp = pointSummaries(bare.samples);
    const cell = (summary: Summary | undefined) => (summary === undefined || summary.n === 0 ? '-' : `${ms(summary.p50)} (${ms(summary.p95)})`);
    log(
      formatTable(
        ['point', 'redemption', 'bare'],
        (Object.keys(pointLabels) as PointKey[]).map((key) => [pointLabels[key], cell(rp.get(key)), cell(bp.get(key))]),
      ),
    );
    log('');
    log(`Segments at ${concurrency} clients: duration median (p95) in ms; * = on the webhook -> SETTLED path:`);
    const rs = segmentSummaries(redemption.samples, 'redemption');
    const bs = segmentSummaries(bare.samples, 'bare');
    const labels = [...new Set([...rs.keys(), ...bs.keys()])];
    log(
      formatTable(
        ['segment', 'category', 'redemption', 'bare'],
        labels.map((segment) => [`${segment.afterWebhook ? '* ' : '  '}${segment.label}`, segment.category, cell(rs.get(segment)), cell(bs.get(segment))]),
      ),
    );
    const byCategory = (summaries: Map<(typeof labels)[number], Summary>, afterWebhookOnly: boolean) => {
      const sums = new Map<Category, number>();
      for (const [segment, summary] of summaries) {
        if (afterWebhookOnly && !segment.afterWebhook) continue;
        if (summary.n === 0) continue;
        sums.set(segment.category, (sums.get(segment.category) ?? 0) + summary.p50);
      }
      return [...sums.entries()].map(([category, value]) => `${category} ${value.toFixed(1)}`).join(', ');
    };
    log(`  webhook -> SETTLED by category (sum of segment medians, ms): redemption: ${byCategory(rs, true)}; bare: ${byCategory(bs, true)}`);
    log(
      `  workflow tasks per settlement workflow: redemption ${ms(redemption.workflowTasks.p50)} (history events ${ms(redemption.historyEvents.p50)}), ` +
        `bare ${ms(bare.workflowTasks.p50)} (events ${ms(bare.historyEvents.p50)})`,
    );
    log('');
    log(`Activities per settlement at ${concurrency} clients (every workflow: settlement, webhooks, PLC):`);
    const rows: string[][] = [];
    for (const r of [redemption, bare]) {
      for (const activity of r.activities) {
        rows.push([r.kind, activity.name, activity.perOp.toFixed(2), activity.meanMs.toFixed(2), activity.totalMsPerOp.toFixed(2)]);
      }
    }
    log(formatTable(['kind', 'activity', 'per settlement', 'mean ms', 'ms per settlement'], rows));
    log(
      `  webhooks: redemption ${redemption.webhookPosts.perOp.toFixed(2)} POSTs per redemption, mean ${redemption.webhookPosts.meanMs.toFixed(1)} ms each ` +
        `(workflow.start in the route mean ${ms(redemption.webhookStartMs.mean)} ms), ${redemption.webhookPosts.perSecond.toFixed(0)} deliveries/s, ` +
        `simulator queue depth max ${redemption.webhookPosts.maxQueued}, ${redemption.webhookPosts.failed} failed; ` +
        `webhook -> client saw result p50 ${ms(redemption.webhookToClientSaw.p50)} p95 ${ms(redemption.webhookToClientSaw.p95)} ms ` +
        `(bare ${ms(bare.webhookToClientSaw.p50)} / ${ms(bare.webhookToClientSaw.p95)})`,
    );
    log('');
  }
  if (verification !== null) {
    log(
      `Verification alone (the redeem handler's work before Temporal, ${verification.count} bodies, ${hops} hops, this process): ` +
        `parse+zod+decode ${verification.parseMs.toFixed(2)} ms, verifyPlc ${verification.verifyPlcMs.toFixed(2)} ms, verifyRedeem ${verification.verifyRedeemMs.toFixed(2)} ms per redeem`,
    );
  }
  log(`(${formatNumber(results.reduce((sum, r) => sum + r.run.ops.length, 0))} measured settlements in all)`);
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exitCode = 1;
});
