/**
 * The server verifies signatures over node:crypto (infra/ed25519-node.ts), wallets with the
 * protocol library's `verifySignature` (pure JavaScript over @noble/ed25519's arithmetic). Both
 * must give the same answer for every input, or a chain could be valid on one side and not on the
 * other; and whatever they accept, every mainstream verifier (libsodium, OpenSSL, @noble/ed25519
 * with either `zip215` setting) must accept too, or a payee's wallet could refuse offline what the
 * server honours. These properties compare them on valid signatures, single-bit changes, every
 * edge case of the rules (docs/protocol.md section 2) and the crafted cases of the test vectors,
 * then compare `verifyPlc` with either verifier on whole chains.
 */
import { createPublicKey, verify as opensslVerify } from 'node:crypto';
import * as ed from '@noble/ed25519';
import { sha512 } from '@noble/hashes/sha2.js';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createNodeEd25519Verifier, isCanonicalScalar, nodeVerifyEd25519 } from '../../../infra/ed25519-node.ts';
import {
  bytesToHex,
  computeRecordHash,
  concatBytes,
  encodeTransferMessage,
  generateKeyPair,
  hexToBytes,
  isValidPublicKey,
  sign,
  verifyPlc,
  verifySignature,
  type Plc,
  type TransferRecord,
} from '../../../src/protocol/index.ts';
import { readFileSync } from 'node:fs';
import { judge, loadLibsodium, verifierNames, buildCraftedCases, type CraftedCase } from '../../../scripts/ed25519-crafted-cases.ts';
import { vectorBytes, vectorsPath } from '../../../scripts/gen-protocol-vectors.ts';
import { smallOrderPointEncodings } from '../../../src/protocol/index.ts';
import { buildChain, chainSpec, keyPool, nonceFor, recordFieldsOf, type PlcField } from './support.ts';

const libsodium = await loadLibsodium();

/** Every verifier's answer; the service's two must agree, and where they accept all others must. */
function expectAllAcceptWhereServiceDoes(signature: Uint8Array, message: Uint8Array, publicKey: Uint8Array): void {
  const verdicts = judge(libsodium, bytesToHex(signature), bytesToHex(message), bytesToHex(publicKey));
  expect(verdicts.service_node, 'node:crypto verifier vs the library').toBe(verdicts.service);
  if (verdicts.service === 'accept') {
    for (const name of verifierNames) expect(verdicts[name], `${name} refuses what the service accepts`).toBe('accept');
  }
}

const nobleVerify = verifySignature;
const L = 2n ** 252n + 27742317777372353535851937790883648493n;
const p = 2n ** 255n - 19n;

const leToBigint = (bytes: Uint8Array): bigint => bytes.reduceRight((acc, byte) => (acc << 8n) | BigInt(byte), 0n);
function bigintToLe(value: bigint, length = 32): Uint8Array {
  const out = new Uint8Array(length);
  let rest = value;
  for (let i = 0; i < length; i++) {
    out[i] = Number(rest & 0xffn);
    rest >>= 8n;
  }
  return out;
}
const mod = (value: bigint, m: bigint): bigint => ((value % m) + m) % m;

/** What OpenSSL alone says, without the pre-checks and the confirmation (only for documenting). */
function opensslAlone(signature: Uint8Array, message: Uint8Array, publicKey: Uint8Array): boolean {
  try {
    const key = createPublicKey({ key: Buffer.concat([Buffer.from('302a300506032b6570032100', 'hex'), publicKey]), format: 'der', type: 'spki' });
    return opensslVerify(null, message, key, signature);
  } catch {
    return false;
  }
}

/** Both verifiers, a fresh small-cache instance and the shared one, must say `expected`. */
function expectAgreement(signature: Uint8Array, message: Uint8Array, publicKey: Uint8Array, expected?: boolean): boolean {
  const noble = nobleVerify(signature, message, publicKey);
  const node = nodeVerifyEd25519(signature, message, publicKey);
  const small = createNodeEd25519Verifier({ cacheEntriesMax: 2 }).verify(signature, message, publicKey);
  expect(node, 'node:crypto verifier vs noble').toBe(noble);
  expect(small, 'fresh node:crypto verifier vs noble').toBe(noble);
  if (expected !== undefined) expect(noble).toBe(expected);
  return noble;
}

