/**
 * Ed25519 keys and signatures (RFC 8032) over @noble/ed25519's point arithmetic.
 *
 * Verification is strict, the same everywhere in the protocol (docs/protocol.md section 2): A and
 * R are canonical encodings, S < L, neither A nor R is of small order, A has no torsion component
 * ([L]A is the identity), and the cofactorless equation [S]B = R + [k]A holds. Under these rules
 * every signature the protocol accepts is also accepted by libsodium's
 * `crypto_sign_verify_detached`, by OpenSSL (Node's crypto module) and by @noble/ed25519's `verify` with
 * either value of its `zip215` option; test/src/protocol/verifier-agreement.test.ts runs the crafted
 * cases of the test vectors through all of them. Honest signers are unaffected by any of this.
 */
import * as ed from '@noble/ed25519';
import { sha512 } from '@noble/hashes/sha2.js';
import { randomBytes } from '@noble/hashes/utils.js';
import { publicKeyBytes, secretKeyBytes, signatureBytes } from './constants.ts';
import { bytesToHex, concatBytes, isBytes } from './bytes.ts';
import { ProtocolError } from './errors.ts';

// @noble/ed25519 v3 leaves its synchronous hash unset; the protocol uses the sync API throughout
// so that verification is a plain function call in every runtime.
ed.hashes.sha512 = sha512;

export interface KeyPair {
  /** The 32-byte RFC 8032 private key (seed). Keep it secret; never log it. */
  readonly secretKey: Uint8Array;
  readonly publicKey: Uint8Array;
}

/** A new key pair from the runtime's CSPRNG, or a deterministic one from a 32-byte seed. */
export function generateKeyPair(seed?: Uint8Array): KeyPair {
  const secretKey = seed === undefined ? randomBytes(secretKeyBytes) : seed.slice();
  assertSecretKey(secretKey);
  return { secretKey, publicKey: ed.getPublicKey(secretKey) };
}

export function publicKeyOf(secretKey: Uint8Array): Uint8Array {
  assertSecretKey(secretKey);
  return ed.getPublicKey(secretKey);
}

export function sign(message: Uint8Array, secretKey: Uint8Array): Uint8Array {
  assertSecretKey(secretKey);
  return ed.sign(message, secretKey);
}

/**
 * A strict Ed25519 verifier with the same answers as `verifySignature`: another implementation of
 * the same policy (e.g. the server's, over Node's crypto module), never a more lenient one.
 */
export type SignatureVerifier = (signature: Uint8Array, message: Uint8Array, publicKey: Uint8Array) => boolean;

/** Set only while `withSignatureVerifier` runs its synchronous body; undefined everywhere else. */
let scopedVerifier: SignatureVerifier | undefined;

/**
 * Runs `body` with every `verifySignature` call made inside it answered by `verifier` (after the
 * same length checks), then restores the previous state, also when `body` throws. `body` must be
 * synchronous: the scope ends when it returns, so work it leaves for later would not see the
 * verifier. `verifyPlc` uses this so that its record checks (`checkRecord`, shared with wallets'
 * `appendTransfer`) stay one code path whichever verifier the caller brings. Inside `verifier`
 * itself the scope is lifted, so a verifier may fall back to `verifySignature` for the library's
 * own answer.
 */
export function withSignatureVerifier<T>(verifier: SignatureVerifier | undefined, body: () => T): T {
  if (verifier === undefined) return body();
  const outer = scopedVerifier;
  scopedVerifier = verifier;
  try {
    return body();
  } finally {
    scopedVerifier = outer;
  }
}

/** The group order L = 2^252 + 27742317777372353535851937790883648493. */
const groupOrder = ed.Point.CURVE().n;
/** L in the 32 little-endian bytes S is written in. */
const groupOrderLe = numberToBytesLe(groupOrder);

function numberToBytesLe(value: bigint): Uint8Array {
  const out = new Uint8Array(32);
  let rest = value;
  for (let i = 0; i < 32; i += 1) {
    out[i] = Number(rest & 0xffn);
    rest >>= 8n;
  }
  return out;
}

function bytesToNumberLe(bytes: Uint8Array): bigint {
  let value = 0n;
  for (let i = bytes.length - 1; i >= 0; i -= 1) value = (value << 8n) | BigInt(bytes[i] as number);
  return value;
}

/** True when the signature's S (bytes 32..63, little-endian) is below the group order L. */
export function isCanonicalScalar(signature: Uint8Array): boolean {
  if (!isBytes(signature, signatureBytes)) return false;
  for (let i = 31; i >= 0; i -= 1) {
    const s = signature[32 + i] as number;
    const l = groupOrderLe[i] as number;
    if (s !== l) return s < l;
  }
  return false; // S = L
}

/**
 * The canonical encodings of the eight points of small order: the identity, the point of order 2,
 * two of order 4 and four of order 8. A canonical encoding of a small-order point is one of these.
 */
export const smallOrderPointEncodings: readonly string[] = [
  '0100000000000000000000000000000000000000000000000000000000000000',
  'ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f',
  '0000000000000000000000000000000000000000000000000000000000000000',
  '0000000000000000000000000000000000000000000000000000000000000080',
  'c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac037a',
  'c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac03fa',
  '26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc05',
  '26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc85',
];
const smallOrderEncodingSet = new Set(smallOrderPointEncodings);

