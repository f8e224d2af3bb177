import { createPrivateKey, createPublicKey, randomBytes, randomUUID, sign, type KeyObject } from 'node:crypto';
import {
  bytesToHex,
  chainHeadHash,
  computeCommitmentHash,
  computeRecordHash,
  encodeTransferMessage,
  protocolVersion,
  type Plc,
  type PlcCommitment,
  type TransferRecord,
} from '../../src/protocol/index.ts';

/**
 * Benchmark fixtures: wallets, PLCs and hops built from the protocol library's encoders but
 * signed with node:crypto, so that thousands of them are ready in a second or two. Ed25519
 * signing is deterministic, so these are exactly the bytes @noble/ed25519 would produce; the
 * benchmark checks a sample with `verifyPlc` before using them.
 */

const pkcs8Prefix = Buffer.from('302e020100300506032b657004220420', 'hex');

export interface BenchWallet {
  readonly publicKey: Uint8Array;
  readonly pubkey: string;
  readonly privateKey: KeyObject;
}

export function newWallet(): BenchWallet {
  const privateKey = createPrivateKey({ key: Buffer.concat([pkcs8Prefix, randomBytes(32)]), format: 'der', type: 'pkcs8' });
  const spki = createPublicKey(privateKey).export({ format: 'der', type: 'spki' });
  const publicKey = Uint8Array.from(spki.subarray(spki.length - 32));
  return { publicKey, pubkey: bytesToHex(publicKey), privateKey };
}

export function signWith(wallet: BenchWallet, message: Uint8Array): Uint8Array {
  return Uint8Array.from(sign(null, message, wallet.privateKey));
}

/** A fresh issuer-signed PLC with an empty chain, like `createPlc` (24 h life by default). */
export function issue(issuer: BenchWallet, options: { amountMinor: bigint; createdAtMs: number; ttlHours?: number }): Plc {
  const commitment: PlcCommitment = {
    version: protocolVersion,
    tokenId: randomUUID(),
    issuerPublicKey: issuer.publicKey,
    amountMinor: options.amountMinor,
    currency: 'BRL',
    createdAtMs: options.createdAtMs,
    expiresAtMs: options.createdAtMs + (options.ttlHours ?? 24) * 3_600_000,
    nonce: Uint8Array.from(randomBytes(16)),
  };
  const commitmentHash = computeCommitmentHash(commitment);
  return { commitment, commitmentHash, issuerSignature: signWith(issuer, commitmentHash), transferChain: [] };
}

/** The PLC with one more record, from its bearer `from` to `to`, like `appendTransfer`. */
export function hop(plc: Plc, from: BenchWallet, to: BenchWallet, timestampMs: number): Plc {
  const content = {
    recipientPublicKey: to.publicKey,
    timestampMs,
    nonce: Uint8Array.from(randomBytes(16)),
    prevHash: chainHeadHash(plc),
  };
  const unsigned = { senderPublicKey: from.publicKey, ...content };
  const record: TransferRecord = { ...unsigned, signature: signWith(from, encodeTransferMessage(content)), hash: computeRecordHash(unsigned) };
  return { ...plc, transferChain: [...plc.transferChain, record] };
}

/**
 * A PLC passed along `hops` holders drawn from `wallets` (never to the current holder), one second
 * apart from `createdAtMs`. Returns every intermediate state: `states[j]` has j records.
 */
export function chainStates(issuer: BenchWallet, wallets: readonly BenchWallet[], hops: number, createdAtMs: number, amountMinor = 100n): Plc[] {
  const states = [issue(issuer, { amountMinor, createdAtMs })];
  let holder = issuer;
  for (let j = 1; j <= hops; j += 1) {
    let next = wallets[Math.floor(Math.random() * wallets.length)] as BenchWallet;
    for (let attempt = 0; next === holder && attempt < 100; attempt += 1) {
      next = wallets[Math.floor(Math.random() * wallets.length)] as BenchWallet;
    }
    if (next === holder) throw new Error('need at least two wallets');
    states.push(hop(states[j - 1] as Plc, holder, next, createdAtMs + j * 1000));
    holder = next;
  }
  return states;
}
