import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import type { TransferWire } from '../../gateway/wire.ts';
import {
  appendTransfer,
  bytesToHex,
  cancelAuthorizationToJson,
  chainHeadHash,
  chainLengthMax,
  createPlc,
  plcToJson,
  redeemAuthorizationToJson,
  signCancel,
  signRedeem,
  type Plc,
} from '../../src/protocol/index.ts';
import { workflowIds } from '../../workflows/ids.ts';
import type { Model} from './model.ts';
import { bearerOf, chainRefusal, newWallet, refuse, relate, type Expectation, type PlcModel, type RedemptionModel, type Wallet } from './model.ts';
import { amountText, minor, SimViolation, type Answer, type World } from './world.ts';

/**
 * The simulation's operations and faults as fast-check commands (fc.commands / fc.asyncModelRun):
 * each picks its actor and target by index into the model's lists (so a shrunk sequence still
 * runs), runs against the real stack, compares the answer with the model's expectation and
 * updates the model; then `Real.observe` compares the touched PLCs, balances, blocks and flags.
 */

export type Route = 'redeem' | 'settlements';
export type FaultKind = 'killWorker' | 'killApi' | 'killSimulator' | 'freezePostgres' | 'freezeTemporal';

export type Op =
  | { kind: 'fund'; issuer: number }
  | { kind: 'issue'; issuer: number; amount: number }
  | { kind: 'hop'; plc: number; copy: number; to: number; hostile: boolean }
  | { kind: 'register'; plc: number; copy: number }
  | { kind: 'redeem'; plc: number; copy: number; route: Route; key: boolean; stale: boolean }
  | { kind: 'redeemTwice'; plc: number; copyA: number; copyB: number; routeA: Route; routeB: Route }
  | { kind: 'lostAnswer'; plc: number; copy: number; abortMs: number }
  | { kind: 'stranger'; plc: number; route: Route | 'transfer' }
  | { kind: 'steal'; plc: number }
  | { kind: 'doubleIssue'; plc: number }
  | { kind: 'cancel'; plc: number }
  | { kind: 'bank'; redemption: number; ok: boolean }
  | { kind: 'forge'; redemption: number; event: 'TRANSFER_DONE' | 'TRANSFER_FAILED' }
  | { kind: 'gatewayMood'; mood: number }
  | { kind: 'rogue'; redemption: number }
  | { kind: 'audit' }
  | { kind: 'retry'; redemption: number }
  | { kind: 'fault'; fault: FaultKind; ms: number };

export const faultKinds: readonly FaultKind[] = ['killWorker', 'killApi', 'killSimulator', 'freezePostgres', 'freezeTemporal'];

const device = { 'x-device-id': 'sim-device' };
let clock = Date.now();
/** Strictly increasing timestamps: two authorisations signed in one millisecond must differ. */
function now(): number {
  clock = Math.max(clock + 1, Date.now());
  return clock;
}

const at = <T>(list: readonly T[], index: number): T => list[index % list.length] as T;

/** Does chain `y` continue chain `x` (same records up to x's head, and more)? */
function continues(y: Plc, x: Plc): boolean {
  const length = x.transferChain.length;
  if (y.transferChain.length <= length) return false;
  if (length === 0) return true;
  return bytesToHex((y.transferChain[length - 1] as Plc['transferChain'][number]).hash) === bytesToHex((x.transferChain[length - 1] as Plc['transferChain'][number]).hash);
}

/** The copies no other copy continues: a copy another continues was spent by its holder, and the honest actors use the others. */
export function leafCopies(plc: PlcModel): PlcModel['copies'] {
  return plc.copies.filter((copy) => !plc.copies.some((other) => other !== copy && continues(other.chain, copy.chain)));
}

function redeemBody(chain: Plc, bearer: Wallet) {
  const authorization = signRedeem({ tokenId: chain.commitment.tokenId, headHash: chainHeadHash(chain), settlementRail: 'pix', destination: bearer.pixKey, timestampMs: now() }, bearer.keys.secretKey);
  return { plc: plcToJson(chain), authorization: redeemAuthorizationToJson(authorization) };
}

function settlementBody(chain: Plc, bearer: Wallet) {
  const { plc, authorization } = redeemBody(chain, bearer);
  return {
    plc_id: chain.commitment.tokenId,
    plc_payload: Buffer.from(JSON.stringify(plc)).toString('base64'),
    settlement_rail: 'pix',
    destination: { pix_key: bearer.pixKey },
    bearer_signature: authorization.signature,
    timestamp_ms: authorization.timestamp_ms,
  };
}

function redeemRequest(route: Route, chain: Plc, bearer: Wallet): { path: string; body: unknown } {
  return route === 'redeem' ? { path: '/redeem/', body: redeemBody(chain, bearer) } : { path: '/settlements', body: settlementBody(chain, bearer) };
}

/** What a redeem of `chain` signed by its head's holder must do (docs/settlement.md, the open step). */
export function expectRedeem(model: Model, plc: PlcModel, chain: Plc, bearer: string): Expectation {
  const expected = expectRedeemOfChain(model, plc, chain, bearer);
  // A blocked bearer is refused as such, before or after the chain's own refusals (the order is not specified).
  if (model.isBlocked(bearer) && !expected.codes.includes('KEY_BLOCKED')) return { ...expected, ok: false, codes: [...expected.codes, 'KEY_BLOCKED'] };
  return expected;
}

function expectRedeemOfChain(model: Model, plc: PlcModel, chain: Plc, bearer: string): Expectation {
  const byChain = chainRefusal(model, plc, chain);
  if (byChain !== null) return byChain;
  const relation = relate(plc, chain);
  const codes: string[] = [];
  const effects: Record<string, (m: Model) => void> = {};
  if (relation.kind === 'behind') {
    codes.push('NOT_CURRENT_BEARER');
    effects.NOT_CURRENT_BEARER = (m) => m.flag('DOUBLE_REDEMPTION_ATTEMPT', plc.tokenId);
  }
  if (plc.state === 'REDEEMED' || plc.inFlight !== null) {
    codes.push('PLC_ALREADY_REDEEMED');
    if (relation.kind === 'extends' && relation.added > 0) codes.push('PLC_NOT_TRANSFERABLE');
  }
  if (relation.kind === 'extends' && (relation.signers.some((signer) => model.isBlocked(signer)) || model.isBlocked(bearer))) codes.push('KEY_BLOCKED');
  if (chain.transferChain.length === 0) codes.push('PLC_NOT_REDEEMABLE');
  // The bank refused the in-flight payout: once the service books that, the PLC is redeemable again (timing decides).
  const reopens = codes.every((code) => code === 'PLC_ALREADY_REDEEMED' || code === 'PLC_NOT_TRANSFERABLE') && failingInFlight(model, plc);
  return codes.length > 0 ? { ...refuse(codes, effects), ok: reopens } : { ok: true, codes: [] };
}

