import { randomUUID } from 'node:crypto';
import { Client, Connection } from '@temporalio/client';
import { createPool, type Pool } from '../../db/pool.ts';
import type { TransferWire } from '../../gateway/wire.ts';
import { checkInvariants } from '../chaos/campaign.ts';
import { startStack, type Stack } from '../chaos/stack.ts';

/**
 * The real side of the simulation: the stack of the chaos suite (scripts/chaos/stack.ts) with the
 * gateway simulator as a process of its own, a pool on the service's database (read only: what the
 * invariants and the model's observations read), a Temporal client, and the counts of the run.
 */

export interface Answer {
  status: number;
  json: unknown;
  /** The refusal's code (`code` of the error body), 'NO_ANSWER' when the connection was cut, null on success. */
  code: string | null;
}

export class SimViolation extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SimViolation';
  }
}

export interface SimStats {
  steps: number;
  runs: number;
  ops: Record<string, number>;
  faults: Record<string, number>;
  requests: number;
  statuses: Record<string, number>;
  payouts: number;
  payoutMinor: bigint;
  refusedPayouts: number;
  checkpoints: number;
  violations: string[];
}

export function emptyStats(): SimStats {
  return { steps: 0, runs: 0, ops: {}, faults: {}, requests: 0, statuses: {}, payouts: 0, payoutMinor: 0n, refusedPayouts: 0, checkpoints: 0, violations: [] };
}

/** A BRL amount as the API writes it ("12.34", "0.00", "-1.50") in minor units. */
export const minor = (amount: string): bigint => {
  const match = /^(-?)(\d+)\.(\d{2})$/.exec(amount);
  if (match === null) throw new SimViolation(`the service answered an amount that is not a BRL amount: ${amount}`);
  const value = BigInt(match[2] as string) * 100n + BigInt(match[3] as string);
  return match[1] === '-' ? -value : value;
};

/** Minor units as the API writes them. */
export const amountText = (minorUnits: bigint): string => {
  const sign = minorUnits < 0n ? '-' : '';
  const abs = minorUnits < 0n ? -minorUnits : minorUnits;
  return `${sign}${abs / 100n}.${(abs % 100n).toString().padStart(2, '0')}`;
};

export class World {
  readonly stack: Stack;
  readonly pool: Pool;
  readonly temporal: Client;
  readonly connection: Connection;
  readonly stats: SimStats = emptyStats();
  readonly log: (line: string) => void;
  #adminToken: string | null = null;

  private constructor(stack: Stack, pool: Pool, connection: Connection, log: (line: string) => void) {
    this.stack = stack;
    this.pool = pool;
    this.connection = connection;
    this.temporal = new Client({ connection, namespace: 'default' });
    this.log = log;
  }

  static async start(options: { seed: number; ports: number | 'free'; log: (line: string) => void }): Promise<World> {
    const stack = await startStack({ ports: options.ports, seed: options.seed, log: options.log, simulatorMode: 'process' });
    try {
      const pool = createPool({ connectionString: stack.databaseUrl, max: 4, applicationName: 'sim' });
      const connection = await Connection.connect({ address: stack.temporalAddress });
      return new World(stack, pool, connection, options.log);
    } catch (error) {
      await stack.stop();
      throw error;
    }
  }

  async stop(): Promise<void> {
    await this.pool.end().catch(() => {});
    await this.connection.close().catch(() => {});
    await this.stack.stop();
  }

  async request(method: 'GET' | 'POST', path: string, body?: unknown, headers: Record<string, string> = {}, timeoutMs = 60_000): Promise<Answer> {
    this.stats.requests += 1;
    try {
      const response = await fetch(`${this.stack.apiUrl}/api/v1${path}`, {
        method,
        headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        signal: AbortSignal.timeout(timeoutMs),
      });
      const text = await response.text();
      this.stats.statuses[response.status] = (this.stats.statuses[response.status] ?? 0) + 1;
      let json: unknown = text;
      try {
        json = JSON.parse(text);
      } catch {
        // Not JSON: kept as text.
      }
      const code = response.status < 300 ? null : String((json as { code?: unknown } | null)?.code ?? `HTTP_${response.status}`);
      return { status: response.status, json, code };
    } catch (error) {
      this.stats.statuses[0] = (this.stats.statuses[0] ?? 0) + 1;
      return { status: 0, json: String(error), code: 'NO_ANSWER' };
    }
  }

