import { randomUUID } from 'node:crypto';
import { Client, Connection, WorkflowNotFoundError } from '@temporalio/client';
import { historyToJSON } from '@temporalio/common/lib/proto-utils.js';
import { findViolations } from '../../db/ledger.ts';
import { createPool, type Pool } from '../../db/pool.ts';
import type { TransferWire } from '../../gateway/wire.ts';
import { createRng, type Rng } from '../../simulator/rng.ts';
import {
  appendTransfer,
  bytesToHex,
  cancelAuthorizationToJson,
  chainHeadHash,
  createPlc,
  generateKeyPair,
  plcToJson,
  redeemAuthorizationToJson,
  signCancel,
  signRedeem,
  type KeyPair,
  type Plc,
} from '../../src/protocol/index.ts';
import { workflowIds } from '../../workflows/ids.ts';
import { startStack, type Stack } from './stack.ts';

/**
 * The chaos campaign (issue 17; docs/reliability.md): what an attacker and a bad day do to a
 * running service, part by part, with the invariants that must hold across the service and the
 * gateway checked after each part:
 *
 * 1. one DONE gateway transfer per REDEEMED PLC, none for any other PLC (one in flight may still
 *    be paying), and no DONE transfer that is not a PLC's;
 * 2. the ledger verifies (`ledger_violations()`, what `npm run ledger -- verify` runs);
 * 3. every redemption is final, or in flight with a live workflow;
 * 4. the gateway audit (a dry run through the API) finds nothing;
 * 5. every SETTLED redemption names its transfer, DONE at the gateway for the registered amount
 *    less the fee priced on it, and its bearer held the PLC (issue 32; the ledger check adds that
 *    every registered chain links to its registered commitment).
 *
 * The parts: concurrent redemptions of forked and re-keyed PLCs through both routes; SIGKILL of
 * the worker mid-payout; SIGKILL of the whole stack mid-payout; duplicated, reordered, late, lost
 * and contradicting webhooks; PostgreSQL and Temporal frozen (SIGSTOP) under load; requests with
 * bad headers in the same batches as good ones; cheating issuers and strangers (issue 32). Every random choice comes from one seeded
 * generator, printed first, so a failing run can be replayed (the timing of a real stack cannot be
 * replayed exactly; the choices are). The campaign is the gateway's bank: it completes (or, one in
 * ten, fails) each payout the gateway holds in BANK_PROCESSING, and holds them when a part wants
 * payouts in flight.
 */

export interface ChaosOptions {
  seed: number;
  /** The short campaign that `npm test` runs: fewer PLCs, 2-second freezes. */
  short: boolean;
  /** Run only these parts (names as in the table); all by default. */
  only?: readonly string[];
  ports: number | 'free';
  log: (line: string) => void;
  /** A running stack to use instead of starting one (test:cluster's); its owner stops it. */
  stack?: Stack;
}

export interface PartResult {
  name: string;
  requests: number;
  /** Answers by HTTP status (0: no answer: the connection was cut, as when the API is killed). */
  statuses: Record<string, number>;
  ok: number;
  refused: number;
  errors: number;
  payouts: number;
  faults: number;
  violations: string[];
  seconds: number;
}

export interface ChaosResult {
  seed: number;
  short: boolean;
  parts: PartResult[];
  violations: string[];
  seconds: number;
}

const pixKey = 'payee@example.com';

/** A history's event types, in order, by name (the proto form carries numbers). */
function eventTypeNames(history: Parameters<typeof historyToJSON>[0]): string[] {
  const json = JSON.parse(historyToJSON(history)) as { events?: { eventType?: string }[] };
  return (json.events ?? []).map((event) => String(event.eventType ?? '?').replace('EVENT_TYPE_', ''));
}

interface Wallet {
  keys: KeyPair;
  pubkey: string;
}

function wallet(): Wallet {
  const keys = generateKeyPair();
  return { keys, pubkey: bytesToHex(keys.publicKey) };
}

interface PartStats {
  requests: number;
  ok: number;
  refused: number;
  errors: number;
  faults: number;
  violations: string[];
  /** Answers by status (0: no answer), and the first few 5xx answers, for the log. */
  statuses: Record<string, number>;
  failures: string[];
}

function emptyStats(): PartStats {
  return { requests: 0, ok: 0, refused: 0, errors: 0, faults: 0, violations: [], statuses: {}, failures: [] };
}

/** What the invariants read: the service's database and Temporal, the gateway's transfers, the admin API. */
export interface InvariantContext {
  pool: Pool;
  temporal: Client;
  /** Every transfer the gateway holds. */
  transfers: readonly TransferWire[];
  /** The gateway's validation log (diagnostics for a stuck redemption), when it can be read. */
  validations?: () => readonly { transferId: string; attempt: number; outcome: string; httpStatus?: number | null; error?: string | null }[];
  adminRequest: (method: 'GET' | 'POST', path: string) => Promise<{ status: number; json: unknown }>;
}

/**
 * Invariants 1 to 5 (above) across the service and the gateway, as the chaos campaign checks them
 * after each part and the simulation (scripts/sim) every few steps.
 */
