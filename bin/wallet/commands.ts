/**
 * The wallet commands. Each takes the parsed options and returns what it prints on stdout;
 * notices go to stderr through `context.notice`. Commands that change state run under the wallet
 * lock and persist the new state before printing anything a peer could act on: a signed transfer
 * that was shown but not saved could later be signed again differently, and that is a fork.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import {
  appendTransfer,
  bytesEqual,
  bytesToHex,
  cancelAuthorizationToJson,
  checkExpiry,
  decodeTransportText,
  detectFork,
  encodeTransportText,
  hexToBytes,
  isPlcCurrency,
  isProtocolError,
  isValidPublicKey,
  msToIso,
  parseAmountInput,
  parsePlcJson,
  plcToJson,
  redeemAuthorizationToJson,
  signCancel,
  signRedeem,
  transferRecordToJson,
  transportTextPrefix,
  ttlHoursMax,
  ttlHoursMin,
  verifyPlc,
  createPlc,
  type Plc,
  type Verified,
} from '../../src/protocol/index.ts';
import { WalletError } from './errors.ts';
import { describeLife, holderState, renderPlc } from './format.ts';
import { postJson, serverPaths } from './http.ts';
import {
  findToken,
  forksPerTokenMax,
  initWallet,
  listTokenIds,
  loadToken,
  loadWallet,
  saveToken,
  withWalletLock,
  type TokenFile,
  type Wallet,
} from './store.ts';

export interface CommandContext {
  readonly dir: string;
  readonly nowMs: () => number;
  readonly notice: (line: string) => void;
}

/** Bound on what `receive` reads: a JSON PLC with 32 records is about 20 KB. */
const inputCharsMax = 256 * 1024;
/** Bound on the lines `list` prints. */
const listLinesMax = 1000;

function verified(plc: Plc, what: string): Verified {
  const result = verifyPlc(plc);
  if (!result.ok) {
    throw new WalletError('rejected', `${what} fails verification: ${result.reason} at ${result.index === null ? 'the commitment' : `record ${result.index}`} (${result.detail})`);
  }
  return result;
}

function storedPlc(token: TokenFile): Plc {
  return parsePlcJson(token.plc);
}

function assertAlive(plc: Plc, nowMs: number): void {
  const expiry = checkExpiry(plc.commitment, nowMs);
  if (!expiry.ok) {
    throw new WalletError('expired', expiry.reason === 'expired' ? `PLC ${plc.commitment.tokenId} has expired` : `PLC ${plc.commitment.tokenId} is not valid yet: check this device's clock`);
  }
}

function assertOpen(token: TokenFile): void {
  if (token.cancel_signed_at !== null) throw new WalletError('token_closed', `a cancel for ${token.plc.token_id} was signed at ${token.cancel_signed_at}`);
  if (token.redeem_signed_at !== null) throw new WalletError('token_closed', `a redeem for ${token.plc.token_id} was signed at ${token.redeem_signed_at}`);
}

function newTokenFile(plc: Plc, nowMs: number): TokenFile {
  return { format: 1, plc: plcToJson(plc), updated_at: msToIso(nowMs), registered_at: null, cancel_signed_at: null, redeem_signed_at: null, forks: [] };
}

function summary(plc: Plc, ownKeyHex: string, nowMs: number): string {
  const json = plcToJson(plc);
  return `${json.token_id}  ${json.amount} ${json.currency}  ${plc.transferChain.length} hop(s)  ${holderState(plc, ownKeyHex)}  ${describeLife(plc, nowMs)}`;
}

// -------------------------------------------------------------------------------------------

export function initCommand(context: CommandContext): string {
  const wallet = initWallet(context.dir, context.nowMs());
  return [`public_key: ${bytesToHex(wallet.keyPair.publicKey)}`, `device_id:  ${wallet.deviceId}`, `dir:        ${context.dir}`].join('\n');
}

export function showKeyCommand(context: CommandContext): string {
  const wallet = loadWallet(context.dir);
  return [`public_key: ${bytesToHex(wallet.keyPair.publicKey)}`, `device_id:  ${wallet.deviceId}`].join('\n');
}

export interface CreateOptions {
  readonly amount: string;
  readonly currency: string;
  readonly ttlHours: string;
  readonly server: string | undefined;
}