/**
 * The canonical encodings of the eight points of small order (libsodium's block list, checked
 * against noble below): the identity, the point of order 2, two of order 4 and four of order 8.
 */
const smallOrderKeys = smallOrderPointEncodings.map((hex) => hexToBytes(hex, 32));

/** Encodings noble refuses as non-canonical: y >= p (with either sign bit), and x = 0 with the sign bit set. */
const nonCanonicalKeys = [
  ...Array.from({ length: 19 }, (_, i) => bigintToLe(p + BigInt(i))),
  ...Array.from({ length: 19 }, (_, i) => bigintToLe(p + BigInt(i) + 2n ** 255n)),
  bigintToLe(1n + 2n ** 255n),
  bigintToLe(p - 1n + 2n ** 255n),
];

const torsion8 = ed.Point.fromBytes(smallOrderKeys[4]!, false);

/**
 * Signs like RFC 8032 but with a chosen secret scalar and public point, so the key and R may carry
 * a small-order component: `A = [a]B + keyTorsion`, `R = [r]B + rTorsion`, `S = r + k a mod L`.
 * The cofactored equation (the protocol's) holds; the cofactorless one (OpenSSL's) holds only when
 * `[k]keyTorsion - rTorsion` is the identity.
 */
function signWithTorsion(message: Uint8Array, seed: bigint, keyTorsion: ed.Point, rTorsion: ed.Point) {
  const a = mod(seed, L - 1n) + 1n;
  const r = mod(seed * 7919n + 12345n, L - 1n) + 1n;
  const publicKey = ed.Point.BASE.multiply(a).add(keyTorsion).toBytes();
  const R = ed.Point.BASE.multiply(r).add(rTorsion).toBytes();
  const k = mod(leToBigint(sha512(concatBytes(R, publicKey, message))), L);
  const S = mod(r + k * a, L);
  return { publicKey, signature: concatBytes(R, bigintToLe(S)), k };
}

const seedArb = fc.uint8Array({ minLength: 32, maxLength: 32 });
const messageArb = fc.uint8Array({ minLength: 0, maxLength: 200 });

