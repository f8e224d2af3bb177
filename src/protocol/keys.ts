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
import { isBytes } from './bytes.ts';
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

/** Strict Ed25519 verification; false (never a throw) for any malformed input. */
export function verifySignature(signature: Uint8Array, message: Uint8Array, publicKey: Uint8Array): boolean {
  if (!isBytes(signature, signatureBytes) || !isBytes(publicKey, publicKeyBytes) || !(message instanceof Uint8Array)) {
    return false;
  }
  try {
    return ed.verify(signature, message, publicKey, { zip215: false });
  } catch {
    return false;
  }
}

/**
 * A key a PLC may name (issuer or recipient): a canonical encoding of a curve point that is not of
 * small order. A PLC sent to a small-order key could be spent by anyone (every signature
 * verifies under such a key with a permissive verifier) or by no one (strict verifiers), so the
 * protocol refuses it up front.
 */
export function isValidPublicKey(publicKey: unknown): publicKey is Uint8Array {
  if (!isBytes(publicKey, publicKeyBytes)) return false;
  try {
    return !ed.Point.fromBytes(publicKey, false).isSmallOrder();
  } catch {
    return false;
  }
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
