/**
 * Key backup and recovery through the service's existing routes (docs/protocol.md section 9.6,
 * the same as the CLI wallet's `backup` and `recover`): the seed and device id sealed under keys
 * derived from a generated recovery passphrase (src/protocol/key-recovery.ts: scrypt N = 2^17,
 * r = 8, p = 1), kept by the service per recovery key, every request signed by the recovery key.
 * The service holds only the sealed bytes; the recovery passphrase is shown once, here.
 */
import { signKeyOperation, type KeyOperationKind } from '../../src/protocol/auth-messages.ts';
import { bytesToHex, hexToBytes } from '../../src/protocol/bytes.ts';
import { deriveRecoveryKeys, generateRecoveryPassphrase, openBackup, sealBackup, type BackupContent, type RecoveryKeys } from '../../src/protocol/key-recovery.ts';
import { getJson, postJson } from './api.ts';
import type { Unlocked } from './vault.ts';

function signed(kind: KeyOperationKind, keys: RecoveryKeys, deviceId: string) {
  const operation = signKeyOperation(kind, { deviceId, operationTimestampMs: Date.now() }, keys.recovery.secretKey);
  return { device_signature: bytesToHex(operation.signature), operation_timestamp: operation.operationTimestampMs };
}

/** Backs this wallet's key up; answers the recovery passphrase (shown once) and when the service stored it. */
export async function backupKey(me: Unlocked): Promise<{ passphrase: string; backedUpAt: string }> {
  const passphrase = generateRecoveryPassphrase();
  const keys = deriveRecoveryKeys(passphrase);
  const sealed = sealBackup({ walletSecretKey: me.keyPair.secretKey, deviceId: me.deviceId }, keys);
  const answer = (await postJson('/api/v1/security/key/backup', me.deviceId, {
    public_key: bytesToHex(keys.recovery.publicKey),
    device_id: me.deviceId,
    encrypted_seed: bytesToHex(sealed),
    ...signed('backup', keys, me.deviceId),
  })) as { backed_up_at: string };
  return { passphrase, backedUpAt: answer.backed_up_at };
}

/** From the recovery passphrase alone: finds the newest backup under it, fetches it signed, opens it. */
export async function recoverKey(passphrase: string): Promise<BackupContent> {
  const keys = deriveRecoveryKeys(passphrase.trim());
  const recoveryKey = bytesToHex(keys.recovery.publicKey);
  const requestDevice = 'wallet-recovery';
  let check: { devices: { device_id: string }[] };
  try {
    check = (await getJson(`/api/v1/security/key/check/${recoveryKey}`, requestDevice)) as typeof check;
  } catch {
    check = { devices: [] };
  }
  const chosen = check.devices[0];
  if (chosen === undefined) throw new Error('The service holds no backup under this recovery passphrase: check it letter by letter.');
  const answer = (await postJson('/api/v1/security/key/recover', requestDevice, { public_key: recoveryKey, device_id: chosen.device_id, ...signed('recover', keys, chosen.device_id) })) as {
    encrypted_seed: string;
  };
  return openBackup(hexToBytes(answer.encrypted_seed), keys);
}