describe('node:crypto and noble verifiers agree', () => {
  it('the small-order list is what noble says it is', () => {
    for (const key of smallOrderKeys) {
      expect(ed.Point.fromBytes(key, false).isSmallOrder()).toBe(true);
      expect(isValidPublicKey(key)).toBe(false);
    }
    for (const key of nonCanonicalKeys) expect(isValidPublicKey(key)).toBe(false);
  });

  it('on random valid signatures (both accept)', () => {
    fc.assert(
      fc.property(seedArb, messageArb, (seed, message) => {
        const keys = generateKeyPair(seed);
        expectAgreement(sign(message, keys.secretKey), message, keys.publicKey, true);
      }),
      { numRuns: 60 },
    );
  });

  it('on signatures, messages and keys with one bit flipped', () => {
    fc.assert(
      fc.property(
        seedArb,
        fc.uint8Array({ minLength: 1, maxLength: 200 }),
        fc.constantFrom('signature' as const, 'message' as const, 'key' as const),
        fc.nat(),
        (seed, message, where, bitPick) => {
          const keys = generateKeyPair(seed);
          const signature = sign(message, keys.secretKey);
          const target = { signature, message, key: keys.publicKey }[where].slice();
          const bit = bitPick % (target.length * 8);
          target[bit >> 3]! ^= 1 << (bit & 7);
          const args = {
            signature: [target, message, keys.publicKey],
            message: [signature, target, keys.publicKey],
            key: [signature, message, target],
          }[where] as [Uint8Array, Uint8Array, Uint8Array];
          expectAgreement(...args);
        },
      ),
      { numRuns: 150 },
    );
  });

  it('on small-order keys (both refuse), including signatures every permissive verifier accepts', () => {
    const identity = smallOrderKeys[0]!;
    fc.assert(
      fc.property(fc.nat({ max: smallOrderKeys.length - 1 }), messageArb, fc.uint8Array({ minLength: 64, maxLength: 64 }), (pick, message, random) => {
        const key = smallOrderKeys[pick]!;
        // R = the identity and S = 0: [0]B = R + [k]A holds for A = identity, for any message.
        expectAgreement(concatBytes(identity, new Uint8Array(32)), message, key, false);
        // R = -[k]A (a small-order point) and S = 0 satisfies even the cofactorless equation.
        for (const torsion of smallOrderKeys) {
          expectAgreement(concatBytes(torsion, new Uint8Array(32)), message, key, false);
        }
        expectAgreement(random, message, key, false);
      }),
      { numRuns: 20 },
    );
  });

  it('on non-canonical keys (both refuse)', () => {
    fc.assert(
      fc.property(fc.nat({ max: nonCanonicalKeys.length - 1 }), messageArb, seedArb, (pick, message, seed) => {
        const keys = generateKeyPair(seed);
        const key = nonCanonicalKeys[pick]!;
        expectAgreement(sign(message, keys.secretKey), message, key, false);
        expectAgreement(concatBytes(smallOrderKeys[0]!, new Uint8Array(32)), message, key, false);
      }),
      { numRuns: 30 },
    );
  });

  it('on non-canonical S (S + L, and S = L) and on non-canonical R (both refuse)', () => {
    fc.assert(
      fc.property(seedArb, messageArb, (seed, message) => {
        const keys = generateKeyPair(seed);
        const signature = sign(message, keys.secretKey);
        const s = leToBigint(signature.subarray(32));
        const plusL = concatBytes(signature.subarray(0, 32), bigintToLe(s + L));
        expect(isCanonicalScalar(plusL)).toBe(false);
        expectAgreement(plusL, message, keys.publicKey, false);
        expectAgreement(concatBytes(signature.subarray(0, 32), bigintToLe(L)), message, keys.publicKey, false);
        // R = the identity written with y = p + 1 (non-canonical).
        expectAgreement(concatBytes(bigintToLe(p + 1n), signature.subarray(32)), message, keys.publicKey, false);
      }),
      { numRuns: 30 },
    );
  });

  it('on the all-zero signature, wrong lengths and wrong types (both refuse, neither throws)', () => {
    const keys = generateKeyPair(new Uint8Array(32).fill(7));
    const message = new Uint8Array([1, 2, 3]);
    const signature = sign(message, keys.secretKey);
    expectAgreement(new Uint8Array(64), message, keys.publicKey, false);
    for (const length of [0, 32, 63, 65, 128]) {
      const wrong = new Uint8Array(length);
      wrong.set(signature.subarray(0, Math.min(length, 64)));
      expectAgreement(wrong, message, keys.publicKey, false);
    }
    for (const length of [0, 31, 33, 64]) {
      const wrong = new Uint8Array(length);
      wrong.set(keys.publicKey.subarray(0, Math.min(length, 32)));
      expectAgreement(signature, message, wrong, false);
    }
    const notBytes = [undefined, null, 'ab', [1, 2], {}] as unknown as Uint8Array[];
    for (const value of notBytes) {
      expectAgreement(value, message, keys.publicKey, false);
      expectAgreement(signature, value, keys.publicKey, false);
      expectAgreement(signature, message, value, false);
    }
    // A Buffer is a Uint8Array: the same answer as for the plain bytes.
    expectAgreement(Buffer.from(signature), Buffer.from(message), Buffer.from(keys.publicKey), true);
  });

  it('on signatures with small-order components in the key or in R (both refuse, even where OpenSSL alone accepts)', () => {
    let opensslAcceptedSome = false;
    fc.assert(
      fc.property(fc.bigInt({ min: 1n, max: L }), messageArb, fc.nat({ max: 7 }), fc.boolean(), (seed, message, power, inKey) => {
        const torsion = torsion8.multiplyUnsafe(BigInt(power === 0 ? 1 : power));
        const { publicKey, signature } = inKey
          ? signWithTorsion(message, seed, torsion, ed.Point.ZERO)
          : signWithTorsion(message, seed, ed.Point.ZERO, torsion);
        // A key of mixed order is not a valid key; an honest key with a mixed-order R is.
        expect(isValidPublicKey(publicKey)).toBe(!inKey);
        expectAgreement(signature, message, publicKey, false);
        expectAllAcceptWhereServiceDoes(signature, message, publicKey);
        if (opensslAlone(signature, message, publicKey)) opensslAcceptedSome = true;
      }),
      { numRuns: 40 },
    );
    // The cofactorless equation holds for about one signature in eight of a mixed-order key:
    // OpenSSL alone accepts those, libsodium too. The protocol refuses the key itself. The random
    // runs above may miss one (about 5% of runs), so fixed seeds look on until one is found: the
    // signing is deterministic, and one in eight holds, so the first few seeds find it every time.
    for (let seed = 1n; !opensslAcceptedSome && seed <= 200n; seed += 1n) {
      const message = new Uint8Array([1, 2, 3, Number(seed % 256n)]);
      const { publicKey, signature } = signWithTorsion(message, seed, torsion8, ed.Point.ZERO);
      expectAgreement(signature, message, publicKey, false);
      if (opensslAlone(signature, message, publicKey)) opensslAcceptedSome = true;
    }
    expect(opensslAcceptedSome).toBe(true);
  });

  it('refuses bad keys and non-canonical S itself, whatever the OpenSSL build would say', () => {
    // OpenSSL 3.5 happens to refuse these too; the pre-checks keep the answer when it would not.
    const verifier = createNodeEd25519Verifier();
    const keys = generateKeyPair(new Uint8Array(32).fill(3));
    const message = new Uint8Array([4, 5, 6]);
    const signature = sign(message, keys.secretKey);
    for (const key of [...smallOrderKeys, ...nonCanonicalKeys]) {
      expect(verifier.verify(concatBytes(smallOrderKeys[0]!, new Uint8Array(32)), message, key)).toBe(false);
    }
    const s = leToBigint(signature.subarray(32));
    expect(verifier.verify(concatBytes(signature.subarray(0, 32), bigintToLe(s + L)), message, keys.publicKey)).toBe(false);
    // Nothing reached OpenSSL: no KeyObject was made.
    expect(verifier.cacheSize()).toBe(0);
    expect(verifier.verify(signature, message, keys.publicKey)).toBe(true);
    expect(verifier.cacheSize()).toBe(1);
  });

  it('keeps at most cacheEntriesMax KeyObjects and still answers right after evictions', () => {
    const verifier = createNodeEd25519Verifier({ cacheEntriesMax: 3 });
    const message = new Uint8Array([9]);
    const signed = keyPool.map((keys) => ({ keys, signature: sign(message, keys.secretKey) }));
    for (let round = 0; round < 3; round++) {
      for (const { keys, signature } of signed) {
        expect(verifier.verify(signature, message, keys.publicKey)).toBe(true);
        expect(verifier.cacheSize()).toBeLessThanOrEqual(3);
      }
    }
    expect(verifier.cacheSize()).toBe(3);
    expect(() => createNodeEd25519Verifier({ cacheEntriesMax: 0 })).toThrow(RangeError);
  });
});