export async function createCommand(context: CommandContext, options: CreateOptions): Promise<string> {
  const wallet = loadWallet(context.dir);
  const currency = options.currency;
  if (!isPlcCurrency(currency)) throw new WalletError('usage', `--currency must be BRL, USD or EUR, got ${JSON.stringify(currency)}`);
  if (!/^\d{1,3}$/.test(options.ttlHours) || Number(options.ttlHours) < ttlHoursMin || Number(options.ttlHours) > ttlHoursMax) {
    throw new WalletError('usage', `--ttl-hours must be a whole number from ${ttlHoursMin} to ${ttlHoursMax}`);
  }
  const amountMinor = parseAmountInput(options.amount, currency);
  const nowMs = context.nowMs();
  const plc = withWalletLock(context.dir, () => {
    const created = createPlc({ issuerSecretKey: wallet.keyPair.secretKey, amountMinor, currency, createdAtMs: nowMs, ttlHours: Number(options.ttlHours) });
    saveToken(context.dir, newTokenFile(created, nowMs));
    return created;
  });
  const lines = [`token_id: ${plc.commitment.tokenId}`, summary(plc, bytesToHex(wallet.keyPair.publicKey), nowMs)];
  if (options.server !== undefined) {
    await registerWithServer(context, wallet, plc, options.server);
    lines.push(`registered with ${options.server}`);
  }
  return lines.join('\n');
}

async function registerWithServer(context: CommandContext, wallet: Wallet, plc: Plc, server: string): Promise<void> {
  const json = plcToJson(plc);
  try {
    await postJson(server, serverPaths.create, { plc: json }, { deviceId: wallet.deviceId, idempotencyKey: json.token_id });
  } catch (error) {
    context.notice(`the PLC is stored in this wallet but the server did not register it; it cannot be redeemed until it is`);
    throw error;
  }
  withWalletLock(context.dir, () => {
    const token = loadToken(context.dir, json.token_id);
    saveToken(context.dir, { ...token, registered_at: msToIso(context.nowMs()) });
  });
}

export interface SendOptions {
  readonly token: string;
  readonly to: string;
  readonly out: string | undefined;
  readonly format: 'text' | 'json';
}

function encodeFor(plc: Plc, format: 'text' | 'json'): string {
  return format === 'json' ? `${JSON.stringify(plcToJson(plc), null, 2)}\n` : `${encodeTransportText(plc)}\n`;
}

export function sendCommand(context: CommandContext, options: SendOptions): string {
  const wallet = loadWallet(context.dir);
  let recipientPublicKey: Uint8Array;
  try {
    recipientPublicKey = hexToBytes(options.to, 32);
  } catch {
    throw new WalletError('usage', '--to must be the recipient public key: 64 lowercase hex digits');
  }
  if (!isValidPublicKey(recipientPublicKey)) throw new WalletError('usage', '--to is not a valid Ed25519 public key');
  const ownKey = wallet.keyPair.publicKey;

  const output = withWalletLock(context.dir, () => {
    const token = loadToken(context.dir, options.token);
    const plc = storedPlc(token);
    const verification = verified(plc, 'the stored PLC');
    const last = plc.transferChain.at(-1);
    if (!bytesEqual(verification.bearerPublicKey, ownKey)) {
      // Showing the same record again is safe; signing a second, different one would be a fork.
      if (last !== undefined && bytesEqual(last.senderPublicKey, ownKey) && bytesEqual(last.recipientPublicKey, recipientPublicKey)) {
        context.notice('this PLC was already sent to that key: showing the same transfer again');
        return encodeFor(plc, options.format);
      }
      throw new WalletError('not_bearer', `this wallet does not hold ${options.token} (${holderState(plc, bytesToHex(ownKey))})`);
    }
    assertOpen(token);
    if (token.forks.length > 0) {
      // Passing on a PLC known to be double-spent upstream would hand the risk to the next holder;
      // the server settles only one branch, so the holder's move is to redeem it now.
      throw new WalletError('known_fork', `PLC ${options.token} was double-spent by ${token.forks[0]!.culprit_pubkey}; redeem it instead of sending it on`);
    }
    const nowMs = context.nowMs();
    assertAlive(plc, nowMs);
    // Timestamps may not decrease along the chain; a clock behind the previous holder's is
    // corrected upwards rather than producing a record every verifier would refuse.
    const timestampMs = Math.max(nowMs, last?.timestampMs ?? plc.commitment.createdAtMs);
    const sent = appendTransfer(plc, { senderSecretKey: wallet.keyPair.secretKey, recipientPublicKey, timestampMs });
    // Encode before saving: a PLC too long for the chosen form is refused without any state change.
    const encoded = encodeFor(sent, options.format);
    saveToken(context.dir, { ...token, plc: plcToJson(sent), updated_at: msToIso(nowMs) });
    return encoded;
  });

  if (options.out === undefined) return output.trimEnd();
  writeFileSync(options.out, output);
  return `wrote ${options.out} (${options.format === 'json' ? 'JSON form' : `${output.trimEnd().length} characters, QR text form`})`;
}

export interface ReceiveOptions {
  readonly input: { readonly file: string } | { readonly text: string };
}

