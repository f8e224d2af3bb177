/**
 * Shared fixtures for the protocol tests: a pool of deterministic keys and builders of valid
 * PLCs and chains, so each test states only what it changes.
 */
import { sha256 } from '@noble/hashes/sha2.js';
import {
  appendTransfer,
  createPlc,
  generateKeyPair,
  type KeyPair,
  type Plc,
} from '../../src/protocol/index.ts';

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