export async function checkInvariants(context: InvariantContext, part: string): Promise<string[]> {
  const violations: string[] = [];
  const plcs = await context.pool.query<{ token_id: string; status: string; in_flight: boolean }>(
    `SELECT p.token_id, p.status,
            EXISTS (SELECT 1 FROM redemptions r WHERE r.token_id = p.token_id AND r.status = 'PENDING_PAYMENT') AS in_flight
       FROM plcs p`,
  );
  const done = new Map<string, string[]>();
  for (const transfer of context.transfers) {
    if (transfer.status !== 'DONE') continue;
    const token = /^PLC ([0-9a-f-]{36})$/.exec(transfer.description ?? '')?.[1];
    if (token === undefined) {
      violations.push(`${part}: DONE transfer ${transfer.id} is no PLC's payout (${transfer.description ?? 'no description'})`);
      continue;
    }
    done.set(token, [...(done.get(token) ?? []), transfer.id]);
  }
  const known = new Set<string>();
  for (const plc of plcs.rows) {
    known.add(plc.token_id);
    const paid = done.get(plc.token_id) ?? [];
    if (paid.length > 1) violations.push(`${part}: PLC ${plc.token_id} (${plc.status}) paid out ${paid.length} times: ${paid.join(', ')}`);
    else if (plc.status === 'REDEEMED' && paid.length !== 1) violations.push(`${part}: PLC ${plc.token_id} REDEEMED with ${paid.length} DONE transfers`);
    else if (plc.status !== 'REDEEMED' && paid.length === 1 && !plc.in_flight) {
      violations.push(`${part}: PLC ${plc.token_id} is ${plc.status}, yet its transfer ${paid[0] ?? ''} is DONE`);
    }
  }
  for (const token of done.keys()) if (!known.has(token)) violations.push(`${part}: DONE transfers for an unknown PLC ${token}`);

  // Issue 32: every payout is the registered amount less the fee priced on it, to a key that held
  // the PLC, and every settled redemption names the one transfer that paid it.
  const settled = await context.pool.query<{ id: string; token_id: string; gateway_transfer_id: string | null; payout_minor: string; holder: boolean }>(
    `SELECT r.id, r.token_id, r.gateway_transfer_id, (p.amount_minor - r.fee_minor)::text AS payout_minor,
            EXISTS (SELECT 1 FROM plc_transfers t WHERE t.token_id = r.token_id AND t.recipient_pubkey = r.bearer_pubkey) AS holder
       FROM redemptions r JOIN plcs p ON p.token_id = r.token_id WHERE r.status = 'SETTLED'`,
  );
  const byId = new Map(context.transfers.map((t) => [t.id, t]));
  for (const row of settled.rows) {
    if (!row.holder) violations.push(`${part}: redemption ${row.id} paid ${row.token_id} to a key that never held it`);
    if (row.gateway_transfer_id === null) {
      violations.push(`${part}: redemption ${row.id} SETTLED without the id of the transfer that paid it`);
      continue;
    }
    const transfer = byId.get(row.gateway_transfer_id);
    if (transfer === undefined || transfer.status !== 'DONE') violations.push(`${part}: redemption ${row.id} SETTLED by transfer ${row.gateway_transfer_id}, which is ${transfer?.status ?? 'unknown'} at the gateway`);
    else if (Math.round(Number(transfer.value) * 100).toString() !== row.payout_minor) {
      violations.push(`${part}: redemption ${row.id} paid ${String(transfer.value)}, not its registered amount less its fee (${row.payout_minor} minor units)`);
    }
  }

  for (const violation of await findViolations(context.pool)) violations.push(`${part}: ledger: ${violation.kind} ${violation.subject} ${violation.detail}`);

  const pending = await context.pool.query<{ id: string; gateway_transfer_id: string | null }>(
    `SELECT id, gateway_transfer_id FROM redemptions WHERE status = 'PENDING_PAYMENT'`,
  );
  for (const row of pending.rows) {
    try {
      const description = await context.temporal.workflow.getHandle(workflowIds.redemption(row.id)).describe();
      if (description.status.name !== 'RUNNING') {
        const handle = context.temporal.workflow.getHandle(workflowIds.redemption(row.id));
        const result = description.status.name === 'COMPLETED' ? JSON.stringify(await handle.result()).slice(0, 300) : '';
        const history = await handle.fetchHistory();
        const events = eventTypeNames(history).join(' ');
        const gateway = context.transfers.filter((t) => t.externalReference === row.id).map((t) => `${t.id} ${t.status} ${t.failReason ?? ''}`);
        const validations = (context.validations?.() ?? []).filter((v) => gateway.some((g) => g.startsWith(v.transferId)))
          .map((v) => `${v.attempt}:${v.outcome}:${v.httpStatus ?? v.error ?? ''}`);
        violations.push(
          `${part}: redemption ${row.id} PENDING_PAYMENT (transfer ${row.gateway_transfer_id ?? 'none'}), its workflow ${description.status.name} ${result}; ` +
            `gateway: ${gateway.join(', ') || 'no transfer'}; validations: ${validations.join(' ') || 'none'}; history: ${events.slice(0, 1500)}`,
        );
      }
    } catch (error) {
      if (!(error instanceof WorkflowNotFoundError)) throw error;
      violations.push(`${part}: redemption ${row.id} PENDING_PAYMENT without a workflow`);
    }
  }

  const audit = await context.adminRequest('POST', '/admin/reconcile/gateway-audit');
  if (audit.status !== 200) violations.push(`${part}: the gateway audit answered ${audit.status}: ${JSON.stringify(audit.json).slice(0, 300)}`);
  else {
    const report = audit.json as { complete: boolean; counts: { items: number }; items: { key: string; detail: string }[] };
    if (!report.complete) violations.push(`${part}: the gateway audit did not complete`);
    for (const item of report.items) violations.push(`${part}: the gateway audit found ${item.key}: ${item.detail}`);
  }
  return violations;
}