function fieldsOf(plc: Plc): PlcField[] {
  return [
    { name: 'issuer key', bytes: plc.commitment.issuerPublicKey, rebuild: (b) => ({ ...plc, commitment: { ...plc.commitment, issuerPublicKey: b } }) },
    { name: 'commitment hash', bytes: plc.commitmentHash, rebuild: (b) => ({ ...plc, commitmentHash: b }) },
    { name: 'issuer signature', bytes: plc.issuerSignature, rebuild: (b) => ({ ...plc, issuerSignature: b }) },
    ...recordFieldsOf(plc),
  ];
}

/** Appends a record signed with `signWithTorsion` material (the sender is the current bearer). */
function appendRaw(plc: Plc, record: Omit<TransferRecord, 'signature' | 'hash'>, signature: Uint8Array): Plc {
  return { ...plc, transferChain: [...plc.transferChain, { ...record, signature, hash: computeRecordHash(record) }] };
}

describe('verifyPlc gives the same answer with either verifier', () => {
  const withNode = { verifySignature: nodeVerifyEd25519 };

  it('on random valid chains', () => {
    fc.assert(
      fc.property(chainSpec(8), (spec) => {
        const { plc } = buildChain(spec);
        const noble = verifyPlc(plc);
        expect(noble.ok).toBe(true);
        expect(verifyPlc(plc, withNode)).toEqual(noble);
      }),
      { numRuns: 25 },
    );
  });

  it('on chains with one bit flipped anywhere (same reason, same index)', () => {
    fc.assert(
      fc.property(chainSpec(6), fc.nat(), fc.nat(), (spec, fieldPick, bitPick) => {
        const { plc } = buildChain(spec);
        const fields = fieldsOf(plc);
        const field = fields[fieldPick % fields.length]!;
        const changed = field.bytes.slice();
        const bit = bitPick % (changed.length * 8);
        changed[bit >> 3]! ^= 1 << (bit & 7);
        const tampered = field.rebuild(changed);
        const noble = verifyPlc(tampered);
        expect(noble.ok, field.name).toBe(false);
        expect(verifyPlc(tampered, withNode)).toEqual(noble);
      }),
      { numRuns: 80 },
    );
  });

  it('on chains whose signatures were made non-canonical (S + L) or swapped between records', () => {
    fc.assert(
      fc.property(chainSpec(6).filter((spec) => spec.hops.length >= 2), fc.nat(), (spec, pick) => {
        const { plc } = buildChain(spec);
        const index = pick % plc.transferChain.length;
        const record = plc.transferChain[index]!;
        const s = leToBigint(record.signature.subarray(32));
        const plusL = concatBytes(record.signature.subarray(0, 32), bigintToLe(s + L));
        const other = plc.transferChain[(index + 1) % plc.transferChain.length]!.signature;
        for (const signature of [plusL, other, new Uint8Array(64)]) {
          const tampered = { ...plc, transferChain: plc.transferChain.map((r, i) => (i === index ? { ...r, signature } : r)) };
          const noble = verifyPlc(tampered);
          expect(noble).toMatchObject({ ok: false, reason: 'invalid_signature', index });
          expect(verifyPlc(tampered, withNode)).toEqual(noble);
        }
      }),
      { numRuns: 20 },
    );
  });

  it('on a chain to a mixed-order key: refused at the hop that names it, whatever its signatures say', () => {
    const spec = { issuer: 0, amountMinor: 500n, currency: 'BRL' as const, createdAtMs: Date.UTC(2026, 0, 1), ttlHours: 24, salt: new Uint8Array(16), hops: [] };
    const { plc: fresh } = buildChain(spec);
    const mixed = signWithTorsion(new Uint8Array(0), 5n, torsion8, ed.Point.ZERO).publicKey;
    // Hop 1: issuer -> the mixed-order key, honestly signed by the issuer.
    const first = {
      senderPublicKey: keyPool[0]!.publicKey,
      recipientPublicKey: mixed,
      timestampMs: spec.createdAtMs + 60_000,
      nonce: nonceFor(spec.salt, 'hop:0'),
      prevHash: fresh.commitmentHash,
    };
    const firstSigned = appendRaw(fresh, first, sign(encodeTransferMessage(first), keyPool[0]!.secretKey));
    // Hop 2: the mixed-order key -> bob, signed with the torsion-carrying key.
    const second = {
      senderPublicKey: mixed,
      recipientPublicKey: keyPool[1]!.publicKey,
      timestampMs: spec.createdAtMs + 120_000,
      nonce: nonceFor(spec.salt, 'hop:1'),
      prevHash: computeRecordHash(first),
    };
    const chain = appendRaw(firstSigned, second, signWithTorsion(encodeTransferMessage(second), 5n, torsion8, ed.Point.ZERO).signature);
    const noble = verifyPlc(chain);
    expect(noble).toMatchObject({ ok: false, reason: 'invalid_public_key', index: 0 });
    expect(verifyPlc(chain, withNode)).toEqual(noble);
    expect(verifyPlc(firstSigned, withNode)).toEqual(verifyPlc(firstSigned));
  });

  it('uses the given verifier for the issuer signature and every record, and only inside verifyPlc', () => {
    const { plc } = buildChain({ issuer: 0, amountMinor: 1n, currency: 'EUR', createdAtMs: Date.UTC(2026, 0, 1), ttlHours: 2, salt: new Uint8Array(16).fill(1), hops: [{ holder: 1, delayMs: 0 }, { holder: 2, delayMs: 1 }, { holder: 3, delayMs: 2 }] });
    let calls = 0;
    const counting = (signature: Uint8Array, message: Uint8Array, publicKey: Uint8Array): boolean => {
      calls += 1;
      // Inside a verifier, the library's function is the library's own again (no recursion).
      return verifySignature(signature, message, publicKey);
    };
    expect(verifyPlc(plc, { verifySignature: counting }).ok).toBe(true);
    expect(calls).toBe(1 + plc.transferChain.length);

    // A verifier that accepts everything is really the one asked...
    const forged = { ...plc, issuerSignature: new Uint8Array(64).fill(1) };
    expect(verifyPlc(forged, { verifySignature: () => true }).ok).toBe(true);
    // ... and only for that call; a throwing verifier counts as a refusal, and the scope still ends.
    expect(verifyPlc(forged)).toMatchObject({ ok: false, reason: 'invalid_issuer_signature' });
    expect(
      verifyPlc(plc, {
        verifySignature: () => {
          throw new Error('boom');
        },
      }),
    ).toMatchObject({ ok: false, reason: 'invalid_issuer_signature' });
    expect(verifySignature(forged.issuerSignature, plc.commitmentHash, plc.commitment.issuerPublicKey)).toBe(false);
    expect(() => verifyPlc(plc, { verifySignature: 'yes' as unknown as () => boolean })).toThrow(TypeError);
  });
});

