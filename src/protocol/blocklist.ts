/**
 * The signed blocklist (docs/protocol.md section 18): the public keys the service has blocked
 * because a fork proved that they spent one PLC state twice (section 8). The service publishes
 * the complete list, versioned and signed with its blocklist key, so that a wallet offline can
 * refuse a PLC that a blocked key issued or signed a hop of.
 *
 * Canonical bytes (what the service signs):
 *
 *   ASCII("svc:blocklist:v1\0") | u64(version) | u64(published_at_ms) | u32(count) | key_1 | ... | key_count
 *
 * with every key 32 bytes, in strictly ascending byte order (so no key twice). Format v2 adds the
 * keys the service signs issue receipts with (receipt.ts), each with its validity period, so that
 * a wallet learns a rotation and a revocation at its next refresh (docs/protocol.md 19.4):
 *
 *   ASCII("svc:blocklist:v2\0") | u64(version) | u64(published_at_ms) | u32(count) | key_1 | ... | key_count
 *     | u32(receipt_count) | (receipt_key | u64(valid_from_ms) | u64(valid_until_ms)) x receipt_count
 *
 * receipt keys strictly ascending too. A list without receipt keys is written in v1, unchanged.
 * Pure and isomorphic, like the rest of src/protocol.
 */
import { sha256 } from '@noble/hashes/sha2.js';
import { z } from 'zod';
import { bytesEqual, bytesToHex, concatBytes, hexToBytes, isTimestampMs, u64be } from './bytes.ts';
import { publicKeyBytes, signatureBytes } from './constants.ts';
import { sign, verifySignature, publicKeyOf } from './keys.ts';
import { receiptKeysMax, receiptKeysProblem, type ReceiptKey } from './receipt.ts';

export const blocklistFormat = 'svc:blocklist:v1';
/** The domain tag the canonical bytes start with: the format name and a NUL byte (17 bytes). */
export const blocklistDomainTag = new TextEncoder().encode(`${blocklistFormat}\0`);
/** Format v2: v1 and the receipt keys with their validity periods. */
export const blocklistFormatV2 = 'svc:blocklist:v2';
export const blocklistDomainTagV2 = new TextEncoder().encode(`${blocklistFormatV2}\0`);
/** Most keys a list of this format carries (3.2 MB of keys): bounds what a wallet downloads and verifies. */
export const blocklistKeysMax = 100_000;
/**
 * The development service key's seed: SHA-256(ASCII("svc:blocklist:development-key")). Public, so
 * for development and tests only: the server uses it when BLOCKLIST_SIGNING_SEED is unset and
 * refuses to start with it in production; the wallet trusts its public half until told another
 * (`wallet config --blocklist-key`).
 */
export const developmentBlocklistSeed: Uint8Array = sha256(new TextEncoder().encode('svc:blocklist:development-key'));
export const developmentBlocklistPublicKey: Uint8Array = publicKeyOf(developmentBlocklistSeed);

/** Largest version: an exact integer in every JSON reader. */
export const blocklistVersionMax = Number.MAX_SAFE_INTEGER;

export interface Blocklist {
  /** Grows by one at every change (a key blocked, an entry lifted); starts at 1, empty. */
  readonly version: number;
  /** When this version was made (ms since the epoch): the same version always has the same bytes. */
  readonly publishedAtMs: number;
  /** Blocked public keys, strictly ascending bytewise. */
  readonly keys: readonly Uint8Array[];
  /**
   * The keys trusted for issue receipts, strictly ascending, each with its validity period
   * (format v2); undefined in a v1 list. A key left out is no longer trusted.
   */
  readonly receiptKeys?: readonly ReceiptKey[] | undefined;
}

export interface SignedBlocklist extends Blocklist {
  readonly servicePublicKey: Uint8Array;
  readonly signature: Uint8Array;
}

const hex64 = z.string().regex(/^[0-9a-f]{64}$/, 'a 32-byte key in lowercase hex');