class Campaign {
  readonly stack: Stack;
  readonly rng: Rng;
  readonly options: ChaosOptions;
  readonly pool: Pool;
  readonly temporal: Client;
  readonly issuers: Wallet[] = [];
  stats: PartStats = emptyStats();
  #adminToken: string | null = null;
  #bankHeld = false;
  #bankTimer: NodeJS.Timeout | null = null;
  #bankSeen = new Map<string, number>();

  constructor(stack: Stack, options: ChaosOptions, pool: Pool, temporal: Client) {
    this.stack = stack;
    this.options = options;
    this.rng = createRng(options.seed);
    this.pool = pool;
    this.temporal = temporal;
  }

  log(line: string): void {
    this.options.log(line);
  }

  pick(from: number, to: number): number {
    return from + Math.floor(this.rng.next() * (to - from + 1));
  }

  // -------------------------------------------------------------------------------------------
  // The gateway's bank
  // -------------------------------------------------------------------------------------------

  startBank(): void {
    this.#bankTimer = setInterval(() => this.bankTick(), 50);
  }

  stopBank(): void {
    if (this.#bankTimer !== null) clearInterval(this.#bankTimer);
  }

  holdBank(held: boolean): void {
    this.#bankHeld = held;
  }

  /** Pays out (nine in ten) or refuses each transfer the gateway holds in BANK_PROCESSING, after a short random delay. */
  bankTick(): void {
    if (this.#bankHeld) return;
    const now = Date.now();
    for (const transfer of this.transfers()) {
      if (transfer.status !== 'BANK_PROCESSING') continue;
      const due = this.#bankSeen.get(transfer.id);
      if (due === undefined) {
        this.#bankSeen.set(transfer.id, now + this.pick(0, 300));
        continue;
      }
      if (now < due) continue;
      try {
        if (this.rng.chance(0.1)) this.stack.simulator.state.failTransfer(transfer.id, 'Pix key not found at the receiving institution');
        else this.stack.simulator.state.completeTransfer(transfer.id);
      } catch {
        // Moved on meanwhile.
      }
    }
  }

  transfers(): TransferWire[] {
    return this.stack.simulator.state.snapshot(100_000).transfers;
  }

  doneTransfers(): number {
    return this.transfers().filter((t) => t.status === 'DONE').length;
  }

  // -------------------------------------------------------------------------------------------
  // Requests
  // -------------------------------------------------------------------------------------------

  async request(
    method: 'GET' | 'POST',
    path: string,
    body?: unknown,
    headers: Record<string, string> = {},
    count = true,
  ): Promise<{ status: number; json: unknown }> {
    if (count) this.stats.requests += 1;
    try {
      const response = await fetch(`${this.stack.apiUrl}/api/v1${path}`, {
        method,
        headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        signal: AbortSignal.timeout(60_000),
      });
      const text = await response.text();
      if (count) {
        this.stats.statuses[response.status] = (this.stats.statuses[response.status] ?? 0) + 1;
        if (response.status < 300) this.stats.ok += 1;
        else if (response.status < 500) this.stats.refused += 1;
        else {
          this.stats.errors += 1;
          if (this.stats.failures.length < 5) this.stats.failures.push(`${method} ${path} ${response.status} ${text.slice(0, 200)}`);
        }
      }
      let json: unknown = null;
      try {
        json = JSON.parse(text);
      } catch {
        json = text;
      }
      return { status: response.status, json };
    } catch (error) {
      if (count) {
        this.stats.errors += 1;
        this.stats.statuses[0] = (this.stats.statuses[0] ?? 0) + 1;
        if (this.stats.failures.length < 5) this.stats.failures.push(`${method} ${path}: no answer (${String(error).slice(0, 120)})`);
      }
      return { status: 0, json: String(error) };
    }
  }

  async admin(): Promise<Record<string, string>> {
    if (this.#adminToken === null) {
      const login = await this.request('POST', '/auth/login', this.stack.admin, {}, false);
      if (login.status !== 200) throw new Error(`admin login answered ${login.status}: ${JSON.stringify(login.json)}`);
      this.#adminToken = (login.json as { access_token: string }).access_token;
    }
    return { authorization: `Bearer ${this.#adminToken}` };
  }

  async adminRequest(method: 'GET' | 'POST', path: string, body?: unknown, headers: Record<string, string> = {}) {
    let answer = await this.request(method, path, body, { ...(await this.admin()), ...headers }, false);
    if (answer.status === 401) {
      this.#adminToken = null;
      answer = await this.request(method, path, body, { ...(await this.admin()), ...headers }, false);
    }
    return answer;
  }

  async fundIssuers(count: number): Promise<void> {
    for (let i = 0; i < count; i += 1) this.issuers.push(await this.fundedIssuer());
  }

  /** A new issuer with money of its own. */
  async fundedIssuer(): Promise<Wallet> {
    const issuer = wallet();
    const deposit = await this.adminRequest('POST', '/balance/deposit', { owner_id: issuer.pubkey, amount: '1000000.00', currency: 'BRL' }, {
      'idempotency-key': randomUUID(),
    });
    if (deposit.status !== 200) throw new Error(`deposit answered ${deposit.status}: ${JSON.stringify(deposit.json)}`);
    return issuer;
  }

  /**
   * A PLC issued and registered, hopped once to a bearer (not registered: the redeem presents it),
   * by one of the shared issuers, or by `issuer` (one that is about to fork: a proven fork blocks its
   * key, and every new hop it signed after that is refused, so it must not be one the other parts use).
   */
  async transferablePlc(issuer: Wallet = this.issuers[this.pick(0, this.issuers.length - 1)] as Wallet): Promise<{ plc: Plc; issuer: Wallet; bearer: Wallet; chain: Plc } | null> {
    const plc = createPlc({ issuerSecretKey: issuer.keys.secretKey, amountMinor: BigInt(this.pick(100, 999)), currency: 'BRL', createdAtMs: Date.now(), ttlHours: 24, tokenId: randomUUID() });
    const created = await this.request('POST', '/plc/create', { plc: plcToJson(plc) }, { 'x-device-id': 'chaos-device' });
    if (created.status !== 200) return null;
    const bearer = wallet();
    const chain = appendTransfer(plc, { senderSecretKey: issuer.keys.secretKey, recipientPublicKey: bearer.keys.publicKey, timestampMs: Date.now() });
    return { plc, issuer, bearer, chain };
  }

  redeemBody(chain: Plc, bearer: Wallet) {
    const authorization = signRedeem(
      { tokenId: chain.commitment.tokenId, headHash: chainHeadHash(chain), settlementRail: 'pix', destination: pixKey, timestampMs: Date.now() },
      bearer.keys.secretKey,
    );
    return { plc: plcToJson(chain), authorization: redeemAuthorizationToJson(authorization) };
  }

  settlementBody(chain: Plc, bearer: Wallet) {
    const { plc, authorization } = this.redeemBody(chain, bearer);
    return {
      plc_id: chain.commitment.tokenId,
      plc_payload: Buffer.from(JSON.stringify(plc)).toString('base64'),
      settlement_rail: 'pix',
      destination: { pix_key: pixKey },
      bearer_signature: authorization.signature,
      timestamp_ms: authorization.timestamp_ms,
    };
  }

  redeem(chain: Plc, bearer: Wallet, key?: string) {
    return this.request('POST', '/redeem/', this.redeemBody(chain, bearer), { 'x-device-id': 'chaos-device', ...(key === undefined ? {} : { 'idempotency-key': key }) });
  }

  /** Redeems `count` fresh PLCs, one request each, without waiting for the payouts. */
  async redeemMany(count: number): Promise<string[]> {
    const plcs = await Promise.all(Array.from({ length: count }, () => this.transferablePlc()));
    const answers = await Promise.all(plcs.map((entry) => (entry === null ? null : this.redeem(entry.chain, entry.bearer))));
    return answers.flatMap((answer) => (answer !== null && answer.status === 200 ? [(answer.json as { redemption_id: string }).redemption_id] : []));
  }

  // -------------------------------------------------------------------------------------------
  // Waiting and invariants
  // -------------------------------------------------------------------------------------------

  /** Polls until `check` holds or the time is up (the bank works meanwhile). */
  async until(check: () => Promise<boolean> | boolean, timeoutMs: number): Promise<boolean> {
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

  async pendingRedemptions(): Promise<number> {
    const result = await this.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM redemptions WHERE status = 'PENDING_PAYMENT'`);
    return result.rows[0]?.n ?? 0;
  }

  /** Waits until no redemption is in flight, bounded: one still in flight at the end must have a live workflow. */
  async quiesce(): Promise<void> {
    this.holdBank(false);
    await this.until(async () => (await this.pendingRedemptions()) === 0, this.options.short ? 60_000 : 180_000);
  }

  async checkInvariants(part: string): Promise<string[]> {
    const transfers = this.transfers();
    return checkInvariants(
      {
        pool: this.pool,
        temporal: this.temporal,
        transfers,
        validations: () => this.stack.simulator.state.snapshot(2000).validations,
        adminRequest: (method, path) => this.adminRequest(method, path),
      },
      part,
    );
  }

  // -------------------------------------------------------------------------------------------
  // Parts
  // -------------------------------------------------------------------------------------------

  /** Many requests at once per PLC: identical (same key), re-keyed, through /settlements, from a fork, from an extended chain. */
  async concurrentRedemptions(): Promise<void> {
    const count = this.options.short ? 3 : 25;
    const requests: Promise<unknown>[] = [];
    for (let i = 0; i < count; i += 1) {
      // An issuer of its own: the fork below proves it cheated, and its key is blocked (docs/protocol.md section 18).
      const entry = await this.transferablePlc(await this.fundedIssuer());
      if (entry === null) continue;
      const { plc, issuer, bearer, chain } = entry;
      // The issuer spends the promise twice: a fork.
      const other = wallet();
      const fork = appendTransfer(plc, { senderSecretKey: issuer.keys.secretKey, recipientPublicKey: other.keys.publicKey, timestampMs: Date.now() + 1 });
      // The bearer passes it on and redeems it too: an extended chain.
      const next = wallet();
      const extended = appendTransfer(chain, { senderSecretKey: bearer.keys.secretKey, recipientPublicKey: next.keys.publicKey, timestampMs: Date.now() + 2 });
      // Identical requests: one body (one signed timestamp) under one key.
      const key = randomUUID();
      const identical = this.redeemBody(chain, bearer);
      const shapes: (() => Promise<unknown>)[] = [
        ...Array.from({ length: 4 }, () => () => this.request('POST', '/redeem/', identical, { 'x-device-id': 'chaos-device', 'idempotency-key': key })),
        ...Array.from({ length: 4 }, () => () => this.redeem(chain, bearer, randomUUID())),
        ...Array.from({ length: 2 }, () => () => this.request('POST', '/settlements', this.settlementBody(chain, bearer), { 'x-device-id': 'chaos-device' })),
        ...Array.from({ length: 3 }, () => () => this.redeem(fork, other)),
        ...Array.from({ length: 3 }, () => () => this.redeem(extended, next)),
      ];
      // In a seeded random order.
      for (let j = shapes.length - 1; j > 0; j -= 1) {
        const k = this.pick(0, j);
        [shapes[j], shapes[k]] = [shapes[k] as () => Promise<unknown>, shapes[j] as () => Promise<unknown>];
      }
      for (const shape of shapes) requests.push(shape());
    }
    await Promise.all(requests);
    const live = await this.pool.query<{ token_id: string; n: number }>(
      `SELECT token_id, count(*)::int AS n FROM redemptions WHERE status IN ('PENDING_PAYMENT', 'SETTLED') GROUP BY token_id HAVING count(*) > 1`,
    );
    for (const row of live.rows) this.stats.violations.push(`concurrent: PLC ${row.token_id} has ${row.n} live redemptions`);
  }

  /** Payouts held at the bank, the worker SIGKILLed, a new one started. */
  async killWorker(): Promise<void> {
    for (let round = 0; round < (this.options.short ? 1 : 2); round += 1) {
      this.holdBank(true);
      const ids = await this.redeemMany(this.options.short ? 4 : 10);
      await this.until(() => this.transfers().some((t) => t.status === 'BANK_PROCESSING'), 30_000);
      this.log(`  round ${round + 1}: ${ids.length} redemptions open, payouts at the bank: SIGKILL the worker`);
      await this.stack.killWorker();
      this.stats.faults += 1;
      this.holdBank(false);
      await this.stack.startWorker();
    }
  }

  /** Payouts held at the bank, the API, the worker, Temporal and PostgreSQL all SIGKILLed, all started again. */
  async killEverything(): Promise<void> {
    this.holdBank(true);
    const ids = await this.redeemMany(this.options.short ? 3 : 12);
    await this.until(() => this.transfers().some((t) => t.status === 'BANK_PROCESSING'), 30_000);
    // A few more redemptions on the wire while everything dies.
    const inFlight = this.redeemMany(this.options.short ? 1 : 4);
    this.log(`  ${ids.length} redemptions open, payouts at the bank: SIGKILL the API, the worker, Temporal and PostgreSQL`);
    await this.stack.killAll();
    this.stats.faults += 4;
    await inFlight;
    this.holdBank(false);
  }

  /** Duplicated, reordered, late and lost webhooks, and authenticated events the gateway contradicts. */
  async hostileWebhooks(): Promise<void> {
    const duplicates = this.pick(2, 10);
    this.stack.simulator.faults.update({ duplicateWebhooks: duplicates, reorderWebhooks: true, reorderWindowMs: 200, webhookDelayMs: this.pick(100, 600), dropWebhookRate: 0.2 });
    this.stats.faults += 4;
    this.holdBank(true);
    const ids = await this.redeemMany(this.options.short ? 4 : 20);
    await this.until(async () => {
      const rows = await this.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM redemptions WHERE id = ANY ($1::uuid[]) AND gateway_transfer_id IS NOT NULL`, [ids]);
      return (rows.rows[0]?.n ?? 0) === ids.length;
    }, 30_000);
    await this.until(() => ids.every((id) => this.transfers().some((t) => t.externalReference === id && t.status !== 'PENDING')), 30_000);
    const byRedemption = new Map(this.transfers().map((t) => [t.externalReference ?? '', t]));
    for (const id of ids) {
      const transfer = byRedemption.get(id);
      if (transfer === undefined || transfer.status !== 'BANK_PROCESSING') continue;
      if (this.rng.chance(0.5)) {
        // A forged TRANSFER_DONE for a payout the bank has not made.
        await this.forge('TRANSFER_DONE', transfer);
      } else {
        // The issue's case: the bank pays out, and a forged TRANSFER_FAILED overtakes the gateway's
        // own (delayed) TRANSFER_DONE.
        const paid = this.stack.simulator.state.completeTransfer(transfer.id);
        await this.forge('TRANSFER_FAILED', paid);
      }
    }
    this.holdBank(false);
    await this.quiesce();
    // Events the gateway contradicts after the fact, and late true ones with new ids.
    for (const transfer of this.transfers()) {
      if (!ids.includes(transfer.externalReference ?? '')) continue;
      if (transfer.status === 'DONE' && this.rng.chance(0.5)) await this.forge('TRANSFER_FAILED', transfer);
      else if (transfer.status !== 'DONE' && this.rng.chance(0.5)) await this.forge('TRANSFER_DONE', transfer);
      if (this.rng.chance(0.5)) await this.forge(transfer.status === 'DONE' ? 'TRANSFER_DONE' : 'TRANSFER_FAILED', transfer);
    }
    this.stack.simulator.faults.reset();
  }

