import { getIssueReceipt, keepIssueReceipt } from '../db/issue-receipts.ts';
import type { Pool } from '../db/pool.ts';
import { createPrivateKey, sign as nodeSign } from 'node:crypto';
import { z } from 'zod';
import {
  bytesToHex,
  canonicalReceiptKeyOrder,
  generateKeyPair,
  hexToBytes,
  receiptKeyJsonSchema,
  receiptKeysMax,
  receiptKeysProblem,
  computeCommitmentHash,
  encodeIssueReceipt,
  encodeIssueReceiptMessage,
  timestampMsMax,
  type KeyPair,
  type PlcCommitment,
  type ReceiptKey,
} from '../src/protocol/index.ts';
import { blocklistSigningKey } from './service-keys.ts';

/**
 * The service's issue receipts (docs/protocol.md section 19): signed once a create has reserved
 * the PLC's amount, with the receipt key (the blocklist's unless RECEIPT_SIGNING_SEED), kept (the first one for a PLC), and
 * handed out with the PLC wherever the service returns it.
 */
/** DER prefix of an Ed25519 PKCS#8 private key (RFC 8410): the 32-byte seed follows. */
const pkcs8Ed25519Prefix = Buffer.from('302e020100300506032b657004220420', 'hex');

export function createIssueReceipts(deps: { pool: Pool; signingKey: KeyPair; nowMs?: () => number }) {
  const nowMs = deps.nowMs ?? Date.now;
  const servicePubkey = bytesToHex(deps.signingKey.publicKey);
  // Signed with node:crypto (OpenSSL): Ed25519 is deterministic, so the bytes are the library's
  // (signIssueReceipt), in a fraction of the pure JavaScript's time on the create's path.
  const privateKey = createPrivateKey({ key: Buffer.concat([pkcs8Ed25519Prefix, deps.signingKey.secretKey]), format: 'der', type: 'pkcs8' });
  function sign(commitment: PlcCommitment, issuedAtMs: number): Uint8Array {
    const message = encodeIssueReceiptMessage(commitment, deps.signingKey.publicKey, issuedAtMs);
    const signature = new Uint8Array(nodeSign(null, message, privateKey));
    return encodeIssueReceipt({ servicePublicKey: deps.signingKey.publicKey, commitmentHash: computeCommitmentHash(commitment), issuedAtMs, signature });
  }
  return {
    /** The receipt bytes for `commitment` at `issuedAtMs`, not kept: the same as `signIssueReceipt`'s. */
    sign,
    servicePubkey,
    /**
     * The receipt of a PLC the service has registered (its create booked the reservation): the
     * one kept, or a new one signed now and kept. Call only after the registration succeeded.
     */
    async forRegistered(commitment: PlcCommitment): Promise<string> {
      const issuedAtMs = nowMs();
      const receipt = bytesToHex(sign(commitment, issuedAtMs));
      return keepIssueReceipt(deps.pool, { tokenId: commitment.tokenId, receipt, servicePubkey, issuedAt: new Date(issuedAtMs) });
    },
    /** The receipt kept for a PLC, or null. */
    kept(tokenId: string): Promise<string | null> {
      return getIssueReceipt(deps.pool, tokenId);
    },
  };
}

export type IssueReceipts = ReturnType<typeof createIssueReceipts>;

/** The key that signs issue receipts: RECEIPT_SIGNING_SEED, else the blocklist's key (docs/protocol.md 19.4). */
export function receiptSigningKey(config: ReceiptConfig): KeyPair {
  return config.RECEIPT_SIGNING_SEED === undefined ? blocklistSigningKey(config) : generateKeyPair(hexToBytes(config.RECEIPT_SIGNING_SEED, 32));
}

export interface ReceiptConfig {
  BLOCKLIST_SIGNING_SEED?: string | undefined;
  RECEIPT_SIGNING_SEED?: string | undefined;
  RECEIPT_KEY_VALID_FROM_MS?: number | undefined;
  RECEIPT_KEYS_RETIRED?: readonly { pubkey: string; validFromMs: number; validUntilMs: number }[] | undefined;
}

/**
 * The receipt keys the signed blocklist publishes (format v2), in canonical order: the key that
 * signs receipts now, from RECEIPT_KEY_VALID_FROM_MS (0) on, and the retired keys still trusted
 * for the receipts they made in their periods. A key left out is revoked (docs/protocol.md 19.4).
 * Throws when they are not a valid set (a retired key that is the current one, too many keys).
 */
export function publishedReceiptKeys(config: ReceiptConfig): ReceiptKey[] {
  const current = receiptSigningKey(config).publicKey;
  const keys = canonicalReceiptKeyOrder([
    { publicKey: current, validFromMs: config.RECEIPT_KEY_VALID_FROM_MS ?? 0, validUntilMs: timestampMsMax },
    ...(config.RECEIPT_KEYS_RETIRED ?? []).map((entry) => ({ publicKey: hexToBytes(entry.pubkey, 32), validFromMs: entry.validFromMs, validUntilMs: entry.validUntilMs })),
  ]);
  const problem = receiptKeysProblem(keys);
  if (problem !== null) throw new Error(`RECEIPT_KEYS_RETIRED: ${problem} (a retired key must not be the current receipt key)`);
  return keys;
}

/** The receipt keys as the list's state records them: canonical JSON, one spelling per set. */
export function receiptKeysText(keys: readonly ReceiptKey[]): string {
  return JSON.stringify(keys.map((key) => ({ pubkey: bytesToHex(key.publicKey), valid_from_ms: key.validFromMs, valid_until_ms: key.validUntilMs })));
}

const receiptKeysTextSchema = z.array(receiptKeyJsonSchema).max(receiptKeysMax);

/** The receipt keys a list state recorded, or undefined ('' : none published yet). */
export function receiptKeysFromText(text: string): ReceiptKey[] | undefined {
  if (text === '') return undefined;
  return receiptKeysTextSchema
    .parse(JSON.parse(text))
    .map((entry) => ({ publicKey: hexToBytes(entry.pubkey, 32), validFromMs: entry.valid_from_ms, validUntilMs: entry.valid_until_ms }));
}