/** Is the PLC's redemption in flight one whose payout the bank refused (so that it fails once booked)? */
function failingInFlight(model: Model, plc: PlcModel): boolean {
  return plc.inFlight !== null && plc.state !== 'REDEEMED' && model.redemption(plc.inFlight)?.bank === 'FAILED';
}

/** What registering `chain` at /transfer/ must do. */
export function expectRegister(model: Model, plc: PlcModel, chain: Plc): Expectation {
  const byChain = chainRefusal(model, plc, chain);
  if (byChain !== null) {
    // A hop signed by a blocked key may be refused as such before the fork or the binding is judged.
    const blockedSigner = chain.transferChain.some((record) => model.isBlocked(bytesToHex(record.senderPublicKey)));
    return blockedSigner && !byChain.codes.includes('KEY_BLOCKED') ? { ...byChain, codes: [...byChain.codes, 'KEY_BLOCKED'] } : byChain;
  }
  const relation = relate(plc, chain);
  if (relation.kind !== 'extends' || relation.added === 0) {
    // Nothing new: idempotent; a PLC that can no longer move may say so instead.
    return plc.state === 'REDEEMED' || plc.state === 'CANCELLED' || plc.inFlight !== null ? { ok: true, codes: ['PLC_NOT_TRANSFERABLE'] } : { ok: true, codes: [] };
  }
  const codes: string[] = [];
  if (plc.state === 'REDEEMED' || plc.state === 'CANCELLED' || plc.inFlight !== null) codes.push('PLC_NOT_TRANSFERABLE');
  if (relation.signers.some((signer) => model.isBlocked(signer))) codes.push('KEY_BLOCKED');
  const reopens = codes.every((code) => code === 'PLC_NOT_TRANSFERABLE') && failingInFlight(model, plc);
  return codes.length > 0 ? { ...refuse(codes), ok: reopens } : { ok: true, codes: [] };
}

/** Does `answer` fit `expected`? (ok with a 200; a refusal with one of the codes; `codes` beside `ok` are refusals allowed too.) */
function fits(expected: Expectation, answer: Answer): boolean {
  if (answer.status === 200) return expected.ok;
  return answer.code !== null && expected.codes.includes(answer.code);
}

function describe(answer: Answer): string {
  return `${answer.status} ${JSON.stringify(answer.json).slice(0, 300)}`;
}

function expectationText(expected: Expectation): string {
  return [expected.ok ? '200' : null, ...expected.codes].filter((x) => x !== null).join(' or ');
}

/** The per-run real side: a World (the stack) plus what this run touched. */
export class Real {
  readonly world: World;
  readonly run: number;
  touchedPlcs = new Set<string>();
  touchedOwners = new Set<string>();
  /** Keys the model blocked during this step, and flags it expects: checked after the step. */
  stepLog: string[] = [];

  constructor(world: World, run: number) {
    this.world = world;
    this.run = run;
  }

  fail(message: string): never {
    throw new SimViolation(message);
  }

  count(kind: string): void {
    this.world.stats.ops[kind] = (this.world.stats.ops[kind] ?? 0) + 1;
  }

  touch(plc: PlcModel, ...owners: string[]): void {
    this.touchedPlcs.add(plc.tokenId);
    this.touchedOwners.add(plc.issuer.pubkey);
    for (const owner of owners) this.touchedOwners.add(owner);
  }

  /** Applies an answer the model allowed: the refusal's effects, or fails the step. */
  judge(what: string, model: Model, expected: Expectation, answer: Answer): void {
    if (!fits(expected, answer)) this.fail(`${what}: the service answered ${describe(answer)}; the model expected ${expectationText(expected)}`);
    if (answer.status !== 200 && answer.code !== null) expected.effects?.[answer.code]?.(model);
  }

  // ---------------------------------------------------------------------------------------------
  // Observation after every step
  // ---------------------------------------------------------------------------------------------

  /** Brings final redemptions into the model: the bank's decision must be what the service booked. */
  async resolve(model: Model): Promise<void> {
    const pending = model.pendingRedemptions();
    if (pending.length === 0) return;
    const rows = await this.world.pool.query<{ id: string; status: string; fee_minor: string }>(`SELECT id, status, fee_minor::text FROM redemptions WHERE id = ANY ($1::uuid[])`, [pending.map((r) => r.id)]);
    for (const row of rows.rows) {
      const redemption = model.redemption(row.id) as RedemptionModel;
      if (row.status === 'PENDING_PAYMENT') continue;
      if (row.status === 'SETTLED') {
        if (redemption.bank !== 'DONE') this.fail(`redemption ${row.id} SETTLED, yet the bank ${redemption.bank === null ? 'has not paid it' : 'refused its payout'}`);
        model.settle(redemption);
        this.world.stats.payouts += 1;
        this.world.stats.payoutMinor += redemption.amountMinor - redemption.feeMinor;
      } else if (row.status === 'FAILED') {
        if (redemption.bank === 'DONE') this.fail(`redemption ${row.id} FAILED, yet the bank paid its payout`);
        if (redemption.bank === null) {
          // Failed before the bank saw it: only when the gateway refused or failed every transfer for it.
          const transfers = (await this.world.transfersOf(row.id)).filter((t) => !model.data.rogueTransfers.includes(t.id));
          const live = transfers.filter((t) => t.status !== 'FAILED' && t.status !== 'CANCELLED');
          if (live.length > 0) this.fail(`redemption ${row.id} FAILED while its transfer ${live.map((t) => `${t.id} ${t.status}`).join(', ')} is live at the gateway`);
        }
        model.fail(redemption);
        this.world.stats.refusedPayouts += 1;
      } else {
        this.fail(`redemption ${row.id} is ${row.status}, which the model does not know`);
      }
      this.touchedPlcs.add(redemption.tokenId);
      this.touchedOwners.add(redemption.bearer);
      this.touchedOwners.add(redemption.issuer);
    }
  }