  /** An authenticated event about a transfer: forged (the gateway's status contradicts it) or a late true one. */
  async forge(event: 'TRANSFER_DONE' | 'TRANSFER_FAILED', transfer: TransferWire): Promise<void> {
    const status = event === 'TRANSFER_DONE' ? 'DONE' : 'FAILED';
    const body = {
      id: `evt_chaos_${randomUUID().replaceAll('-', '')}`,
      event,
      dateCreated: new Date().toISOString().slice(0, 19).replace('T', ' '),
      transfer: { ...transfer, status, failReason: status === 'FAILED' ? 'forged by the chaos campaign' : null },
    };
    await this.request('POST', '/redemption/webhook/gateway', body, { 'gateway-access-token': this.stack.webhookToken });
    this.stats.faults += 1;
  }

  /** PostgreSQL, then Temporal, frozen with SIGSTOP while redemptions are under way, and thawed. */
  async freezes(): Promise<void> {
    const freezeMs = this.options.short ? 2_000 : 15_000;
    for (const what of ['postgres', 'temporal'] as const) {
      const load = this.redeemMany(this.options.short ? 2 : 8);
      await this.until(() => this.transfers().some((t) => t.status !== 'DONE' && t.status !== 'FAILED' && t.status !== 'CANCELLED'), 5_000);
      const during = this.redeemMany(this.options.short ? 2 : 6);
      this.log(`  ${what} frozen for ${freezeMs / 1000} s`);
      await this.stack.freeze(what, freezeMs);
      this.stats.faults += 1;
      await Promise.all([load, during]);
    }
  }

