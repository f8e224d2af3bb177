import { createPublicKey, verify, type KeyObject } from 'node:crypto';
import { isValidPublicKey, verifySignature, type SignatureVerifier } from '../src/protocol/keys.ts';

/**
 * Ed25519 verification over node:crypto (OpenSSL) for the server, with exactly the answers of the
 * protocol library's strict `verifySignature` (docs/protocol.md section 2), about 10 to 15 times
 * faster than @noble/ed25519. Pass it to `verifyPlc(plc, { verifySignature: nodeVerifyEd25519 })`.
 *
 * Where the two implementations differ and how they are made to agree:
 *
 * - The public key: OpenSSL accepts small-order keys and does not insist on canonical encodings;
 *   the protocol refuses both. Every key is checked with the library's own `isValidPublicKey`
 *   before OpenSSL sees it (once per key: valid keys are cached with their KeyObject).
 * - S must be below the group order L: checked here on the bytes, before OpenSSL.
 * - R must be canonical: OpenSSL compares R's bytes with the canonical encoding of the point it
 *   computes, so a non-canonical R never verifies there either.
 * - The group equation: OpenSSL checks the cofactorless one ([S]B = R + [k]A), the protocol the
 *   cofactored one ([8][S]B = [8]R + [8][k]A). With the checks above, an OpenSSL "yes" implies
 *   the library's "yes"; the converse fails only for signatures crafted with small-order
 *   components in R or in a (mixed-order) key, which honest signers never produce. So an OpenSSL
 *   "no" is confirmed by the library before it is returned. That costs one pure-JS verification
 *   per refusal, and `verifyPlc` stops at its first refusal, so at most one per chain.
 *
 * test/protocol/verifier-agreement.test.ts checks the agreement, edge cases included.
 */

/** DER prefix of an Ed25519 SubjectPublicKeyInfo (RFC 8410): SEQUENCE, algorithm id-Ed25519, BIT STRING. */
const spkiPrefix = Buffer.from('302a300506032b6570032100', 'hex');

/** The group order L = 2^252 + 27742317777372353535851937790883648493, little-endian. */
const groupOrderLe = Uint8Array.from(Buffer.from('edd3f55c1a631258d69cf7a2def9de1400000000000000000000000000000010', 'hex'));

export const keyCacheEntriesDefault = 10_000;

/** True when the little-endian 32-byte S (bytes 32..63 of the signature) is below L. */
export function isCanonicalScalar(signature: Uint8Array): boolean {
  for (let i = 31; i >= 0; i -= 1) {
    const s = signature[32 + i] as number;
    const l = groupOrderLe[i] as number;
    if (s !== l) return s < l;
  }
  return false; // S = L
}

export interface NodeEd25519Verifier {
  readonly verify: SignatureVerifier;
  /** KeyObjects held now (at most `cacheEntriesMax`). */
  cacheSize(): number;
  /** Counters since creation, for benchmarks and metrics. */
  stats(): { calls: number; cacheHits: number; confirmedRefusals: number };
}

/**
 * A verifier with its own LRU cache of KeyObjects for valid keys (chains reuse keys: every
 * registration of a hop verifies the whole chain again). Invalid keys are not cached, so hostile
 * keys cannot evict good ones faster than valid new keys would.
 */
export function createNodeEd25519Verifier(options: { cacheEntriesMax?: number } = {}): NodeEd25519Verifier {
  const cacheEntriesMax = options.cacheEntriesMax ?? keyCacheEntriesDefault;
  if (!Number.isSafeInteger(cacheEntriesMax) || cacheEntriesMax < 1 || cacheEntriesMax > 1_000_000) {
    throw new RangeError('cacheEntriesMax must be an integer from 1 to 1,000,000');
  }
  /** Keyed by the key's bytes as latin1 text; Map order is least recently used first. */
  const keys = new Map<string, KeyObject>();
  let calls = 0;
  let cacheHits = 0;
  let confirmedRefusals = 0;

  function keyObjectFor(publicKey: Uint8Array): KeyObject | null {
    const id = Buffer.from(publicKey.buffer, publicKey.byteOffset, publicKey.byteLength).toString('latin1');
    const cached = keys.get(id);
    if (cached !== undefined) {
      cacheHits += 1;
      keys.delete(id);
      keys.set(id, cached);
      return cached;
    }
    if (!isValidPublicKey(publicKey)) return null;
    let keyObject: KeyObject;
    try {
      keyObject = createPublicKey({ key: Buffer.concat([spkiPrefix, publicKey]), format: 'der', type: 'spki' });
    } catch {
      return null;
    }
    if (keys.size >= cacheEntriesMax) {
      const oldest = keys.keys().next();
      if (oldest.done !== true) keys.delete(oldest.value);
    }
    keys.set(id, keyObject);
    return keyObject;
  }

  const verifyEd25519: SignatureVerifier = (signature, message, publicKey) => {
    calls += 1;
    if (!(signature instanceof Uint8Array) || signature.length !== 64) return false;
    if (!(publicKey instanceof Uint8Array) || publicKey.length !== 32) return false;
    if (!(message instanceof Uint8Array)) return false;
    if (!isCanonicalScalar(signature)) return false;
    const keyObject = keyObjectFor(publicKey);
    if (keyObject === null) return false;
    let accepted: boolean;
    try {
      accepted = verify(null, message, keyObject, signature);
    } catch {
      accepted = false;
    }
    if (accepted) return true;
    // Cofactorless "no" is not yet the protocol's "no" (see the module comment): ask the library.
    confirmedRefusals += 1;
    return verifySignature(signature, message, publicKey);
  };

  return {
    verify: verifyEd25519,
    cacheSize: () => keys.size,
    stats: () => ({ calls, cacheHits, confirmedRefusals }),
  };
}

/** The process's shared verifier (10,000 cached keys). */
export const nodeEd25519 = createNodeEd25519Verifier();

/** `(signature, message, publicKey) => boolean`, strict like the library, over node:crypto. */
export const nodeVerifyEd25519: SignatureVerifier = nodeEd25519.verify;