function readInput(options: ReceiveOptions): string {
  let raw: string;
  if ('file' in options.input) {
    try {
      raw = readFileSync(options.input.file, 'utf8');
    } catch (error) {
      throw new WalletError('invalid_input', `cannot read ${options.input.file}: ${error instanceof Error ? error.message : String(error)}`);
    }
  } else {
    raw = options.input.text;
  }
  if (raw.length > inputCharsMax) throw new WalletError('invalid_input', `input is longer than ${inputCharsMax} characters`);
  // Files and terminals add a trailing newline; the protocol's own decoders stay strict.
  return raw.trim();
}

function decodeInput(text: string): Plc {
  try {
    if (text.startsWith(transportTextPrefix)) return decodeTransportText(text);
    if (text.startsWith('{')) return parsePlcJson(JSON.parse(text));
  } catch (error) {
    if (isProtocolError(error)) throw new WalletError('invalid_input', `${error.code}: ${error.message}`);
    throw new WalletError('invalid_input', `not a PLC: ${error instanceof Error ? error.message : String(error)}`);
  }
  throw new WalletError('invalid_input', `expected the ${transportTextPrefix} text form or the JSON form of a PLC`);
}

export function receiveCommand(context: CommandContext, options: ReceiveOptions): string {
  const wallet = loadWallet(context.dir);
  const ownKeyHex = bytesToHex(wallet.keyPair.publicKey);
  const plc = decodeInput(readInput(options));
  const verification = verified(plc, 'the received PLC');
  const nowMs = context.nowMs();
  assertAlive(plc, nowMs);
  if (bytesToHex(verification.bearerPublicKey) !== ownKeyHex) {
    throw new WalletError('not_addressed_to_this_wallet', `the last transfer goes to ${bytesToHex(verification.bearerPublicKey)}, not to this wallet`);
  }
  if (plc.transferChain.length === 0) throw new WalletError('nothing_to_receive', 'the PLC carries no transfer to this wallet');

  return withWalletLock(context.dir, () => {
    const known = findToken(context.dir, plc.commitment.tokenId);
    if (known === undefined) {
      saveToken(context.dir, newTokenFile(plc, nowMs));
    } else {
      const knownPlc = storedPlc(known);
      if (known.forks.length > 0) {
        throw new WalletError('known_fork', `PLC ${plc.commitment.tokenId} was double-spent by ${known.forks[0]!.culprit_pubkey}; this wallet accepts no more of it`);
      }
      const comparison = detectFork(knownPlc, plc);
      switch (comparison.kind) {
        case 'different_plc':
          throw new WalletError('token_conflict', `this wallet knows another PLC with token id ${plc.commitment.tokenId}`);
        case 'identical':
          throw new WalletError('already_received', `this wallet already holds exactly this chain of ${plc.commitment.tokenId}`);
        case 'behind':
          throw new WalletError('stale_chain', `this is an older state of ${plc.commitment.tokenId}: it has moved on since`);
        case 'unrelated':
          throw new WalletError('rejected', `the chain does not continue the one this wallet knows (record ${comparison.index})`);
        case 'fork': {
          const evidence = {
            prev_hash: bytesToHex(comparison.evidence.prevHash),
            culprit_pubkey: bytesToHex(comparison.culpritPublicKey),
            first: transferRecordToJson(comparison.evidence.first),
            second: transferRecordToJson(comparison.evidence.second),
            detected_at: msToIso(nowMs),
          };
          saveToken(context.dir, { ...known, forks: [...known.forks, evidence].slice(0, forksPerTokenMax), updated_at: msToIso(nowMs) });
          throw new WalletError('fork_detected', `double spend: ${evidence.culprit_pubkey} signed two different transfers at record ${comparison.index}; proof saved`);
        }
        case 'extends': {
          const seen = new Set(known.plc.transfer_chain.map((record) => record.nonce));
          const reused = comparison.newRecords.find((record) => seen.has(bytesToHex(record.nonce)));
          if (reused !== undefined) throw new WalletError('nonce_reused', `a new record reuses the nonce ${bytesToHex(reused.nonce)}`);
          saveToken(context.dir, { ...known, plc: plcToJson(plc), updated_at: msToIso(nowMs) });
          break;
        }
      }
    }
    const last = plc.transferChain.at(-1)!;
    return [
      `received ${plc.commitment.tokenId}`,
      `amount: ${plcToJson(plc).amount} ${plc.commitment.currency}`,
      `from:   ${bytesToHex(last.senderPublicKey)}`,
      `hops:   ${plc.transferChain.length}`,
      `expiry: ${describeLife(plc, nowMs)}`,
    ].join('\n');
  });
}

