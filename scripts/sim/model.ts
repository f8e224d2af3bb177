import { bytesToHex, generateKeyPair, type KeyPair, type Plc } from '../../src/protocol/index.ts';

/**
 * The simulation's reference model (issue 35; docs/reliability.md, "The simulation"): what the
 * service promises, kept in memory and updated by each step from what the protocol and the docs
 * say must happen, never from what the service answered (an answer is only *chosen* among the
 * outcomes the model allows where the docs leave the order of two refusals open, or where real
 * timing decides, as when an answer was lost).
 *
 * Per run: fresh keys (issuers, holders, strangers), so a run's model is independent of every
 * other run on the same stack. Balances are per owner and bucket (AVAILABLE, PENDING, PROMISED; the
 * simulation never holds money in HELD); each PLC's registered commitment, registered chain,
 * bearer and state, and every copy of its chain some key holds offline (a copy that is not the
 * registered chain's continuation is a fork waiting to be shown); each redemption's state and the
 * bank's decision about its payout; the fees; the blocked keys; the risk flags an event raised.
 */

export interface Wallet {
  keys: KeyPair;
  pubkey: string;
  /** The Pix key this wallet is paid at (an e-mail key derived from its public key). */
  pixKey: string;
}

export function newWallet(): Wallet {
  const keys = generateKeyPair();
  const pubkey = bytesToHex(keys.publicKey);
  return { keys, pubkey, pixKey: `${pubkey.slice(0, 32)}@sim.example` };
}

export type PlcState = 'ISSUED' | 'TRANSFERRED' | 'REDEEMED' | 'CANCELLED';

export interface ChainCopy {
  chain: Plc;
  /** The key at the copy's head (its bearer): the last recipient, or the issuer before any hop. */
  holder: Wallet;
}

export interface PlcModel {
  tokenId: string;
  issuer: Wallet;
  amountMinor: bigint;
  /** The PLC as issued (no hop). */
  plc: Plc;
  commitmentHash: string;
  /** The chain the service holds. */
  registered: Plc;
  state: PlcState;
  /** The redemption in flight, if any. */
  inFlight: string | null;
  /** Every chain some key holds offline, honest or not. */
  copies: ChainCopy[];
}

export type RedemptionState = 'PENDING_PAYMENT' | 'SETTLED' | 'FAILED';

export interface RedemptionModel {
  id: string;
  tokenId: string;
  bearer: string;
  issuer: string;
  amountMinor: bigint;
  feeMinor: bigint;
  pixKey: string;
  state: RedemptionState;
  /** What the bank did with its payout: null while undecided. */
  bank: 'DONE' | 'FAILED' | null;
}

export interface Buckets {
  available: bigint;
  pending: bigint;
  promised: bigint;
}

export interface ModelData {
  issuers: Wallet[];
  holders: Wallet[];
  plcs: PlcModel[];
  redemptions: RedemptionModel[];
  balances: Record<string, Buckets>;
  blocked: string[];
  /** Risk flags the model expects, as `<flag_type> <token_id>`. */
  flags: string[];
  feesMinor: bigint;
  /** Transfers made at the gateway by someone other than the service (must never be paid). */
  rogueTransfers: string[];
  /** How many PLCs every run issues at most (keeps a run's model small). */
}

export class Model {
  data: ModelData = { issuers: [], holders: [], plcs: [], redemptions: [], balances: {}, blocked: [], flags: [], feesMinor: 0n, rogueTransfers: [] };

  clone(): Model {
    const copy = new Model();
    copy.data = structuredClone(this.data);
    return copy;
  }

  buckets(owner: string): Buckets {
    let buckets = this.data.balances[owner];
    if (buckets === undefined) {
      buckets = { available: 0n, pending: 0n, promised: 0n };
      this.data.balances[owner] = buckets;
    }
    return buckets;
  }

  isBlocked(pubkey: string): boolean {
    return this.data.blocked.includes(pubkey);
  }

  block(pubkey: string): void {
    if (!this.isBlocked(pubkey)) this.data.blocked.push(pubkey);
  }

  flag(type: string, tokenId: string): void {
    const key = `${type} ${tokenId}`;
    if (!this.data.flags.includes(key)) this.data.flags.push(key);
  }

  plc(tokenId: string): PlcModel {
    const plc = this.data.plcs.find((p) => p.tokenId === tokenId);
    if (plc === undefined) throw new Error(`model: no PLC ${tokenId}`);
    return plc;
  }

  redemption(id: string): RedemptionModel | undefined {
    return this.data.redemptions.find((r) => r.id === id);
  }

  pendingRedemptions(): RedemptionModel[] {
    return this.data.redemptions.filter((r) => r.state === 'PENDING_PAYMENT');
  }

  wallet(pubkey: string): Wallet | undefined {
    return [...this.data.issuers, ...this.data.holders].find((w) => w.pubkey === pubkey);
  }

  /** Every key the registered chain ever named as bearer: the issuer and each recipient. */
  everHeld(plc: PlcModel): string[] {
    return [plc.issuer.pubkey, ...plc.registered.transferChain.map((record) => bytesToHex(record.recipientPublicKey))];
  }

  // ---------------------------------------------------------------------------------------------
  // Transitions (each as docs/plc.md and docs/settlement.md say)
  // ---------------------------------------------------------------------------------------------

  deposit(owner: string, amountMinor: bigint): void {
    this.buckets(owner).available += amountMinor;
  }

