/**
 * The wallet commands. Each takes the parsed options and returns what it prints on stdout;
 * notices go to stderr through `context.notice`. Commands that change state run under the wallet
 * lock and persist the new state before printing anything a peer could act on: a signed transfer
 * that was shown but not saved could later be signed again differently, and that is a fork.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { z } from 'zod';
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
import { getJson, postJson, serverPaths } from './http.ts';
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
    const server = options.server;
    let answer: unknown;
    try {
      answer = await createOnServer(wallet, plc, server);
    } catch (error) {
      context.notice(
        `PLC ${plc.commitment.tokenId} is stored in this wallet but the server did not register it; it cannot be redeemed until it is.` +
          ` Retry with: wallet publish --token ${plc.commitment.tokenId} --server ${server}`,
      );
      throw error;
    }
    markRegistered(context, plc.commitment.tokenId);
    lines.push(`registered with ${server}${describeStatus(answer)}`);
  }
  return lines.join('\n');
}

/** What the server answers about a PLC (create and status); only the fields the wallet shows or checks. */
const plcStatusAnswer = z.object({
  token_id: z.string(),
  status: z.string(),
  amount: z.string(),
  currency: z.string(),
  commitment_hash: z.string(),
  chain_length: z.number(),
  bearer_pubkey: z.string(),
});

/** What the server answers to a transfer registration. */
const transferAnswer = z.object({
  token_id: z.string(),
  status: z.string(),
  chain_length: z.number(),
  bearer_pubkey: z.string(),
  head_hash: z.string(),
  appended: z.number(),
});

function describeStatus(answer: unknown): string {
  const parsed = plcStatusAnswer.safeParse(answer);
  return parsed.success ? ` (status ${parsed.data.status})` : '';
}

/**
 * Posts the issuer-signed PLC to `POST /api/v1/plc/create`. The server registers a PLC with an
 * empty chain, so hops this wallet signed since are left out (a holder registers them with
 * `register`). The body is therefore the same on every retry, and the Idempotency-Key is the token
 * id: a retry is answered from the server's store, never booked twice.
 */
async function createOnServer(wallet: Wallet, plc: Plc, server: string): Promise<unknown> {
  const json = plcToJson({ ...plc, transferChain: [] });
  const answer = await postJson(server, serverPaths.create, { plc: json }, { deviceId: wallet.deviceId, idempotencyKey: json.token_id });
  return answer.body;
}

function markRegistered(context: CommandContext, tokenId: string): void {
  withWalletLock(context.dir, () => {
    const token = loadToken(context.dir, tokenId);
    if (token.registered_at === null) saveToken(context.dir, { ...token, registered_at: msToIso(context.nowMs()) });
  });
}

/**
 * `publish`: registers with the server a PLC this wallet issued, after a `create --server` that
 * failed (or was made offline). It first asks the server whether it already holds the PLC (a
 * create whose answer was lost), then posts the create. The server accepts a create only while
 * created_at is within its clock tolerance (5 minutes by default) of its own clock.
 */
export async function publishCommand(context: CommandContext, options: { readonly token: string; readonly server: string }): Promise<string> {
  const wallet = loadWallet(context.dir);
  const token = loadToken(context.dir, options.token);
  const plc = storedPlc(token);
  const verification = verified(plc, 'the stored PLC');
  if (!bytesEqual(plc.commitment.issuerPublicKey, wallet.keyPair.publicKey)) {
    throw new WalletError('not_issuer', 'only the issuer publishes a PLC; a holder registers its transfers with "register"');
  }
  if (token.cancel_signed_at !== null) throw new WalletError('token_closed', `a cancel for ${options.token} was signed at ${token.cancel_signed_at}`);
  const tokenId = plc.commitment.tokenId;
  const known = await getJson(options.server, serverPaths.status(tokenId), { deviceId: wallet.deviceId });
  let headline: string;
  let answer: unknown;
  if (known.found) {
    const parsed = plcStatusAnswer.safeParse(known.body);
    if (!parsed.success) throw new WalletError('server_refused', `unexpected answer from the server: ${JSON.stringify(known.body).slice(0, 500)}`);
    if (parsed.data.commitment_hash !== bytesToHex(verification.commitmentHash)) {
      throw new WalletError('token_conflict', `the server holds another PLC under token id ${tokenId}`);
    }
    headline = `${tokenId} was already registered with ${options.server}`;
    answer = parsed.data;
  } else {
    answer = await createOnServer(wallet, plc, options.server);
    headline = `published ${tokenId} to ${options.server}`;
  }
  markRegistered(context, tokenId);
  const parsed = plcStatusAnswer.safeParse(answer);
  if (!parsed.success) return headline;
  return [
    headline,
    `status:       ${parsed.data.status}`,
    `amount:       ${parsed.data.amount} ${parsed.data.currency}`,
    `chain_length: ${parsed.data.chain_length}`,
    `bearer:       ${parsed.data.bearer_pubkey}`,
  ].join('\n');
}