export function showCommand(context: CommandContext, options: { readonly token: string }): string {
  const wallet = loadWallet(context.dir);
  const token = loadToken(context.dir, options.token);
  const lines = [renderPlc(storedPlc(token), token.plc, bytesToHex(wallet.keyPair.publicKey), context.nowMs())];
  if (token.registered_at !== null) lines.push(`registered:   ${token.registered_at}`);
  if (token.cancel_signed_at !== null) lines.push(`cancel:       signed ${token.cancel_signed_at}`);
  if (token.redeem_signed_at !== null) lines.push(`redeem:       signed ${token.redeem_signed_at}`);
  for (const fork of token.forks) lines.push(`FORK:         ${fork.culprit_pubkey} double-spent after ${fork.prev_hash.slice(0, 12)}… (detected ${fork.detected_at})`);
  return lines.join('\n');
}

export function listCommand(context: CommandContext): string {
  const wallet = loadWallet(context.dir);
  const ownKeyHex = bytesToHex(wallet.keyPair.publicKey);
  const ids = listTokenIds(context.dir);
  if (ids.length === 0) return 'no PLCs';
  const nowMs = context.nowMs();
  const lines = ids.slice(0, listLinesMax).map((id) => summary(storedPlc(loadToken(context.dir, id)), ownKeyHex, nowMs));
  if (ids.length > listLinesMax) lines.push(`… and ${ids.length - listLinesMax} more`);
  return lines.join('\n');
}

export async function cancelCommand(context: CommandContext, options: { readonly token: string; readonly server: string | undefined }): Promise<string> {
  const wallet = loadWallet(context.dir);
  const body = withWalletLock(context.dir, () => {
    const token = loadToken(context.dir, options.token);
    const plc = storedPlc(token);
    const verification = verified(plc, 'the stored PLC');
    if (!bytesEqual(plc.commitment.issuerPublicKey, wallet.keyPair.publicKey)) throw new WalletError('not_issuer', 'only the issuer can cancel a PLC');
    if (plc.transferChain.length > 0) throw new WalletError('already_transferred', 'a PLC cannot be cancelled once it has been transferred');
    if (token.redeem_signed_at !== null) throw new WalletError('token_closed', `a redeem was signed at ${token.redeem_signed_at}`);
    const nowMs = context.nowMs();
    assertAlive(plc, nowMs);
    const authorization = signCancel(
      { tokenId: plc.commitment.tokenId, commitmentHash: verification.commitmentHash, timestampMs: nowMs },
      wallet.keyPair.secretKey,
    );
    // Recorded first: once a cancel exists this wallet will not transfer the PLC any more.
    saveToken(context.dir, { ...token, cancel_signed_at: msToIso(nowMs), updated_at: msToIso(nowMs) });
    return { authorization: cancelAuthorizationToJson(authorization) };
  });
  if (options.server !== undefined) {
    await postJson(options.server, serverPaths.cancel(options.token), body, {
      deviceId: wallet.deviceId,
      idempotencyKey: `cancel-${options.token}-${body.authorization.timestamp_ms}`,
    });
    context.notice(`cancel accepted by ${options.server}`);
  }
  return JSON.stringify(body, null, 2);
}

export async function redeemCommand(
  context: CommandContext,
  options: { readonly token: string; readonly pixKey: string; readonly server: string | undefined },
): Promise<string> {
  const wallet = loadWallet(context.dir);
  const body = withWalletLock(context.dir, () => {
    const token = loadToken(context.dir, options.token);
    const plc = storedPlc(token);
    const verification = verified(plc, 'the stored PLC');
    if (!bytesEqual(verification.bearerPublicKey, wallet.keyPair.publicKey)) {
      throw new WalletError('not_bearer', `this wallet does not hold ${options.token} (${holderState(plc, bytesToHex(wallet.keyPair.publicKey))})`);
    }
    if (plc.transferChain.length === 0) {
      throw new WalletError('usage', 'a PLC that was never transferred is not redeemed by its issuer: cancel it instead');
    }
    assertOpen(token);
    const nowMs = context.nowMs();
    assertAlive(plc, nowMs);
    const authorization = signRedeem(
      { tokenId: plc.commitment.tokenId, headHash: verification.headHash, settlementRail: 'pix', destination: options.pixKey, timestampMs: nowMs },
      wallet.keyPair.secretKey,
    );
    // Recorded first: once a redeem exists this wallet will not transfer the PLC any more.
    saveToken(context.dir, { ...token, redeem_signed_at: msToIso(nowMs), updated_at: msToIso(nowMs) });
    return { plc: plcToJson(plc), authorization: redeemAuthorizationToJson(authorization) };
  });
  if (options.server !== undefined) {
    await postJson(options.server, serverPaths.redeem, body, {
      deviceId: wallet.deviceId,
      idempotencyKey: `redeem-${options.token}-${body.authorization.timestamp_ms}`,
    });
    context.notice(`redeem accepted by ${options.server}`);
  }
  return JSON.stringify(body, null, 2);
}
