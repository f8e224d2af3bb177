/**
 * The crafted Ed25519 cases of the test vectors (`ed25519_cases` in
 * test/src/protocol/vectors/protocol-v2.json, docs/protocol.md sections 2 and 14): signatures and keys
 * built to sit on every edge where Ed25519 verifiers are known to disagree, each with the verdict
 * of every verifier a wallet or the server may use:
 *
 * - `service`: the protocol library's `verifySignature` (src/protocol/keys.ts), what wallets run;
 * - `service_node`: the server's verifier over node:crypto (infra/ed25519-node.ts);
 * - `openssl`: node:crypto's `verify` alone (OpenSSL), with no check of ours;
 * - `noble_strict`: @noble/ed25519 `verify(sig, msg, key, { zip215: false })`;
 * - `noble_zip215`: @noble/ed25519 `verify(sig, msg, key)`, its default (ZIP-215 rules);
 * - `libsodium`: `crypto_sign_verify_detached` of libsodium itself (the `libsodium-wrappers`
 *   package: libsodium compiled to WebAssembly).
 *
 * The protocol's rule is that the service accepts a case only where every one of them does. Every
 * case is deterministic: the keys are the vector keys (alice's seed), the message is fixed, and
 * every other value is derived from a label, so the generator rebuilds the same bytes each run.
 */
import { createPublicKey, verify as opensslVerify } from 'node:crypto';
import * as ed from '@noble/ed25519';
import { sha512 } from '@noble/hashes/sha2.js';
import sodium from 'libsodium-wrappers';
import { nodeVerifyEd25519 } from '../infra/ed25519-node.ts';
import { bytesToHex, concatBytes, generateKeyPair, hexToBytes, sign, smallOrderPointEncodings, verifySignature } from '../src/protocol/index.ts';

const L = ed.Point.CURVE().n;
const p = ed.Point.CURVE().p;
const encoder = new TextEncoder();

/** The message every case signs. */
export const craftedCaseMessage = encoder.encode('svc:plc:test-vector:ed25519-case');

export const verifierNames = ['service', 'service_node', 'openssl', 'noble_strict', 'noble_zip215', 'libsodium'] as const;
export type VerifierName = (typeof verifierNames)[number];
export type Verdicts = Record<VerifierName, 'accept' | 'refuse'>;

export interface CraftedCase {
  readonly name: string;
  readonly description: string;
  readonly public_key: string;
  readonly message: string;
  readonly signature: string;
  /** What the protocol's rules (docs/protocol.md section 2) answer. */
  readonly expected: 'accept' | 'refuse';
  readonly verdicts: Verdicts;
}

type Unjudged = Omit<CraftedCase, 'verdicts' | 'expected'> & { expected: 'accept' | 'refuse' };

function bytesToNumberLe(bytes: Uint8Array): bigint {
  let value = 0n;
  for (let i = bytes.length - 1; i >= 0; i -= 1) value = (value << 8n) | BigInt(bytes[i] as number);
  return value;
}

function numberToBytesLe(value: bigint, length = 32): Uint8Array {
  const out = new Uint8Array(length);
  let rest = value;
  for (let i = 0; i < length; i += 1) {
    out[i] = Number(rest & 0xffn);
    rest >>= 8n;
  }
  return out;
}

const mod = (value: bigint, m: bigint): bigint => ((value % m) + m) % m;

/** A nonzero scalar below L from a label (the cases' only source of "randomness"). */
function labelScalar(label: string): bigint {
  return mod(bytesToNumberLe(sha512(encoder.encode(`svc:plc:test-vector:ed25519-case:${label}`))), L - 1n) + 1n;
}

/** k = SHA-512(R | A | M) mod L, over the bytes exactly as written. */
function challenge(rBytes: Uint8Array, aBytes: Uint8Array, message: Uint8Array): bigint {
  return mod(bytesToNumberLe(sha512(concatBytes(rBytes, aBytes, message))), L);
}

/** Signs M with secret scalar `a` under the written key bytes `aBytes` and nonce point written `rBytes` = [r]B + torsion. */
function signRaw(a: bigint, aBytes: Uint8Array, r: bigint, rBytes: Uint8Array, message: Uint8Array): Uint8Array {
  const k = challenge(rBytes, aBytes, message);
  return concatBytes(rBytes, numberToBytesLe(mod(r + k * a, L)));
}

const smallOrderPoints = smallOrderPointEncodings.map((hex) => ({ hex, point: ed.Point.fromBytes(hexToBytes(hex, 32), false) }));