  /** A PLC the service let move on while the model had its refused payout in flight: the failure must be booked by now. */
  async bookReopened(model: Model, plc: PlcModel, what: string): Promise<void> {
    await this.resolve(model);
    if (plc.inFlight !== null) this.fail(`${what} ${plc.tokenId} was accepted while its redemption ${plc.inFlight} is still PENDING_PAYMENT at the service`);
  }

  /** Owners and PLCs whose state waits on a bank decision the service has not booked yet. */
  unsettled(model: Model): { owners: Set<string>; plcs: Set<string> } {
    const owners = new Set<string>();
    const plcs = new Set<string>();
    for (const r of model.pendingRedemptions()) {
      if (r.bank === null) continue;
      owners.add(r.bearer);
      owners.add(r.issuer);
      plcs.add(r.tokenId);
    }
    return { owners, plcs };
  }

  async observe(model: Model): Promise<void> {
    await this.resolve(model);
    const waiting = this.unsettled(model);
    for (const tokenId of this.touchedPlcs) {
      if (waiting.plcs.has(tokenId)) continue;
      const plc = model.plc(tokenId);
      const answer = await this.world.request('GET', `/plc/${tokenId}/status`);
      if (answer.status !== 200) this.fail(`GET /plc/${tokenId}/status answered ${describe(answer)}`);
      const status = answer.json as { status: string; chain_length: number; bearer_pubkey: string; redemption_in_flight: boolean; amount: string };
      const want = { status: plc.state, chain_length: plc.registered.transferChain.length, bearer_pubkey: bearerOf(plc.registered), redemption_in_flight: plc.inFlight !== null, amount: amountText(plc.amountMinor) };
      const got = { status: status.status, chain_length: status.chain_length, bearer_pubkey: status.bearer_pubkey, redemption_in_flight: status.redemption_in_flight, amount: status.amount };
      if (JSON.stringify(want) !== JSON.stringify(got)) this.fail(`PLC ${tokenId}: the service holds ${JSON.stringify(got)}, the model ${JSON.stringify(want)}`);
    }
    for (const owner of this.touchedOwners) {
      if (waiting.owners.has(owner)) continue;
      const answer = await this.world.request('GET', `/balance/${owner}`);
      if (answer.status !== 200) this.fail(`GET /balance/${owner} answered ${describe(answer)}`);
      const got = answer.json as { available: string; pending: string; promised: string; held: string };
      const want = model.buckets(owner);
      const actual = { available: minor(got.available), pending: minor(got.pending), promised: minor(got.promised), held: minor(got.held) };
      if (actual.available !== want.available || actual.pending !== want.pending || actual.promised !== want.promised || actual.held !== 0n) {
        this.fail(
          `balance of ${owner.slice(0, 16)}: the service has available ${got.available}, pending ${got.pending}, promised ${got.promised}, held ${got.held}; ` +
            `the model available ${amountText(want.available)}, pending ${amountText(want.pending)}, promised ${amountText(want.promised)}, held 0.00`,
        );
      }
    }
    // Blocks: every key of the run the model blocked is blocked, and no other key of the run is.
    const keys = [...model.data.issuers, ...model.data.holders].map((w) => w.pubkey);
    const blocks = await this.world.pool.query<{ pubkey: string }>(`SELECT pubkey FROM key_blocks WHERE pubkey = ANY ($1::text[]) AND lifted_at IS NULL`, [keys]);
    const blocked = new Set(blocks.rows.map((row) => row.pubkey));
    for (const key of keys) {
      if (model.isBlocked(key) !== blocked.has(key)) this.fail(`key ${key.slice(0, 16)} is ${blocked.has(key) ? '' : 'not '}blocked at the service; the model says it ${model.isBlocked(key) ? 'is' : 'is not'}`);
    }
    // Flags: every flag the model expects was raised.
    if (model.data.flags.length > 0) {
      const flags = await this.world.pool.query<{ flag_type: string; token_id: string }>(`SELECT DISTINCT flag_type, token_id::text FROM risk_flags WHERE token_id = ANY ($1::uuid[])`, [model.data.plcs.map((p) => p.tokenId)]);
      const raised = new Set(flags.rows.map((row) => `${row.flag_type} ${row.token_id}`));
      for (const flag of model.data.flags) if (!raised.has(flag)) this.fail(`the risk flag ${flag} was not raised`);
    }
    this.touchedPlcs.clear();
    this.touchedOwners.clear();
  }

  // ---------------------------------------------------------------------------------------------
  // Checkpoints
  // ---------------------------------------------------------------------------------------------

  /** Waits (bounded) until every redemption the bank decided is booked. */
  async settleDecided(model: Model, timeoutMs: number): Promise<void> {
    const done = await this.world.until(async () => {
      await this.resolve(model);
      return model.pendingRedemptions().every((r) => r.bank === null);
    }, timeoutMs);
    if (!done) {
      const late = model.pendingRedemptions().filter((r) => r.bank !== null);
      this.fail(`${late.length} redemptions the bank decided are still PENDING_PAYMENT after ${timeoutMs / 1000} s: ${late.map((r) => `${r.id} (bank ${r.bank ?? ''})`).join(', ')}`);
    }
  }