  /**
   * A request as an honest client sends it: answered 503 (a dependency timed out or is down, "retry
   * after") or not at all, it is sent again, the same body and headers, a few times. `retried` says
   * that an earlier attempt may have done the work, so the last answer may be "already done".
   */
  async send(method: 'GET' | 'POST', path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Answer & { retried: boolean }> {
    let answer = await this.request(method, path, body, headers);
    let retried = false;
    for (let attempt = 0; attempt < 10 && (answer.status === 503 || answer.status === 0 || answer.code === 'IDEMPOTENCY_REQUEST_IN_PROGRESS'); attempt += 1) {
      const after = Number((answer.json as { details?: { retry_after_s?: unknown } } | null)?.details?.retry_after_s ?? 0.5);
      await new Promise((resolve) => setTimeout(resolve, Math.min(Math.max(after, 0.1), 3) * 1000));
      answer = await this.request(method, path, body, headers);
      retried = true;
    }
    return { ...answer, retried };
  }

  async admin(): Promise<Record<string, string>> {
    if (this.#adminToken === null) {
      const login = await this.request('POST', '/auth/login', this.stack.admin);
      if (login.status !== 200) throw new SimViolation(`admin login answered ${login.status}: ${JSON.stringify(login.json).slice(0, 200)}`);
      this.#adminToken = (login.json as { access_token: string }).access_token;
    }
    return { authorization: `Bearer ${this.#adminToken}` };
  }

  async adminRequest(method: 'GET' | 'POST', path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Answer> {
    let answer = await this.request(method, path, body, { ...(await this.admin()), ...headers });
    if (answer.status === 401) {
      this.#adminToken = null;
      answer = await this.request(method, path, body, { ...(await this.admin()), ...headers });
    }
    return answer;
  }

  /** Polls `check` until it holds or `timeoutMs` passes; a thrown error counts as "not yet". */
  async until(check: () => Promise<boolean>, timeoutMs: number): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      try {
        if (await check()) return true;
      } catch {
        // A dependency coming back: look again.
      }
      if (Date.now() > deadline) return false;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  async deposit(owner: string, amountMinor: bigint): Promise<void> {
    const answer = await this.adminRequest('POST', '/balance/deposit', { owner_id: owner, amount: amountText(amountMinor), currency: 'BRL' }, { 'idempotency-key': randomUUID() });
    if (answer.status !== 200) throw new SimViolation(`a deposit answered ${answer.status} ${JSON.stringify(answer.json).slice(0, 200)}`);
  }

  /** The gateway's current misbehaviour (simulator faults), set by the gatewayMood command. */
  mood: Record<string, unknown> = {};

  async setMood(mood: Record<string, unknown>): Promise<void> {
    await this.stack.gateway.resetFaults();
    if (Object.keys(mood).length > 0) await this.stack.gateway.faults(mood);
    this.mood = mood;
  }

  /**
   * Invariants 1 to 5 of the chaos suite, across the whole service and gateway. The gateway audit
   * among them reads the gateway's books: while the gateway loses answers it says "try again" (503
   * GATEWAY_UNAVAILABLE), so the checkpoint calms the gateway for its reads and restores its mood after.
   */
  async invariants(part: string): Promise<string[]> {
    const mood = this.mood;
    if (Object.keys(mood).length > 0) await this.stack.gateway.resetFaults();
    try {
      const transfers = await this.stack.gateway.transfers();
      return await checkInvariants({ pool: this.pool, temporal: this.temporal, transfers, adminRequest: (method, path) => this.adminRequest(method, path) }, part);
    } finally {
      if (Object.keys(mood).length > 0) await this.stack.gateway.faults(mood);
    }
  }

  async transfersOf(redemptionId: string): Promise<TransferWire[]> {
    return this.stack.gateway.transfers({ externalReference: redemptionId });
  }
}
