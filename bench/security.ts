/**
 * PIN verification benchmark (not a test). Run: `npm run bench:security` or
 * `npx node bench/security.ts [--duration-s 10] [--warmup-s 2] [--kdf-samples 20] [--keep-database]`.
 *
 * 1. The KDF alone: the server's slow hash of a client PIN hash (infra/pin-hasher.ts: HMAC with
 *    the pepper, then scrypt with r = 8, p = 1) at N = 2^13 to 2^16, one after another in this
 *    process: wall time and CPU time (process.cpuUsage counts libuv's thread pool, where
 *    node:crypto's scrypt runs) per verification, and the memory each one takes (128 N r bytes).
 *    The parameters in use (N = 2^15) are the largest whose CPU cost stays under 100 ms here.
 * 2. Verifications per second through the API: POST /api/v1/security/pin/verify with the right
 *    PIN, answered by the real service over a PostgreSQL database of its own (created on
 *    BENCH_DATABASE_URL, default postgres://postgres@127.0.0.1:5432/postgres, migrated, dropped at
 *    the end), by 2 and then 16 closed-loop clients, each verifying an owner of its own (as users
 *    do; one owner's attempts serialise on its row by design). Requests go through `app.inject`
 *    (Fastify's routing, validation, rate limit in PostgreSQL and serialisation, no socket), so
 *    the CPU measured is the API's: per verification, and the ceiling it implies (CPUs / CPU per
 *    verification).
 *
 * Prints the machine, a table for each part, and what an offline guess costs an attacker who
 * holds both the table and the pepper (docs/security.md).
 */
import { randomBytes } from 'node:crypto';
import os from 'node:os';
import type { Client } from '@temporalio/client';
import { buildApp } from '../api/app.ts';
import { createSecurityService } from '../services/security.ts';
import { applyMigrations } from '../db/migrate.ts';
import { createPool } from '../db/pool.ts';
import { createGatewayClient } from '../gateway/index.ts';
import { loadConfig } from '../infra/config.ts';
import { createPinHasher, pinKdfDefault, type PinKdfParams } from '../infra/pin-hasher.ts';
import { parseBenchArgs } from './support/args.ts';
import { ownCpuMs } from './support/cpu.ts';
import { formatNumber, formatTable, machineInfo } from './support/report.ts';
import { cleanupStack, createBenchDatabase } from './support/services.ts';
import { runClosedLoop } from './support/timing.ts';

const { values: args } = parseBenchArgs(import.meta.url, {
  options: {
    'duration-s': { type: 'string', default: '10' },
    'warmup-s': { type: 'string', default: '2' },
    'kdf-samples': { type: 'string', default: '20' },
    'keep-database': { type: 'boolean', default: false },
  },
  strict: true,
});
function boundedNumber(name: string, text: string, min: number, max: number): number {
  const value = Number(text);
  if (!Number.isFinite(value) || value < min || value > max) throw new Error(`--${name} must be from ${min} to ${max}, got "${text}"`);
  return value;
}
const durationMs = boundedNumber('duration-s', args['duration-s'], 1, 3600) * 1000;
const warmupMs = boundedNumber('warmup-s', args['warmup-s'], 0, 600) * 1000;
const kdfSamples = Math.round(boundedNumber('kdf-samples', args['kdf-samples'], 1, 10_000));
const concurrencies = [2, 16] as const;
const log = (line: string): void => {
  process.stdout.write(`${line}\n`);
};

const pepper = randomBytes(32).toString('hex');
const hexOf = (bytes: number): string => randomBytes(bytes).toString('hex');

interface KdfRow {
  params: PinKdfParams;
  wallMs: number;
  cpuMs: number;
}

async function measureKdf(params: PinKdfParams): Promise<KdfRow> {
  const hasher = createPinHasher(pepper, params);
  const stored = await hasher.create('bench-owner', hexOf(32));
  const presented = hexOf(32);
  await hasher.matches('bench-owner', presented, stored);
  const cpuBefore = ownCpuMs();
  const startedAt = performance.now();
  for (let sample = 0; sample < kdfSamples; sample += 1) await hasher.matches('bench-owner', presented, stored);
  return { params, wallMs: (performance.now() - startedAt) / kdfSamples, cpuMs: (ownCpuMs() - cpuBefore) / kdfSamples };
}