  issue(plc: PlcModel): void {
    const buckets = this.buckets(plc.issuer.pubkey);
    buckets.available -= plc.amountMinor;
    buckets.promised += plc.amountMinor;
    this.data.plcs.push(plc);
  }

  cancel(plc: PlcModel): void {
    const buckets = this.buckets(plc.issuer.pubkey);
    buckets.promised -= plc.amountMinor;
    buckets.available += plc.amountMinor;
    plc.state = 'CANCELLED';
  }

  register(plc: PlcModel, chain: Plc): void {
    if (chain.transferChain.length > plc.registered.transferChain.length) plc.registered = chain;
    if (plc.registered.transferChain.length > 0 && plc.state === 'ISSUED') plc.state = 'TRANSFERRED';
  }

  openRedemption(plc: PlcModel, chain: Plc, redemption: RedemptionModel): void {
    this.register(plc, chain);
    plc.inFlight = redemption.id;
    this.buckets(plc.issuer.pubkey).promised -= plc.amountMinor;
    this.buckets(redemption.bearer).pending += plc.amountMinor;
    this.data.redemptions.push(redemption);
  }

  settle(redemption: RedemptionModel): void {
    const plc = this.plc(redemption.tokenId);
    this.buckets(redemption.bearer).pending -= redemption.amountMinor;
    this.data.feesMinor += redemption.feeMinor;
    redemption.state = 'SETTLED';
    plc.state = 'REDEEMED';
    plc.inFlight = null;
  }

  fail(redemption: RedemptionModel): void {
    const plc = this.plc(redemption.tokenId);
    this.buckets(redemption.bearer).pending -= redemption.amountMinor;
    this.buckets(redemption.issuer).promised += redemption.amountMinor;
    redemption.state = 'FAILED';
    plc.inFlight = null;
  }
}

/** How a presented chain stands to the registered one. */
export type Relation =
  | { kind: 'foreign' }
  | { kind: 'double_issue' }
  | { kind: 'fork'; at: number; culprit: string }
  | { kind: 'behind' }
  | { kind: 'extends'; added: number; signers: string[] };

export function relate(plc: PlcModel, chain: Plc): Relation {
  if (bytesToHex(chain.commitmentHash) !== plc.commitmentHash) {
    return bytesToHex(chain.commitment.issuerPublicKey) === plc.issuer.pubkey ? { kind: 'double_issue' } : { kind: 'foreign' };
  }
  const registered = plc.registered.transferChain;
  const presented = chain.transferChain;
  for (let i = 0; i < Math.min(registered.length, presented.length); i += 1) {
    if (bytesToHex((registered[i] as Plc['transferChain'][number]).hash) !== bytesToHex((presented[i] as Plc['transferChain'][number]).hash)) {
      return { kind: 'fork', at: i, culprit: bytesToHex((presented[i] as Plc['transferChain'][number]).senderPublicKey) };
    }
  }
  if (presented.length < registered.length) return { kind: 'behind' };
  const added = presented.slice(registered.length);
  return { kind: 'extends', added: added.length, signers: added.map((record) => bytesToHex(record.senderPublicKey)) };
}

/** The bearer a chain names: its last recipient, or the issuer before any hop. */
export function bearerOf(chain: Plc): string {
  const last = chain.transferChain.at(-1);
  return bytesToHex(last === undefined ? chain.commitment.issuerPublicKey : last.recipientPublicKey);
}

/**
 * An expected outcome: success, or a refusal by one of `codes` (more than one where the docs leave
 * open which of two applicable refusals comes first). `effects` says what each code does to the
 * model (a block, a flag), applied once the service has answered.
 */
export interface Expectation {
  ok: boolean;
  codes: string[];
  /** Per refusal code, its effect on the model. */
  effects?: Record<string, (model: Model) => void>;
}

export function refuse(codes: string[], effects?: Record<string, (model: Model) => void>): Expectation {
  return { ok: false, codes, ...(effects === undefined ? {} : { effects }) };
}

/**
 * What showing `chain` does, on any route that takes a chain (redeem, settlements, transfer):
 * the commitment binding first (a stranger's commitment, the issuer's second commitment, a cancel
 * after a hop), then the fork check, then the blocked keys. Null: nothing refuses it so far (the
 * route's own checks come next).
 */
export function chainRefusal(model: Model, plc: PlcModel, chain: Plc): Expectation | null {
  const relation = relate(plc, chain);
  const issuer = plc.issuer.pubkey;
  if (relation.kind === 'foreign') return refuse(['PLC_MISMATCH']);
  if (relation.kind === 'double_issue') {
    return refuse(['PLC_MISMATCH'], {
      PLC_MISMATCH: (m) => {
        m.block(issuer);
        m.flag('ISSUER_DOUBLE_ISSUE', plc.tokenId);
      },
    });
  }
  if (plc.state === 'CANCELLED' && chain.transferChain.length > 0) {
    return refuse(['PLC_CANCELLED_AFTER_TRANSFER'], {
      PLC_CANCELLED_AFTER_TRANSFER: (m) => {
        m.block(issuer);
        m.flag('CANCEL_AFTER_TRANSFER', plc.tokenId);
      },
    });
  }
  if (relation.kind === 'fork') {
    return refuse(['DOUBLE_SPEND_DETECTED'], {
      DOUBLE_SPEND_DETECTED: (m) => {
        m.block(relation.culprit);
        m.flag('DOUBLE_SPEND_FORK', plc.tokenId);
      },
    });
  }
  return null;
}