  /**
   * Issue 32's adversaries, each refused with its own code and nothing paid: a stranger presenting a
   * commitment of their own under a known token id (at redeem, settlements and transfer), an issuer
   * double-issuing (a second commitment under the token id, to a second payee), an issuer who pays
   * offline and then cancels. The honest bearer of each stranger's target is paid afterwards.
   */
  async cheatingIssuers(): Promise<void> {
    const rounds = this.options.short ? 1 : 6;
    const device = { 'x-device-id': 'chaos-device' };
    const expectRefusal = (what: string, answer: { status: number; json: unknown }, code: string, reason?: string) => {
      const body = answer.json as { code?: string; details?: { reason?: string } };
      if (answer.status !== 409 || body.code !== code || (reason !== undefined && body.details?.reason !== reason)) {
        this.stats.violations.push(`cheating issuers: ${what} answered ${answer.status} ${JSON.stringify(answer.json).slice(0, 200)} (409 ${code}${reason === undefined ? '' : ` ${reason}`} expected)`);
      }
    };
    for (let round = 0; round < rounds; round += 1) {
      // A stranger who read a token id from the public promises list.
      const target = await this.transferablePlc();
      if (target !== null) {
        const stranger = wallet();
        const accomplice = wallet();
        const own = createPlc({
          issuerSecretKey: stranger.keys.secretKey,
          amountMinor: target.plc.commitment.amountMinor * BigInt(this.pick(1, 20)),
          currency: 'BRL',
          createdAtMs: Date.now(),
          ttlHours: 24,
          tokenId: target.plc.commitment.tokenId,
        });
        const forged = appendTransfer(own, { senderSecretKey: stranger.keys.secretKey, recipientPublicKey: accomplice.keys.publicKey, timestampMs: Date.now() });
        expectRefusal('a stranger at /redeem/', await this.redeem(forged, accomplice), 'PLC_MISMATCH', 'foreign_commitment');
        expectRefusal('a stranger at /settlements', await this.request('POST', '/settlements', this.settlementBody(forged, accomplice), device), 'PLC_MISMATCH', 'foreign_commitment');
        expectRefusal('a stranger at /transfer/', await this.request('POST', '/transfer/', { plc: plcToJson(forged) }, device), 'PLC_MISMATCH', 'foreign_commitment');
        this.stats.faults += 3;
        const honest = await this.redeem(target.chain, target.bearer);
        if (honest.status !== 200) this.stats.violations.push(`cheating issuers: the honest bearer after a stranger answered ${honest.status} ${JSON.stringify(honest.json).slice(0, 200)}`);
      }
      // An issuer of its own (its key is blocked by what it does) signs a second commitment.
      const doubler = await this.transferablePlc(await this.fundedIssuer());
      if (doubler !== null) {
        const second = createPlc({
          issuerSecretKey: doubler.issuer.keys.secretKey,
          amountMinor: BigInt(this.pick(1, 99_999)),
          currency: 'BRL',
          createdAtMs: Date.now(),
          ttlHours: 24,
          tokenId: doubler.plc.commitment.tokenId,
        });
        const payee = wallet();
        const chain = appendTransfer(second, { senderSecretKey: doubler.issuer.keys.secretKey, recipientPublicKey: payee.keys.publicKey, timestampMs: Date.now() });
        expectRefusal('a double issue at /redeem/', await this.redeem(chain, payee), 'PLC_MISMATCH', 'issuer_double_issue');
        this.stats.faults += 1;
      }
      // An issuer of its own pays offline, then cancels online.
      const canceller = await this.transferablePlc(await this.fundedIssuer());
      if (canceller !== null) {
        const authorization = signCancel(
          { tokenId: canceller.plc.commitment.tokenId, commitmentHash: canceller.plc.commitmentHash, timestampMs: Date.now() },
          canceller.issuer.keys.secretKey,
        );
        const cancel = await this.request('POST', `/plc/${canceller.plc.commitment.tokenId}/cancel`, { authorization: cancelAuthorizationToJson(authorization) }, device);
        if (cancel.status !== 200) this.stats.violations.push(`cheating issuers: the cancel answered ${cancel.status} ${JSON.stringify(cancel.json).slice(0, 200)}`);
        else expectRefusal('a cancel after an offline payment at /redeem/', await this.redeem(canceller.chain, canceller.bearer), 'PLC_CANCELLED_AFTER_TRANSFER');
        this.stats.faults += 1;
      }
    }
  }