async function main(): Promise<void> {
  const machine = machineInfo();
  log(`machine: ${machine.cpuModel}, ${machine.cpuCount} CPUs, ${machine.memoryGiB} GiB, ${machine.platform}, Node ${machine.node}`);
  log(`load average at start: ${machine.loadAverage}; UV_THREADPOOL_SIZE=${process.env.UV_THREADPOOL_SIZE ?? '4 (default)'}`);

  log(`\n1. the KDF alone (${kdfSamples} verifications each, one at a time)`);
  const kdfRows: KdfRow[] = [];
  for (const log2N of [13, 14, 15, 16]) kdfRows.push(await measureKdf({ log2N, r: 8, p: 1 }));
  log(
    formatTable(
      ['scrypt', 'memory', 'wall ms', 'CPU ms', 'in use'],
      kdfRows.map((row) => [
        `N=2^${row.params.log2N} r=${row.params.r} p=${row.params.p}`,
        `${(128 * 2 ** row.params.log2N * row.params.r) / 2 ** 20} MiB`,
        row.wallMs.toFixed(1),
        row.cpuMs.toFixed(1),
        row.params.log2N === pinKdfDefault.log2N ? 'yes' : '',
      ]),
    ),
  );

  const cleanups = cleanupStack(log);
  const stopOnSignal = (): void => {
    void cleanups.stop().then(() => process.exit(130));
  };
  process.once('SIGINT', stopOnSignal);
  try {
    const adminUrl = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
    const database = await createBenchDatabase(adminUrl, 'plc_bench_security', args['keep-database'] ? { push: () => {}, stop: async () => {} } : cleanups);
    const pool = createPool({ connectionString: database.url, max: 20, applicationName: 'bench-security' });
    cleanups.push({ name: 'pool', run: () => pool.end() });
    await applyMigrations(pool);
    const config = loadConfig({
      APP_ENV: 'test',
      LOG_LEVEL: 'silent',
      DATABASE_URL: database.url,
      DATABASE_POOL_MAX: '20',
      JWT_SECRET: hexOf(32),
      PIN_PEPPER: pepper,
      RATE_LIMIT_SECURITY_PER_MINUTE: '1000000',
    });
    // Verification never calls Temporal; the status outbox it polls stays empty.
    const temporal = {} as Client;
    const gateway = createGatewayClient({ baseUrl: config.GATEWAY_BASE_URL, apiKey: config.GATEWAY_API_KEY, timeoutMs: config.GATEWAY_TIMEOUT_MS });
    const app = await buildApp({ deps: { config, pool, temporal, gateway, security: createSecurityService({ pool, temporal, config }) }, logger: false });
    cleanups.push({ name: 'app', run: () => app.close() });
    await app.ready();

    const owners = Array.from({ length: Math.max(...concurrencies) }, (_, index) => ({ ownerId: `bench-owner-${index}`, pin: hexOf(32) }));
    for (const owner of owners) {
      const response = await app.inject({ method: 'POST', url: '/api/v1/security/pin/register', payload: { owner_id: owner.ownerId, pin_hash: owner.pin, salt: hexOf(16) } });
      if (response.statusCode !== 200) throw new Error(`register answered ${response.statusCode}: ${response.body}`);
    }

    log(`\n2. POST /api/v1/security/pin/verify through the API (right PIN, one owner per client; ${warmupMs / 1000} s warm-up, ${durationMs / 1000} s measured)`);
    const rows: string[][] = [];
    for (const clientCount of concurrencies) {
      let cpuAtStart = 0;
      const result = await runClosedLoop({
        name: `${clientCount} clients`,
        clients: owners.slice(0, clientCount),
        warmupMs,
        durationMs,
        onMeasureStart: () => {
          cpuAtStart = ownCpuMs();
        },
        operation: async (owner) => {
          const response = await app.inject({ method: 'POST', url: '/api/v1/security/pin/verify', payload: { owner_id: owner.ownerId, pin_hash: owner.pin } });
          if (response.statusCode !== 200 || (response.json() as { valid: boolean }).valid !== true) {
            throw Object.assign(new Error(`verify answered ${response.statusCode}`), { code: `HTTP_${response.statusCode}` });
          }
        },
        progress: log,
        progressEveryMs: 5000,
      });
      const cpuPerOpMs = (ownCpuMs() - cpuAtStart) / Math.max(1, result.operations);
      rows.push([
        String(clientCount),
        formatNumber(result.perSecond),
        result.latency.p50Ms.toFixed(1),
        result.latency.p99Ms.toFixed(1),
        cpuPerOpMs.toFixed(1),
        formatNumber((os.cpus().length * 1000) / cpuPerOpMs),
        Object.keys(result.errors).length === 0 ? '0' : JSON.stringify(result.errors),
      ]);
    }
    log(formatTable(['clients', 'verifications/s', 'p50 ms', 'p99 ms', 'API CPU ms/verification', 'CPU ceiling/s', 'errors'], rows));

    const inUse = kdfRows.find((row) => row.params.log2N === pinKdfDefault.log2N);
    if (inUse !== undefined) {
      const hoursFor = (guesses: number): string => ((guesses * inUse.cpuMs) / 3_600_000).toFixed(2);
      log(
        `\noffline guessing with the table AND the pepper: ${inUse.cpuMs.toFixed(1)} ms of CPU per guess;` +
          ` every 4-digit PIN ${hoursFor(10_000)} CPU-hours, every 6-digit PIN ${hoursFor(1_000_000)} CPU-hours per owner` +
          ' (plus the cost of the client\'s own hash). Without the pepper no guess can be checked at all.',
      );
    }
  } finally {
    await cleanups.stop();
  }
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    process.stderr.write(`bench:security failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exit(1);
  },
);