/** Order of a small-order point: the least n in {1, 2, 4, 8} with [n]T the identity. */
function smallOrder(point: ed.Point): number {
  for (const n of [1, 2, 4, 8]) if (point.multiply(BigInt(n), false).is0()) return n;
  throw new Error('not a small-order point');
}

function describePoint(index: number): string {
  const point = smallOrderPoints[index]!.point;
  return `small-order point #${index} (order ${smallOrder(point)})`;
}

/** Non-canonical encodings: y written as y + p (the top bit stays the sign of x), and x = 0 with the sign bit set. */
function yPlusP(y: bigint, signBit: boolean): Uint8Array {
  return numberToBytesLe(y + p + (signBit ? 2n ** 255n : 0n));
}

export function buildCraftedCases(aliceSeed: Uint8Array): Unjudged[] {
  const alice = generateKeyPair(aliceSeed);
  const a = ed.utils.getExtendedPublicKey(aliceSeed).scalar;
  const m = craftedCaseMessage;
  const mHex = bytesToHex(m);
  const zeroS = new Uint8Array(32);
  const identity = smallOrderPoints[0]!.point.toBytes();
  const cases: Unjudged[] = [];
  const push = (name: string, description: string, publicKey: Uint8Array, signature: Uint8Array, expected: 'accept' | 'refuse' = 'refuse') =>
    cases.push({ name, description, public_key: bytesToHex(publicKey), message: mHex, signature: bytesToHex(signature), expected });

  const honest = sign(m, alice.secretKey);
  push('honest', "alice's RFC 8032 signature of the message: the control every verifier accepts", alice.publicKey, honest, 'accept');

  // Each small-order point as A, with R = the identity and S = 0: [8][0]B = [8]R + [8][k]A holds
  // for every small-order A, so every cofactored verifier that lets small-order keys through accepts.
  for (const [index, { point }] of smallOrderPoints.entries()) {
    push(
      `small_order_key_${index}`,
      `A is ${describePoint(index)}; R = the identity, S = 0 (the cofactored equation holds for any message)`,
      point.toBytes(),
      concatBytes(identity, zeroS),
    );
  }

  // Each small-order point as R under alice's key, with S = k a: [S]B = [k]A, so the cofactored
  // equation holds; the cofactorless one only when R is the identity.
  for (const [index, { point }] of smallOrderPoints.entries()) {
    const rBytes = point.toBytes();
    push(
      `small_order_r_${index}`,
      `alice's key; R is ${describePoint(index)}, S = k a mod L`,
      alice.publicKey,
      signRaw(a, alice.publicKey, 0n, rBytes, m),
    );
  }

  // Keys with each torsion component: A = [a]B + T. R = [r]B honest, S = r + k a. The cofactored
  // equation always holds; the cofactorless one (libsodium, OpenSSL) only when [k]T is the
  // identity. For each T two signatures: one where it is (r ground until so), one where it is not.
  for (const [index, { point: torsion }] of smallOrderPoints.entries()) {
    if (index === 0) continue;
    const aBytes = ed.Point.BASE.multiply(a).add(torsion).toBytes();
    for (const killed of [true, false]) {
      let found: { signature: Uint8Array; label: string } | undefined;
      for (let attempt = 0; attempt < 256 && found === undefined; attempt += 1) {
        const label = `torsion:${index}:${killed}:${attempt}`;
        const r = labelScalar(label);
        const rBytes = ed.Point.BASE.multiply(r).toBytes();
        const k = challenge(rBytes, aBytes, m);
        if ((k === 0n || torsion.multiply(k, false).is0()) === killed) found = { signature: signRaw(a, aBytes, r, rBytes, m), label };
      }
      if (found === undefined) throw new Error('no nonce found for a torsion case');
      push(
        `torsion_key_${index}_${killed ? 'k_kills_t' : 'k_keeps_t'}`,
        `A = alice's point + ${describePoint(index)} (mixed order); R = [r]B with nonce label "${found.label}" (the first attempt where [k]T ${killed ? 'is' : 'is not'} the identity), S = r + k a mod L; the cofactorless equation ${killed ? 'holds' : 'fails'}, the cofactored one holds`,
        aBytes,
        found.signature,
      );
    }
  }

  // Non-canonical encodings of A (all are small-order points: the only points with y < 19 whose
  // discrete logarithm anyone knows), with R = the identity and S = 0.
  const nonCanonicalKeys: [string, string, Uint8Array][] = [
    ['noncanonical_key_identity_y_plus_p', 'A = the identity written with y = 1 + p', yPlusP(1n, false)],
    ['noncanonical_key_order4_y_plus_p', 'A = a point of order 4 (y = 0) written with y = 0 + p', yPlusP(0n, false)],
    ['noncanonical_key_identity_sign_bit', 'A = the identity written with the sign bit set (x = 0)', concatBytes(identity.subarray(0, 31), Uint8Array.of(0x80))],
    ['noncanonical_key_order2_sign_bit', 'A = the point of order 2 (y = -1) written with the sign bit set (x = 0)', hexToBytes(`${'ec'}${'ff'.repeat(31)}`, 32)],
  ];
  for (const [name, description, key] of nonCanonicalKeys) {
    push(name, `${description}; R = the identity, S = 0`, key, concatBytes(identity, zeroS));
  }

  // Non-canonical R under alice's key: the identity written two non-canonical ways, S = k a over
  // those exact bytes. A verifier that decodes R leniently sees R = the identity.
  const nonCanonicalR: [string, string, Uint8Array][] = [
    ['noncanonical_r_identity_y_plus_p', 'R = the identity written with y = 1 + p', yPlusP(1n, false)],
    ['noncanonical_r_identity_sign_bit', 'R = the identity written with the sign bit set (x = 0)', concatBytes(identity.subarray(0, 31), Uint8Array.of(0x80))],
  ];
  for (const [name, description, rBytes] of nonCanonicalR) {
    push(name, `alice's key; ${description}; S = k a mod L`, alice.publicKey, signRaw(a, alice.publicKey, 0n, rBytes, m));
  }

  // S out of range on alice's honest signature: S + L and S + 2L reduce to the honest S.
  const honestS = bytesToNumberLe(honest.subarray(32));
  const withS = (s: bigint): Uint8Array => concatBytes(honest.subarray(0, 32), numberToBytesLe(s));
  push('s_plus_l', "alice's honest signature with S + L in place of S (reduces to the honest S)", alice.publicKey, withS(honestS + L));
  push('s_plus_2l', "alice's honest signature with S + 2L (at least 2^253) in place of S", alice.publicKey, withS(honestS + 2n * L));
  push('s_equals_l', "alice's honest R with S = L", alice.publicKey, withS(L));
  return cases;
}