  /**
   * Issue 32's gateway adversaries: a third of the gateway's answers lost while redemptions pay
   * out, a rogue second transfer naming each redemption (same amount, same key, our description:
   * what anyone holding the gateway's API key can create), and a flood of validation requests
   * without the token, half naming nobody's reference, half naming a real redemption with a
   * made-up transfer. One payout per redemption must come out (invariants 1 and 5), every real
   * payout approved.
   */
  async rogueGateway(): Promise<void> {
    const count = this.options.short ? 3 : 12;
    this.holdBank(true);
    this.stack.simulator.faults.update({ apiLostResponseRate: 0.3 });
    this.stats.faults += 1;
    const ids = await this.redeemMany(count);
    await this.until(() => ids.every((id) => this.transfers().some((t) => t.externalReference === id)), 30_000);
    this.stack.simulator.faults.update({ apiLostResponseRate: 0 });
    const redemptions = await this.pool.query<{ id: string; token_id: string; payout_minor: string; destination: string }>(
      `SELECT id, token_id, (amount_minor - fee_minor)::text AS payout_minor, destination FROM redemptions WHERE id = ANY ($1::uuid[])`,
      [ids],
    );
    for (const row of redemptions.rows) {
      try {
        this.stack.simulator.state.createTransfer(
          { valueMinor: BigInt(row.payout_minor), pixAddressKey: row.destination, pixAddressKeyType: 'EMAIL', description: `PLC ${row.token_id}`, externalReference: row.id },
          null,
          randomUUID(),
        );
        this.stats.faults += 1;
      } catch (error) {
        this.stats.violations.push(`rogue gateway: the simulator refused the rogue transfer: ${String(error).slice(0, 200)}`);
      }
    }
    const flood = Array.from({ length: this.options.short ? 40 : 200 }, (_, index) => {
      const reference = index % 2 === 0 ? randomUUID() : (ids[index % Math.max(ids.length, 1)] ?? randomUUID());
      const transfer = {
        object: 'transfer',
        id: randomUUID(),
        status: 'PENDING',
        value: 10,
        netValue: 10,
        transferFee: 0,
        dateCreated: new Date().toISOString().slice(0, 10),
        type: 'BANK_ACCOUNT',
        operationType: 'PIX',
        bankAccount: { pixAddressKey: pixKey },
        externalReference: reference,
        failReason: null,
      };
      return this.request('POST', '/redemption/webhook/gateway', { type: 'TRANSFER', transfer }, {}, false).then((answer) => {
        const body = answer.json as { status?: string };
        if (answer.status === 200 && body.status === 'APPROVED') this.stats.violations.push(`rogue gateway: an anonymous validation of a made-up transfer was APPROVED (${reference})`);
      });
    });
    this.stats.faults += flood.length;
    await Promise.all(flood);
    this.holdBank(false);
    await this.quiesce();
    // Every rogue transfer ended refused (never DONE), and every redemption settled or failed on its own.
    const perRedemption = new Map<string, number>();
    for (const transfer of this.transfers()) {
      if (transfer.status === 'DONE' && ids.includes(transfer.externalReference ?? '')) {
        perRedemption.set(transfer.externalReference ?? '', (perRedemption.get(transfer.externalReference ?? '') ?? 0) + 1);
      }
    }
    for (const [id, n] of perRedemption) if (n > 1) this.stats.violations.push(`rogue gateway: redemption ${id} paid out ${n} times`);
  }