describe('the crafted cases of the test vectors (ed25519_cases)', () => {
  const stored = (JSON.parse(readFileSync(vectorsPath, 'utf8')) as { ed25519_cases: { cases: CraftedCase[] } }).ed25519_cases.cases;

  it('cover each small-order point as A and as R, each torsion component, non-canonical A, R and S, S = L, S >= 2^253 and the control', () => {
    const names = stored.map((c) => c.name);
    for (let i = 0; i < 8; i++) expect(names).toEqual(expect.arrayContaining([`small_order_key_${i}`, `small_order_r_${i}`]));
    for (let i = 1; i < 8; i++) expect(names).toEqual(expect.arrayContaining([`torsion_key_${i}_k_kills_t`, `torsion_key_${i}_k_keeps_t`]));
    expect(names).toEqual(expect.arrayContaining(['honest', 's_plus_l', 's_plus_2l', 's_equals_l', 'noncanonical_r_identity_y_plus_p']));
    expect(names.filter((name) => name.startsWith('noncanonical_key_')).length).toBeGreaterThanOrEqual(2);
    // The case bytes are the generator's (the vectors test holds the whole file to it).
    expect(buildCraftedCases(vectorBytes('key:alice')).map((c) => c.signature)).toEqual(stored.map((c) => c.signature));
  });

  for (const crafted of stored) {
    it(`${crafted.name}: every verifier answers as recorded; the service ${crafted.expected}s`, () => {
      const live = judge(libsodium, crafted.signature, crafted.message, crafted.public_key);
      expect(live).toEqual(crafted.verdicts);
      expect(live.service).toBe(crafted.expected);
      expect(live.service_node).toBe(crafted.expected);
      // The rule: the service accepts only where every verifier does.
      if (live.service === 'accept') expect(Object.values(live).every((verdict) => verdict === 'accept')).toBe(true);
    });
  }

  it('the service accepts none of them but the control (each is refused by at least one mainstream verifier or by the rules)', () => {
    expect(stored.filter((c) => c.verdicts.service === 'accept').map((c) => c.name)).toEqual(['honest']);
  });
});

describe('whatever the service accepts, libsodium, OpenSSL and @noble/ed25519 accept', () => {
  it('on honest signatures and on signatures with one bit flipped', () => {
    fc.assert(
      fc.property(seedArb, messageArb, fc.nat(), fc.boolean(), (seed, message, bitPick, flip) => {
        const keys = generateKeyPair(seed);
        const signature = sign(message, keys.secretKey);
        if (flip) signature[(bitPick % 512) >> 3]! ^= 1 << (bitPick & 7);
        expectAllAcceptWhereServiceDoes(signature, message, keys.publicKey);
      }),
      { numRuns: 60 },
    );
  });
});
