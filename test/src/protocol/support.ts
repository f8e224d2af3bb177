/**
 * Shared fixtures for the protocol tests: a pool of deterministic keys and builders of valid
 * PLCs and chains, so each test states only what it changes.
 */
import fc from 'fast-check';
import { sha256 } from '@noble/hashes/sha2.js';
import {
  appendTransfer,
  concatBytes,
  createPlc,
  generateKeyPair,
  uuidV4FromBytes,
  type KeyPair,
  type Plc,
  type TransferRecord,
} from '../../../src/protocol/index.ts';
import { u64be } from '../../../src/protocol/bytes.ts';

const encoder = new TextEncoder();

export function seededBytes(label: string, length = 32): Uint8Array {
  return sha256(encoder.encode(`test:${label}`)).slice(0, length);
}

/** Six fixed keys; property tests pick holders among them. */
export const keyPool: readonly KeyPair[] = Array.from({ length: 6 }, (_, index) => generateKeyPair(seededBytes(`key:${index}`)));

export const [issuer, bob, carol, dave] = keyPool as [KeyPair, KeyPair, KeyPair, KeyPair, ...KeyPair[]];

export const createdAtMs = Date.UTC(2026, 10, 22, 10, 0, 0, 0);
export const hourMs = 3_600_000;

export function freshPlc(overrides: Partial<Parameters<typeof createPlc>[0]> = {}): Plc {
  return createPlc({
    issuerSecretKey: issuer.secretKey,
    amountMinor: 1234n,
    currency: 'BRL',
    createdAtMs,
    ttlHours: 24,
    tokenId: '4f0c2b1e-7d3a-4c5b-9e8f-0a1b2c3d4e5f',
    nonce: seededBytes('commitment-nonce', 16),
    ...overrides,
  });
}

/**
 * A PLC passed along `holders` (indexes into `keyPool`, starting after the issuer, who is
 * keyPool[0]); consecutive holders must differ. Records are a minute apart.
 */
export function chainThrough(holders: readonly number[], base: Plc = freshPlc()): Plc {
  let plc = base;
  let sender = 0;
  for (const [index, holder] of holders.entries()) {
    plc = appendTransfer(plc, {
      senderSecretKey: keyPool[sender]!.secretKey,
      recipientPublicKey: keyPool[holder]!.publicKey,
      timestampMs: createdAtMs + (index + 1) * 60_000,
      nonce: seededBytes(`transfer-nonce:${holders.slice(0, index + 1).join(',')}`, 16),
    });
    sender = holder;
  }
  return plc;
}

/** Holders for a chain of `length` hops: 1, 2, 1, 2, ... never a self-transfer. */
export function alternatingHolders(length: number): number[] {
  return Array.from({ length }, (_, index) => (index % 2 === 0 ? 1 : 2));
}

export const minuteMs = 60_000;

export interface ChainSpec {
  readonly issuer: number;
  readonly amountMinor: bigint;
  readonly currency: 'BRL' | 'USD' | 'EUR';
  readonly createdAtMs: number;
  readonly ttlHours: number;
  readonly salt: Uint8Array;
  readonly hops: readonly { readonly holder: number; readonly delayMs: number }[];
}

export const chainSpec = (hopsMax: number) =>
  fc.record({
    issuer: fc.integer({ min: 0, max: keyPool.length - 1 }),
    amountMinor: fc.bigInt({ min: 1n, max: 10n ** 15n }),
    currency: fc.constantFrom('BRL' as const, 'USD' as const, 'EUR' as const),
    createdAtMs: fc.integer({ min: Date.UTC(2020, 0, 1), max: Date.UTC(2035, 0, 1) }),
    ttlHours: fc.integer({ min: 1, max: 168 }),
    salt: fc.uint8Array({ minLength: 16, maxLength: 16 }),
    hops: fc.array(fc.record({ holder: fc.integer({ min: 0, max: keyPool.length - 1 }), delayMs: fc.integer({ min: 0, max: 3 * minuteMs }) }), {
      maxLength: hopsMax,
    }),
  });

export function nonceFor(salt: Uint8Array, label: string): Uint8Array {
  return sha256(concatBytes(salt, new TextEncoder().encode(label))).slice(0, 16);
}

/** Builds the chain a spec describes; a hop to the current holder goes to the next key instead. */
export function buildChain(spec: ChainSpec): { plc: Plc; holders: number[] } {
  let plc = createPlc({
    issuerSecretKey: keyPool[spec.issuer]!.secretKey,
    amountMinor: spec.amountMinor,
    currency: spec.currency,
    createdAtMs: spec.createdAtMs,
    ttlHours: spec.ttlHours,
    nonce: nonceFor(spec.salt, 'commitment'),
    tokenId: uuidV4FromBytes(nonceFor(spec.salt, 'token')),
  });
  let holder = spec.issuer;
  let timestampMs = spec.createdAtMs;
  const holders = [holder];
  for (const [index, hop] of spec.hops.entries()) {
    const next = hop.holder === holder ? (hop.holder + 1) % keyPool.length : hop.holder;
    timestampMs += hop.delayMs;
    plc = appendTransfer(plc, {
      senderSecretKey: keyPool[holder]!.secretKey,
      recipientPublicKey: keyPool[next]!.publicKey,
      timestampMs,
      nonce: nonceFor(spec.salt, `hop:${index}`),
    });
    holder = next;
    holders.push(holder);
  }
  return { plc, holders };
}


/** One byte string of a PLC that a test changes, and how to put a changed copy back. */
export interface PlcField {
  readonly name: string;
  readonly bytes: Uint8Array;
  readonly rebuild: (bytes: Uint8Array) => Plc;
}

/** A big-endian u64 (8 bytes) read back. */
export const readU64 = (bytes: Uint8Array): bigint => new DataView(bytes.buffer, bytes.byteOffset, 8).getBigUint64(0, false);

/**
 * The byte strings of each transfer record of `plc`, record by record: sender, recipient, the
 * timestamp (with `timestamp`), nonce, prev hash, signature and hash.
 */
export function recordFieldsOf(plc: Plc, options: { timestamp?: boolean } = {}): PlcField[] {
  return plc.transferChain.flatMap((record, index): PlcField[] => {
    const withRecord = (change: Partial<TransferRecord>): Plc => ({
      ...plc,
      transferChain: plc.transferChain.map((r, i) => (i === index ? { ...r, ...change } : r)),
    });
    return [
      { name: `record ${index} sender`, bytes: record.senderPublicKey, rebuild: (b) => withRecord({ senderPublicKey: b }) },
      { name: `record ${index} recipient`, bytes: record.recipientPublicKey, rebuild: (b) => withRecord({ recipientPublicKey: b }) },
      ...(options.timestamp === true
        ? [{ name: `record ${index} timestamp`, bytes: u64be(record.timestampMs), rebuild: (b: Uint8Array) => withRecord({ timestampMs: Number(readU64(b)) }) }]
        : []),
      { name: `record ${index} nonce`, bytes: record.nonce, rebuild: (b) => withRecord({ nonce: b }) },
      { name: `record ${index} prev hash`, bytes: record.prevHash, rebuild: (b) => withRecord({ prevHash: b }) },
      { name: `record ${index} signature`, bytes: record.signature, rebuild: (b) => withRecord({ signature: b }) },
      { name: `record ${index} hash`, bytes: record.hash, rebuild: (b) => withRecord({ hash: b }) },
    ];
  });
}
