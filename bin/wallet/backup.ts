/**
 * `backup` and `recover`: the wallet's seed, sealed under keys derived from a recovery passphrase
 * (src/protocol/key-recovery.ts, docs/protocol.md section 9.6), kept by the server per recovery
 * key and device. Recovery needs nothing but the passphrase: it derives the recovery key pair,
 * asks which devices hold a backup under it, signs the recovery with it, and opens the seed.
 */
import { mkdirSync, readFileSync } from 'node:fs';
import { z } from 'zod';
import { signKeyOperation, type KeyOperationKind } from '../../src/protocol/auth-messages.ts';
import { bytesToHex, hexToBytes } from '../../src/protocol/bytes.ts';
import { deriveRecoveryKeys, generateRecoveryPassphrase, generatedPassphraseBits, openBackup, recoveryPassphraseCharsMin, sealBackup, type RecoveryKeys } from '../../src/protocol/key-recovery.ts';
import { isProtocolError } from '../../src/protocol/errors.ts';
import type { CommandContext } from './commands.ts';
import { WalletError } from './errors.ts';
import { getJson, postJson, serverPaths } from './http.ts';
import { loadWallet, restoreWallet, withWalletLock } from './store.ts';

/** Bound on what a passphrase file may hold. */
const passphraseFileCharsMax = 4096;

const checkAnswer = z.object({
  public_key: z.string(),
  has_backup: z.boolean(),
  devices: z.array(z.object({ device_id: z.string(), backed_up_at: z.string() })).max(64),
});
const backupAnswer = z.object({ public_key: z.string(), device_id: z.string(), created: z.boolean(), backed_up_at: z.string() });
const recoverAnswer = z.object({ public_key: z.string(), device_id: z.string(), encrypted_seed: z.string(), backed_up_at: z.string() });

/** The passphrase from a file (its first line), or from standard input for `-`. */
function readPassphrase(file: string): string {
  let text: string;
  try {
    text = readFileSync(file === '-' ? 0 : file, 'utf8');
  } catch (error) {
    throw new WalletError('usage', `cannot read --passphrase-file ${file}: ${error instanceof Error ? error.message : String(error)}`);
  }
  const line = text.slice(0, passphraseFileCharsMax).split(/\r?\n/, 1)[0] ?? '';
  if ([...line.normalize('NFKC')].length < recoveryPassphraseCharsMin) {
    throw new WalletError('invalid_input', `a recovery passphrase needs at least ${recoveryPassphraseCharsMin} characters; leave out --passphrase-file to get a generated one`);
  }
  return line;
}

function derive(passphrase: string): RecoveryKeys {
  try {
    return deriveRecoveryKeys(passphrase);
  } catch (error) {
    if (isProtocolError(error)) throw new WalletError('invalid_input', error.message);
    throw error;
  }
}

function signedFields(kind: KeyOperationKind, keys: RecoveryKeys, deviceId: string, nowMs: number) {
  const signed = signKeyOperation(kind, { deviceId, operationTimestampMs: nowMs }, keys.recovery.secretKey);
  return { device_signature: bytesToHex(signed.signature), operation_timestamp: signed.operationTimestampMs };
}

function parsed<S extends z.ZodType>(schema: S, body: unknown): z.output<S> {
  const result = schema.safeParse(body);
  if (!result.success) throw new WalletError('server_refused', `unexpected answer from the server: ${JSON.stringify(body).slice(0, 500)}`);
  return result.data;
}

export interface BackupOptions {
  readonly server: string;
  readonly passphraseFile: string | undefined;
}

/**
 * `backup`: seals this wallet's seed and device id under the passphrase's keys and stores it with
 * the server, always signed by the recovery key (the server needs that for every write but the
 * first, and a signed first write is accepted too). Without --passphrase-file a passphrase of 150
 * random bits is generated and printed once: it is the only way back to the keys.
 */
