import { createPublicKey, verify, type KeyObject } from 'node:crypto';
import { isCanonicalScalar, isSmallOrderEncoding, isValidPublicKey, type SignatureVerifier } from '../src/protocol/keys.ts';

export { isCanonicalScalar };

/**
 * Ed25519 verification over node:crypto (OpenSSL) for the server, with exactly the answers of the
 * protocol library's strict `verifySignature` (docs/protocol.md section 2), about 10 to 15 times
 * faster than the library's pure JavaScript. Pass it to
 * `verifyPlc(plc, { verifySignature: nodeVerifyEd25519 })`.
 *
 * OpenSSL checks S < L, decodes A, computes [S]B - [k]A and compares its canonical encoding with
 * R's bytes: the cofactorless equation, with R canonical. The protocol's rules add three checks
 * OpenSSL does not make, made here:
 *
 * - A must be canonical, not of small order and torsion-free: every key is checked with the
 *   library's own `isValidPublicKey` before OpenSSL sees it (once per key: valid keys are cached
 *   with their KeyObject).
 * - S must be below L: checked on the bytes first (OpenSSL does too; this keeps the answer
 *   independent of the build).
 * - R must not be of small order. When OpenSSL accepts, R is the canonical encoding of
 *   [S]B - [k]A, a point of the prime-order subgroup (A is torsion-free), so the only small-order
 *   value it can have is the identity: a look-up in the table of small-order encodings.
 *
 * With these, OpenSSL's answer is the library's answer in both directions (no refusal needs
 * confirming). test/src/protocol/verifier-agreement.test.ts checks the agreement, crafted cases
 * included.
 */

/** DER prefix of an Ed25519 SubjectPublicKeyInfo (RFC 8410): SEQUENCE, algorithm id-Ed25519, BIT STRING. */
const spkiPrefix = Buffer.from('302a300506032b6570032100', 'hex');

export const keyCacheEntriesDefault = 10_000;

export interface NodeEd25519Verifier {
  readonly verify: SignatureVerifier;
  /** KeyObjects held now (at most `cacheEntriesMax`). */
  cacheSize(): number;
  /** Counters since creation, for benchmarks and metrics. */
  stats(): { calls: number; cacheHits: number };
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
    // R = the identity satisfies [S]B = R + [k]A when S = k a mod L; libsodium refuses it.
    return accepted && !isSmallOrderEncoding(signature.subarray(0, 32));
  };

  return {
    verify: verifyEd25519,
    cacheSize: () => keys.size,
    stats: () => ({ calls, cacheHits }),
  };
}

/** The process's shared verifier (10,000 cached keys). */
export const nodeEd25519 = createNodeEd25519Verifier();

/** `(signature, message, publicKey) => boolean`, strict like the library, over node:crypto. */
export const nodeVerifyEd25519: SignatureVerifier = nodeEd25519.verify;
