/**
 * Ed25519 keys and signatures (RFC 8032) over @noble/ed25519.
 *
 * Verification is strict, the same everywhere in the protocol: public keys and the signature's R
 * must be canonical point encodings, S must be below the group order, and small-order public
 * keys are refused (noble's `zip215: false` branch, libsodium's policy). The group equation is
 * the cofactored one RFC 8032 5.1.7 states. Honest signers are unaffected by any of this; it
 * removes the edge cases where two verifiers could disagree about one signature.
 */
import * as ed from '@noble/ed25519';
import { sha512 } from '@noble/hashes/sha2.js';
import { randomBytes } from '@noble/hashes/utils.js';
import { publicKeyBytes, secretKeyBytes, signatureBytes } from './constants.ts';
import { bytesToHex, isBytes } from './bytes.ts';
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
    return ed.verify(signature, message, publicKey, { zip215: false });
  } catch {
    return false;
  }
}

/**
 * Keys found valid lately, least recently used first. Decoding a point costs a field square root
 * (about as much as a native signature verification), and a chain is verified again at every
 * registration, so the same keys come back all the time. Only valid keys are kept, so hostile
 * input cannot turn the memo into a verdict; the answer is a pure function of the 32 bytes either
 * way. At most 10,000 entries (about 1.5 MB).
 */
const validPublicKeysMax = 10_000;
const validPublicKeys = new Set<string>();

/**
 * A key a PLC may name (issuer or recipient): a canonical encoding of a curve point that is not of
 * small order. A PLC sent to a small-order key could be spent by anyone (every signature
 * verifies under such a key with a permissive verifier) or by no one (strict verifiers), so the
 * protocol refuses it up front.
 */
export function isValidPublicKey(publicKey: unknown): publicKey is Uint8Array {
  if (!isBytes(publicKey, publicKeyBytes)) return false;
  const hex = bytesToHex(publicKey);
  if (validPublicKeys.has(hex)) {
    // Least recently used first: a hit moves the key to the back.
    validPublicKeys.delete(hex);
    validPublicKeys.add(hex);
    return true;
  }
  let valid: boolean;
  try {
    valid = !ed.Point.fromBytes(publicKey, false).isSmallOrder();
  } catch {
    valid = false;
  }
  if (valid) {
    if (validPublicKeys.size >= validPublicKeysMax) {
      const oldest = validPublicKeys.values().next();
      if (oldest.done !== true) validPublicKeys.delete(oldest.value);
    }
    validPublicKeys.add(hex);
  }
  return valid;
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
