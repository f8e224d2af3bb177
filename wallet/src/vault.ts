/**
 * The wallet's key, made on this device and kept in IndexedDB only encrypted (docs/wallet.md,
 * "Keys"). The passphrase goes through scrypt (memory-hard; N = 2^16, r = 8, p = 1: 64 MiB and
 * about a second on a phone), whose 32-byte output is the XChaCha20-Poly1305 key of the vault; the
 * public key and the format are its associated data, so a vault cannot be spliced with another
 * key's. A wrong passphrase fails the Poly1305 tag: refused, nothing learnt. The unlocked secret
 * key lives in this page's memory only, until the wallet is locked or the page closes.
 */
import { xchacha20poly1305 } from '@noble/ciphers/chacha.js';
import { scryptAsync } from '@noble/hashes/scrypt.js';
import { randomBytes } from '@noble/hashes/utils.js';
import { bytesToHex, generateKeyPair, hexToBytes, publicKeyOf, type KeyPair } from '../../src/protocol/index.ts';
import { getMeta, putMeta } from './db.ts';

export const kdfParams = { name: 'scrypt', N: 2 ** 16, r: 8, p: 1, dkLen: 32 } as const;
export const passphraseCharsMin = 8;

export interface VaultRecord {
  format: 1;
  kdf: { name: 'scrypt'; N: number; r: number; p: number; salt: string };
  nonce: string;
  ciphertext: string;
  public_key: string;
  device_id: string;
  created_at: number;
}

export interface Unlocked {
  keyPair: KeyPair;
  publicKeyHex: string;
  deviceId: string;
}

const encoder = new TextEncoder();

function associatedData(publicKeyHex: string): Uint8Array {
  return encoder.encode(`plc-wallet-vault-v1:${publicKeyHex}`);
}

async function deriveKey(passphrase: string, salt: Uint8Array, kdf: { N: number; r: number; p: number }): Promise<Uint8Array> {
  return scryptAsync(encoder.encode(passphrase.normalize('NFKC')), salt, { N: kdf.N, r: kdf.r, p: kdf.p, dkLen: 32, asyncTick: 20 });
}

export async function seal(secretKey: Uint8Array, publicKeyHex: string, deviceId: string, passphrase: string, nowMs: number): Promise<VaultRecord> {
  const salt = randomBytes(16);
  const key = await deriveKey(passphrase, salt, kdfParams);
  const nonce = randomBytes(24);
  const ciphertext = xchacha20poly1305(key, nonce, associatedData(publicKeyHex)).encrypt(secretKey);
  key.fill(0);
  return {
    format: 1,
    kdf: { name: 'scrypt', N: kdfParams.N, r: kdfParams.r, p: kdfParams.p, salt: bytesToHex(salt) },
    nonce: bytesToHex(nonce),
    ciphertext: bytesToHex(ciphertext),
    public_key: publicKeyHex,
    device_id: deviceId,
    created_at: nowMs,
  };
}

export const loadVault = (): Promise<VaultRecord | undefined> => getMeta<VaultRecord>('vault');

export class WrongPassphrase extends Error {}

export async function openVault(vault: VaultRecord, passphrase: string): Promise<Unlocked> {
  const key = await deriveKey(passphrase, hexToBytes(vault.kdf.salt, 16), vault.kdf);
  let secretKey: Uint8Array;
  try {
    secretKey = xchacha20poly1305(key, hexToBytes(vault.nonce, 24), associatedData(vault.public_key)).decrypt(hexToBytes(vault.ciphertext, 48));
  } catch {
    throw new WrongPassphrase('Wrong passphrase: the wallet stays locked.');
  } finally {
    key.fill(0);
  }
  const publicKey = publicKeyOf(secretKey);
  if (bytesToHex(publicKey) !== vault.public_key) throw new WrongPassphrase('The stored key does not match its public key: the vault is damaged.');
  return { keyPair: { secretKey, publicKey }, publicKeyHex: vault.public_key, deviceId: vault.device_id };
}

/** Makes a new key on this device (or takes the one a backup restored) and keeps it sealed under the passphrase. */
export async function createVault(passphrase: string, nowMs: number, restored?: { secretKey: Uint8Array; deviceId: string }): Promise<Unlocked> {
  if (passphrase.length < passphraseCharsMin) throw new Error(`Choose a passphrase of at least ${passphraseCharsMin} characters.`);
  const keyPair = restored === undefined ? generateKeyPair() : { secretKey: restored.secretKey, publicKey: publicKeyOf(restored.secretKey) };
  const publicKeyHex = bytesToHex(keyPair.publicKey);
  const deviceId = restored?.deviceId ?? `wallet-${bytesToHex(randomBytes(8))}`;
  await putMeta('vault', await seal(keyPair.secretKey, publicKeyHex, deviceId, passphrase, nowMs));
  return { keyPair, publicKeyHex, deviceId };
}