  /** The gateway's payouts for this run against the model, one to one, and invariants 1 to 5. */
  async checkpoint(model: Model, label: string): Promise<void> {
    this.world.stats.checkpoints += 1;
    await this.settleDecided(model, 60_000);
    await this.observe(model);
    const all = await this.world.stack.gateway.transfers();
    const byReference = new Map<string, TransferWire[]>();
    for (const transfer of all) byReference.set(transfer.externalReference ?? '', [...(byReference.get(transfer.externalReference ?? '') ?? []), transfer]);
    for (const redemption of model.data.redemptions) {
      const done = (byReference.get(redemption.id) ?? []).filter((t) => t.status === 'DONE');
      if (redemption.state === 'SETTLED') {
        if (done.length !== 1) this.fail(`${label}: redemption ${redemption.id} SETTLED with ${done.length} DONE transfers at the gateway`);
        const transfer = done[0] as TransferWire;
        const paid = BigInt(Math.round(Number(transfer.value) * 100));
        if (paid !== redemption.amountMinor - redemption.feeMinor) this.fail(`${label}: redemption ${redemption.id} paid ${String(transfer.value)}, the model ${amountText(redemption.amountMinor - redemption.feeMinor)}`);
        const to = transfer.bankAccount?.pixAddressKey ?? '';
        const receiver = [...model.data.holders, ...model.data.issuers].find((w) => w.pixKey === to);
        if (receiver === undefined || receiver.pubkey !== redemption.bearer) this.fail(`${label}: redemption ${redemption.id} paid to ${to}, not its bearer's key`);
        if (!model.everHeld(model.plc(redemption.tokenId)).includes(receiver.pubkey)) this.fail(`${label}: money for ${redemption.tokenId} reached ${receiver.pubkey}, a key that never held it`);
      } else if (done.length > 0) {
        this.fail(`${label}: redemption ${redemption.id} is ${redemption.state}${redemption.bank === 'DONE' ? ' (bank paid)' : ''}, yet ${done.length} transfers for it are DONE`);
      }
    }
    for (const id of model.data.rogueTransfers) {
      const rogue = all.find((t) => t.id === id);
      if (rogue !== undefined && (rogue.status === 'DONE' || rogue.status === 'BANK_PROCESSING')) this.fail(`${label}: the rogue transfer ${id} was approved (${rogue.status})`);
    }
    const violations = await this.world.invariants(label);
    if (violations.length > 0) this.fail(violations.join('\n'));
  }

  /** The end of a run: the gateway calms down, the bank pays every payout left, every workflow ends or waits legitimately. */
  async finish(model: Model): Promise<void> {
    await this.world.setMood({});
    const deadline = Date.now() + 90_000;
    for (;;) {
      await this.resolve(model);
      const open = model.pendingRedemptions().filter((r) => r.bank === null);
      if (open.length === 0) break;
      if (Date.now() > deadline) this.fail(`the payouts of ${open.map((r) => r.id).join(', ')} never reached the bank within 90 s`);
      for (const redemption of open) {
        const transfer = (await this.world.transfersOf(redemption.id)).find((t) => t.status === 'BANK_PROCESSING' && !model.data.rogueTransfers.includes(t.id));
        if (transfer === undefined) continue;
        await this.world.stack.gateway.complete(transfer.id);
        redemption.bank = 'DONE';
      }
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    await this.checkpoint(model, `run ${this.run} end`);
    // A PLC has no workflow of its own (issue 38, docs/plc.md "Expiry by time buckets"): none was
    // started for it, and a live one's expiry bucket waits for its minute (RUNNING).
    for (const plc of model.data.plcs) {
      const own = await this.world.temporal.workflow
        .getHandle(workflowIds.plc(plc.tokenId))
        .describe()
        .then((description) => description.status.name)
        .catch(() => null);
      if (own !== null) this.fail(`PLC ${plc.tokenId} (${plc.state}) has a workflow of its own (${own}): expiry is its bucket's`);
      if (plc.state === 'REDEEMED' || plc.state === 'CANCELLED') continue;
      const bucket = await this.world.pool.query<{ bucket_start: Date }>(
        `SELECT b.bucket_start FROM plcs p JOIN plc_expiry_buckets b ON p.expiry_due_at >= b.bucket_start AND p.expiry_due_at < b.bucket_end WHERE p.token_id = $1`,
        [plc.tokenId],
      );
      const start = bucket.rows[0]?.bucket_start;
      if (start === undefined) this.fail(`PLC ${plc.tokenId} (${plc.state}) has no expiry bucket`);
      let got = '';
      const ok = await this.world.until(async () => {
        got = await this.world.temporal.workflow
          .getHandle(workflowIds.plcExpiryBucket(start!.getTime(), this.world.stack.taskQueue))
          .describe()
          .then((description) => description.status.name)
          .catch(() => 'not started');
        return got === 'RUNNING';
      }, 70_000);
      if (!ok) this.fail(`the expiry bucket of PLC ${plc.tokenId} (${plc.state}) is ${got}, not RUNNING`);
    }
  }
}

// -------------------------------------------------------------------------------------------------
// The commands
// -------------------------------------------------------------------------------------------------

/** What the runner sets for the commands of a simulation: the step budget, the checkpoint cadence, the progress line. */
export const runtime = {
  more: (): boolean => true,
  checkEvery: 25,
  progress: (): void => {},
};

export class SimCommand implements fc.AsyncCommand<Model, Real> {
  readonly op: Op;
  constructor(op: Op) {
    this.op = op;
  }

  check(model: Readonly<Model>): boolean {
    if (!runtime.more()) return false;
    const op = this.op;
    const { plcs, issuers } = model.data;
    switch (op.kind) {
      case 'fund':
      case 'issue':
        return issuers.length > 0;
      case 'hop':
      case 'register':
      case 'redeem':
      case 'redeemTwice':
      case 'lostAnswer':
      case 'stranger':
      case 'steal':
      case 'doubleIssue':
      case 'cancel':
        return plcs.length > 0;
      case 'bank':
      case 'forge':
      case 'rogue':
      case 'retry':
        return model.data.redemptions.some((r) => r.state === 'PENDING_PAYMENT');
      default:
        return true;
    }
  }

  async run(model: Model, real: Real): Promise<void> {
    const op = this.op;
    real.count(op.kind);
    real.world.stats.steps += 1;
    try {
      await stepOf(op)(model, real);
      await real.observe(model);
      if (real.world.stats.steps % runtime.checkEvery === 0) await real.checkpoint(model, `step ${real.world.stats.steps}`);
    } catch (error) {
      if (error instanceof SimViolation) throw new SimViolation(`${this.toString()}: ${error.message}`);
      throw error;
    } finally {
      runtime.progress();
    }
  }

