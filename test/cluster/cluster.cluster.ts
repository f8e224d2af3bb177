import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findViolations } from '../../db/ledger.ts';
import { createPool, type Pool } from '../../db/pool.ts';
import { clusterPorts } from '../../infra/cluster.ts';
import { stateFileName, type DevState } from '../../infra/dev-state.ts';
import { isAlive } from '../../infra/pids.ts';
import { freePort } from '../../infra/temporal-dev-server.ts';
import { runChaos } from '../../scripts/chaos/campaign.ts';
import { gatewayControl, type Stack } from '../../scripts/chaos/stack.ts';
import { createSimulator, type Simulator } from '../../simulator/app.ts';
import { plcToJson, type Plc } from '../../src/protocol/index.ts';
import { bankSlipLine, boletoRedeemBody, feeConsentBody, redeemBody } from '../support/settlement.ts';
import { hop, issue, newWallet, type TestWallet } from '../support/wallet.ts';

/**
 * `npm run test:cluster` (after the main suite in .ci/run): `npm run start:cluster` as a person
 * runs it (Temporal's services as separate processes on PostgreSQL, two API replicas behind
 * HAProxy, two workers), with the gateway simulator in this process so the test is the bank: it
 * holds payouts in BANK_PROCESSING while it breaks something, then pays them. Then: the chaos
 * campaign's short form (scripts/chaos; its parts that need no whole-stack kill or freeze); the journey
 * (deposit, create, hops, redeem to Pix and to Boleto, the webhooks, SETTLED, the ledger
 * verified); a history process and a matching process SIGKILLed while redemptions are in flight;
 * an API replica and a worker SIGKILLed under load. Every redemption must end SETTLED with
 * exactly one payout at the gateway; the ledger must verify after each. Ctrl-C (SIGINT to the
 * process group) then stops everything in order.
 */

const root = fileURLToPath(new URL('../../', import.meta.url));
const portBase = Number(process.env.CLUSTER_TEST_PORT_BASE ?? '18600');
const ports = clusterPorts(portBase);
const api = `http://127.0.0.1:${ports.loadBalancer}/api/v1`;
const admin = { username: 'cluster-admin', password: `cluster-${randomUUID()}` };
const gatewayKey = 'cluster-gateway-key';
const webhookToken = `cluster-webhook-${randomUUID()}`;
const device = { 'x-device-id': 'cluster-test-device' };
const pixKey = 'payee@example.com';

let dataDir = '';
let child: ChildProcess | null = null;
let output = '';
let exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }> | null = null;
let simulator: Simulator | null = null;
let pool: Pool | null = null;
let bank: NodeJS.Timeout | null = null;
let bankHeld = false;
let adminToken: string | null = null;

function sim(): Simulator {
  if (simulator === null) throw new Error('no simulator');
  return simulator;
}
function db(): Pool {
  if (pool === null) throw new Error('no database');
  return pool;
}

/** The bank: pays every transfer and bill the gateway holds, unless held. */
function bankTick(): void {
  if (bankHeld || simulator === null) return;
  const snapshot = simulator.state.snapshot(100_000);
  for (const transfer of snapshot.transfers) {
    if (transfer.status !== 'BANK_PROCESSING') continue;
    try {
      simulator.state.completeTransfer(transfer.id);
    } catch {
      // moved on meanwhile
    }
  }
  for (const bill of snapshot.billPayments) {
    if (bill.status !== 'BANK_PROCESSING') continue;
    try {
      simulator.state.completeBillPayment(bill.id);
    } catch {
      // moved on meanwhile
    }
  }
}

async function until<T>(what: string, check: () => Promise<T | false> | T | false, timeoutMs: number): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown = null;
  for (;;) {
    try {
      const value = await check();
      if (value !== false) return value;
    } catch (error) {
      last = error;
    }
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs / 1000} s${last === null ? '' : ` (${String(last)})`}\n${output.slice(-3000)}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

interface Answer {
  status: number;
  body: unknown;
}

/**
 * A request through the load balancer. `retry`: as a client whose connection was cut or that got
 * a 502/503 (a replica killed under it) tries again with the same Idempotency-Key and body.
 */