const instantMs = z.number().int().min(0).refine(isTimestampMs, 'an instant in ms since the epoch');
const listFields = {
  version: z.number().int().min(1).max(blocklistVersionMax),
  published_at_ms: instantMs,
  keys: z.array(hex64).max(blocklistKeysMax),
  service_pubkey: hex64,
  signature: z.string().regex(/^[0-9a-f]{128}$/, 'a 64-byte signature in lowercase hex'),
};
export const receiptKeyJsonSchema = z
  .strictObject({ pubkey: hex64, valid_from_ms: instantMs, valid_until_ms: instantMs })
  .describe('a key trusted for issue receipts issued from valid_from_ms to valid_until_ms, both inclusive (docs/protocol.md 19.4)');

/** The JSON form served at `GET /api/v1/blocklist` and kept by the wallet: v1, or v2 with the receipt keys. */
export const signedBlocklistJsonSchema = z
  .discriminatedUnion('format', [
    z.strictObject({ format: z.literal(blocklistFormat), ...listFields }),
    z.strictObject({ format: z.literal(blocklistFormatV2), ...listFields, receipt_keys: z.array(receiptKeyJsonSchema).max(receiptKeysMax) }),
  ])
  .describe(
    'The signed blocklist (docs/protocol.md section 18): every key blocked at this version, and (format v2) the keys trusted for issue receipts with their validity periods (section 19), signed by the service',
  );
export type SignedBlocklistJson = z.infer<typeof signedBlocklistJsonSchema>;

function u32be(value: number): Uint8Array {
  if (!Number.isInteger(value) || value < 0 || value > 0xffff_ffff) throw new RangeError(`u32 out of range: ${value}`);
  return Uint8Array.of(value >>> 24, (value >>> 16) & 0xff, (value >>> 8) & 0xff, value & 0xff);
}

/** Orders keys bytewise (the canonical order) and drops repeats. */
export function canonicalKeyOrder(keys: readonly Uint8Array[]): Uint8Array[] {
  const sorted = [...keys].sort(compareBytes);
  return sorted.filter((key, index) => index === 0 || compareBytes(sorted[index - 1] as Uint8Array, key) !== 0);
}

function compareBytes(a: Uint8Array, b: Uint8Array): number {
  const length = Math.min(a.length, b.length);
  for (let i = 0; i < length; i += 1) {
    const diff = (a[i] as number) - (b[i] as number);
    if (diff !== 0) return diff;
  }
  return a.length - b.length;
}

/** Why a list is not well formed; null when it is. */
export function blocklistProblem(list: Blocklist): string | null {
  if (!Number.isSafeInteger(list.version) || list.version < 1) return 'version must be an integer from 1';
  if (!isTimestampMs(list.publishedAtMs)) return 'published_at_ms must be an instant in ms';
  if (list.keys.length > blocklistKeysMax) return `at most ${blocklistKeysMax} keys`;
  for (let i = 0; i < list.keys.length; i += 1) {
    const key = list.keys[i] as Uint8Array;
    if (key.length !== publicKeyBytes) return `key ${i} is not ${publicKeyBytes} bytes`;
    if (i > 0 && compareBytes(list.keys[i - 1] as Uint8Array, key) >= 0) return `keys must be strictly ascending (key ${i})`;
  }
  return list.receiptKeys === undefined ? null : receiptKeysProblem(list.receiptKeys);
}

/** The bytes the service signs. Throws on a list that is not well formed. */
export function encodeBlocklist(list: Blocklist): Uint8Array {
  const problem = blocklistProblem(list);
  if (problem !== null) throw new RangeError(`not a canonical blocklist: ${problem}`);
  const head = [u64be(list.version), u64be(list.publishedAtMs), u32be(list.keys.length), ...list.keys];
  if (list.receiptKeys === undefined) return concatBytes(blocklistDomainTag, ...head);
  const receiptEntries = list.receiptKeys.flatMap((entry) => [entry.publicKey, u64be(entry.validFromMs), u64be(entry.validUntilMs)]);
  return concatBytes(blocklistDomainTagV2, ...head, u32be(list.receiptKeys.length), ...receiptEntries);
}

