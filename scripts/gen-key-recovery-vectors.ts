/**
 * Writes test/src/protocol/vectors/key-recovery-v1.json: the test vectors of key backup and recovery
 * (docs/protocol.md sections 9.3, 9.5 and 9.6) from fixed inputs, so that every run gives the same
 * bytes (scrypt, HKDF and Ed25519 signing are deterministic; the sealing nonce is fixed here).
 *
 *   npx node scripts/gen-key-recovery-vectors.ts
 *
 * test/src/protocol/key-recovery.test.ts rebuilds them in memory and compares them with the file.
 * Every passphrase and key here is a throwaway test value.
 */
import { writeFileSync } from 'node:fs';
import { sha256 } from '@noble/hashes/sha2.js';
import { keyOperationMessage, signKeyOperation, type KeyOperationKind } from '../src/protocol/auth-messages.ts';
import { bytesToHex, concatBytes, utf8 } from '../src/protocol/bytes.ts';
import {
  backupAadPrefix,
  backupFormatVersion,
  generateRecoveryPassphrase,
  recoveryInfoSealing,
  recoveryInfoSigning,
  recoveryKdf,
  recoveryKeysFromMaster,
  recoveryMaster,
  sealBackup,
} from '../src/protocol/key-recovery.ts';
import { generateKeyPair } from '../src/protocol/keys.ts';

export const keyRecoveryVectorsPath = new URL('../test/src/protocol/vectors/key-recovery-v1.json', import.meta.url);

const label = (name: string): Uint8Array => sha256(utf8(`svc:key-recovery:test-vector:${name}`));

/** Two passphrases: plain ASCII (a generated one), and one whose NFKC form differs from what is typed. */
const cases = [
  { name: 'generated', passphrase: generateRecoveryPassphrase((length) => label('generated-passphrase').slice(0, length)) },
  // Full-width letters and a decomposed "é" (e + U+0301): NFKC turns them into ASCII and U+00E9.
  { name: 'unicode', passphrase: 'ｃｏｒｒｅｃｔ horse battery staple cafe\u0301' },
] as const;

const operationTimestampMs = 1_795_341_600_000;

function operationVector(kind: KeyOperationKind, secretKey: Uint8Array, publicKey: Uint8Array, deviceId: string) {
  const signed = signKeyOperation(kind, { deviceId, operationTimestampMs }, secretKey);
  return {
    device_id: deviceId,
    operation_timestamp: operationTimestampMs,
    text: keyOperationMessage(kind, { deviceId, publicKey, operationTimestampMs }),
    signature: bytesToHex(signed.signature),
  };
}

export function buildKeyRecoveryVectors() {
  return {
    description:
      'Key backup and recovery from a passphrase (docs/protocol.md 9.6): scrypt master, HKDF-SHA256 recovery seed and sealing key, ' +
      'the Ed25519 recovery key, the sealed backup (XChaCha20-Poly1305, fixed nonce here, random in use), and the signed backup and recover messages (9.3).',
    kdf: {
      algorithm: 'scrypt',
      N: recoveryKdf.N,
      r: recoveryKdf.r,
      p: recoveryKdf.p,
      dk_len: recoveryKdf.dkLen,
      salt: recoveryKdf.salt,
      salt_hex: bytesToHex(utf8(recoveryKdf.salt)),
      password: 'UTF-8 of the passphrase in Unicode NFKC',
    },
    hkdf: { hash: 'SHA-256', salt_hex: '', info_signing: recoveryInfoSigning, info_sealing: recoveryInfoSealing, length: 32 },
    sealed_layout: `0x${backupFormatVersion.toString(16).padStart(2, '0')} | nonce (24) | ciphertext of (wallet seed (32) | ASCII device id) | tag (16); aad = "${backupAadPrefix}" | recovery public key (32)`,
    generated_passphrase: {
      description: 'each of 30 random bytes picks alphabet[byte & 31] of "0123456789abcdefghjkmnpqrstvwxyz"; six groups of five joined by "-"',
      random_bytes: bytesToHex(label('generated-passphrase').slice(0, 30)),
      passphrase: cases[0].passphrase,
    },
    cases: cases.map(({ name, passphrase }) => {
      const master = recoveryMaster(passphrase);
      const keys = recoveryKeysFromMaster(master);
      const wallet = generateKeyPair(label(`${name}:wallet-seed`));
      const deviceId = `${name}-phone.01`;
      const nonce = label(`${name}:nonce`).slice(0, 24);
      const sealed = sealBackup({ walletSecretKey: wallet.secretKey, deviceId }, keys, nonce);
      return {
        name,
        passphrase,
        passphrase_nfkc_utf8_hex: bytesToHex(utf8(passphrase.normalize('NFKC'))),
        master: bytesToHex(master),
        recovery_seed: bytesToHex(keys.recovery.secretKey),
        recovery_public_key: bytesToHex(keys.recovery.publicKey),
        sealing_key: bytesToHex(keys.sealingKey),
        wallet_seed: bytesToHex(wallet.secretKey),
        wallet_public_key: bytesToHex(wallet.publicKey),
        device_id: deviceId,
        nonce: bytesToHex(nonce),
        aad: bytesToHex(concatBytes(utf8(backupAadPrefix), keys.recovery.publicKey)),
        plaintext: bytesToHex(concatBytes(wallet.secretKey, utf8(deviceId))),
        sealed_backup: bytesToHex(sealed),
        backup_message: operationVector('backup', keys.recovery.secretKey, keys.recovery.publicKey, deviceId),
        recover_message: operationVector('recover', keys.recovery.secretKey, keys.recovery.publicKey, deviceId),
      };
    }),
  };
}

if (import.meta.main) {
  const vectors = buildKeyRecoveryVectors();
  writeFileSync(keyRecoveryVectorsPath, `${JSON.stringify(vectors, null, 2)}\n`);
  console.log(`wrote ${keyRecoveryVectorsPath.pathname}`);
}