export interface RegisterOptions {
  readonly token: string;
  readonly server: string;
  /** Sent as X-Device-ID instead of this wallet's own device id. */
  readonly deviceId: string | undefined;
}

/** The server's X-Device-ID rule. */
const deviceIdPattern = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * `register`: posts this wallet's copy of a PLC, with its whole chain, to `POST /api/v1/transfer/`
 * so the server learns the hops made offline. Any wallet holding a copy may do it (the bearer, or
 * an earlier holder for the hops it knows). The Idempotency-Key is derived from the token id and
 * the chain head, so a retry of the same chain is answered from the server's store and never
 * registers anything twice (the server also treats an already known chain as nothing new).
 */
export async function registerCommand(context: CommandContext, options: RegisterOptions): Promise<string> {
  const wallet = loadWallet(context.dir);
  const deviceId = options.deviceId ?? wallet.deviceId;
  if (!deviceIdPattern.test(deviceId)) throw new WalletError('usage', '--device-id must be 1 to 128 characters of A-Z a-z 0-9 . _ : -');
  const token = loadToken(context.dir, options.token);
  const plc = storedPlc(token);
  const verification = verified(plc, 'the stored PLC');
  if (plc.transferChain.length === 0) {
    throw new WalletError('nothing_to_register', `PLC ${options.token} has no transfer to register; its issuer registers it with "publish"`);
  }
  const json = plcToJson(plc);
  const headHashHex = bytesToHex(verification.headHash);
  const answer = await postJson(options.server, serverPaths.transfer, { plc: json }, { deviceId, idempotencyKey: registerIdempotencyKey(json.token_id, headHashHex) });
  const parsed = transferAnswer.safeParse(answer.body);
  if (!parsed.success) throw new WalletError('server_refused', `unexpected answer from the server: ${JSON.stringify(answer.body).slice(0, 500)}`);
  const result = parsed.data;
  if (answer.replayed) context.notice('the server answered from its idempotency store: this chain was registered by an earlier request');
  if (result.head_hash !== headHashHex) {
    context.notice(`the server knows ${result.chain_length} record(s) of this PLC; this wallet's copy has ${plc.transferChain.length}`);
  }
  const ownKeyHex = bytesToHex(wallet.keyPair.publicKey);
  return [
    `registered ${result.token_id} with ${options.server}`,
    `status:       ${result.status}`,
    `chain_length: ${result.chain_length}`,
    `bearer:       ${result.bearer_pubkey}${result.bearer_pubkey === ownKeyHex ? ' (this wallet)' : ''}`,
    `head_hash:    ${result.head_hash}`,
    `appended:     ${result.appended}`,
  ].join('\n');
}

/** `register-<token_id>-<head hash>`: 110 characters, within the server's 8..128. */
export function registerIdempotencyKey(tokenId: string, headHashHex: string): string {
  return `register-${tokenId}-${headHashHex}`;
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

const cancelAnswer = z.object({ status: z.string(), released_amount: z.string(), currency: z.string() });

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
    // The server expects exactly { "authorization": <cancel JSON> } at /api/v1/plc/{token_id}/cancel.
    const answer = await postJson(options.server, serverPaths.cancel(options.token), body, {
      deviceId: wallet.deviceId,
      idempotencyKey: `cancel-${options.token}-${body.authorization.timestamp_ms}`,
    });
    const parsed = cancelAnswer.safeParse(answer.body);
    context.notice(`cancel accepted by ${options.server}${parsed.success ? `: ${parsed.data.status}, ${parsed.data.released_amount} ${parsed.data.currency} released` : ''}`);
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