async function request(method: 'GET' | 'POST', url: string, body?: unknown, headers: Record<string, string> = {}, retry = false): Promise<Answer> {
  for (let attempt = 0; ; attempt += 1) {
    try {
      const response = await fetch(`${api}${url}`, {
        method,
        headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        signal: AbortSignal.timeout(60_000),
      });
      const text = await response.text();
      if (retry && [502, 503, 504].includes(response.status) && attempt < 20) {
        await new Promise((resolve) => setTimeout(resolve, 500));
        continue;
      }
      let parsed: unknown = text;
      try {
        parsed = JSON.parse(text);
      } catch {
        // not JSON
      }
      return { status: response.status, body: parsed };
    } catch (error) {
      if (!retry || attempt >= 20) throw error;
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
  }
}

async function adminHeaders(): Promise<Record<string, string>> {
  if (adminToken === null) {
    const login = await request('POST', '/auth/login', admin);
    if (login.status !== 200) throw new Error(`admin login answered ${login.status}: ${JSON.stringify(login.body)}`);
    adminToken = (login.body as { access_token: string }).access_token;
  }
  return { authorization: `Bearer ${adminToken}` };
}

async function deposit(wallet: TestWallet, amount: string): Promise<void> {
  const answer = await request('POST', '/balance/deposit', { owner_id: wallet.pubkey, amount, currency: 'BRL' }, { ...(await adminHeaders()), 'idempotency-key': randomUUID() }, true);
  expect(answer.status, JSON.stringify(answer.body)).toBe(200);
}

/** A funded issuer's PLC registered, hopped to a bearer (the hop registered too). */
async function handedOn(amountMinor: bigint, retry = false): Promise<{ chain: Plc; bearer: TestWallet; issuer: TestWallet }> {
  const [issuer, bearer] = [newWallet(), newWallet()];
  await deposit(issuer, ((Number(amountMinor) + 1000) / 100).toFixed(2));
  const plc = issue(issuer, { amountMinor });
  const created = await request('POST', '/plc/create', { plc: plcToJson(plc) }, device, retry);
  expect(created.status, JSON.stringify(created.body)).toBe(200);
  const chain = hop(plc, issuer, bearer);
  const hopped = await request('POST', '/transfer/', { plc: plcToJson(chain) }, device, retry);
  expect(hopped.status, JSON.stringify(hopped.body)).toBe(200);
  return { chain, bearer, issuer };
}

async function redeemPix(chain: Plc, bearer: TestWallet, retry = false): Promise<string> {
  const answer = await request('POST', '/redeem/', redeemBody(chain, bearer, pixKey), { ...device, 'idempotency-key': randomUUID() }, retry);
  expect(answer.status, JSON.stringify(answer.body)).toBe(200);
  return (answer.body as { redemption_id: string }).redemption_id;
}

async function redemptionStatus(id: string): Promise<string> {
  const answer = await request('GET', `/redemptions/${id}`);
  return (answer.body as { status?: string }).status ?? `HTTP ${answer.status}`;
}

/** Every redemption SETTLED, each paid by exactly one DONE transfer (or PAID bill) at the gateway. */
async function expectSettledOnce(ids: readonly string[], timeoutMs = 180_000): Promise<void> {
  await until(
    `${ids.length} redemptions SETTLED`,
    async () => {
      const result = await db().query<{ n: number }>(`SELECT count(*)::int AS n FROM redemptions WHERE id = ANY($1::uuid[]) AND status = 'SETTLED'`, [ids]);
      return result.rows[0]?.n === ids.length ? true : false;
    },
    timeoutMs,
  );
  const snapshot = sim().state.snapshot(100_000);
  for (const id of ids) {
    const paid = [
      ...snapshot.transfers.filter((t) => t.externalReference === id && t.status === 'DONE'),
      ...snapshot.billPayments.filter((b) => b.externalReference === id && b.status === 'PAID'),
    ];
    expect(paid, `redemption ${id}: its payouts at the gateway`).toHaveLength(1);
  }
  expect(await findViolations(db())).toEqual([]);
}

async function state(): Promise<DevState> {
  return JSON.parse(await readFile(path.join(dataDir, stateFileName), 'utf8')) as DevState;
}

/** SIGKILLs the named process of the cluster and waits until the supervisor has started another. */
async function killAndAwaitRestart(name: string): Promise<void> {
  const before = (await state()).processes[name];
  if (typeof before !== 'number') throw new Error(`${name} has no pid`);
  process.kill(before, 'SIGKILL');
  await until(`${name} restarted`, async () => {
    const now = (await state()).processes[name];
    return typeof now === 'number' && now !== before && isAlive(now) ? true : false;
  }, 60_000);
}

beforeAll(async () => {
  dataDir = await mkdtemp(path.join(tmpdir(), 'plc-cluster-test-'));
  simulator = await createSimulator({
    host: '127.0.0.1',
    port: await freePort(),
    apiKey: gatewayKey,
    webhookUrl: `${api}/redemption/webhook/gateway`,
    validationUrl: `${api}/webhooks/transfer/validate`,
    webhookToken,
    validationDelayMs: 50,
    webhookRetryBaseMs: 100,
    webhookRetryMaxMs: 2000,
    webhookInterruptAfterFailures: 1_000,
    webhookTimeoutMs: 5_000,
    autoSettle: false,
    logger: false,
  });
  const gatewayUrl = await simulator.listen();
  bank = setInterval(bankTick, 100);
  const env: Record<string, string> = {
    ...(process.env as Record<string, string>),
    CLUSTER_DATA_DIR: dataDir,
    CLUSTER_PORT_BASE: String(portBase),
    CLUSTER_UI: '0',
    GATEWAY_BASE_URL: gatewayUrl,
    GATEWAY_API_KEY: gatewayKey,
    GATEWAY_WEBHOOK_TOKEN: webhookToken,
    ADMIN_USERNAME: admin.username,
    ADMIN_PASSWORD: admin.password,
    LOG_LEVEL: 'warn',
    // As the chaos campaign's own stack runs the service (scripts/chaos/stack.ts): its parts run here too.
    GATEWAY_TIMEOUT_MS: '3000',
    REDEMPTION_WEBHOOK_WAIT_MS: '3000',
    RATE_LIMIT_PLC_PER_MINUTE: '1000000',
    RATE_LIMIT_TRANSFER_PER_MINUTE: '1000000',
    RATE_LIMIT_REDEEM_PER_MINUTE: '1000000',
    PLC_DAILY_LIMIT_MINOR: '1000000000000',
    GATEWAY_AUDIT_INTERVAL_MS: '0',
    SHUTDOWN_GRACE_MS: '2000',
  };
  // A process group of its own, as a terminal's foreground job: Ctrl-C is SIGINT to the group.
  child = spawn('npm', ['run', '--silent', 'start:cluster'], { cwd: root, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  const collect = (chunk: Buffer): void => {
    output = (output + chunk.toString('utf8')).slice(-200_000);
  };
  child.stdout?.on('data', collect);
  child.stderr?.on('data', collect);
  exited = new Promise((resolve) => child?.once('exit', (code, signal) => resolve({ code, signal })));
  // A first run builds the Temporal server with Go (about 90 s, more on a loaded machine).
  await until('start:cluster ready', () => (/\[cluster\] ready in/.test(output) ? true : exited !== null && /start:cluster failed/.test(output) ? Promise.reject(new Error('start failed')) : false), 900_000);
  const password = (await readFile(path.join(dataDir, 'postgres-password'), 'utf8')).trim();
  pool = createPool({ connectionString: `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${ports.postgres}/settlement`, max: 2, applicationName: 'cluster-test' });
}, 960_000);

afterAll(async () => {
  if (bank !== null) clearInterval(bank);
  await pool?.end().catch(() => {});
  if (child?.pid !== undefined && child.exitCode === null && child.signalCode === null) {
    try {
      process.kill(-child.pid, 'SIGINT');
    } catch {
      // gone
    }
    const timer = setTimeout(() => {
      if (child?.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
    }, 90_000);
    await exited;
    clearTimeout(timer);
  }
  await simulator?.close();
  await rm(dataDir, { recursive: true, force: true });
}, 120_000);

describe('npm run start:cluster', () => {
  it('runs Temporal as four processes, two API replicas behind the load balancer, two workers', async () => {
    const { processes } = await state();
    for (const name of ['temporal-frontend', 'temporal-history', 'temporal-matching', 'temporal-worker', 'api-1', 'api-2', 'worker-1', 'worker-2', 'load-balancer', 'postgres']) {
      expect(processes[name], name).toEqual(expect.any(Number));
      expect(isAlive(processes[name] as number), name).toBe(true);
    }
    // Both replicas answer behind the balancer, and each on its own port.
    for (const port of ports.api) expect((await fetch(`http://127.0.0.1:${port}/readyz`)).status).toBe(200);
    expect((await fetch(`http://127.0.0.1:${ports.loadBalancer}/livez`)).status).toBe(200);
  });

  it("the chaos campaign's short form against the cluster: no invariant broken", { timeout: 600_000 }, async () => {
    const password = (await readFile(path.join(dataDir, 'postgres-password'), 'utf8')).trim();
    const workers = ['worker-1', 'worker-2'];
    let killed: Record<string, number> = {};
    // The campaign's view of the cluster: "the worker" is both worker processes; the supervisor restarts them.
    const stack: Stack = {
      ports: { api: ports.loadBalancer, simulator: Number(new URL(sim().url ?? '').port), postgres: ports.postgres, temporal: ports.frontend },
      apiUrl: `http://127.0.0.1:${ports.loadBalancer}`,
      databaseUrl: `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${ports.postgres}/settlement`,
      temporalAddress: `127.0.0.1:${ports.frontend}`,
      simulator: sim(),
      simulatorUrl: sim().url ?? '',
      gateway: gatewayControl(sim().url ?? '', gatewayKey),
      webhookToken,
      admin,
      taskQueue: 'settlement',
      killWorker: async () => {
        const { processes } = await state();
        killed = Object.fromEntries(workers.map((name) => [name, processes[name] as number]));
        for (const pid of Object.values(killed)) process.kill(pid, 'SIGKILL');
      },
      startWorker: async () => {
        await until('the workers restarted', async () => {
          const { processes } = await state();
          return workers.every((name) => typeof processes[name] === 'number' && processes[name] !== killed[name] && isAlive(processes[name] as number)) ? true : false;
        }, 60_000);
      },
      killAll: () => Promise.reject(new Error('not run against the cluster')),
      killApi: () => Promise.reject(new Error('not run against the cluster: the test kills a replica itself')),
      killSimulator: () => Promise.reject(new Error('not run against the cluster: its simulator runs in the test')),
      freeze: () => Promise.reject(new Error('not run against the cluster')),
      stop: async () => {},
    };
    // First, while every payout at the gateway is a Pix transfer, the only kind the campaign's invariants know.
    // The campaign is the bank meanwhile (it fails one payout in ten on purpose).
    bankHeld = true;
    try {
      const result = await runChaos({
        seed: 39,
        short: true,
        ports: 'free',
        stack,
        // The parts that kill the whole stack or freeze a dependency run on the campaign's own stack (npm test).
        only: ['concurrent redemptions', 'worker SIGKILL', 'hostile webhooks', 'bad headers', 'cheating issuers', 'rogue gateway'],
        log: (line) => {
          output += `[chaos] ${line}\n`;
        },
      });
      expect(result.parts.map((part) => part.name)).toHaveLength(6);
      expect(result.parts.reduce((total, part) => total + part.payouts, 0)).toBeGreaterThan(0);
      expect(result.violations).toEqual([]);
    } finally {
      bankHeld = false;
    }
  });

  it('the journey: deposit, create, hops, redeem to Pix and to Boleto, the webhooks, SETTLED, the ledger verified', async () => {
    // Pix: created, hopped twice (each hop registered), redeemed by the last bearer.
    const { chain, bearer } = await handedOn(2_500n);
    const last = newWallet();
    const chain2 = hop(chain, bearer, last);
    expect((await request('POST', '/transfer/', { plc: plcToJson(chain2) }, device)).status).toBe(200);
    const pix = await redeemPix(chain2, last);
    // Boleto: the bearer consents to the fee schedule, then pays a bank slip for the payout.
    const boleto = await handedOn(10_000n);
    expect((await request('POST', '/fees/consent', feeConsentBody(boleto.bearer, 1))).status).toBe(200);
    const estimate = await request('POST', '/fees/estimate', { amount: '100.00', rail: 'BOLETO', owner_id: boleto.bearer.pubkey });
    expect(estimate.status).toBe(200);
    const payout = BigInt((estimate.body as { net_amount: string }).net_amount.replace('.', ''));
    const opened = await request('POST', '/redeem/', boletoRedeemBody(boleto.chain, boleto.bearer, bankSlipLine(payout)), device);
    expect(opened.status, JSON.stringify(opened.body)).toBe(200);
    const boletoId = (opened.body as { redemption_id: string }).redemption_id;
    await expectSettledOnce([pix, boletoId]);
    expect(await redemptionStatus(pix)).toBe('SETTLED');
    expect(await redemptionStatus(boletoId)).toBe('SETTLED');
    const plcStatus = await request('GET', `/plc/${chain2.commitment.tokenId}/status`);
    expect(plcStatus.body).toMatchObject({ status: 'REDEEMED' });
    // The operator's check, as run against production: `npm run ledger -- verify`.
    const password = (await readFile(path.join(dataDir, 'postgres-password'), 'utf8')).trim();
    const verify = await new Promise<{ code: number | null; text: string }>((resolve) => {
      const run = spawn(process.execPath, [path.join(root, 'scripts/ledger.ts'), 'verify'], {
        env: { ...process.env, DATABASE_URL: `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${ports.postgres}/settlement` },
      });
      let text = '';
      run.stdout.on('data', (chunk: Buffer) => (text += chunk.toString()));
      run.stderr.on('data', (chunk: Buffer) => (text += chunk.toString()));
      run.once('exit', (code) => resolve({ code, text }));
    });
    expect(verify.code, verify.text).toBe(0);
  });

  it.each(['temporal-history', 'temporal-matching'])('a %s process SIGKILLed with redemptions in flight: each ends SETTLED with one payout', async (name) => {
    const entries = await Promise.all(Array.from({ length: 4 }, () => handedOn(1_000n)));
    bankHeld = true;
    const ids = await Promise.all(entries.map(({ chain, bearer }) => redeemPix(chain, bearer)));
    // The payouts are at the bank: the redemption workflows wait for the gateway's webhooks.
    await until('payouts at the bank', () => sim().state.snapshot(100_000).transfers.filter((t) => ids.includes(t.externalReference ?? '') && t.status === 'BANK_PROCESSING').length === ids.length, 60_000);
    await killAndAwaitRestart(name);
    bankHeld = false;
    await expectSettledOnce(ids);
  });

  it('an API replica and a worker SIGKILLed under load: every redemption ends SETTLED with one payout', async () => {
    const entries = await Promise.all(Array.from({ length: 8 }, () => handedOn(1_000n, true)));
    // Redemptions keep arriving while an API replica and a worker die. The client does what
    // docs/protocol.md 9.4 tells a wallet: a cut or refused request is retried with the same key
    // and body; a key still held by the request the killed replica was running (409
    // IDEMPOTENCY_REQUEST_IN_PROGRESS, until IDEMPOTENCY_WINDOW_MS passes) sends it to the PLC's
    // redemptions, and when the dead request opened none, to a new redeem under a new key.
    const redeemUnderLoad = async (chain: Plc, bearer: TestWallet): Promise<string> => {
      for (let attempt = 0; attempt < 5; attempt += 1) {
        const answer = await request('POST', '/redeem/', redeemBody(chain, bearer, pixKey), { ...device, 'idempotency-key': randomUUID() }, true);
        if (answer.status === 200) return (answer.body as { redemption_id: string }).redemption_id;
        expect(answer.status, JSON.stringify(answer.body)).toBe(409);
        expect(answer.body).toMatchObject({ code: 'IDEMPOTENCY_REQUEST_IN_PROGRESS' });
        inProgress += 1;
        const found = await until(
          'the redemption a killed replica opened, or none',
          async () => {
            const listed = await request('GET', `/plc/${chain.commitment.tokenId}/redemptions`);
            const open = (listed.body as { redemption_id: string; status: string }[]).find((r) => r.status !== 'FAILED');
            return open?.redemption_id ?? false;
          },
          10_000,
        ).catch(() => null);
        if (found !== null) return found;
      }
      throw new Error(`no redemption for ${chain.commitment.tokenId} after 5 attempts`);
    };
    let inProgress = 0;
    const load = (async () => {
      const ids: string[] = [];
      for (const [index, { chain, bearer }] of entries.entries()) {
        ids.push(await redeemUnderLoad(chain, bearer));
        if (index % 2 === 0) await new Promise((resolve) => setTimeout(resolve, 150));
      }
      return ids;
    })();
    await new Promise((resolve) => setTimeout(resolve, 300));
    await Promise.all([killAndAwaitRestart('api-1'), killAndAwaitRestart('worker-1')]);
    const ids = await load;
    expect(new Set(ids).size).toBe(entries.length);
    if (inProgress > 0) process.stdout.write(`[cluster test] ${inProgress} redeem(s) met a key the killed replica held; found by the PLC's redemptions or redeemed anew\n`);
    await expectSettledOnce(ids);
  });

  it('stops in order on Ctrl-C: the load balancer, the APIs, the workers, Temporal, PostgreSQL last', async () => {
    if (child?.pid === undefined) throw new Error('not running');
    process.kill(-child.pid, 'SIGINT');
    const exit = await exited;
    // npm re-raises the signal it got once its script has ended, as a terminal shows after Ctrl-C.
    expect(exit, output.slice(-3000)).toEqual({ code: null, signal: 'SIGINT' });
    const stops = output.split('\n').filter((line) => /\[cluster\] stop \d+\/\d+:/.test(line));
    const order = ['load balancer', 'API replica 2', 'API replica 1', 'worker 2', 'worker 1', 'Temporal internal worker', 'Temporal frontend', 'Temporal matching', 'Temporal history', 'PostgreSQL'];
    const positions = order.map((what) => stops.findIndex((line) => line.includes(what)));
    expect(positions.every((position) => position >= 0), stops.join('\n')).toBe(true);
    expect([...positions].sort((a, b) => a - b)).toEqual(positions);
    expect(output).toMatch(/\[cluster\] stopped in/);
  });
});
