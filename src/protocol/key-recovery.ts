/**
 * Key backup and recovery from a passphrase alone (docs/protocol.md section 9.6, docs/security.md).
 *
 * The interface's recovery needs a signature by the backed-up public key, and a device that lost
 * its keys cannot sign with them. So the key a backup is filed under is not the wallet's key but a
 * recovery key pair derived from the passphrase, together with the key that seals the wallet's
 * seed. Whoever knows the passphrase can rebuild both on any device; the server stores an opaque
 * sealed seed under a public key that says nothing about the wallet's own key.
 *
 *   master        = scrypt(NFKC(passphrase), salt = "svc:key-recovery:v1", N = 2^17, r = 8, p = 1, 32 bytes)
 *   recovery seed = HKDF-SHA256(ikm = master, salt = "", info = "svc:key-recovery:v1:signing", 32)
 *   sealing key   = HKDF-SHA256(ikm = master, salt = "", info = "svc:key-recovery:v1:sealing", 32)
 *   recovery key  = Ed25519 public key of the recovery seed (the backup's `public_key`)
 *
 *   sealed backup = 0x01 | nonce (24, random) | XChaCha20-Poly1305(sealing key, nonce,
 *                     aad = "svc:key-backup:v1:" | recovery key (32),
 *                     plaintext = wallet seed (32) | ASCII(device id) (1..128))
 *
 * The salt is a constant because recovery starts from the passphrase alone: one scrypt run per
 * guess tests every backup at once, so the passphrase must carry the entropy. The wallet program
 * generates one of 150 bits unless the user brings their own (docs/security.md says how costly a
 * guess is). Pure and isomorphic, like the rest of the protocol library.
 */
import { xchacha20poly1305 } from '@noble/ciphers/chacha.js';
import { hkdf } from '@noble/hashes/hkdf.js';
import { scrypt } from '@noble/hashes/scrypt.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { randomBytes } from '@noble/hashes/utils.js';
import { deviceIdPattern, secretKeyBytes } from './constants.ts';
import { concatBytes, isBytes, utf8, utf8Decode } from './bytes.ts';
import { ProtocolError } from './errors.ts';
import { generateKeyPair, type KeyPair } from './keys.ts';

/** The KDF's parameters: 128 MiB of memory per derivation (OWASP's first scrypt setting). */
export const recoveryKdf = { N: 2 ** 17, r: 8, p: 1, dkLen: 32, salt: 'svc:key-recovery:v1' } as const;
export const recoveryInfoSigning = 'svc:key-recovery:v1:signing';
export const recoveryInfoSealing = 'svc:key-recovery:v1:sealing';
export const backupAadPrefix = 'svc:key-backup:v1:';
export const backupFormatVersion = 0x01;
export const backupNonceBytes = 24;
const backupTagBytes = 16;
/** A passphrase the user brings must be at least this long (a generated one is 35 characters). */
export const recoveryPassphraseCharsMin = 16;
export const recoveryPassphraseCharsMax = 1024;

/** Smallest and largest sealed backup this format produces (device id of 1 and 128 characters). */
export const sealedBackupBytesMin = 1 + backupNonceBytes + secretKeyBytes + 1 + backupTagBytes;
export const sealedBackupBytesMax = 1 + backupNonceBytes + secretKeyBytes + 128 + backupTagBytes;

export interface RecoveryKeys {
  /** The recovery key pair: the backup is filed under its public key and recovery is signed by it. */
  readonly recovery: KeyPair;
  /** Seals and opens the wallet's seed. Secret, like the recovery seed. */
  readonly sealingKey: Uint8Array;
}

function passphraseBytes(passphrase: string): Uint8Array {
  const normalized = passphrase.normalize('NFKC');
  const characters = [...normalized].length;
  if (characters < recoveryPassphraseCharsMin || characters > recoveryPassphraseCharsMax) {
    throw new ProtocolError('invalid_argument', `a recovery passphrase is ${recoveryPassphraseCharsMin} to ${recoveryPassphraseCharsMax} characters`);
  }
  return utf8(normalized);
}

/** The KDF's output for a passphrase: the one slow step (about 0.5 s and 128 MiB). Secret. */
export function recoveryMaster(passphrase: string): Uint8Array {
  return scrypt(passphraseBytes(passphrase), utf8(recoveryKdf.salt), {
    N: recoveryKdf.N,
    r: recoveryKdf.r,
    p: recoveryKdf.p,
    dkLen: recoveryKdf.dkLen,
    maxmem: 256 * 1024 * 1024,
  });
}

