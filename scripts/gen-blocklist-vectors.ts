/**
 * Writes test/src/protocol/vectors/blocklist-v1.json: the signed blocklist's test vectors
 * (docs/protocol.md section 18), from fixed seeds like the protocol's own vectors (section 14), so
 * every run gives the same bytes.
 *
 *   npx node scripts/gen-blocklist-vectors.ts
 *
 * test/src/protocol/blocklist.test.ts rebuilds them in memory and compares them with the committed
 * file, then checks each one against the library.
 */
import { writeFileSync } from 'node:fs';
import {
  blocklistDomainTag,
  blocklistFormat,
  blocklistToJson,
  bytesToHex,
  canonicalKeyOrder,
  developmentBlocklistPublicKey,
  developmentBlocklistSeed,
  encodeBlocklist,
  signBlocklist,
  type SignedBlocklistJson,
} from '../src/protocol/index.ts';
import { vectorKey } from './gen-protocol-vectors.ts';

export const blocklistVectorsPath = new URL('../test/src/protocol/vectors/blocklist-v1.json', import.meta.url);

/** 2026-11-24T12:00:00.000Z: when the vectors' versions were "published". */
const publishedAtMs = Date.UTC(2026, 10, 24, 12, 0, 0, 0);

type Expected = { ok: true } | { ok: false; reason: 'malformed' | 'untrusted_key' | 'bad_signature' };

export function buildBlocklistVectors() {
  const service = vectorKey('blocklist-service');
  const [alice, bob, carol, dave] = (['alice', 'bob', 'carol', 'dave'] as const).map((name) => vectorKey(name));
  if (alice === undefined || bob === undefined || carol === undefined || dave === undefined) throw new Error('missing vector key');
  const blockedKeys = canonicalKeyOrder([carol.publicKey, alice.publicKey, bob.publicKey]);
  const lists = [
    { name: 'empty', list: { version: 1, publishedAtMs, keys: [] } },
    { name: 'three_keys', list: { version: 4, publishedAtMs: publishedAtMs + 60_000, keys: blockedKeys } },
    // bob's entry lifted: the next version, without bob.
    { name: 'after_lift', list: { version: 5, publishedAtMs: publishedAtMs + 120_000, keys: canonicalKeyOrder([alice.publicKey, carol.publicKey]) } },
  ].map(({ name, list }) => {
    const signed = signBlocklist(list, service.secretKey);
    return { name, canonical_bytes: bytesToHex(encodeBlocklist(list)), json: blocklistToJson(signed) };
  });
  const good = (lists[1] as (typeof lists)[number]).json;
  const flip = (hex: string, at: number) => hex.slice(0, at) + (hex[at] === '0' ? '1' : '0') + hex.slice(at + 1);
  const invalid: { name: string; json: SignedBlocklistJson; expected: Expected }[] = [
    { name: 'signature_bit_flipped', json: { ...good, signature: flip(good.signature, 10) }, expected: { ok: false, reason: 'bad_signature' } },
    { name: 'version_changed', json: { ...good, version: good.version + 1 }, expected: { ok: false, reason: 'bad_signature' } },
    { name: 'key_dropped', json: { ...good, keys: good.keys.slice(1) }, expected: { ok: false, reason: 'bad_signature' } },
    { name: 'keys_out_of_order', json: { ...good, keys: [...good.keys].reverse() }, expected: { ok: false, reason: 'malformed' } },
    { name: 'key_twice', json: { ...good, keys: [good.keys[0] as string, ...good.keys] }, expected: { ok: false, reason: 'malformed' } },
    { name: 'version_zero', json: { ...good, version: 0 }, expected: { ok: false, reason: 'malformed' } },
    {
      name: 'signed_by_another_key',
      json: blocklistToJson(signBlocklist({ version: 4, publishedAtMs: publishedAtMs + 60_000, keys: blockedKeys }, dave.secretKey)),
      expected: { ok: false, reason: 'untrusted_key' },
    },
  ];
  return {
    description: 'Signed blocklist test vectors, format svc:blocklist:v1 (docs/protocol.md section 18).',
    derivation: {
      service_seed: 'SHA-256(ASCII("svc:plc:test-vector:key:blocklist-service")), as the keys of protocol-v2.json (section 14)',
      listed_keys: 'the public keys of alice, bob and carol of protocol-v2.json',
      development_seed: 'SHA-256(ASCII("svc:blocklist:development-key")): the server\'s default when BLOCKLIST_SIGNING_SEED is unset; development only',
    },
    constants: {
      format: blocklistFormat,
      domain_tag: { ascii: `${blocklistFormat}\0`, hex: bytesToHex(blocklistDomainTag) },
    },
    service_key: { seed: bytesToHex(service.secretKey), public_key: bytesToHex(service.publicKey) },
    development_key: { seed: bytesToHex(developmentBlocklistSeed), public_key: bytesToHex(developmentBlocklistPublicKey) },
    lists,
    invalid,
    lookups: [
      { list: 'three_keys', key: bytesToHex(alice.publicKey), blocked: true },
      { list: 'three_keys', key: bytesToHex(dave.publicKey), blocked: false },
      { list: 'after_lift', key: bytesToHex(bob.publicKey), blocked: false },
      { list: 'after_lift', key: bytesToHex(carol.publicKey), blocked: true },
    ],
  };
}

if (import.meta.main) {
  writeFileSync(blocklistVectorsPath, `${JSON.stringify(buildBlocklistVectors(), null, 2)}\n`);
  console.log(`wrote ${blocklistVectorsPath.pathname}`);
}
