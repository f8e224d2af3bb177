/**
 * The API of the protocol benchmark, in a process of its own as in a deployment (docker-compose's
 * `api` service runs `api/server.ts` apart from the `worker`): the real app (`buildApp`) plus the
 * bench-only baseline route, listening on 127.0.0.1, port 0. Forked by services.ts with its
 * settings in BENCH_API_SETTINGS (JSON); its event loop, heap and garbage collector then belong to
 * the API alone, not to the workers, the bench's prepared chains or its load loops.
 *
 * Over IPC it answers the bench's questions about itself: CPU (process and main thread) and event
 * loop use, group-commit counters, Ed25519 verifier calls, a CPU and an allocation profile of a
 * window, and close.
 */
import { performance } from 'node:perf_hooks';
import { Client, Connection } from '@temporalio/client';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { buildApp } from '../../api/app.ts';
import { createServiceMetrics } from '../../infra/metrics.ts';
import { metricsDatabaseReaders } from '../../db/metrics-readers.ts';
import { transferPlcRequest } from '../../api/schemas/plc.ts';
import { withTransaction } from '../../db/pool.ts';
import { decodeTransportText, plcFromJson } from '../../src/protocol/index.ts';
import { groupCommitStats } from '../../db/group-commit.ts';
import { createPool } from '../../db/pool.ts';
import { configuredGatewayClient } from '../../infra/gateway-client.ts';
import { nodeEd25519, nodeVerifyEd25519 } from '../../infra/ed25519-node.ts';
import { loadConfig } from '../../infra/config.ts';
import { startHeapProfile, startProfile, type ProfileHandle } from './profiler.ts';

export interface ApiProcessSettings {
  env: Record<string, string>;
  poolMax: number;
  baselineTable: string;
  baselinePath: string;
  /** The floor route: what any transfer route must do at least (see below). */
  floorPath: string;
}

export type ApiRequest =
  | { type: 'cpu' }
  | { type: 'group-commit' }
  | { type: 'ed25519-calls' }
  | { type: 'profile-start'; dir: string | undefined; heapDir?: string | undefined; name: string }
  | { type: 'profile-stop' }
  | { type: 'close' };

export interface ApiCpu {
  process: NodeJS.CpuUsage;
  mainThread: NodeJS.CpuUsage;
  loop: ReturnType<typeof performance.eventLoopUtilization>;
}

function send(message: unknown): void {
  process.send?.(message);
}

async function main(): Promise<void> {
  const settings = JSON.parse(process.env.BENCH_API_SETTINGS ?? 'null') as ApiProcessSettings | null;
  if (settings === null) throw new Error('BENCH_API_SETTINGS is not set: this process is forked by bench/protocol/services.ts');
  const config = loadConfig(settings.env);
  const pool = createPool({ connectionString: config.DATABASE_URL as string, max: settings.poolMax, applicationName: 'bench-protocol-api' });
  const connection = await Connection.connect({ address: config.TEMPORAL_ADDRESS as string });
  const temporal = new Client({ connection, namespace: config.TEMPORAL_NAMESPACE });
  // Metrics as api/server.ts makes them (METRICS_ENABLED; bench:protocol --metrics-ab runs a second process without).
  const metrics = config.METRICS_ENABLED ? createServiceMetrics({ process: 'api', database: metricsDatabaseReaders(pool) }) : null;
  const gateway = configuredGatewayClient(config, metrics);
  const app = await buildApp({ deps: { config, pool, temporal, gateway }, logger: false, metrics });
  // Bench-only: the same app instance, one INSERT and nothing else (no schema, no rate limit).
  app.post(settings.baselinePath, async (request) => {
    const device = request.headers['x-device-id'];
    await pool.query({ name: 'bench-baseline-insert', text: `INSERT INTO ${settings.baselineTable} (device_id) VALUES ($1)`, values: [typeof device === 'string' ? device : '-'] });
    return { ok: true };
  });
  // Bench-only: the floor of a transfer, through the same stack and pool as the transfer route:
  // the same body schema (JSON, zod), the PLC decoded by the same function, one Ed25519 signature
  // (the issuer's, over the carried commitment hash) verified by the route's verifier, one row
  // inserted in one transaction, an answer. Whatever the transfer route does beyond this is
  // its own cost; the bench reports the route as a ratio to this.
  app.withTypeProvider<ZodTypeProvider>().post(settings.floorPath, { schema: { body: transferPlcRequest } }, async (request) => {
    const plc = request.body.plc === undefined ? decodeTransportText(request.body.transport as string) : plcFromJson(request.body.plc);
    if (!nodeVerifyEd25519(plc.issuerSignature, plc.commitmentHash, plc.commitment.issuerPublicKey)) throw new Error('bench floor: the issuer signature does not verify');
    const device = request.headers['x-device-id'];
    await withTransaction(pool, (client) =>
      client.query({ name: 'bench-floor-insert', text: `INSERT INTO ${settings.baselineTable} (device_id) VALUES ($1)`, values: [typeof device === 'string' ? device : '-'] }),
    );
    return { ok: true };
  });
  let responses = 0;
  app.addHook('onResponse', async () => {
    responses += 1;
  });
  const baseUrl = await app.listen({ host: '127.0.0.1', port: 0 });

  let profile: ProfileHandle | undefined;
  let heapProfile: ProfileHandle | undefined;
  let closing = false;
  const close = async () => {
    if (closing) return;
    closing = true;
    await app.close();
    await connection.close();
    await pool.end();
  };
  process.on('message', (message: { id: number; request: ApiRequest }) => {
    const answer = async (): Promise<unknown> => {
      const { request } = message;
      switch (request.type) {
        case 'cpu':
          return { process: process.cpuUsage(), mainThread: process.threadCpuUsage(), loop: performance.eventLoopUtilization() } satisfies ApiCpu;
        case 'group-commit':
          return groupCommitStats();
        case 'ed25519-calls':
          return nodeEd25519.stats().calls;
        case 'profile-start':
          profile = await startProfile(request.dir, request.name);
          heapProfile = await startHeapProfile(request.heapDir, request.name, () => responses);
          return null;
        case 'profile-stop': {
          const lines = [...((await profile?.stop()) ?? []), ...((await heapProfile?.stop()) ?? [])];
          profile = undefined;
          heapProfile = undefined;
          return lines;
        }
        case 'close':
          await close();
          return null;
      }
    };
    answer().then(
      (value) => send({ id: message.id, value }),
      (error: unknown) => send({ id: message.id, error: error instanceof Error ? error.message : String(error) }),
    );
  });
  // The parent gone (a crashed bench): close rather than linger with the pool open.
  process.on('disconnect', () => {
    void close().finally(() => process.exit(0));
  });
  send({ ready: true, baseUrl });
}

main().catch((error: unknown) => {
  process.stderr.write(`bench API process failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