function opensslVerdict(signature: Uint8Array, message: Uint8Array, publicKey: Uint8Array): boolean {
  try {
    const key = createPublicKey({ key: Buffer.concat([Buffer.from('302a300506032b6570032100', 'hex'), publicKey]), format: 'der', type: 'spki' });
    return opensslVerify(null, message, key, signature);
  } catch {
    return false;
  }
}

function nobleVerdict(signature: Uint8Array, message: Uint8Array, publicKey: Uint8Array, zip215: boolean): boolean {
  try {
    return ed.verify(signature, message, publicKey, { zip215 });
  } catch {
    return false;
  }
}

/** libsodium, once loaded (its WebAssembly instantiates asynchronously). */
export async function loadLibsodium(): Promise<typeof sodium> {
  await sodium.ready;
  return sodium;
}

export function judge(libsodium: typeof sodium, signatureHex: string, messageHex: string, publicKeyHex: string): Verdicts {
  const signature = hexToBytes(signatureHex, 64);
  const message = hexToBytes(messageHex);
  const publicKey = hexToBytes(publicKeyHex, 32);
  const verdict = (ok: boolean): 'accept' | 'refuse' => (ok ? 'accept' : 'refuse');
  let sodiumOk: boolean;
  try {
    sodiumOk = libsodium.crypto_sign_verify_detached(signature, message, publicKey);
  } catch {
    sodiumOk = false;
  }
  return {
    service: verdict(verifySignature(signature, message, publicKey)),
    service_node: verdict(nodeVerifyEd25519(signature, message, publicKey)),
    openssl: verdict(opensslVerdict(signature, message, publicKey)),
    noble_strict: verdict(nobleVerdict(signature, message, publicKey, false)),
    noble_zip215: verdict(nobleVerdict(signature, message, publicKey, true)),
    libsodium: verdict(sodiumOk),
  };
}

/** The crafted cases with every verifier's verdict; throws when the service breaks the rule. */
export async function craftedCasesWithVerdicts(aliceSeed: Uint8Array): Promise<CraftedCase[]> {
  const libsodium = await loadLibsodium();
  return buildCraftedCases(aliceSeed).map((unjudged) => {
    const verdicts = judge(libsodium, unjudged.signature, unjudged.message, unjudged.public_key);
    return { ...unjudged, verdicts };
  });
}
