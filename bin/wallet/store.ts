/**
 * The wallet directory: the device's key pair and every PLC it has issued, received or sent.
 *
 *   <dir>/wallet.json            public key, device id (mode 0600)
 *   <dir>/secret.key             the Ed25519 seed in hex (mode 0600; refused if group/other can read)
 *   <dir>/plcs/<token_id>.json   the latest verified chain of each PLC, with local flags
 *   <dir>/blocklist.json         the latest verified blocklist (bin/wallet/blocklist.ts)
 *   <dir>/lock                   held while a command changes state
 *
 * Every write goes to a temporary file first and is renamed into place, so a crash leaves either
 * the old state or the new one, never half a file. State files are parsed with zod on every read.
 */
import { randomUUID } from 'node:crypto';
import { closeSync, existsSync, mkdirSync, openSync, readdirSync, readFileSync, renameSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import {
  bytesToHex,
  generateKeyPair,
  hexToBytes,
  isUuidV4,
  plcJsonSchema,
  publicKeyOf,
  transferRecordJsonSchema,
  type KeyPair,
} from '../../src/protocol/index.ts';
import { WalletError } from './errors.ts';

/** Bound on the PLCs one wallet directory holds; `list` and nonce checks read them all. */
export const walletTokensMax = 10_000;
/** Bound on the fork proofs kept per PLC. */
export const forksPerTokenMax = 16;

/** A server URL the wallet remembers: absolute http(s). */
export const serverUrlSchema = z
  .string()
  .max(2048)
  .refine((value) => {
    try {
      const url = new URL(value);
      return url.protocol === 'http:' || url.protocol === 'https:';
    } catch {
      return false;
    }
  }, 'expected an absolute http(s) URL');

const walletFileSchema = z.strictObject({
  format: z.literal(1),
  public_key: z.string().regex(/^[0-9a-f]{64}$/),
  device_id: z.string().regex(/^[A-Za-z0-9._-]{1,128}$/),
  created_at: z.string(),
  /** The server every online command uses unless given --server (`init --server`, `config --server`). */
  server: serverUrlSchema.optional(),
  /** The service key the blocklist must be signed with (`config --blocklist-key`); absent: the development key. */
  blocklist_key: z.string().regex(/^[0-9a-f]{64}$/).optional(),
});

const forkEvidenceSchema = z.strictObject({
  prev_hash: z.string().regex(/^[0-9a-f]{64}$/),
  culprit_pubkey: z.string().regex(/^[0-9a-f]{64}$/),
  first: transferRecordJsonSchema,
  second: transferRecordJsonSchema,
  detected_at: z.string(),
});

/** Bound on the redeem attempts kept per PLC (the latest ones). */
export const redeemAttemptsMax = 16;

/**
 * One signed redeem authorisation and what became of it. `outcome`: `accepted` (the server opened
 * a redemption: `redemption_id`, and `status` as last seen), `refused` (the server answered a
 * refusal: `code`), `unknown` (posted, no answer: the server may or may not have it), `not_posted`
 * (signed without a server: printed only).
 */
const redeemAttemptSchema = z.strictObject({
  signed_at: z.string(),
  timestamp_ms: z.number().int(),
  rail: z.enum(['pix', 'boleto']),
  destination: z.string(),
  outcome: z.enum(['accepted', 'refused', 'unknown', 'not_posted']),
  redemption_id: z.string().nullable(),
  status: z.string().nullable(),
  code: z.string().nullable(),
  updated_at: z.string(),
});

/** What the server answered when it refused to register a PLC this wallet issued. */
const serverRefusalSchema = z.strictObject({ code: z.string(), message: z.string(), at: z.string() });

const tokenFileSchema = z.strictObject({
  format: z.literal(1),
  plc: plcJsonSchema,
  updated_at: z.string(),
  /** When a server first registered this PLC for this wallet: its create (issuer) or a `register` of its chain (holder). */
  registered_at: z.string().nullable(),
  cancel_signed_at: z.string().nullable(),
  redeem_signed_at: z.string().nullable(),
  forks: z.array(forkEvidenceSchema).max(forksPerTokenMax),
  /** The server's refusal of this wallet's create, if it refused (absent in files written before). */
  server_refusal: serverRefusalSchema.nullable().optional(),
  /** Redeem authorisations signed for this PLC, oldest first (absent in files written before). */
  redeem_attempts: z.array(redeemAttemptSchema).max(redeemAttemptsMax).optional(),
});

export type WalletFile = z.infer<typeof walletFileSchema>;
export type TokenFile = z.infer<typeof tokenFileSchema>;
export type ForkEvidenceJson = z.infer<typeof forkEvidenceSchema>;
export type RedeemAttempt = z.infer<typeof redeemAttemptSchema>;

export interface Wallet {
  readonly dir: string;
  readonly keyPair: KeyPair;
  readonly deviceId: string;
  readonly server: string | undefined;
  /** The blocklist's trusted service key (hex), when `config --blocklist-key` set one. */
  readonly blocklistKey: string | undefined;
}

export function writeAtomic(path: string, content: string, mode: number): void {
  const temporary = `${path}.tmp-${process.pid}`;
  writeFileSync(temporary, content, { mode });
  renameSync(temporary, path);
}

export function readJson(path: string): unknown {
  try {
    return JSON.parse(readFileSync(path, 'utf8'));
  } catch (error) {
    throw new WalletError('corrupt_state', `cannot read ${path}: ${error instanceof Error ? error.message : String(error)}`);
  }
}

export function initWallet(dir: string, nowMs: number, server?: string): Wallet {
  if (existsSync(join(dir, 'wallet.json')) || existsSync(join(dir, 'secret.key'))) {
    throw new WalletError('already_initialised', `${dir} already holds a wallet`);
  }
  mkdirSync(join(dir, 'plcs'), { recursive: true, mode: 0o700 });
  const keyPair = generateKeyPair();
  const deviceId = randomUUID();
  // The secret key is written first and exclusively ('wx'): two concurrent inits cannot both win.
  writeFileSync(join(dir, 'secret.key'), `${bytesToHex(keyPair.secretKey)}\n`, { mode: 0o600, flag: 'wx' });
  const walletFile: WalletFile = {
    format: 1,
    public_key: bytesToHex(keyPair.publicKey),
    device_id: deviceId,
    created_at: new Date(nowMs).toISOString(),
    ...(server === undefined ? {} : { server }),
  };
  writeAtomic(join(dir, 'wallet.json'), `${JSON.stringify(walletFileSchema.parse(walletFile), null, 2)}\n`, 0o600);
  return { dir, keyPair, deviceId, server, blocklistKey: undefined };
}

/** Remembers (or, with undefined, forgets) the server every online command uses by default. */
export function setWalletServer(dir: string, server: string | undefined): void {
  const walletPath = join(dir, 'wallet.json');
  const parsed = walletFileSchema.safeParse(readJson(walletPath));
  if (!parsed.success) throw new WalletError('corrupt_state', `${walletPath} is not a wallet file`);
  const { server: _previous, ...rest } = parsed.data;
  const next: WalletFile = server === undefined ? rest : { ...rest, server };
  writeAtomic(walletPath, `${JSON.stringify(walletFileSchema.parse(next), null, 2)}\n`, 0o600);
}

/** Sets (or, with undefined, clears) the service key the blocklist must be signed with. */
export function setWalletBlocklistKey(dir: string, key: string | undefined): void {
  const walletPath = join(dir, 'wallet.json');
  const parsed = walletFileSchema.safeParse(readJson(walletPath));
  if (!parsed.success) throw new WalletError('corrupt_state', `${walletPath} is not a wallet file`);
  const { blocklist_key: _previous, ...rest } = parsed.data;
  const next: WalletFile = key === undefined ? rest : { ...rest, blocklist_key: key };
  writeAtomic(walletPath, `${JSON.stringify(walletFileSchema.parse(next), null, 2)}\n`, 0o600);
}

/** Removes a PLC's file (only for a PLC no server and no other wallet ever saw: see `drop`). */
export function deleteToken(dir: string, tokenId: string): void {
  unlinkSync(tokenPath(dir, tokenId));
}

/**
 * Puts back a wallet's keys from a recovered seed (`recover`): the secret key and, when missing,
 * the wallet file. PLC files in the directory are kept: they are what the keys unlock again. A
 * directory that still holds a secret key is refused, and so is a wallet file of another key.
 */
export function restoreWallet(dir: string, secretKey: Uint8Array, deviceId: string, nowMs: number): Wallet {
  const keyPath = join(dir, 'secret.key');
  const walletPath = join(dir, 'wallet.json');
  if (existsSync(keyPath)) throw new WalletError('already_initialised', `${dir} already holds a secret key; recover into a directory whose keys are gone`);
  const publicKey = publicKeyOf(secretKey);
  let walletDeviceId = deviceId;
  let walletServer: string | undefined;
  let walletBlocklistKey: string | undefined;
  if (existsSync(walletPath)) {
    const parsed = walletFileSchema.safeParse(readJson(walletPath));
    if (!parsed.success) throw new WalletError('corrupt_state', `${walletPath} is not a wallet file`);
    if (parsed.data.public_key !== bytesToHex(publicKey)) {
      throw new WalletError('recovery_mismatch', `${walletPath} belongs to key ${parsed.data.public_key}, not to the recovered key ${bytesToHex(publicKey)}`);
    }
    walletDeviceId = parsed.data.device_id;
    walletServer = parsed.data.server;
    walletBlocklistKey = parsed.data.blocklist_key;
  }
  mkdirSync(join(dir, 'plcs'), { recursive: true, mode: 0o700 });
  writeFileSync(keyPath, `${bytesToHex(secretKey)}\n`, { mode: 0o600, flag: 'wx' });
  if (!existsSync(walletPath)) {
    const walletFile: WalletFile = { format: 1, public_key: bytesToHex(publicKey), device_id: deviceId, created_at: new Date(nowMs).toISOString() };
    writeAtomic(walletPath, `${JSON.stringify(walletFile, null, 2)}\n`, 0o600);
  }
  return { dir, keyPair: { secretKey: secretKey.slice(), publicKey }, deviceId: walletDeviceId, server: walletServer, blocklistKey: walletBlocklistKey };
}

export function loadWallet(dir: string): Wallet {
  const walletPath = join(dir, 'wallet.json');
  const keyPath = join(dir, 'secret.key');
  if (!existsSync(walletPath) || !existsSync(keyPath)) {
    throw new WalletError('not_initialised', `no wallet in ${dir}; run "wallet init --dir ${dir}" first`);
  }
  if (process.platform !== 'win32' && (statSync(keyPath).mode & 0o077) !== 0) {
    throw new WalletError('insecure_key_file', `${keyPath} is readable by other users; run "chmod 600 ${keyPath}"`);
  }
  const parsed = walletFileSchema.safeParse(readJson(walletPath));
  if (!parsed.success) throw new WalletError('corrupt_state', `${walletPath} is not a wallet file`);
  let secretKey: Uint8Array;
  try {
    secretKey = hexToBytes(readFileSync(keyPath, 'utf8').trim(), 32);
  } catch {
    throw new WalletError('corrupt_state', `${keyPath} does not hold a 32-byte hex key`);
  }
  const publicKey = publicKeyOf(secretKey);
  if (bytesToHex(publicKey) !== parsed.data.public_key) {
    throw new WalletError('corrupt_state', `${keyPath} does not match the public key in ${walletPath}`);
  }
  return { dir, keyPair: { secretKey, publicKey }, deviceId: parsed.data.device_id, server: parsed.data.server, blocklistKey: parsed.data.blocklist_key };
}

/**
 * Runs `action` holding the wallet's lock file. The lock stops two commands from signing from the
 * same state at once, which would make this device the author of a fork. A lock left behind by a
 * crash is reported, never broken automatically: the user must check nothing is running.
 */
export function withWalletLock<T>(dir: string, action: () => T): T {
  const lockPath = join(dir, 'lock');
  let fd: number;
  try {
    fd = openSync(lockPath, 'wx', 0o600);
  } catch {
    throw new WalletError('wallet_busy', `${lockPath} exists: another wallet command is running (remove the file if none is)`);
  }
  try {
    writeFileSync(fd, `${process.pid}\n`);
    return action();
  } finally {
    closeSync(fd);
    unlinkSync(lockPath);
  }
}

function tokenPath(dir: string, tokenId: string): string {
  // Token ids name files: only a canonical UUID may reach the file system.
  if (!isUuidV4(tokenId)) throw new WalletError('invalid_input', `token id must be a lowercase UUID v4, got ${JSON.stringify(tokenId)}`);
  return join(dir, 'plcs', `${tokenId}.json`);
}

export function findToken(dir: string, tokenId: string): TokenFile | undefined {
  const path = tokenPath(dir, tokenId);
  if (!existsSync(path)) return undefined;
  const parsed = tokenFileSchema.safeParse(readJson(path));
  if (!parsed.success) throw new WalletError('corrupt_state', `${path} is not a valid PLC file`);
  return parsed.data;
}

export function loadToken(dir: string, tokenId: string): TokenFile {
  const token = findToken(dir, tokenId);
  if (token === undefined) throw new WalletError('unknown_token', `this wallet holds no PLC ${tokenId}`);
  return token;
}

export function saveToken(dir: string, token: TokenFile): void {
  const path = tokenPath(dir, token.plc.token_id);
  if (!existsSync(path) && listTokenIds(dir).length >= walletTokensMax) {
    throw new WalletError('invalid_input', `this wallet already holds ${walletTokensMax} PLCs`);
  }
  writeAtomic(path, `${JSON.stringify(tokenFileSchema.parse(token), null, 2)}\n`, 0o600);
}

export function listTokenIds(dir: string): string[] {
  const plcsDir = join(dir, 'plcs');
  if (!existsSync(plcsDir)) return [];
  return readdirSync(plcsDir)
    .filter((name) => name.endsWith('.json'))
    .map((name) => name.slice(0, -'.json'.length))
    .filter(isUuidV4)
    .sort()
    .slice(0, walletTokensMax);
}
