/**
 * Key backup and recovery from a passphrase (src/protocol/key-recovery.ts, docs/protocol.md 9.5):
 * the committed vectors are exactly what the generator makes, they check out against independent
 * implementations (node:crypto's scrypt and HKDF, OpenSSL's Ed25519 through the server's strict
 * verifier), and a backup opens only with its own passphrase and unchanged bytes.
 */
import { hkdfSync, scryptSync } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { nodeVerifyEd25519 } from '../../../infra/ed25519-node.ts';
import { buildKeyRecoveryVectors, keyRecoveryVectorsPath } from '../../../scripts/gen-key-recovery-vectors.ts';
import { keyOperationMessage, verifyKeyOperation } from '../../../src/protocol/auth-messages.ts';
import { bytesToHex, hexToBytes, utf8 } from '../../../src/protocol/bytes.ts';
import { isProtocolError } from '../../../src/protocol/errors.ts';
import {
  deriveRecoveryKeys,
  generateRecoveryPassphrase,
  openBackup,
  recoveryKdf,
  recoveryKeysFromMaster,
  sealBackup,
  sealedBackupBytesMax,
  sealedBackupBytesMin,
} from '../../../src/protocol/key-recovery.ts';
import { generateKeyPair, publicKeyOf } from '../../../src/protocol/keys.ts';
import { encryptedSeedBytesMax, encryptedSeedBytesMin } from '../../../src/security/key-backup.ts';

type Vectors = ReturnType<typeof buildKeyRecoveryVectors>;
const committed = JSON.parse(readFileSync(keyRecoveryVectorsPath, 'utf8')) as Vectors;

function protocolCode(action: () => unknown): string {
  try {
    action();
  } catch (error) {
    if (isProtocolError(error)) return error.code;
    throw error;
  }
  return 'no error';
}

describe('key recovery vectors (test/src/protocol/vectors/key-recovery-v1.json)', () => {
  it('are exactly what the generator makes from the current code', () => {
    expect(buildKeyRecoveryVectors()).toEqual(committed);
  });

  it.each(committed.cases.map((vector) => [vector.name, vector] as const))('%s: check out against node:crypto and OpenSSL', (_name, vector) => {
    const password = Buffer.from(vector.passphrase.normalize('NFKC'), 'utf8');
    expect(password.toString('hex')).toBe(vector.passphrase_nfkc_utf8_hex);
    const master = scryptSync(password, Buffer.from(committed.kdf.salt, 'utf8'), 32, {
      N: committed.kdf.N,
      r: committed.kdf.r,
      p: committed.kdf.p,
      maxmem: 256 * 1024 * 1024,
    });
    expect(master.toString('hex')).toBe(vector.master);
    const expand = (info: string) => Buffer.from(hkdfSync('sha256', master, Buffer.alloc(0), Buffer.from(info, 'utf8'), 32)).toString('hex');
    expect(expand(committed.hkdf.info_signing)).toBe(vector.recovery_seed);
    expect(expand(committed.hkdf.info_sealing)).toBe(vector.sealing_key);
    expect(bytesToHex(publicKeyOf(hexToBytes(vector.recovery_seed, 32)))).toBe(vector.recovery_public_key);

    const keys = recoveryKeysFromMaster(hexToBytes(vector.master, 32));
    const opened = openBackup(hexToBytes(vector.sealed_backup), keys);
    expect(bytesToHex(opened.walletSecretKey)).toBe(vector.wallet_seed);
    expect(opened.deviceId).toBe(vector.device_id);
    expect(bytesToHex(publicKeyOf(opened.walletSecretKey))).toBe(vector.wallet_public_key);

    for (const [kind, message] of [['backup', vector.backup_message], ['recover', vector.recover_message]] as const) {
      const publicKey = hexToBytes(vector.recovery_public_key, 32);
      expect(keyOperationMessage(kind, { deviceId: message.device_id, publicKey, operationTimestampMs: message.operation_timestamp })).toBe(message.text);
      expect(nodeVerifyEd25519(hexToBytes(message.signature, 64), utf8(message.text), publicKey)).toBe(true);
      expect(verifyKeyOperation(kind, { deviceId: message.device_id, publicKey, operationTimestampMs: message.operation_timestamp, signature: hexToBytes(message.signature, 64) })).toBe(true);
    }
  });

  it('the generated passphrase vector maps its random bytes as documented', () => {
    const bytes = hexToBytes(committed.generated_passphrase.random_bytes);
    expect(generateRecoveryPassphrase((length) => bytes.slice(0, length))).toBe(committed.generated_passphrase.passphrase);
  });
});