  toString(): string {
    return JSON.stringify(this.op);
  }
}

type Step = (model: Model, real: Real) => Promise<void>;

function stepOf(op: Op): Step {
  switch (op.kind) {
    case 'fund':
      return async (model, real) => {
        const issuer = at(model.data.issuers, op.issuer);
        await real.world.deposit(issuer.pubkey, 50_000n);
        model.deposit(issuer.pubkey, 50_000n);
        real.touchedOwners.add(issuer.pubkey);
      };
    case 'issue':
      return async (model, real) => issue(model, real, at(model.data.issuers, op.issuer), BigInt(op.amount));
    case 'hop':
      return async (model) => {
        const plc = at(model.data.plcs, op.plc);
        const copies = op.hostile ? plc.copies : leafCopies(plc);
        const copy = at(copies, op.copy);
        if (copy.chain.transferChain.length >= chainLengthMax || plc.state === 'REDEEMED') return;
        const recipient = op.to < model.data.holders.length && at(model.data.holders, op.to).pubkey !== copy.holder.pubkey ? at(model.data.holders, op.to) : newWallet();
        if (!model.data.holders.includes(recipient)) model.data.holders.push(recipient);
        const chain = appendTransfer(copy.chain, { senderSecretKey: copy.holder.keys.secretKey, recipientPublicKey: recipient.keys.publicKey, timestampMs: now() });
        plc.copies.push({ chain, holder: recipient });
      };
    case 'register':
      return async (model, real) => {
        const plc = at(model.data.plcs, op.plc);
        const copy = at(plc.copies, op.copy);
        const expected = expectRegister(model, plc, copy.chain);
        const answer = await real.world.send('POST', '/transfer/', { plc: plcToJson(copy.chain) }, device);
        real.judge(`register ${plc.tokenId} (${copy.chain.transferChain.length} hops)`, model, expected, answer);
        const relation = relate(plc, copy.chain);
        // Registering a chain the service has (nothing new) is idempotent, in flight or not; a new hop must wait for the booked failure.
        if (answer.status === 200 && relation.kind === 'extends' && relation.added > 0 && plc.inFlight !== null) await real.bookReopened(model, plc, 'register');
        if (answer.status === 200) model.register(plc, copy.chain);
        real.touch(plc);
      };
    case 'redeem':
      return async (model, real) => {
        const plc = at(model.data.plcs, op.plc);
        // An honest holder redeems the copy it holds; a stale one a copy it spent already.
        const copy = at(op.stale ? plc.copies : leafCopies(plc), op.copy);
        await redeem(model, real, plc, copy.chain, copy.holder, op.route, op.key ? randomUUID() : undefined);
      };
    case 'redeemTwice':
      return async (model, real) => {
        const plc = at(model.data.plcs, op.plc);
        const a = at(plc.copies, op.copyA);
        const b = at(plc.copies, op.copyB);
        const requestA = redeemRequest(op.routeA, a.chain, a.holder);
        const requestB = redeemRequest(op.routeB, b.chain, b.holder);
        const [answerA, answerB] = await Promise.all([real.world.send('POST', requestA.path, requestA.body, device), real.world.send('POST', requestB.path, requestB.body, device)]);
        // Any serialisation of the two is allowed: the model tries both orders.
        const tries: [typeof a, Answer & { retried: boolean }, typeof b, Answer & { retried: boolean }][] = [
          [a, answerA, b, answerB],
          [b, answerB, a, answerA],
        ];
        const reasons: string[] = [];
        for (const [first, firstAnswer, second, secondAnswer] of tries) {
          const trial = model.clone();
          try {
            const trialPlc = trial.plc(plc.tokenId);
            await applyRedeem(trial, real, trialPlc, first.chain, first.holder.pubkey, firstAnswer, 'concurrent');
            await applyRedeem(trial, real, trialPlc, second.chain, second.holder.pubkey, secondAnswer, 'concurrent');
            model.data = trial.data;
            real.touch(plc, a.holder.pubkey, b.holder.pubkey);
            return;
          } catch (error) {
            if (!(error instanceof SimViolation)) throw error;
            reasons.push(error.message);
          }
        }
        real.fail(`two redemptions of ${plc.tokenId} at once (${op.routeA}, ${op.routeB}) fit no order: ${reasons.join(' | ')}`);
      };
    case 'lostAnswer':
      return async (model, real) => {
        const plc = at(model.data.plcs, op.plc);
        const copy = at(plc.copies, op.copy);
        const key = randomUUID();
        const body = redeemBody(copy.chain, copy.holder);
        // The first answer is lost: the client gives up after abortMs, whatever the server did.
        await real.world.request('POST', '/redeem/', body, { ...device, 'idempotency-key': key }, op.abortMs);
        // The retry: while the first attempt is still being processed the key answers 409
        // IDEMPOTENCY_REQUEST_IN_PROGRESS (docs/architecture.md), and the client asks again.
        const answer = await real.world.send('POST', '/redeem/', body, { ...device, 'idempotency-key': key });
        await applyRedeem(model, real, plc, copy.chain, copy.holder.pubkey, answer, 'a retry after a lost answer');
        const open = await real.world.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM redemptions WHERE token_id = $1 AND status IN ('PENDING_PAYMENT', 'SETTLED')`, [plc.tokenId]);
        const want = model.data.redemptions.filter((r) => r.tokenId === plc.tokenId && r.state !== 'FAILED').length;
        if ((open.rows[0]?.n ?? 0) > want) real.fail(`a retry after a lost answer: PLC ${plc.tokenId} has ${open.rows[0]?.n ?? 0} live redemptions, the model ${want}`);
        real.touch(plc, copy.holder.pubkey);
      };
    case 'stranger':
      return async (model, real) => {
        const plc = at(model.data.plcs, op.plc);
        const stranger = newWallet();
        const accomplice = newWallet();
        const own = createPlc({ issuerSecretKey: stranger.keys.secretKey, amountMinor: plc.amountMinor * 3n, currency: 'BRL', createdAtMs: now(), ttlHours: 24, tokenId: plc.tokenId });
        const forged = appendTransfer(own, { senderSecretKey: stranger.keys.secretKey, recipientPublicKey: accomplice.keys.publicKey, timestampMs: now() });
        const answer =
          op.route === 'transfer'
            ? await real.world.send('POST', '/transfer/', { plc: plcToJson(forged) }, device)
            : await real.world.send('POST', redeemRequest(op.route, forged, accomplice).path, redeemRequest(op.route, forged, accomplice).body, device);
        real.judge(`a stranger's own commitment for ${plc.tokenId} at ${op.route}`, model, refuse(['PLC_MISMATCH']), answer);
        real.touch(plc);
      };
    case 'steal':
      return async (model, real) => {
        const plc = at(model.data.plcs, op.plc);
        // The public chain (GET /plc/{id}/chain gives it to anyone), signed by a stranger.
        const stranger = newWallet();
        const authorization = signRedeem({ tokenId: plc.tokenId, headHash: chainHeadHash(plc.registered), settlementRail: 'pix', destination: stranger.pixKey, timestampMs: now() }, stranger.keys.secretKey);
        const answer = await real.world.send('POST', '/redeem/', { plc: plcToJson(plc.registered), authorization: redeemAuthorizationToJson(authorization) }, device);
        real.judge(`a stranger redeeming ${plc.tokenId} with the public chain`, model, refuse(['NOT_CURRENT_BEARER', 'SIGNATURE_INVALID', 'PLC_ALREADY_REDEEMED', 'PLC_NOT_REDEEMABLE', 'PLC_NOT_TRANSFERABLE']), answer);
        // No flag: an authorisation that is not the presented head's bearer's is refused before the redemption's workflow
        // (src/plc/authorize-redemption.ts); the medium flag is for a bearer presenting a chain that moved on.
        real.touch(plc);
      };
    case 'doubleIssue':
      return async (model, real) => {
        const plc = at(model.data.plcs, op.plc);
        const second = createPlc({ issuerSecretKey: plc.issuer.keys.secretKey, amountMinor: plc.amountMinor + 100n, currency: 'BRL', createdAtMs: now(), ttlHours: 24, tokenId: plc.tokenId });
        const payee = newWallet();
        model.data.holders.push(payee);
        const chain = appendTransfer(second, { senderSecretKey: plc.issuer.keys.secretKey, recipientPublicKey: payee.keys.publicKey, timestampMs: now() });
        await redeem(model, real, plc, chain, payee, 'redeem', undefined);
      };
    case 'cancel':
      return async (model, real) => {
        const plc = at(model.data.plcs, op.plc);
        const authorization = signCancel({ tokenId: plc.tokenId, commitmentHash: plc.plc.commitmentHash, timestampMs: now() }, plc.issuer.keys.secretKey);
        const answer = await real.world.send('POST', `/plc/${plc.tokenId}/cancel`, { authorization: cancelAuthorizationToJson(authorization) }, device);
        const cancellable = plc.state === 'ISSUED' && plc.inFlight === null;
        if (cancellable && answer.retried && (answer.code === 'PLC_NOT_CANCELLABLE' || answer.code === 'AUTHORIZATION_REPLAYED')) {
          // An earlier attempt cancelled it and its answer was lost: the PLC's status (observed after the step) says whether it did.
          model.cancel(plc);
          real.touch(plc);
          return;
        }
        const expected: Expectation = cancellable ? { ok: true, codes: [] } : refuse(['PLC_NOT_CANCELLABLE']);
        real.judge(`cancel ${plc.tokenId} (${plc.state})`, model, expected, answer);
        if (answer.status === 200) {
          if ((answer.json as { released_amount?: string }).released_amount !== amountText(plc.amountMinor)) real.fail(`cancel ${plc.tokenId} released ${describe(answer)}`);
          model.cancel(plc);
        }
        real.touch(plc);
      };
    case 'bank':
      return async (model, real) => {
        const open = model.pendingRedemptions().filter((r) => r.bank === null);
        if (open.length === 0) return;
        const redemption = at(open, op.redemption);
        // The payout reaches the bank a moment after the redemption opens (its activity, then the validation): the bank waits a little.
        let processing: TransferWire[] = [];
        await real.world.until(async () => {
          const transfers = (await real.world.transfersOf(redemption.id)).filter((t) => !model.data.rogueTransfers.includes(t.id));
          processing = transfers.filter((t) => t.status === 'BANK_PROCESSING');
          return processing.length > 0;
        }, 1_500);
        if (processing.length > 1) real.fail(`redemption ${redemption.id} has ${processing.length} transfers approved at the gateway`);
        const transfer = processing[0];
        if (transfer === undefined) return; // Not at the bank yet: the bank waits.
        if (op.ok) await real.world.stack.gateway.complete(transfer.id);
        else await real.world.stack.gateway.fail(transfer.id, 'Pix key not found at the receiving institution');
        redemption.bank = op.ok ? 'DONE' : 'FAILED';
      };
    case 'forge':
      return async (model, real) => {
        const pending = model.pendingRedemptions();
        const redemption = at(pending, op.redemption);
        const transfer = (await real.world.transfersOf(redemption.id)).find((t) => !model.data.rogueTransfers.includes(t.id));
        if (transfer === undefined) return;
        const status = op.event === 'TRANSFER_DONE' ? 'DONE' : 'FAILED';
        const body = {
          id: `evt_sim_${randomUUID().replaceAll('-', '')}`,
          event: op.event,
          dateCreated: new Date().toISOString().slice(0, 19).replace('T', ' '),
          transfer: { ...transfer, status, failReason: status === 'FAILED' ? 'forged by the simulation' : null },
        };
        const answer = await real.world.request('POST', '/redemption/webhook/gateway', body, { 'gateway-access-token': real.world.stack.webhookToken });
        if (answer.status >= 500 && answer.status !== 503) real.fail(`a forged ${op.event} answered ${describe(answer)}`);
        real.world.stats.faults.forgedWebhook = (real.world.stats.faults.forgedWebhook ?? 0) + 1;
      };
    case 'gatewayMood':
      return async (_model, real) => {
        const moods: Record<string, unknown>[] = [
          {},
          { duplicateWebhooks: 3, reorderWebhooks: true, reorderWindowMs: 200 },
          { webhookDelayMs: 400, dropWebhookRate: 0.3 },
          { apiLostResponseRate: 0.2 },
          { duplicateWebhooks: 2, dropWebhookRate: 0.2, apiLostResponseRate: 0.1 },
        ];
        const mood = at(moods, op.mood);
        await real.world.setMood(mood);
        if (Object.keys(mood).length > 0) real.world.stats.faults.gatewayMood = (real.world.stats.faults.gatewayMood ?? 0) + 1;
      };
    case 'rogue':
      return async (model, real) => {
        const redemption = at(model.pendingRedemptions(), op.redemption);
        // Only once the service's own payout is at the gateway (its id on the redemption): every other transfer naming it is rogue.
        const row = await real.world.pool.query<{ gateway_transfer_id: string | null }>(`SELECT gateway_transfer_id FROM redemptions WHERE id = $1`, [redemption.id]);
        const own = row.rows[0]?.gateway_transfer_id ?? null;
        if (own === null) return;
        try {
          await real.world.stack.gateway.createTransfer({
            value: Number(redemption.amountMinor - redemption.feeMinor) / 100,
            pixAddressKey: redemption.pixKey,
            pixAddressKeyType: 'EMAIL',
            description: `PLC ${redemption.tokenId}`,
            externalReference: redemption.id,
          });
        } catch {
          // The gateway lost its answer (a mood): the transfer may exist all the same; it is found below.
        }
        for (const transfer of await real.world.transfersOf(redemption.id)) {
          if (transfer.id !== own && !model.data.rogueTransfers.includes(transfer.id)) model.data.rogueTransfers.push(transfer.id);
        }
        real.world.stats.faults.rogueTransfer = (real.world.stats.faults.rogueTransfer ?? 0) + 1;
      };
    case 'audit':
      return async (_model, real) => {
        const answer = await real.world.adminRequest('POST', '/admin/reconcile/gateway-audit');
        if (answer.status !== 200 && answer.status !== 503) real.fail(`the operator's gateway audit answered ${describe(answer)}`);
      };
    case 'retry':
      return async (model, real) => {
        const redemption = at(model.pendingRedemptions(), op.redemption);
        const answer = await real.world.adminRequest('POST', `/admin/redemptions/${redemption.id}/retry`, { reason: 'the simulation retries' });
        if (answer.status >= 500 && answer.status !== 503) real.fail(`the operator's retry of ${redemption.id} answered ${describe(answer)}`);
        if (answer.status === 404) real.fail(`the operator's retry of ${redemption.id} answered ${describe(answer)}`);
      };
    case 'fault':
      return async (_model, real) => {
        const stack = real.world.stack;
        real.world.stats.faults[op.fault] = (real.world.stats.faults[op.fault] ?? 0) + 1;
        if (op.fault === 'killWorker') {
          await stack.killWorker();
          await stack.startWorker();
        } else if (op.fault === 'killApi') await stack.killApi();
        else if (op.fault === 'killSimulator') {
          // A restart clears the simulator's faults (simulator/store.ts): the gateway comes back well behaved.
          await stack.killSimulator();
          real.world.mood = {};
        }
        else await stack.freeze(op.fault === 'freezePostgres' ? 'postgres' : 'temporal', op.ms);
      };
  }
}

async function issue(model: Model, real: Real, issuer: Wallet, amountMinor: bigint): Promise<void> {
  const plc = createPlc({ issuerSecretKey: issuer.keys.secretKey, amountMinor, currency: 'BRL', createdAtMs: now(), ttlHours: 24, tokenId: randomUUID() });
  const answer = await real.world.send('POST', '/plc/create', { plc: plcToJson(plc) }, device);
  const codes: string[] = [];
  if (model.isBlocked(issuer.pubkey)) codes.push('KEY_BLOCKED');
  if (model.buckets(issuer.pubkey).available < amountMinor) codes.push('INSUFFICIENT_FUNDS');
  const expected: Expectation = codes.length > 0 ? refuse(codes) : { ok: true, codes: [] };
  real.judge(`issue ${amountText(amountMinor)} by ${issuer.pubkey.slice(0, 16)}`, model, expected, answer);
  real.touchedOwners.add(issuer.pubkey);
  if (answer.status !== 200) return;
  const created = answer.json as { created: boolean; amount: string; status: string };
  // created: false only when an earlier attempt, whose answer was lost, created it.
  if ((!created.created && !answer.retried) || created.status !== 'ISSUED' || created.amount !== amountText(amountMinor)) real.fail(`issue answered ${describe(answer)}`);
  const entry: PlcModel = {
    tokenId: plc.commitment.tokenId,
    issuer,
    amountMinor,
    plc,
    commitmentHash: bytesToHex(plc.commitmentHash),
    registered: plc,
    state: 'ISSUED',
    inFlight: null,
    copies: [{ chain: plc, holder: issuer }],
  };
  model.issue(entry);
  real.touchedPlcs.add(entry.tokenId);
}

async function redeem(model: Model, real: Real, plc: PlcModel, chain: Plc, bearer: Wallet, route: Route, key: string | undefined): Promise<void> {
  const request = redeemRequest(route, chain, bearer);
  const answer = await real.world.send('POST', request.path, request.body, { ...device, ...(key === undefined ? {} : { 'idempotency-key': key }) });
  await applyRedeem(model, real, plc, chain, bearer.pubkey, answer, route);
  real.touch(plc, bearer.pubkey);
}

/** Judges a redeem's answer against the model and applies it. */
async function applyRedeem(model: Model, real: Real, plc: PlcModel, chain: Plc, bearer: string, answer: Answer & { retried: boolean }, what: string): Promise<void> {
  const expected = expectRedeem(model, plc, chain, bearer);
  if (expected.ok && answer.retried && (answer.code === 'AUTHORIZATION_REPLAYED' || answer.code === 'PLC_ALREADY_REDEEMED')) {
    // The first attempt's answer was lost (503 or no answer) and the retry finds its work done: the
    // redemption it opened is adopted, from the service's rows (its balances are checked after the step).
    const rows = await real.world.pool.query<{ id: string; fee_minor: string }>(`SELECT id, fee_minor::text FROM redemptions WHERE token_id = $1 AND bearer_pubkey = $2 ORDER BY created_at DESC`, [plc.tokenId, bearer]);
    const opened = rows.rows.find((row) => model.redemption(row.id) === undefined);
    if (opened === undefined && expected.codes.includes(answer.code ?? '')) {
      // Nothing opened, and the refusal is one the model allows (the bank refused the payout in flight, and the service
      // had not booked that failure when it answered): judged as a refusal.
      real.judge(`redeem ${plc.tokenId} (${what})`, model, expected, answer);
      return;
    }
    if (opened === undefined) {
      // The evidence: every redemption of the PLC, now and a moment later (an opening still committing shows up then).
      const seen = async () =>
        (await real.world.pool.query<{ id: string; bearer_pubkey: string; status: string }>(`SELECT id, bearer_pubkey, status FROM redemptions WHERE token_id = $1`, [plc.tokenId])).rows
          .map((row) => `${row.id} ${row.bearer_pubkey.slice(0, 16)} ${row.status}`)
          .join(', ');
      const now = await seen();
      await new Promise((resolve) => setTimeout(resolve, 3000));
      real.fail(`redeem ${plc.tokenId} (${what}): the retry answered ${describe(answer)}, yet no earlier attempt opened a redemption (the PLC's redemptions: [${now}]; 3 s later: [${await seen()}])`);
    }
    model.openRedemption(plc, chain, { id: opened.id, tokenId: plc.tokenId, bearer, issuer: plc.issuer.pubkey, amountMinor: plc.amountMinor, feeMinor: BigInt(opened.fee_minor), pixKey: model.wallet(bearer)?.pixKey ?? '', state: 'PENDING_PAYMENT', bank: null });
    return;
  }
  real.judge(`redeem ${plc.tokenId} (${what}, ${chain.transferChain.length} hops, by ${bearer.slice(0, 16)})`, model, expected, answer);
  if (answer.status !== 200) return;
  if (plc.inFlight !== null) await real.bookReopened(model, plc, 'redeem');
  const body = answer.json as { redemption_id: string; status: string; amount: string; fee: string; bearer_pubkey: string; token_id: string };
  if (body.token_id !== plc.tokenId || body.bearer_pubkey !== bearer || body.amount !== amountText(plc.amountMinor) || body.fee !== '0.00') {
    real.fail(`redeem ${plc.tokenId} answered ${describe(answer)}; the model: amount ${amountText(plc.amountMinor)}, fee 0.00 (Pix), bearer ${bearer}`);
  }
  const known = model.redemption(body.redemption_id);
  if (known !== undefined) {
    real.fail(`redeem ${plc.tokenId} answered the redemption ${body.redemption_id} again, which the model already has`);
  }
  if (body.status !== 'PENDING_PAYMENT') real.fail(`redeem ${plc.tokenId} answered status ${body.status}, the model PENDING_PAYMENT`);
  const wallet = model.wallet(bearer);
  model.openRedemption(plc, chain, {
    id: body.redemption_id,
    tokenId: plc.tokenId,
    bearer,
    issuer: plc.issuer.pubkey,
    amountMinor: plc.amountMinor,
    feeMinor: minor(body.fee),
    pixKey: wallet?.pixKey ?? '',
    state: 'PENDING_PAYMENT',
    bank: null,
  });
}

// -------------------------------------------------------------------------------------------------
// The generator: operations weighted as actors act, faults a small share
// -------------------------------------------------------------------------------------------------

const index = fc.nat({ max: 1000 });
const route = fc.constantFrom<Route>('redeem', 'settlements');

export function commandArbitraries(options: { faults: boolean }): fc.Arbitrary<fc.AsyncCommand<Model, Real>>[] {
  const command = (arb: fc.Arbitrary<Op>, weight: number) => Array.from({ length: weight }, () => arb.map((op) => new SimCommand(op)));
  return [
    // Issuers.
    ...command(fc.record({ kind: fc.constant('fund' as const), issuer: index }), 1),
    ...command(fc.record({ kind: fc.constant('issue' as const), issuer: index, amount: fc.integer({ min: 100, max: 5_000 }) }), 4),
    // Honest holders: hop offline, register, redeem.
    ...command(fc.record({ kind: fc.constant('hop' as const), plc: index, copy: index, to: index, hostile: fc.constant(false) }), 5),
    ...command(fc.record({ kind: fc.constant('register' as const), plc: index, copy: index }), 2),
    ...command(fc.record({ kind: fc.constant('redeem' as const), plc: index, copy: index, route, key: fc.boolean(), stale: fc.constant(false) }), 6),
    // Hostile holders and clients.
    ...command(fc.record({ kind: fc.constant('hop' as const), plc: index, copy: index, to: index, hostile: fc.constant(true) }), 1),
    ...command(fc.record({ kind: fc.constant('redeem' as const), plc: index, copy: index, route, key: fc.boolean(), stale: fc.constant(true) }), 1),
    ...command(fc.record({ kind: fc.constant('redeemTwice' as const), plc: index, copyA: index, copyB: index, routeA: route, routeB: route }), 1),
    ...command(fc.record({ kind: fc.constant('lostAnswer' as const), plc: index, copy: index, abortMs: fc.integer({ min: 1, max: 80 }) }), 1),
    // Strangers with public data only.
    ...command(fc.record({ kind: fc.constant('stranger' as const), plc: index, route: fc.constantFrom<Route | 'transfer'>('redeem', 'settlements', 'transfer') }), 1),
    ...command(fc.record({ kind: fc.constant('steal' as const), plc: index }), 1),
    // Cheating issuers.
    ...command(fc.record({ kind: fc.constant('doubleIssue' as const), plc: index }), 1),
    ...command(fc.record({ kind: fc.constant('cancel' as const), plc: index }), 1),
    // The gateway, good and bad; the bank.
    ...command(fc.record({ kind: fc.constant('bank' as const), redemption: index, ok: fc.integer({ min: 0, max: 9 }).map((n) => n < 8) }), 8),
    ...command(fc.record({ kind: fc.constant('forge' as const), redemption: index, event: fc.constantFrom('TRANSFER_DONE' as const, 'TRANSFER_FAILED' as const) }), 1),
    ...command(fc.record({ kind: fc.constant('gatewayMood' as const), mood: fc.nat({ max: 4 }) }), 1),
    ...command(fc.record({ kind: fc.constant('rogue' as const), redemption: index }), 1),
    // Operators.
    ...command(fc.record({ kind: fc.constant('audit' as const) }), 1),
    ...command(fc.record({ kind: fc.constant('retry' as const), redemption: index }), 1),
    // Faults.
    ...(options.faults ? [fc.record({ kind: fc.constant('fault' as const), fault: fc.constantFrom(...faultKinds), ms: fc.integer({ min: 300, max: 2_500 }) }).map((op) => new SimCommand(op))] : []),
  ];
}

/** A run's setup: two funded issuers. */
export async function setupRun(model: Model, real: Real): Promise<void> {
  // Each run starts with a well-behaved gateway, whatever a run before it (failed midway, say) left.
  await real.world.setMood({});
  for (let i = 0; i < 2; i += 1) {
    const issuer = newWallet();
    await real.world.deposit(issuer.pubkey, 100_000n);
    model.data.issuers.push(issuer);
    model.deposit(issuer.pubkey, 100_000n);
  }
}
