import { randomUUID } from 'node:crypto';
import {
  appendTransfer,
  bytesToHex,
  cancelAuthorizationToJson,
  createPlc,
  generateKeyPair,
  plcToJson,
  signCancel,
  type KeyPair,
  type Plc,
} from '../../src/protocol/index.ts';

/** A test wallet: a key pair and the helpers a device would use, built on the protocol library. */
export interface TestWallet {
  keys: KeyPair;
  pubkey: string;
}

export function newWallet(): TestWallet {
  const keys = generateKeyPair();
  return { keys, pubkey: bytesToHex(keys.publicKey) };
}

export function issue(
  issuer: TestWallet,
  options: { amountMinor?: bigint; currency?: string; ttlHours?: number; createdAtMs?: number } = {},
): Plc {
  return createPlc({
    issuerSecretKey: issuer.keys.secretKey,
    amountMinor: options.amountMinor ?? 1000n,
    currency: options.currency ?? 'BRL',
    createdAtMs: options.createdAtMs ?? Date.now(),
    ttlHours: options.ttlHours ?? 24,
    tokenId: randomUUID(),
  });
}

export function hop(plc: Plc, from: TestWallet, to: TestWallet, timestampMs: number = Date.now()): Plc {
  return appendTransfer(plc, { senderSecretKey: from.keys.secretKey, recipientPublicKey: to.keys.publicKey, timestampMs });
}

export function cancelBody(plc: Plc, issuer: TestWallet, timestampMs: number = Date.now()) {
  return {
    authorization: cancelAuthorizationToJson(
      signCancel({ tokenId: plc.commitment.tokenId, commitmentHash: plc.commitmentHash, timestampMs }, issuer.keys.secretKey),
    ),
  };
}

export { plcToJson };