  /** Good and bad requests in one batch: an 8,000-character X-Device-ID on create, transfer, redeem and settlements. */
  async badHeaders(): Promise<void> {
    const bad = 'x'.repeat(8000);
    const plcs = (await Promise.all(Array.from({ length: this.options.short ? 4 : 10 }, () => this.transferablePlc()))).filter(
      (entry): entry is NonNullable<typeof entry> => entry !== null,
    );
    const batch: Promise<{ good: boolean; route: string; status: number }>[] = [];
    const send = (good: boolean, route: string, path: string, body: unknown, headers: Record<string, string> = {}) =>
      batch.push(this.request('POST', path, body, { 'x-device-id': good ? 'chaos-device' : bad, ...headers }).then((answer) => ({ good, route, status: answer.status })));
    for (const { bearer, chain, issuer } of plcs) {
      const fresh = createPlc({ issuerSecretKey: issuer.keys.secretKey, amountMinor: 150n, currency: 'BRL', createdAtMs: Date.now(), ttlHours: 24, tokenId: randomUUID() });
      send(true, 'create', '/plc/create', { plc: plcToJson(fresh) });
      send(false, 'create', '/plc/create', { plc: plcToJson(createPlc({ issuerSecretKey: issuer.keys.secretKey, amountMinor: 150n, currency: 'BRL', createdAtMs: Date.now(), ttlHours: 24, tokenId: randomUUID() })) });
      send(false, 'transfer', '/transfer/', { plc: plcToJson(chain) });
      send(false, 'redeem', '/redeem/', this.redeemBody(chain, bearer));
      send(false, 'settlements', '/settlements', this.settlementBody(chain, bearer));
      send(true, 'redeem', '/redeem/', this.redeemBody(chain, bearer));
      this.stats.faults += 4;
    }
    for (const outcome of await Promise.all(batch)) {
      if (outcome.good && outcome.status !== 200) this.stats.violations.push(`bad headers: a good ${outcome.route} answered ${outcome.status}`);
      if (!outcome.good && (outcome.status < 400 || outcome.status >= 500)) {
        this.stats.violations.push(`bad headers: a ${outcome.route} with an 8,000-character X-Device-ID answered ${outcome.status} (a 4xx naming the header expected)`);
      }
    }
  }
}