/** The recovery key pair and the sealing key, each its own HKDF expansion of the master. */
export function recoveryKeysFromMaster(master: Uint8Array): RecoveryKeys {
  if (!isBytes(master, recoveryKdf.dkLen)) throw new ProtocolError('invalid_argument', `the recovery master is ${recoveryKdf.dkLen} bytes`);
  const recoverySeed = hkdf(sha256, master, new Uint8Array(0), utf8(recoveryInfoSigning), secretKeyBytes);
  const sealingKey = hkdf(sha256, master, new Uint8Array(0), utf8(recoveryInfoSealing), 32);
  return { recovery: generateKeyPair(recoverySeed), sealingKey };
}

/** The recovery key pair and the sealing key of a passphrase: the same on every device. */
export function deriveRecoveryKeys(passphrase: string): RecoveryKeys {
  const master = recoveryMaster(passphrase);
  try {
    return recoveryKeysFromMaster(master);
  } finally {
    master.fill(0);
  }
}

function backupAad(recoveryPublicKey: Uint8Array): Uint8Array {
  return concatBytes(utf8(backupAadPrefix), recoveryPublicKey);
}

/** What a backup holds: the wallet's Ed25519 seed and the device id it ran under. */
export interface BackupContent {
  readonly walletSecretKey: Uint8Array;
  readonly deviceId: string;
}

/** Seals a wallet's seed under the recovery keys. `nonce` only for test vectors; otherwise random. */
export function sealBackup(content: BackupContent, keys: RecoveryKeys, nonce: Uint8Array = randomBytes(backupNonceBytes)): Uint8Array {
  if (!isBytes(content.walletSecretKey, secretKeyBytes)) throw new ProtocolError('invalid_secret_key', `the wallet seed is ${secretKeyBytes} bytes`);
  if (!deviceIdPattern.test(content.deviceId)) throw new ProtocolError('invalid_argument', 'device id must be 1 to 128 characters of A-Z a-z 0-9 . _ -');
  if (!isBytes(nonce, backupNonceBytes)) throw new ProtocolError('invalid_argument', `the nonce is ${backupNonceBytes} bytes`);
  const plaintext = concatBytes(content.walletSecretKey, utf8(content.deviceId));
  const ciphertext = xchacha20poly1305(keys.sealingKey, nonce, backupAad(keys.recovery.publicKey)).encrypt(plaintext);
  plaintext.fill(0);
  return concatBytes(Uint8Array.of(backupFormatVersion), nonce, ciphertext);
}

/** Opens a sealed backup; a wrong passphrase or a changed byte fails authentication. */
export function openBackup(sealed: Uint8Array, keys: RecoveryKeys): BackupContent {
  if (!(sealed instanceof Uint8Array) || sealed.length < sealedBackupBytesMin || sealed.length > sealedBackupBytesMax) {
    throw new ProtocolError('sealed_malformed', `a sealed backup is ${sealedBackupBytesMin} to ${sealedBackupBytesMax} bytes`);
  }
  if (sealed[0] !== backupFormatVersion) throw new ProtocolError('sealed_malformed', `unknown backup format ${String(sealed[0])}`);
  const nonce = sealed.subarray(1, 1 + backupNonceBytes);
  let plaintext: Uint8Array;
  try {
    plaintext = xchacha20poly1305(keys.sealingKey, nonce, backupAad(keys.recovery.publicKey)).decrypt(sealed.subarray(1 + backupNonceBytes));
  } catch {
    throw new ProtocolError('sealed_authentication_failed', 'the backup does not open with this passphrase (or was changed)');
  }
  const walletSecretKey = plaintext.slice(0, secretKeyBytes);
  const deviceId = utf8Decode(plaintext.subarray(secretKeyBytes));
  plaintext.fill(0);
  if (!deviceIdPattern.test(deviceId)) throw new ProtocolError('sealed_malformed', 'the backup holds no valid device id');
  return { walletSecretKey, deviceId };
}

/** Crockford's base32 alphabet in lowercase (no i, l, o, u): easy to read back and to type. */
const passphraseAlphabet = '0123456789abcdefghjkmnpqrstvwxyz';
const passphraseGroups = 6;
const passphraseGroupChars = 5;

/**
 * A new passphrase of 30 random base32 characters (150 bits) in six groups of five, e.g.
 * `k3x9q-...`. Each character takes 5 bits of one random byte, so all 32 are equally likely.
 */
export function generateRecoveryPassphrase(random: (length: number) => Uint8Array = randomBytes): string {
  const bytes = random(passphraseGroups * passphraseGroupChars);
  const characters = [...bytes].map((byte) => passphraseAlphabet[byte & 31] as string);
  const groups: string[] = [];
  for (let group = 0; group < passphraseGroups; group += 1) {
    groups.push(characters.slice(group * passphraseGroupChars, (group + 1) * passphraseGroupChars).join(''));
  }
  return groups.join('-');
}

/** Bits of entropy in a generated passphrase. */
export const generatedPassphraseBits = passphraseGroups * passphraseGroupChars * 5;