/** Orders receipt keys bytewise by key (the canonical order). */
export function canonicalReceiptKeyOrder(keys: readonly ReceiptKey[]): ReceiptKey[] {
  return [...keys].sort((a, b) => compareBytes(a.publicKey, b.publicKey));
}

export function signBlocklist(list: Blocklist, serviceSecretKey: Uint8Array): SignedBlocklist {
  const keys = [...list.keys];
  const receiptKeys = list.receiptKeys === undefined ? undefined : [...list.receiptKeys];
  const signature = sign(encodeBlocklist({ ...list, keys, receiptKeys }), serviceSecretKey);
  const signed = { version: list.version, publishedAtMs: list.publishedAtMs, keys, servicePublicKey: publicKeyOf(serviceSecretKey), signature };
  return receiptKeys === undefined ? signed : { ...signed, receiptKeys };
}

export function blocklistToJson(list: SignedBlocklist): SignedBlocklistJson {
  const fields = {
    version: list.version,
    published_at_ms: list.publishedAtMs,
    keys: list.keys.map(bytesToHex),
    service_pubkey: bytesToHex(list.servicePublicKey),
    signature: bytesToHex(list.signature),
  };
  if (list.receiptKeys === undefined) return { format: blocklistFormat, ...fields };
  return {
    format: blocklistFormatV2,
    ...fields,
    receipt_keys: list.receiptKeys.map((entry) => ({ pubkey: bytesToHex(entry.publicKey), valid_from_ms: entry.validFromMs, valid_until_ms: entry.validUntilMs })),
  };
}

export type BlocklistVerification =
  | { readonly ok: true; readonly list: SignedBlocklist }
  | { readonly ok: false; readonly reason: 'malformed' | 'untrusted_key' | 'bad_signature'; readonly message: string };

/**
 * Checks a list in its JSON form against the service key the verifier trusts (never the key the
 * list names: anyone can sign a list with a key of their own). Well formed (the schema, keys
 * strictly ascending), signed by `trustedServiceKey`, and the signature verifies over the
 * canonical bytes.
 */
export function verifyBlocklistJson(json: unknown, trustedServiceKey: Uint8Array): BlocklistVerification {
  const parsed = signedBlocklistJsonSchema.safeParse(json);
  if (!parsed.success) return { ok: false, reason: 'malformed', message: parsed.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`).join('; ') };
  const body = parsed.data;
  const list: SignedBlocklist = {
    version: body.version,
    publishedAtMs: body.published_at_ms,
    keys: body.keys.map((key) => hexToBytes(key, publicKeyBytes)),
    servicePublicKey: hexToBytes(body.service_pubkey, publicKeyBytes),
    signature: hexToBytes(body.signature, signatureBytes),
    ...(body.format === blocklistFormatV2
      ? {
          receiptKeys: body.receipt_keys.map((entry) => ({
            publicKey: hexToBytes(entry.pubkey, publicKeyBytes),
            validFromMs: entry.valid_from_ms,
            validUntilMs: entry.valid_until_ms,
          })),
        }
      : {}),
  };
  const problem = blocklistProblem(list);
  if (problem !== null) return { ok: false, reason: 'malformed', message: problem };
  if (!bytesEqual(list.servicePublicKey, trustedServiceKey)) {
    return { ok: false, reason: 'untrusted_key', message: `signed by ${body.service_pubkey}, not by the trusted service key ${bytesToHex(trustedServiceKey)}` };
  }
  if (!verifySignature(list.signature, encodeBlocklist(list), trustedServiceKey)) {
    return { ok: false, reason: 'bad_signature', message: 'the signature does not verify over the canonical bytes' };
  }
  return { ok: true, list };
}

/** Whether `key` (32 bytes) is on the list: a binary search over the canonical order. */
export function isBlocked(list: Blocklist, key: Uint8Array): boolean {
  let low = 0;
  let high = list.keys.length - 1;
  while (low <= high) {
    const middle = (low + high) >>> 1;
    const order = compareBytes(list.keys[middle] as Uint8Array, key);
    if (order === 0) return true;
    if (order < 0) low = middle + 1;
    else high = middle - 1;
  }
  return false;
}