export async function runChaos(options: ChaosOptions): Promise<ChaosResult> {
  const startedAt = Date.now();
  options.log(`chaos seed ${options.seed}${options.short ? ' (short)' : ''}: replay with npm run chaos -- --seed ${options.seed}${options.short ? ' --short' : ''}`);
  const stack = options.stack ?? (await startStack({ ports: options.ports, seed: options.seed, log: options.log }));
  const pool = createPool({ connectionString: stack.databaseUrl, max: 4, applicationName: 'chaos' });
  const connection = await Connection.connect({ address: stack.temporalAddress });
  const temporal = new Client({ connection, namespace: 'default' });
  const campaign = new Campaign(stack, options, pool, temporal);
  const parts: PartResult[] = [];
  const reported = new Set<string>();
  const withoutPart = (violation: string): string => violation.slice(violation.indexOf(': ') + 2);
  try {
    campaign.startBank();
    await campaign.fundIssuers(3);
    const steps: [string, () => Promise<void>][] = [
      ['concurrent redemptions', () => campaign.concurrentRedemptions()],
      ['worker SIGKILL', () => campaign.killWorker()],
      ['stack SIGKILL', () => campaign.killEverything()],
      ['hostile webhooks', () => campaign.hostileWebhooks()],
      ['dependency freezes', () => campaign.freezes()],
      ['bad headers', () => campaign.badHeaders()],
      ['cheating issuers', () => campaign.cheatingIssuers()],
      ['rogue gateway', () => campaign.rogueGateway()],
    ];
    for (const [name, run] of steps) {
      if (options.only !== undefined && !options.only.includes(name)) continue;
      const partStart = Date.now();
      const payoutsBefore = campaign.doneTransfers();
      campaign.stats = emptyStats();
      options.log(`part: ${name}`);
      try {
        await run();
      } catch (error) {
        campaign.stats.violations.push(`${name}: the part could not run: ${error instanceof Error ? error.message : String(error)}`);
      }
      await campaign.quiesce();
      // A broken invariant stays broken: each is reported by the part that broke it, not again by every later one.
      const found = [...campaign.stats.violations, ...(await campaign.checkInvariants(name))];
      const violations = found.filter((violation) => !reported.has(withoutPart(violation)));
      for (const violation of found) reported.add(withoutPart(violation));
      const result: PartResult = {
        name,
        requests: campaign.stats.requests,
        statuses: campaign.stats.statuses,
        ok: campaign.stats.ok,
        refused: campaign.stats.refused,
        errors: campaign.stats.errors,
        payouts: campaign.doneTransfers() - payoutsBefore,
        faults: campaign.stats.faults,
        violations,
        seconds: (Date.now() - partStart) / 1000,
      };
      parts.push(result);
      options.log(
        `  ${result.requests} requests (${Object.entries(campaign.stats.statuses)
          .map(([status, n]) => `${status === '0' ? 'no answer' : status}: ${n}`)
          .join(', ')}), ${result.payouts} payouts, ${result.faults} faults, ${violations.length} violations`,
      );
      for (const failure of campaign.stats.failures) options.log(`  5xx or no answer: ${failure}`);
      for (const violation of violations.slice(0, 20)) options.log(`  VIOLATION ${violation}`);
    }
  } finally {
    campaign.stopBank();
    await pool.end().catch(() => {});
    await connection.close().catch(() => {});
    if (options.stack === undefined) await stack.stop();
  }
  const violations = parts.flatMap((part) => part.violations);
  return { seed: options.seed, short: options.short, parts, violations, seconds: (Date.now() - startedAt) / 1000 };
}

/** The campaign's counts as a table. */
export function formatTable(result: ChaosResult): string {
  const header = ['part', 'requests', '2xx', '4xx', '5xx/none', 'payouts', 'faults', 'violations', 'seconds'];
  const rows = result.parts.map((p) => [p.name, p.requests, p.ok, p.refused, p.errors, p.payouts, p.faults, p.violations.length, p.seconds.toFixed(1)].map(String));
  const sum = (pick: (p: PartResult) => number) => String(result.parts.reduce((total, p) => total + pick(p), 0));
  rows.push([
    'total',
    sum((p) => p.requests),
    sum((p) => p.ok),
    sum((p) => p.refused),
    sum((p) => p.errors),
    sum((p) => p.payouts),
    sum((p) => p.faults),
    sum((p) => p.violations.length),
    result.seconds.toFixed(1),
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((row) => (row[i] ?? '').length)));
  const line = (cells: string[]) => cells.map((cell, i) => (i === 0 ? cell.padEnd(widths[i] ?? 0) : cell.padStart(widths[i] ?? 0))).join('  ');
  return [line(header), line(widths.map((w) => '-'.repeat(w))), ...rows.map(line)].join('\n');
}