export async function backupCommand(context: CommandContext, options: BackupOptions): Promise<string> {
  const wallet = loadWallet(context.dir);
  const generated = options.passphraseFile === undefined;
  const passphrase = generated ? generateRecoveryPassphrase() : readPassphrase(options.passphraseFile as string);
  const keys = derive(passphrase);
  const sealed = sealBackup({ walletSecretKey: wallet.keyPair.secretKey, deviceId: wallet.deviceId }, keys);
  const recoveryPublicKey = bytesToHex(keys.recovery.publicKey);
  const answer = await postJson(
    options.server,
    serverPaths.keyBackup,
    { public_key: recoveryPublicKey, device_id: wallet.deviceId, encrypted_seed: bytesToHex(sealed), ...signedFields('backup', keys, wallet.deviceId, context.nowMs()) },
    { deviceId: wallet.deviceId },
  );
  const result = parsed(backupAnswer, answer.body);
  const lines = [
    `backed up to ${options.server}`,
    `recovery_key: ${result.public_key}`,
    `device_id:    ${result.device_id}`,
    `backed_up_at: ${result.backed_up_at}${result.created ? '' : ' (replaced this device\'s earlier backup)'}`,
  ];
  if (generated) {
    lines.push(
      `passphrase:   ${passphrase}`,
      `Write the passphrase down and keep it apart from this device (${generatedPassphraseBits} random bits): with it alone,`,
      '"wallet recover" brings these keys back on any device; without it the backup cannot be opened. It is not shown again.',
    );
  }
  return lines.join('\n');
}

export interface RecoverOptions {
  readonly server: string;
  readonly passphraseFile: string;
  /** Which device's backup, when the passphrase holds backups of several; default the newest. */
  readonly deviceId: string | undefined;
}

/**
 * `recover`: from the passphrase alone, finds the backups filed under its recovery key, fetches
 * one with a fresh signature by that key, opens it, and writes the wallet's keys back into a
 * directory whose keys are gone (its PLC files are kept).
 */
export async function recoverCommand(context: CommandContext, options: RecoverOptions): Promise<string> {
  const keys = derive(readPassphrase(options.passphraseFile));
  const recoveryPublicKey = bytesToHex(keys.recovery.publicKey);
  // Any device id names this request; the recovered wallet's own is inside the backup.
  const requestDevice = 'wallet-recovery';
  const found = await getJson(options.server, serverPaths.keyCheck(recoveryPublicKey), { deviceId: requestDevice });
  const check = found.found ? parsed(checkAnswer, found.body) : null;
  if (check === null || check.devices.length === 0) {
    throw new WalletError('no_backup', 'the server holds no backup under this passphrase (check it letter by letter)');
  }
  const chosen = options.deviceId === undefined ? check.devices[0] : check.devices.find((device) => device.device_id === options.deviceId);
  if (chosen === undefined) {
    throw new WalletError('no_backup', `no backup from device ${options.deviceId ?? ''}; the passphrase holds backups from ${check.devices.map((device) => device.device_id).join(', ')}`);
  }
  const answer = await postJson(
    options.server,
    serverPaths.keyRecover,
    { public_key: recoveryPublicKey, device_id: chosen.device_id, ...signedFields('recover', keys, chosen.device_id, context.nowMs()) },
    { deviceId: requestDevice },
  );
  const result = parsed(recoverAnswer, answer.body);
  let content;
  try {
    content = openBackup(hexToBytes(result.encrypted_seed), keys);
  } catch (error) {
    if (isProtocolError(error)) throw new WalletError('recovery_mismatch', `the backup does not open with this passphrase: ${error.message}`);
    throw error;
  }
  mkdirSync(context.dir, { recursive: true, mode: 0o700 });
  const wallet = withWalletLock(context.dir, () => restoreWallet(context.dir, content.walletSecretKey, content.deviceId, context.nowMs()));
  content.walletSecretKey.fill(0);
  return [
    `recovered from ${options.server}`,
    `public_key:   ${bytesToHex(wallet.keyPair.publicKey)}`,
    `device_id:    ${wallet.deviceId}`,
    `backed_up_at: ${result.backed_up_at}`,
  ].join('\n');
}
