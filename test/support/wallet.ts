import { randomBytes, randomUUID } from 'node:crypto';
import { signLimitIncrease } from '../../src/limits/increase-request.ts';
import * as ed from '@noble/ed25519';
import { sha256, sha512 } from '@noble/hashes/sha2.js';
import {
  appendTransfer,
  bytesToHex,
  cancelAuthorizationToJson,
  encodeCommitment,
  computeRecordHash,
  concatBytes,
  createPlc,
  encodeTransferMessage,
  generateKeyPair,
  hexToBytes,
  plcToJson,
  sign,
  signCancel,
  smallOrderPointEncodings,
  type KeyPair,
  type Plc,
  type PlcJson,
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
  options: { amountMinor?: bigint; currency?: string; ttlHours?: number; createdAtMs?: number; tokenId?: string } = {},
): Plc {
  return createPlc({
    issuerSecretKey: issuer.keys.secretKey,
    amountMinor: options.amountMinor ?? 1000n,
    currency: options.currency ?? 'BRL',
    createdAtMs: options.createdAtMs ?? Date.now(),
    ttlHours: options.ttlHours ?? 24,
    tokenId: options.tokenId ?? randomUUID(),
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

/**
 * A key of mixed order: `[a]B + T` with T a point of order 8, and a signer for it that satisfies
 * the cofactored equation (`S = r + k a`), as a permissive verifier would accept. The protocol
 * refuses such keys wherever they appear (docs/protocol.md section 2).
 */
export function mixedOrderSigner(): { publicKey: Uint8Array; pubkey: string; sign: (message: Uint8Array) => Uint8Array } {
  const L = ed.Point.CURVE().n;
  const order8 = ed.Point.fromBytes(hexToBytes(smallOrderPointEncodings[4]!, 32), false);
  const leToBigint = (bytes: Uint8Array): bigint => bytes.reduceRight((acc, byte) => (acc << 8n) | BigInt(byte), 0n);
  const bigintToLe = (value: bigint): Uint8Array => Uint8Array.from({ length: 32 }, (_, i) => Number((value >> BigInt(8 * i)) & 0xffn));
  const a = (leToBigint(randomBytes(32)) % (L - 1n)) + 1n;
  const publicKey = ed.Point.BASE.multiply(a).add(order8).toBytes();
  return {
    publicKey,
    pubkey: bytesToHex(publicKey),
    sign: (message) => {
      const r = (leToBigint(randomBytes(32)) % (L - 1n)) + 1n;
      const rBytes = ed.Point.BASE.multiply(r).toBytes();
      const k = leToBigint(sha512(concatBytes(rBytes, publicKey, message))) % L;
      return concatBytes(rBytes, bigintToLe((r + k * a) % L));
    },
  };
}

/**
 * The JSON form of a PLC whose issuer key has a torsion component, signed so a cofactored verifier
 * accepts it (the library's own builders refuse such a key, so the JSON is patched by hand).
 */
export function issueByMixedOrderKey(options: { amountMinor?: bigint } = {}): { json: PlcJson; tokenId: string; issuer: ReturnType<typeof mixedOrderSigner> } {
  const issuer = mixedOrderSigner();
  const base = issue(newWallet(), options);
  // The canonical bytes with the key at its offset (42, docs/protocol.md 5.2): encodeCommitment
  // itself refuses the key.
  const bytes = encodeCommitment(base.commitment).slice();
  bytes.set(issuer.publicKey, 42);
  const commitmentHash = sha256(bytes);
  const json = {
    ...plcToJson(base),
    issuer_pubkey: issuer.pubkey,
    commitment_hash: bytesToHex(commitmentHash),
    signature: bytesToHex(issuer.sign(commitmentHash)),
  };
  return { json, tokenId: base.commitment.tokenId, issuer };
}

/** `plc` with one more record, to any 32-byte recipient key (no check of the key), signed by `from`. */
export function hopToRawKey(plc: Plc, from: TestWallet, recipientPublicKey: Uint8Array, timestampMs: number = Date.now()): Plc {
  const last = plc.transferChain.at(-1);
  const record = {
    senderPublicKey: from.keys.publicKey,
    recipientPublicKey,
    timestampMs,
    nonce: randomBytes(16),
    prevHash: last === undefined ? plc.commitmentHash : last.hash,
  };
  const signature = sign(encodeTransferMessage(record), from.keys.secretKey);
  return { ...plc, transferChain: [...plc.transferChain, { ...record, signature, hash: computeRecordHash(record) }] };
}

/**
 * A limit increase request body signed by `owner` (docs/limits-and-fees.md, "Increase requests"):
 * the amounts are decimals of 2 places, signed as minor units. `signer` signs instead of the owner
 * (a stranger's attempt); `operationTimestampMs` defaults to now.
 */
export function limitIncreaseBody(
  owner: TestWallet,
  request: { device_id: string; requested_max_amount: string; requested_daily_limit: string; reason: string; owner_id?: string },
  options: { signer?: TestWallet; operationTimestampMs?: number } = {},
): Record<string, unknown> {
  const operationTimestampMs = options.operationTimestampMs ?? Date.now();
  const minor = (amount: string) => (/^\d+\.\d{2}$/.test(amount) ? BigInt(amount.replace('.', '')) : null);
  const maxMinor = minor(request.requested_max_amount);
  const dailyMinor = minor(request.requested_daily_limit);
  // An amount the server refuses before it looks at the signature: any signature of the right form.
  if (maxMinor === null || dailyMinor === null || maxMinor === 0n || dailyMinor === 0n) {
    return { ...request, operation_timestamp: operationTimestampMs, device_signature: '0'.repeat(128) };
  }
  const signed = signLimitIncrease(
    { requestedMaxAmountMinor: maxMinor, requestedDailyLimitMinor: dailyMinor, operationTimestampMs, deviceId: request.device_id },
    (options.signer ?? owner).keys.secretKey,
  );
  return { ...request, operation_timestamp: operationTimestampMs, device_signature: bytesToHex(signed.signature) };
}