describe('sealing and opening a backup', () => {
  const passphrase = 'a passphrase for the unit tests';
  const keys = deriveRecoveryKeys(passphrase);
  const wallet = generateKeyPair();

  it('round-trips the seed and the device id under a random nonce, and fits the server bounds', () => {
    const sealed = sealBackup({ walletSecretKey: wallet.secretKey, deviceId: 'phone-1' }, keys);
    const again = sealBackup({ walletSecretKey: wallet.secretKey, deviceId: 'phone-1' }, keys);
    expect(bytesToHex(sealed)).not.toBe(bytesToHex(again));
    const opened = openBackup(sealed, keys);
    expect(bytesToHex(opened.walletSecretKey)).toBe(bytesToHex(wallet.secretKey));
    expect(opened.deviceId).toBe('phone-1');
    expect(sealedBackupBytesMin).toBeGreaterThanOrEqual(encryptedSeedBytesMin);
    expect(sealedBackupBytesMax).toBeLessThanOrEqual(encryptedSeedBytesMax);
  });

  it('is the same on every device: the passphrase alone gives the same recovery key', () => {
    expect(bytesToHex(deriveRecoveryKeys(passphrase).recovery.publicKey)).toBe(bytesToHex(keys.recovery.publicKey));
    expect(bytesToHex(deriveRecoveryKeys(`${passphrase}.`).recovery.publicKey)).not.toBe(bytesToHex(keys.recovery.publicKey));
  });

  it('refuses another passphrase, any changed byte, a wrong version and a wrong length', () => {
    const sealed = sealBackup({ walletSecretKey: wallet.secretKey, deviceId: 'phone-1' }, keys);
    expect(protocolCode(() => openBackup(sealed, deriveRecoveryKeys('another passphrase entirely')))).toBe('sealed_authentication_failed');
    for (const index of [1, 30, sealed.length - 1]) {
      const changed = sealed.slice();
      changed[index] = (changed[index] as number) ^ 1;
      expect(protocolCode(() => openBackup(changed, keys))).toBe('sealed_authentication_failed');
    }
    const versioned = sealed.slice();
    versioned[0] = 2;
    expect(protocolCode(() => openBackup(versioned, keys))).toBe('sealed_malformed');
    expect(protocolCode(() => openBackup(sealed.slice(0, sealedBackupBytesMin - 1), keys))).toBe('sealed_malformed');
    // Another recovery key (the AAD) with the same sealing key: refused, so a backup cannot be moved under another key.
    const moved = { recovery: generateKeyPair(), sealingKey: keys.sealingKey };
    expect(protocolCode(() => openBackup(sealed, moved))).toBe('sealed_authentication_failed');
  });

  it('refuses a short passphrase and a device id the messages cannot carry', () => {
    expect(protocolCode(() => deriveRecoveryKeys('too short'))).toBe('invalid_argument');
    expect(protocolCode(() => sealBackup({ walletSecretKey: wallet.secretKey, deviceId: 'phone:1' }, keys))).toBe('invalid_argument');
    expect(recoveryKdf.N * recoveryKdf.r * 128).toBe(128 * 1024 * 1024);
  });

  it('generates passphrases of 30 base32 characters in six groups, each character equally likely', () => {
    const passphrase = generateRecoveryPassphrase();
    expect(passphrase).toMatch(/^[0-9a-hjkmnp-tv-z]{5}(-[0-9a-hjkmnp-tv-z]{5}){5}$/);
    const all = generateRecoveryPassphrase(() => Uint8Array.from({ length: 30 }, (_, index) => index + 32 * (index % 8)));
    expect(all.replaceAll('-', '')).toBe('0123456789abcdefghjkmnpqrstvwxyz'.slice(0, 30));
  });
});
