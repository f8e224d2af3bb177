/**
 * The sealed form of a payload (a transport-form PLC, typically): XChaCha20-Poly1305 under a key
 * both parties derive from their Ed25519 keys, so nothing but the two keys is needed to exchange
 * it over BLE or NFC.
 *
 *   X25519 keys:  the Ed25519 keys mapped to Curve25519 (RFC 7748 birational map for public keys,
 *                 the clamped first half of SHA-512(seed) for secret keys; libsodium's
 *                 crypto_sign_ed25519_{pk,sk}_to_curve25519)
 *   shared:       X25519(own X25519 secret, peer X25519 public); an all-zero result is refused
 *   key:          HKDF-SHA256(ikm = shared, salt = "svc:plc:sealed:v2\0",
 *                             info = sender Ed25519 key | recipient Ed25519 key, length 32)
 *   AAD:          "svc:plc:sealed:aad:v2\0" | 0x02 | sender Ed25519 key | recipient Ed25519 key
 *   sealed bytes: 0x02 | sender Ed25519 key (32) | nonce (24, random) | ciphertext | tag (16)
 *
 * The key is static-static: both directions share one X25519 secret, but the ordered keys in
 * `info` give each direction its own key. Random 24-byte nonces make nonce reuse negligible
 * without any state. There is no forward secrecy: whoever later learns either secret key can
 * open past payloads; that is acceptable for PLCs, whose chains are not secret from the server.
 */
import { xchacha20poly1305 } from '@noble/ciphers/chacha.js';
import { ed25519, x25519 } from '@noble/curves/ed25519.js';
import { hkdf } from '@noble/hashes/hkdf.js';
import { sha256 } from '@noble/hashes/sha2.js';
import {
  domainTags,
  publicKeyBytes,
  sealedFormatVersion,
  sealedNonceBytes,
  sealedPlaintextBytesMax,
  sealedTagBytes,
} from './constants.ts';
import { bytesEqual, concatBytes, isBytes, u8 } from './bytes.ts';
import { ProtocolError } from './errors.ts';
import { assertPublicKey, isValidPublicKey, publicKeyOf, randomNonce } from './keys.ts';

const headerBytes = 1 + publicKeyBytes + sealedNonceBytes;
export const sealedBytesMin = headerBytes + sealedTagBytes;
export const sealedBytesMax = headerBytes + sealedPlaintextBytesMax + sealedTagBytes;

export interface SealedKeyMaterial {
  readonly sharedSecret: Uint8Array;
  readonly key: Uint8Array;
  readonly aad: Uint8Array;
}

/**
 * Key agreement from one side: `ownSecretKey` is the sender's or the recipient's Ed25519 seed,
 * `peerPublicKey` the other party's Ed25519 key. Both sides get the same material.
 */
export function deriveSealedKeyMaterial(
  ownSecretKey: Uint8Array,
  peerPublicKey: Uint8Array,
  senderPublicKey: Uint8Array,
  recipientPublicKey: Uint8Array,
): SealedKeyMaterial {
  assertPublicKey(peerPublicKey, 'peer key');
  let sharedSecret: Uint8Array;
  try {
    sharedSecret = x25519.getSharedSecret(ed25519.utils.toMontgomerySecret(ownSecretKey), ed25519.utils.toMontgomery(peerPublicKey));
  } catch {
    throw new ProtocolError('invalid_public_key', 'key agreement failed: the peer key is unusable');
  }
  const key = hkdf(sha256, sharedSecret, domainTags.sealedKdfSalt, concatBytes(senderPublicKey, recipientPublicKey), 32);
  const aad = concatBytes(domainTags.sealedAad, u8(sealedFormatVersion), senderPublicKey, recipientPublicKey);
  return { sharedSecret, key, aad };
}

export interface SealParams {
  readonly senderSecretKey: Uint8Array;
  readonly recipientPublicKey: Uint8Array;
  readonly plaintext: Uint8Array;
  /** Defaults to 24 fresh random bytes; fixed only in test vectors. */
  readonly nonce?: Uint8Array;
}

export function sealPayload(params: SealParams): Uint8Array {
  const senderPublicKey = publicKeyOf(params.senderSecretKey);
  assertPublicKey(params.recipientPublicKey, 'recipient key');
  if (!(params.plaintext instanceof Uint8Array) || params.plaintext.length > sealedPlaintextBytesMax) {
    throw new ProtocolError('invalid_argument', `plaintext must be at most ${sealedPlaintextBytesMax} bytes`);
  }
  const nonce = params.nonce?.slice() ?? randomNonce(sealedNonceBytes);
  if (!isBytes(nonce, sealedNonceBytes)) throw new ProtocolError('invalid_argument', `nonce is ${sealedNonceBytes} bytes`);
  const { key, aad } = deriveSealedKeyMaterial(params.senderSecretKey, params.recipientPublicKey, senderPublicKey, params.recipientPublicKey);
  const ciphertext = xchacha20poly1305(key, nonce, aad).encrypt(params.plaintext);
  return concatBytes(u8(sealedFormatVersion), senderPublicKey, nonce, ciphertext);
}

export interface OpenParams {
  readonly recipientSecretKey: Uint8Array;
  readonly sealed: Uint8Array;
  /** When given, a payload sealed by any other key is refused with `unexpected_sender`. */
  readonly expectedSenderPublicKey?: Uint8Array;
}

export interface OpenedPayload {
  readonly senderPublicKey: Uint8Array;
  readonly plaintext: Uint8Array;
}

export function openSealedPayload(params: OpenParams): OpenedPayload {
  const { sealed } = params;
  if (!(sealed instanceof Uint8Array) || sealed.length < sealedBytesMin || sealed.length > sealedBytesMax) {
    throw new ProtocolError('sealed_malformed', `sealed payload must be ${sealedBytesMin} to ${sealedBytesMax} bytes`);
  }
  if (sealed[0] !== sealedFormatVersion) throw new ProtocolError('sealed_malformed', `unknown sealed format version ${sealed[0]}`);
  const senderPublicKey = sealed.slice(1, 1 + publicKeyBytes);
  const nonce = sealed.slice(1 + publicKeyBytes, headerBytes);
  if (params.expectedSenderPublicKey !== undefined && !bytesEqual(params.expectedSenderPublicKey, senderPublicKey)) {
    throw new ProtocolError('unexpected_sender', 'payload was sealed by another key than expected');
  }
  // A sender field that is not a usable key can only come from corruption or forgery.
  if (!isValidPublicKey(senderPublicKey)) {
    throw new ProtocolError('sealed_authentication_failed', 'sealed payload does not authenticate');
  }
  const recipientPublicKey = publicKeyOf(params.recipientSecretKey);
  let material: SealedKeyMaterial;
  try {
    material = deriveSealedKeyMaterial(params.recipientSecretKey, senderPublicKey, senderPublicKey, recipientPublicKey);
  } catch {
    throw new ProtocolError('sealed_authentication_failed', 'sealed payload does not authenticate');
  }
  try {
    const plaintext = xchacha20poly1305(material.key, nonce, material.aad).decrypt(sealed.subarray(headerBytes));
    return { senderPublicKey, plaintext };
  } catch {
    throw new ProtocolError('sealed_authentication_failed', 'sealed payload does not authenticate');
  }
}