/** Whether 32 bytes are the canonical encoding of a point of small order (a table look-up). */
export function isSmallOrderEncoding(bytes: Uint8Array): boolean {
  return isBytes(bytes, publicKeyBytes) && smallOrderEncodingSet.has(bytesToHex(bytes));
}

/** Strict Ed25519 verification; false (never a throw) for any malformed input. */
export function verifySignature(signature: Uint8Array, message: Uint8Array, publicKey: Uint8Array): boolean {
  if (!isBytes(signature, signatureBytes) || !isBytes(publicKey, publicKeyBytes) || !(message instanceof Uint8Array)) {
    return false;
  }
  const custom = scopedVerifier;
  if (custom !== undefined) {
    scopedVerifier = undefined;
    try {
      return custom(signature, message, publicKey) === true;
    } catch {
      return false;
    } finally {
      scopedVerifier = custom;
    }
  }
  try {
    return verifyStrict(signature, message, publicKey);
  } catch {
    return false;
  }
}

/** The rules of docs/protocol.md section 2, in their order there. */
function verifyStrict(signature: Uint8Array, message: Uint8Array, publicKey: Uint8Array): boolean {
  // 1. A is canonical, not of small order, without torsion (checked once per key, then kept).
  const a = publicKeyPoint(publicKey);
  if (a === null) return false;
  // 2. S < L.
  if (!isCanonicalScalar(signature)) return false;
  // 3. R is canonical (noble's strict decoding: y < p, and no x = 0 with the sign bit set) and
  //    not of small order.
  const rBytes = signature.subarray(0, 32);
  const r = ed.Point.fromBytes(rBytes, false);
  if (r.isSmallOrder()) return false;
  // 4. [S]B = R + [k]A with k = SHA-512(R | A | M) mod L: the cofactorless equation libsodium and
  //    OpenSSL check. With A torsion-free it also forces R into the prime-order subgroup.
  const k = bytesToNumberLe(sha512(concatBytes(rBytes, publicKey, message))) % groupOrder;
  const s = bytesToNumberLe(signature.subarray(32, 64));
  return ed.Point.BASE.multiply(s, false).equals(r.add(a.multiply(k, false)));
}

/**
 * Keys found valid lately, with their decoded points, least recently used first. Checking a key
 * costs a field square root and a multiplication by L (the torsion check: about a signature
 * verification in pure JavaScript), and a chain is verified again at every registration, so the
 * same keys come back all the time. Only valid keys are kept, so hostile input cannot turn the
 * memo into a verdict; the answer is a pure function of the 32 bytes either way. At most 10,000
 * entries.
 */
const validPublicKeysMax = 10_000;
const validPublicKeys = new Map<string, ed.Point>();

/** The decoded point of a valid public key (see `isValidPublicKey`), or null. */
function publicKeyPoint(publicKey: unknown): ed.Point | null {
  if (!isBytes(publicKey, publicKeyBytes)) return null;
  const hex = bytesToHex(publicKey);
  const kept = validPublicKeys.get(hex);
  if (kept !== undefined) {
    // Least recently used first: a hit moves the key to the back.
    validPublicKeys.delete(hex);
    validPublicKeys.set(hex, kept);
    return kept;
  }
  let point: ed.Point;
  try {
    point = ed.Point.fromBytes(publicKey, false);
  } catch {
    return null;
  }
  if (point.isSmallOrder() || !point.isTorsionFree()) return null;
  if (validPublicKeys.size >= validPublicKeysMax) {
    const oldest = validPublicKeys.keys().next();
    if (oldest.done !== true) validPublicKeys.delete(oldest.value);
  }
  validPublicKeys.set(hex, point);
  return point;
}

/**
 * A key the protocol accepts anywhere (issuer, recipient, signer of an authorisation): a canonical
 * encoding of a curve point (y < p, and x = 0 never written with the sign bit set) that is not of
 * small order and has no torsion component ([L]A is the identity), that is, a point of the
 * prime-order subgroup other than the identity. Every honest key (`[a]B`) is one. A PLC sent to a
 * small-order key could be spent by anyone under a permissive verifier; a key with a torsion
 * component signs so that some verifiers accept and others refuse (libsodium and OpenSSL check
 * the cofactorless equation, which such a key satisfies for about one message in eight). Both
 * are refused when the key first appears, before any money is promised to it.
 */
export function isValidPublicKey(publicKey: unknown): publicKey is Uint8Array {
  return publicKeyPoint(publicKey) !== null;
}

export function assertPublicKey(publicKey: Uint8Array, what = 'public key'): void {
  if (!isValidPublicKey(publicKey)) {
    throw new ProtocolError('invalid_public_key', `${what} is not a valid Ed25519 public key`);
  }
}

function assertSecretKey(secretKey: Uint8Array): void {
  if (!isBytes(secretKey, secretKeyBytes)) {
    throw new ProtocolError('invalid_secret_key', `an Ed25519 secret key is ${secretKeyBytes} bytes`);
  }
}

/** Fresh random bytes from the runtime's CSPRNG (globalThis.crypto.getRandomValues). */
export function randomNonce(length: number): Uint8Array {
  return randomBytes(length);
}
