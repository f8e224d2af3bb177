/**
 * The signed blocklist's format (docs/protocol.md section 18): the committed vectors
 * (test/src/protocol/vectors/blocklist-v1.json) are exactly what the generator makes from the current
 * code, and each one checks out against the library as an implementer in another language would
 * use it: the canonical bytes, the signature, the refusals, the lookups.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { blocklistVectorsPath, buildBlocklistVectors } from '../../../scripts/gen-blocklist-vectors.ts';
import {
  blocklistToJson,
  bytesToHex,
  canonicalKeyOrder,
  developmentBlocklistPublicKey,
  developmentBlocklistSeed,
  encodeBlocklist,
  generateKeyPair,
  hexToBytes,
  isBlocked,
  publicKeyOf,
  signBlocklist,
  verifyBlocklistJson,
  verifySignature,
} from '../../../src/protocol/index.ts';

const committed = JSON.parse(readFileSync(blocklistVectorsPath, 'utf8')) as ReturnType<typeof buildBlocklistVectors>;
const serviceKey = hexToBytes(committed.service_key.public_key, 32);

describe('blocklist vectors (svc:blocklist:v1)', () => {
  it('the committed file is what the generator makes from the current code', () => {
    expect(buildBlocklistVectors()).toEqual(committed);
  });

  it('the service key and the development key are their seeds\' public halves', () => {
    expect(bytesToHex(publicKeyOf(hexToBytes(committed.service_key.seed, 32)))).toBe(committed.service_key.public_key);
    expect(committed.development_key.seed).toBe(bytesToHex(developmentBlocklistSeed));
    expect(committed.development_key.public_key).toBe(bytesToHex(developmentBlocklistPublicKey));
  });

  it.each(committed.lists.map((vector) => [vector.name, vector] as const))('%s: canonical bytes rebuilt by hand, the signature verifies', (_name, vector) => {
    const { json } = vector;
    // The layout of section 18, written out independently of encodeBlocklist.
    const tag = Buffer.from('svc:blocklist:v1\0', 'ascii');
    const header = Buffer.alloc(20);
    header.writeBigUInt64BE(BigInt(json.version), 0);
    header.writeBigUInt64BE(BigInt(json.published_at_ms), 8);
    header.writeUInt32BE(json.keys.length, 16);
    const bytes = Buffer.concat([tag, header, ...json.keys.map((key) => Buffer.from(key, 'hex'))]);
    expect(bytes.toString('hex')).toBe(vector.canonical_bytes);
    expect(verifySignature(hexToBytes(json.signature, 64), bytes, serviceKey)).toBe(true);
    const verified = verifyBlocklistJson(json, serviceKey);
    expect(verified.ok).toBe(true);
    if (verified.ok) expect(bytesToHex(encodeBlocklist(verified.list))).toBe(vector.canonical_bytes);
  });

  it.each(committed.invalid.map((vector) => [vector.name, vector] as const))('%s is refused for the documented reason', (_name, vector) => {
    const verified = verifyBlocklistJson(vector.json, serviceKey);
    expect(verified.ok ? { ok: true } : { ok: false, reason: verified.reason }).toEqual(vector.expected);
  });

  it.each(committed.lookups.map((vector) => [`${vector.list} ${vector.key.slice(0, 8)}`, vector] as const))('lookup %s', (_name, vector) => {
    const list = committed.lists.find((candidate) => candidate.name === vector.list);
    const verified = verifyBlocklistJson(list?.json, serviceKey);
    if (!verified.ok) throw new Error(verified.message);
    expect(isBlocked(verified.list, hexToBytes(vector.key, 32))).toBe(vector.blocked);
  });
});

describe('blocklist format rules', () => {
  const service = generateKeyPair();
  const keys = Array.from({ length: 40 }, () => generateKeyPair().publicKey);

  it('canonical order sorts bytewise and drops repeats; a lookup finds exactly the listed keys', () => {
    const ordered = canonicalKeyOrder([...keys, ...keys.slice(0, 5)]);
    expect(ordered).toHaveLength(40);
    const list = signBlocklist({ version: 2, publishedAtMs: 1, keys: ordered.slice(0, 20) }, service.secretKey);
    for (const key of ordered.slice(0, 20)) expect(isBlocked(list, key)).toBe(true);
    for (const key of ordered.slice(20)) expect(isBlocked(list, key)).toBe(false);
  });

  it('refuses to encode a list that is not canonical', () => {
    const ordered = canonicalKeyOrder(keys);
    expect(() => encodeBlocklist({ version: 1, publishedAtMs: 1, keys: [...ordered].reverse() })).toThrow(/strictly ascending/);
    expect(() => encodeBlocklist({ version: 0, publishedAtMs: 1, keys: [] })).toThrow(/version/);
    expect(() => encodeBlocklist({ version: 1, publishedAtMs: 1, keys: [new Uint8Array(31)] })).toThrow(/32 bytes/);
  });

  it('a list is only as good as the key the verifier trusts: the key it names is not enough', () => {
    const forged = blocklistToJson(signBlocklist({ version: 9, publishedAtMs: 5, keys: [] }, generateKeyPair().secretKey));
    const verified = verifyBlocklistJson(forged, service.publicKey);
    expect(verified.ok ? 'ok' : verified.reason).toBe('untrusted_key');
    expect(verifyBlocklistJson({ ...forged, extra: 1 }, service.publicKey)).toMatchObject({ ok: false, reason: 'malformed' });
    expect(verifyBlocklistJson('nonsense', service.publicKey)).toMatchObject({ ok: false, reason: 'malformed' });
  });
});

describe('docs/protocol.md section 18', () => {
  it('publishes the development and test-vector keys of the vectors file', () => {
    const doc = readFileSync(new URL('../../../docs/protocol.md', import.meta.url), 'utf8');
    const section = doc.slice(doc.indexOf('## 18. The blocklist'));
    expect(section).toContain(committed.development_key.public_key);
    expect(section).toContain(committed.service_key.public_key);
    expect(doc).toContain(committed.constants.domain_tag.hex);
  });
});
