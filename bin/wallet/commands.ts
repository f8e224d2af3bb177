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
  checkRecordClock,
  decodeTransport,
  decodeTransportText,
  detectFork,
  encodeTransport,
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
  type PlcCurrency,
  type Verified,
} from '../../src/protocol/index.ts';
import { WalletError, type ServerRefusal } from './errors.ts';
import { decodeFountainParts, fountainParts, isFountainPart, partsPerFragmentWritten } from './fountain.ts';
import { qrForTerminal, qrImageFormatOf, readQrImage, writeQrImage } from './qr.ts';
import { describeLife, holderState, renderPlc } from './format.ts';
import { absentCodes, getJson, normaliseServerUrl, postJson, serverPaths } from './http.ts';
import {
  blockedSignersOf,
  checkReceipt,
  describeBlocklist,
  describeReceiptRefusal,
  describeTrustedKey,
  downloadBlocklist,
  keptBlocklist,
  type KeptBlocklist,
} from './blocklist.ts';
import { checkBoletoLine } from '../../src/settlement/boleto.ts';
import { pixKeyRefusal, pixKeyType } from '../../src/settlement/pix-key.ts';
import { signFeeConsent } from '../../src/fees/consent.ts';
import {
  deleteToken,
  findToken,
  forksPerTokenMax,
  initWallet,
  listTokenIds,
  loadToken,
  loadWallet,
  redeemAttemptsMax,
  saveToken,
  serverUrlSchema,
  setWalletBlocklistKey,
  setWalletServer,
  withWalletLock,
  type RedeemAttempt,
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

/**
 * What this wallet knows of the server's view of a PLC: `server: registered` (a create or a
 * `register` of its chain succeeded), `server: REFUSED (CODE)` (the server refused this wallet's
 * create: re-issue or drop it), `server: not registered` (issued here, never accepted), or
 * `server: unknown` (received; no registration made from this wallet). A redemption adds its state.
 */
function serverSummary(token: TokenFile, ownKeyHex: string): string {
  let state: string;
  if (token.registered_at !== null) state = 'registered';
  else if (token.server_refusal !== undefined && token.server_refusal !== null) state = `REFUSED (${token.server_refusal.code})`;
  else state = token.plc.issuer_pubkey === ownKeyHex ? 'not registered' : 'unknown';
  const last = token.redeem_attempts?.at(-1);
  const redemption = last === undefined ? '' : `  redeem: ${describeAttempt(last)}`;
  return `server: ${state}${redemption}`;
}

function describeAttempt(attempt: RedeemAttempt): string {
  switch (attempt.outcome) {
    case 'accepted':
      return `${attempt.status ?? 'accepted'} (${attempt.redemption_id ?? '?'})`;
    case 'refused':
      return `refused (${attempt.code ?? 'no code'})`;
    case 'unknown':
      return 'sent, no answer';
    case 'not_posted':
      return 'signed, not posted';
  }
}

/** The server to use: --server, else the one the wallet remembers, else none. */
function serverOf(wallet: Wallet, option: string | undefined): string | undefined {
  const server = option ?? wallet.server;
  return server === undefined ? undefined : normaliseServerUrl(server);
}

function requireServer(wallet: Wallet, option: string | undefined, command: string): string {
  const server = serverOf(wallet, option);
  if (server === undefined) {
    throw new WalletError('no_server', `${command} needs a server: pass --server URL, or remember one with "wallet config --server URL"`);
  }
  return server;
}

/** The --server given to init or config, normalised as every request normalises it (kept so). */
function checkServerUrl(value: string): string {
  const server = normaliseServerUrl(value);
  if (!serverUrlSchema.safeParse(server).success) throw new WalletError('usage', `--server must be an absolute http(s) URL, got ${JSON.stringify(value)}`);
  return server;
}

/** A refusal the server decided (a 4xx other than a rate limit or a request still running): asking again gets the same answer. */
function isDefiniteRefusal(error: unknown): error is WalletError & { refusal: ServerRefusal } {
  if (!(error instanceof WalletError) || error.refusal === undefined) return false;
  const { status, code } = error.refusal;
  return status >= 400 && status < 500 && status !== 429 && code !== 'IDEMPOTENCY_REQUEST_IN_PROGRESS';
}

// -------------------------------------------------------------------------------------------

export function initCommand(context: CommandContext, options: { readonly server?: string | undefined } = {}): string {
  const server = options.server === undefined ? undefined : checkServerUrl(options.server);
  const wallet = initWallet(context.dir, context.nowMs(), server);
  const lines = [`public_key: ${bytesToHex(wallet.keyPair.publicKey)}`, `device_id:  ${wallet.deviceId}`, `dir:        ${context.dir}`];
  if (server !== undefined) lines.push(`server:     ${server}`);
  return lines.join('\n');
}

export function showKeyCommand(context: CommandContext): string {
  const wallet = loadWallet(context.dir);
  return [`public_key: ${bytesToHex(wallet.keyPair.publicKey)}`, `device_id:  ${wallet.deviceId}`].join('\n');
}

/**
 * `config`: shows the remembered server and the blocklist's trusted key; `--server URL` remembers a
 * server, `--forget-server` forgets it; `--blocklist-key HEX` sets the service key the blocklist
 * must be signed with (`--blocklist-key development` goes back to the published development key).
 */
export function configCommand(
  context: CommandContext,
  options: { readonly server: string | undefined; readonly forget: boolean; readonly blocklistKey?: string | undefined },
): string {
  loadWallet(context.dir);
  if (options.server !== undefined && options.forget) throw new WalletError('usage', 'config takes --server URL or --forget-server, not both');
  const blocklistKey = options.blocklistKey === undefined ? undefined : checkBlocklistKey(options.blocklistKey);
  if (options.server !== undefined || options.forget || blocklistKey !== undefined) {
    const server = options.server === undefined ? undefined : checkServerUrl(options.server);
    withWalletLock(context.dir, () => {
      if (options.server !== undefined || options.forget) setWalletServer(context.dir, server);
      if (blocklistKey !== undefined) setWalletBlocklistKey(context.dir, blocklistKey === 'development' ? undefined : blocklistKey);
    });
  }
  const wallet = loadWallet(context.dir);
  return [`server: ${wallet.server ?? '(none: online commands need --server)'}`, `blocklist key: ${describeTrustedKey(wallet)}`].join('\n');
}

function checkBlocklistKey(value: string): string {
  if (value === 'development') return value;
  if (!/^[0-9a-f]{64}$/.test(value) || !isValidPublicKey(hexToBytes(value, 32))) {
    throw new WalletError('usage', '--blocklist-key must be an Ed25519 public key in 64 lowercase hex digits, or "development"');
  }
  return value;
}

/** `blocklist`: downloads the service's signed blocklist, verifies it and keeps it (docs/protocol.md section 18). */
export async function blocklistCommand(context: CommandContext, options: { readonly server: string | undefined }): Promise<string> {
  const wallet = loadWallet(context.dir);
  const server = requireServer(wallet, options.server, 'blocklist');
  const kept = await downloadBlocklist(wallet, server, context.nowMs(), context.notice);
  // The keys this wallet now trusts for issue receipts (docs/protocol.md 19.4).
  const receiptKeys = (kept.list.receiptKeys ?? []).map(
    (entry) => `receipt key: ${bytesToHex(entry.publicKey)} for receipts issued ${msToIso(entry.validFromMs)} to ${msToIso(entry.validUntilMs)}`,
  );
  if (kept.list.receiptKeys === undefined) receiptKeys.push(`receipt key: ${describeTrustedKey(wallet)} (a v1 list: the blocklist key)`);
  return [`blocklist: ${describeBlocklist(kept)}`, `signed by: ${describeTrustedKey(wallet)}`, ...kept.list.keys.map((key) => `blocked: ${bytesToHex(key)}`), ...receiptKeys].join('\n');
}

export interface CreateOptions {
  readonly amount: string;
  readonly currency: string;
  readonly ttlHours: string;
  readonly server: string | undefined;
  /** Keep the PLC local even though a server is remembered (publish it later). */
  readonly offline?: boolean;
}

function checkTtlHours(value: string): number {
  if (!/^\d{1,3}$/.test(value) || Number(value) < ttlHoursMin || Number(value) > ttlHoursMax) {
    throw new WalletError('usage', `--ttl-hours must be a whole number from ${ttlHoursMin} to ${ttlHoursMax}`);
  }
  return Number(value);
}

export async function createCommand(context: CommandContext, options: CreateOptions): Promise<string> {
  const wallet = loadWallet(context.dir);
  const currency = options.currency;
  if (!isPlcCurrency(currency)) throw new WalletError('usage', `--currency must be BRL, USD or EUR, got ${JSON.stringify(currency)}`);
  const ttlHours = checkTtlHours(options.ttlHours);
  const amountMinor = parseAmountInput(options.amount, currency);
  const server = options.offline === true ? undefined : serverOf(wallet, options.server);
  return issueAndRegister(context, wallet, { amountMinor, currency, ttlHours }, server);
}

/** Signs a new PLC, stores it, and registers it with `server` when one is given. */
async function issueAndRegister(
  context: CommandContext,
  wallet: Wallet,
  terms: { amountMinor: bigint; currency: PlcCurrency; ttlHours: number },
  server: string | undefined,
): Promise<string> {
  const nowMs = context.nowMs();
  const plc = withWalletLock(context.dir, () => {
    const created = createPlc({ issuerSecretKey: wallet.keyPair.secretKey, amountMinor: terms.amountMinor, currency: terms.currency, createdAtMs: nowMs, ttlHours: terms.ttlHours });
    saveToken(context.dir, newTokenFile(created, nowMs));
    return created;
  });
  const tokenId = plc.commitment.tokenId;
  const lines = [`token_id: ${tokenId}`, summary(plc, bytesToHex(wallet.keyPair.publicKey), nowMs)];
  if (server !== undefined) {
    let answer: unknown;
    try {
      answer = await createOnServer(wallet, plc, server);
    } catch (error) {
      if (isDefiniteRefusal(error)) {
        // Nothing half-made is kept: the server booked nothing, and this PLC, signed a moment ago
        // by this command, was never shown to anyone. Running the create again is the retry.
        withWalletLock(context.dir, () => deleteToken(context.dir, tokenId));
        context.notice(
          `the server refused PLC ${tokenId} (${error.refusal.code ?? error.refusal.status}); nothing was booked and this wallet kept nothing of it.` +
            ' Fix the cause, then run the create again',
        );
      } else {
        context.notice(
          `PLC ${tokenId} is stored in this wallet but the server did not answer; it cannot be redeemed until it is registered.` +
            ` Retry with: wallet publish --token ${tokenId} --server ${server}`,
        );
      }
      throw error;
    }
    markRegistered(context, tokenId);
    lines.push(`registered with ${server}${describeStatus(answer)}`);
    lines.push(keepReceipt(context, wallet, tokenId, answer));
  }
  return lines.join('\n');
}

function recordRefusal(context: CommandContext, tokenId: string, error: WalletError & { refusal: ServerRefusal }): void {
  withWalletLock(context.dir, () => {
    const token = loadToken(context.dir, tokenId);
    const refusal = { code: error.refusal.code ?? `HTTP_${error.refusal.status}`, message: error.message.slice(0, 500), at: msToIso(context.nowMs()) };
    saveToken(context.dir, { ...token, server_refusal: refusal });
  });
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
  // The commitment alone: no hop, and no receipt (the server makes it), so every retry's body is the same.
  const json = plcToJson({ ...plc, transferChain: [], issueReceipt: undefined });
  const answer = await postJson(server, serverPaths.create, { plc: json }, { deviceId: wallet.deviceId, idempotencyKey: json.token_id, currency: json.currency });
  return answer.body;
}

function markRegistered(context: CommandContext, tokenId: string): void {
  withWalletLock(context.dir, () => {
    const token = loadToken(context.dir, tokenId);
    if (token.registered_at === null) saveToken(context.dir, { ...token, registered_at: msToIso(context.nowMs()), server_refusal: null });
  });
}

const receiptAnswer = z.object({ issue_receipt: z.string().regex(/^(?:[0-9a-f]{2}){1,256}$/) });

/**
 * Keeps the service's issue receipt from a server answer (the create's, or the PLC's JSON view)
 * with the PLC, once it verifies against the keys this wallet trusts: receivers refuse the PLC
 * without it (docs/protocol.md section 19). Answers a line to show.
 */
function keepReceipt(context: CommandContext, wallet: Wallet, tokenId: string, answer: unknown): string {
  const parsed = receiptAnswer.safeParse(answer);
  if (!parsed.success) {
    context.notice(`the server answered no issue receipt for ${tokenId}: receivers will refuse this PLC offline; "wallet publish --token ${tokenId}" asks again`);
    return 'issue receipt: none';
  }
  return withWalletLock(context.dir, () => {
    const token = loadToken(context.dir, tokenId);
    const plc = storedPlc(token);
    const verdict = checkReceipt(wallet, { ...plc, issueReceipt: hexToBytes(parsed.data.issue_receipt) }, keptBlocklist(wallet, context.notice));
    if (!verdict.ok) {
      context.notice(`the server's issue receipt for ${tokenId} is refused (${verdict.reason}: ${verdict.detail}); receivers will refuse this PLC offline. Refresh the blocklist ("wallet blocklist"), then "wallet publish --token ${tokenId}"`);
      return `issue receipt: refused (${verdict.reason})`;
    }
    saveToken(context.dir, { ...token, plc: { ...token.plc, issue_receipt: parsed.data.issue_receipt }, updated_at: msToIso(context.nowMs()) });
    return `issue receipt: kept (signed by ${bytesToHex(verdict.receipt.servicePublicKey)})`;
  });
}

/**
 * `publish`: registers with the server a PLC this wallet issued, after a `create --server` that
 * failed (or was made offline). It first asks the server whether it already holds the PLC (a
 * create whose answer was lost), then posts the create. The server accepts a create only while
 * created_at is within its clock tolerance (5 minutes by default) of its own clock.
 */
export async function publishCommand(context: CommandContext, options: { readonly token: string; readonly server: string | undefined }): Promise<string> {
  const wallet = loadWallet(context.dir);
  const server = requireServer(wallet, options.server, 'publish');
  const token = loadToken(context.dir, options.token);
  const plc = storedPlc(token);
  const verification = verified(plc, 'the stored PLC');
  if (!bytesEqual(plc.commitment.issuerPublicKey, wallet.keyPair.publicKey)) {
    throw new WalletError('not_issuer', 'only the issuer publishes a PLC; a holder registers its transfers with "register"');
  }
  if (token.cancel_signed_at !== null) throw new WalletError('token_closed', `a cancel for ${options.token} was signed at ${token.cancel_signed_at}`);
  const tokenId = plc.commitment.tokenId;
  const known = await getJson(server, serverPaths.status(tokenId), { deviceId: wallet.deviceId, absentCodes: absentCodes.plc });
  let headline: string;
  let answer: unknown;
  if (known.found) {
    const parsed = plcStatusAnswer.safeParse(known.body);
    if (!parsed.success) throw new WalletError('server_refused', `unexpected answer from the server: ${JSON.stringify(known.body).slice(0, 500)}`);
    if (parsed.data.commitment_hash !== bytesToHex(verification.commitmentHash)) {
      throw new WalletError('token_conflict', `the server holds another PLC under token id ${tokenId}`);
    }
    headline = `${tokenId} was already registered with ${server}`;
    answer = parsed.data;
  } else {
    try {
      answer = await createOnServer(wallet, plc, server);
    } catch (error) {
      if (isDefiniteRefusal(error)) {
        recordRefusal(context, tokenId, error);
        context.notice(`the server refused PLC ${tokenId}: re-issue it (wallet reissue --token ${tokenId}) or drop it (wallet drop --token ${tokenId})`);
      }
      throw error;
    }
    headline = `published ${tokenId} to ${server}`;
  }
  markRegistered(context, tokenId);
  // The issue receipt: in the create's answer, or, for a PLC registered before, in its JSON view.
  let receiptSource: unknown = answer;
  if (known.found) {
    const view = await getJson(server, serverPaths.plcJson(tokenId), { deviceId: wallet.deviceId, absentCodes: absentCodes.plc });
    receiptSource = view.found ? view.body : undefined;
  }
  const receiptLine = keepReceipt(context, wallet, tokenId, receiptSource);
  const parsed = plcStatusAnswer.safeParse(answer);
  if (!parsed.success) return `${headline}\n${receiptLine}`;
  return [
    headline,
    receiptLine,
    `status:       ${parsed.data.status}`,
    `amount:       ${parsed.data.amount} ${parsed.data.currency}`,
    `chain_length: ${parsed.data.chain_length}`,
    `bearer:       ${parsed.data.bearer_pubkey}`,
  ].join('\n');
}

export interface RegisterOptions {
  readonly token: string;
  readonly server: string | undefined;
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
  const server = requireServer(wallet, options.server, 'register');
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
  const answer = await postJson(server, serverPaths.transfer, { plc: json }, { deviceId, idempotencyKey: registerIdempotencyKey(json.token_id, headHashHex) });
  const parsed = transferAnswer.safeParse(answer.body);
  if (!parsed.success) throw new WalletError('server_refused', `unexpected answer from the server: ${JSON.stringify(answer.body).slice(0, 500)}`);
  const result = parsed.data;
  if (answer.replayed) context.notice('the server answered from its idempotency store: this chain was registered by an earlier request');
  if (result.head_hash !== headHashHex) {
    context.notice(`the server knows ${result.chain_length} record(s) of this PLC; this wallet's copy has ${plc.transferChain.length}`);
  }
  markRegistered(context, options.token);
  const ownKeyHex = bytesToHex(wallet.keyPair.publicKey);
  return [
    `registered ${result.token_id} with ${server}`,
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
  /** Also write the QR code of the text form to this .png or .svg file. */
  readonly image?: string | undefined;
  /** Also draw the QR code in the terminal (stdout). */
  readonly qr?: boolean;
  /** Also write the animated code's parts (ur:bytes fountain parts of the binary form), one a line, to this file. */
  readonly urParts?: string | undefined;
}

function encodeFor(plc: Plc, format: 'text' | 'json'): string {
  return format === 'json' ? `${JSON.stringify(plcToJson(plc), null, 2)}\n` : `${encodeTransportText(plc)}\n`;
}

/**
 * What `send` shows: the chosen form, or, when the text form cannot carry the chain (over 20
 * records) and the animated parts are written, nothing beside them (null).
 */
function encodeShown(plc: Plc, format: 'text' | 'json', animated: boolean): string | null {
  try {
    return encodeFor(plc, format);
  } catch (error) {
    if (animated && isProtocolError(error) && error.code === 'transport_too_large') return null;
    throw error;
  }
}

export async function sendCommand(context: CommandContext, options: SendOptions): Promise<string> {
  const wallet = loadWallet(context.dir);
  if ((options.image !== undefined || options.qr === true) && options.format !== 'text') {
    throw new WalletError('usage', 'a QR code carries the text form: --image and --qr need --format text');
  }
  if (options.image !== undefined) qrImageFormatOf(options.image);
  let recipientPublicKey: Uint8Array;
  try {
    recipientPublicKey = hexToBytes(options.to, 32);
  } catch {
    throw new WalletError('usage', '--to must be the recipient public key: 64 lowercase hex digits');
  }
  if (!isValidPublicKey(recipientPublicKey)) throw new WalletError('usage', '--to is not a valid Ed25519 public key');
  const ownKey = wallet.keyPair.publicKey;
  const animated = options.urParts !== undefined;

  const { shown: output, plc: sentPlc } = withWalletLock(context.dir, () => {
    const token = loadToken(context.dir, options.token);
    const plc = storedPlc(token);
    const verification = verified(plc, 'the stored PLC');
    const last = plc.transferChain.at(-1);
    if (!bytesEqual(verification.bearerPublicKey, ownKey)) {
      // Showing the same record again is safe; signing a second, different one would be a fork.
      if (last !== undefined && bytesEqual(last.senderPublicKey, ownKey) && bytesEqual(last.recipientPublicKey, recipientPublicKey)) {
        context.notice('this PLC was already sent to that key: showing the same transfer again');
        return { shown: encodeShown(plc, options.format, animated), plc };
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
    const encoded = encodeShown(sent, options.format, animated);
    saveToken(context.dir, { ...token, plc: plcToJson(sent), updated_at: msToIso(nowMs) });
    return { shown: encoded, plc: sent };
  });

  const lines: string[] = [];
  if (options.urParts !== undefined) {
    // The browser wallet's animated code: the same parts its camera reads, one a line.
    const parts = fountainParts(encodeTransport(sentPlc));
    writeFileSync(options.urParts, `${parts.join('\n')}\n`);
    const fragments = Math.ceil(parts.length / partsPerFragmentWritten);
    lines.push(`wrote ${options.urParts} (animated code: ${parts.length} ur:bytes parts of ${fragments} fragments; about ${fragments} or a few more of them, in any order, rebuild the PLC)`);
  }
  if (output === null) {
    if (options.qr === true || options.image !== undefined || options.out !== undefined) {
      throw new WalletError('usage', `${sentPlc.transferChain.length} records do not fit one QR code: the transfer is saved; send it as the animated parts (--ur-parts FILE) alone`);
    }
    context.notice(`${sentPlc.transferChain.length} records do not fit the one-code text form: only the animated parts carry this PLC`);
    return lines.join('\n');
  }
  const text = output.trimEnd();
  if (options.qr === true) lines.push(await qrForTerminal(text));
  if (options.image !== undefined) {
    const written = await writeQrImage(options.image, text);
    lines.push(`wrote ${options.image} (QR code version ${written.version}, error correction L, ${written.format.toUpperCase()})`);
  }
  if (options.out === undefined) lines.push(text);
  else {
    writeFileSync(options.out, output);
    lines.push(`wrote ${options.out} (${options.format === 'json' ? 'JSON form' : `${text.length} characters, QR text form`})`);
  }
  return lines.join('\n');
}

export interface ReceiveOptions {
  readonly input: { readonly file: string } | { readonly text: string } | { readonly image: string };
  /** Where to refresh the blocklist first (else the remembered server; none: the kept list as it is). */
  readonly server?: string | undefined;
}

/**
 * The blocklist `receive` checks against: refreshed from the server when one is known (a failure
 * to download is reported, and the kept list is used), else the kept one; undefined when the
 * wallet has none.
 */
async function blocklistForReceive(context: CommandContext, wallet: Wallet, server: string | undefined): Promise<KeptBlocklist | undefined> {
  if (server !== undefined) {
    try {
      return await downloadBlocklist(wallet, server, context.nowMs(), context.notice);
    } catch (error) {
      if (error instanceof WalletError && error.code === 'blocklist_rollback') throw error;
      context.notice(`warning: could not refresh the blocklist (${error instanceof Error ? error.message : String(error)}); using the kept one`);
    }
  }
  return keptBlocklist(wallet, context.notice);
}

async function readInput(options: ReceiveOptions): Promise<string> {
  let raw: string;
  if ('image' in options.input) {
    raw = await readQrImage(options.input.image);
  } else if ('file' in options.input) {
    try {
      raw = readFileSync(options.input.file === '-' ? 0 : options.input.file, 'utf8');
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
  if (isFountainPart(text)) return decodeAnimated(text);
  try {
    if (text.startsWith(transportTextPrefix)) return decodeTransportText(text);
    if (text.startsWith('{')) return parsePlcJson(JSON.parse(text));
  } catch (error) {
    if (isProtocolError(error)) throw new WalletError('invalid_input', `${error.code}: ${error.message}`);
    throw new WalletError('invalid_input', `not a PLC: ${error instanceof Error ? error.message : String(error)}`);
  }
  throw new WalletError('invalid_input', `expected the ${transportTextPrefix} text form or the JSON form of a PLC`);
}

/** The animated code's parts, one a line, in any order, repeats and missing ones as the fountain code allows. */
function decodeAnimated(text: string): Plc {
  const verdict = decodeFountainParts(text.split(/\r?\n/));
  if (!verdict.ok) throw new WalletError('invalid_input', `refused: ${verdict.detail}`);
  try {
    return decodeTransport(verdict.message);
  } catch (error) {
    if (isProtocolError(error)) throw new WalletError('invalid_input', `the animated code reassembled but is not a PLC: ${error.code}: ${error.message}`);
    throw error;
  }
}

export async function receiveCommand(context: CommandContext, options: ReceiveOptions): Promise<string> {
  const wallet = loadWallet(context.dir);
  const ownKeyHex = bytesToHex(wallet.keyPair.publicKey);
  const plc = decodeInput(await readInput(options));
  const verification = verified(plc, 'the received PLC');
  const nowMs = context.nowMs();
  assertAlive(plc, nowMs);
  const clock = checkRecordClock(plc.transferChain, nowMs);
  if (!clock.ok) {
    // The sender's clock (or this one) is wrong: the server would refuse this chain too.
    throw new WalletError('timestamp_in_future', `${clock.detail}: check the clocks of the sending device and of this one`);
  }
  if (bytesToHex(verification.bearerPublicKey) !== ownKeyHex) {
    throw new WalletError('not_addressed_to_this_wallet', `the last transfer goes to ${bytesToHex(verification.bearerPublicKey)}, not to this wallet`);
  }
  if (plc.transferChain.length === 0) throw new WalletError('nothing_to_receive', 'the PLC carries no transfer to this wallet');
  const blocklist = await blocklistForReceive(context, wallet, serverOf(wallet, options.server));
  if (blocklist === undefined) {
    context.notice('warning: this wallet keeps no blocklist ("wallet blocklist --server URL" downloads it): signers not checked against it');
  } else {
    const blocked = blockedSignersOf(plc, blocklist.list);
    if (blocked.length > 0) {
      throw new WalletError(
        'blocked_signer',
        `the PLC carries a signature by ${blocked.join(', ')}, on the service's blocklist (version ${blocklist.list.version}): a key proven to have spent a PLC twice; refused`,
      );
    }
  }
  // The service's issue receipt (docs/protocol.md section 19): without a valid one nothing shows
  // the PLC was ever registered and backed, so it is refused, offline.
  const receipt = checkReceipt(wallet, plc, blocklist);
  if (!receipt.ok) throw new WalletError('unbacked', describeReceiptRefusal(receipt));

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
  if (token.server_refusal !== undefined && token.server_refusal !== null) {
    lines.push(`server:       REFUSED ${token.server_refusal.code} at ${token.server_refusal.at} (re-issue or drop it)`);
  }
  for (const attempt of token.redeem_attempts ?? []) {
    lines.push(`redeem:       signed ${attempt.signed_at} to ${attempt.rail} ${attempt.destination}: ${describeAttempt(attempt)}`);
  }
  if (token.redeem_signed_at !== null && (token.redeem_attempts ?? []).length === 0) lines.push(`redeem:       signed ${token.redeem_signed_at}`);
  for (const fork of token.forks) lines.push(`FORK:         ${fork.culprit_pubkey} double-spent after ${fork.prev_hash.slice(0, 12)}… (detected ${fork.detected_at})`);
  return lines.join('\n');
}

/** Bound on the PLCs `list --server` asks the server about (one request each). */
const listServerAsksMax = 50;

/**
 * `list`: one line per PLC from this wallet's records (offline). With `--server URL` it also asks
 * that server the status of each (the first 50), shown as `now: STATUS`. A PLC whose create the
 * server refused is not money: its line says so and how to replace or forget it.
 */
export async function listCommand(context: CommandContext, options: { readonly server?: string | undefined } = {}): Promise<string> {
  const wallet = loadWallet(context.dir);
  const server = options.server === undefined ? undefined : normaliseServerUrl(options.server);
  const ownKeyHex = bytesToHex(wallet.keyPair.publicKey);
  const ids = listTokenIds(context.dir);
  if (ids.length === 0) return 'no PLCs';
  const nowMs = context.nowMs();
  const lines: string[] = [];
  for (const [index, id] of ids.slice(0, listLinesMax).entries()) {
    const token = loadToken(context.dir, id);
    const plc = storedPlc(token);
    let line: string;
    if (token.server_refusal !== undefined && token.server_refusal !== null && token.registered_at === null) {
      const json = plcToJson(plc);
      line = `${json.token_id}  ${json.amount} ${json.currency}  REFUSED by the server (${token.server_refusal.code}): not backed, nothing booked; "wallet reissue --token ${id}" or "wallet drop --token ${id}"`;
    } else {
      line = `${summary(plc, ownKeyHex, nowMs)}  ${serverSummary(token, ownKeyHex)}`;
    }
    if (server !== undefined && index < listServerAsksMax) {
      const known = await getJson(server, serverPaths.status(id), { deviceId: wallet.deviceId, absentCodes: absentCodes.plc });
      const parsed = plcStatusAnswer.safeParse(known.body);
      line += known.found ? `  now: ${parsed.success ? parsed.data.status : 'unreadable answer'}` : '  now: unknown to the server';
    }
    lines.push(line);
  }
  if (server !== undefined && ids.length > listServerAsksMax) lines.push(`(the server was asked about the first ${listServerAsksMax}; "wallet status --token ID" asks about one)`);
  if (ids.length > listLinesMax) lines.push(`… and ${ids.length - listLinesMax} more`);
  return lines.join('\n');
}

const cancelAnswer = z.object({ status: z.string(), released_amount: z.string(), currency: z.string() });

export async function cancelCommand(context: CommandContext, options: { readonly token: string; readonly server: string | undefined }): Promise<string> {
  const wallet = loadWallet(context.dir);
  const server = serverOf(wallet, options.server);
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
  if (server !== undefined) {
    // The server expects exactly { "authorization": <cancel JSON> } at /api/v1/plc/{token_id}/cancel.
    const answer = await postJson(server, serverPaths.cancel(options.token), body, {
      deviceId: wallet.deviceId,
      idempotencyKey: `cancel-${options.token}-${body.authorization.timestamp_ms}`,
    });
    const parsed = cancelAnswer.safeParse(answer.body);
    context.notice(`cancel accepted by ${server}${parsed.success ? `: ${parsed.data.status}, ${parsed.data.released_amount} ${parsed.data.currency} released` : ''}`);
  }
  return JSON.stringify(body, null, 2);
}

export interface RedeemOptions {
  readonly token: string;
  readonly pixKey: string | undefined;
  /** A boleto's digitable line (the printed form's dots and spaces are stripped before signing). */
  readonly boleto?: string | undefined;
  readonly server: string | undefined;
}

/** What the server answers a redeem and the redemption status route with; only what the wallet shows. */
const redemptionAnswer = z.object({
  redemption_id: z.string(),
  status: z.string(),
  amount: z.string(),
  fee: z.string(),
  currency: z.string(),
  gateway_transfer_id: z.string().nullable(),
  gateway_status: z.string().nullable(),
  failure_reason: z.string().nullable(),
});

/**
 * The rail and destination a redeem names, validated before anything is signed: a Pix key, or a
 * boleto's digitable line with its check digits (`lineAmountMinor`: the amount it writes, at most
 * the PLC's, checked once the PLC is loaded; null when the line leaves it open).
 */
function destinationOf(options: RedeemOptions): { rail: 'pix' | 'boleto'; destination: string; lineAmountMinor: bigint | null } {
  if (options.pixKey !== undefined && options.boleto !== undefined) throw new WalletError('usage', 'redeem takes --pix-key KEY or --boleto LINE, not both');
  if (options.boleto !== undefined) {
    // The printed form (dots, spaces) is accepted and signed as its digits: the canonical line.
    const digits = options.boleto.replace(/[\s.]/g, '');
    const checked = checkBoletoLine(digits);
    if (!checked.ok) {
      throw new WalletError(
        'invalid_destination',
        `--boleto ${JSON.stringify(options.boleto)} is not a payable digitable line (${checked.reason.replaceAll('_', ' ')}; 47 digits for a bank slip, 48 for a collection slip): nothing was signed`,
      );
    }
    return { rail: 'boleto', destination: digits, lineAmountMinor: checked.boleto.amountMinor };
  }
  if (options.pixKey === undefined) throw new WalletError('usage', 'redeem needs --pix-key KEY or --boleto LINE');
  if (pixKeyType(options.pixKey) === null) {
    throw new WalletError(
      'invalid_destination',
      `--pix-key ${JSON.stringify(options.pixKey)} is not a Pix key (${pixKeyRefusal(options.pixKey)}): nothing was signed`,
    );
  }
  return { rail: 'pix', destination: options.pixKey, lineAmountMinor: null };
}

const redemptionListAnswer = z.array(redemptionAnswer.extend({ token_id: z.string() }));
type ServerRedemption = z.infer<typeof redemptionListAnswer>[number];

/**
 * This PLC's redemptions as the server knows them (GET /api/v1/plc/{token_id}/redemptions, newest
 * first), or undefined when the server cannot be reached: then the wallet decides from its own
 * copy, and says so. Any other failure (a refusal, a wrong base URL) stops the redeem.
 */
async function redemptionsAtServer(context: CommandContext, wallet: Wallet, server: string, tokenId: string): Promise<readonly ServerRedemption[] | undefined> {
  let answer;
  try {
    answer = await getJson(server, serverPaths.plcRedemptions(tokenId), { deviceId: wallet.deviceId });
  } catch (error) {
    if (error instanceof WalletError && error.code === 'server_unreachable') {
      context.notice(`offline: ${server} cannot be reached (${error.message}); deciding from this wallet's copy of ${tokenId}, whose redemption status may be stale`);
      return undefined;
    }
    throw error;
  }
  const parsed = redemptionListAnswer.safeParse(answer.body);
  if (!parsed.success) throw new WalletError('server_refused', `unexpected answer from the server: ${JSON.stringify(answer.body).slice(0, 500)}`);
  return parsed.data;
}

/** Records the server's status of each redemption this wallet opened; answers the token as saved. */
function syncAttempts(context: CommandContext, tokenId: string, atServer: readonly ServerRedemption[]): TokenFile {
  const token = loadToken(context.dir, tokenId);
  const statusOf = new Map(atServer.map((redemption) => [redemption.redemption_id, redemption.status]));
  let changed = false;
  const attempts = (token.redeem_attempts ?? []).map((attempt) => {
    const status = attempt.redemption_id === null ? undefined : statusOf.get(attempt.redemption_id);
    if (status === undefined || status === attempt.status) return attempt;
    changed = true;
    return { ...attempt, status, updated_at: msToIso(context.nowMs()) };
  });
  if (!changed) return token;
  const updated = { ...token, redeem_attempts: attempts };
  saveToken(context.dir, updated);
  return updated;
}

/**
 * The server's word decides: a redemption PENDING_PAYMENT is open (the server would refuse a
 * second), a SETTLED one means the PLC is paid; FAILED ones, or none, leave the PLC redeemable.
 */
function refuseIfRedeemedAtServer(tokenId: string, server: string, atServer: readonly ServerRedemption[]): void {
  const settled = atServer.find((redemption) => redemption.status === 'SETTLED');
  if (settled !== undefined) throw new WalletError('already_redeemed', `${tokenId} was redeemed: redemption ${settled.redemption_id} is SETTLED at ${server}`);
  const open = atServer.find((redemption) => redemption.status !== 'FAILED');
  if (open !== undefined) {
    throw new WalletError('redemption_open', `redemption ${open.redemption_id} of ${tokenId} is ${open.status} at ${server}: follow it with "wallet status --token ${tokenId}"`);
  }
}

/**
 * A redemption the server accepted and that has not failed, as this wallet last recorded it: while
 * one exists an offline wallet signs no other (the server would refuse it anyway).
 */
function openRedemption(token: TokenFile): RedeemAttempt | undefined {
  const last = (token.redeem_attempts ?? []).at(-1);
  return last !== undefined && last.outcome === 'accepted' && last.status !== 'FAILED' ? last : undefined;
}

function updateAttempt(context: CommandContext, tokenId: string, signedAt: string, change: Partial<RedeemAttempt>): void {
  withWalletLock(context.dir, () => {
    const token = loadToken(context.dir, tokenId);
    const attempts = (token.redeem_attempts ?? []).map((attempt) =>
      attempt.signed_at === signedAt ? { ...attempt, ...change, updated_at: msToIso(context.nowMs()) } : attempt,
    );
    saveToken(context.dir, { ...token, redeem_attempts: attempts });
  });
}

/**
 * `redeem`: the bearer signs a redeem authorisation to a destination it has checked, records it,
 * posts it (to --server or the remembered server) and records what the server answered: the
 * redemption's id and status, or the refusal. After a refusal, or once `status` has seen the
 * redemption FAILED, the bearer may sign a new one (the server accepts each authorisation once and
 * settles a PLC at most once). Without a server it only prints the signed body.
 */
export async function redeemCommand(context: CommandContext, options: RedeemOptions): Promise<string> {
  const wallet = loadWallet(context.dir);
  const { rail, destination, lineAmountMinor } = destinationOf(options);
  const server = serverOf(wallet, options.server);
  loadToken(context.dir, options.token);
  // The server's word on this PLC's redemptions, when it answers; else this wallet's last known one.
  const atServer = server === undefined ? undefined : await redemptionsAtServer(context, wallet, server, options.token);
  const signed = withWalletLock(context.dir, () => {
    const token = atServer === undefined ? loadToken(context.dir, options.token) : syncAttempts(context, options.token, atServer);
    const plc = storedPlc(token);
    const verification = verified(plc, 'the stored PLC');
    if (!bytesEqual(verification.bearerPublicKey, wallet.keyPair.publicKey)) {
      throw new WalletError('not_bearer', `this wallet does not hold ${options.token} (${holderState(plc, bytesToHex(wallet.keyPair.publicKey))})`);
    }
    if (plc.transferChain.length === 0) {
      throw new WalletError('usage', 'a PLC that was never transferred is not redeemed by its issuer: cancel it instead');
    }
    if (token.cancel_signed_at !== null) throw new WalletError('token_closed', `a cancel for ${options.token} was signed at ${token.cancel_signed_at}`);
    if (atServer !== undefined) refuseIfRedeemedAtServer(options.token, server!, atServer);
    else {
      const open = openRedemption(token);
      if (open !== undefined) {
        const known = `(this wallet's last known status, recorded ${open.updated_at}; the server could not be asked)`;
        if (open.status === 'SETTLED') throw new WalletError('already_redeemed', `${options.token} was redeemed: redemption ${open.redemption_id ?? '?'} SETTLED ${known}`);
        throw new WalletError('redemption_open', `redemption ${open.redemption_id ?? '?'} of ${options.token} is ${open.status ?? 'open'} ${known}: follow it with "wallet status --token ${options.token}"`);
      }
    }
    if (rail === 'boleto' && plc.commitment.currency !== 'BRL') {
      throw new WalletError('invalid_destination', `a boleto is paid in reais and ${options.token} is in ${plc.commitment.currency}: redeem it to a Pix key`);
    }
    // The server pays the PLC's amount less its fee, which it alone knows: a line above the PLC's
    // amount can never be paid; the exact amount (the payout) is the server's check.
    if (lineAmountMinor !== null && lineAmountMinor > plc.commitment.amountMinor) {
      throw new WalletError(
        'invalid_destination',
        `the boleto is for ${lineAmountMinor} centavos, more than ${options.token} holds (${plc.commitment.amountMinor}): a bill is paid in full; nothing was signed`,
      );
    }
    const nowMs = context.nowMs();
    assertAlive(plc, nowMs);
    const authorization = signRedeem(
      { tokenId: plc.commitment.tokenId, headHash: verification.headHash, settlementRail: rail, destination, timestampMs: nowMs },
      wallet.keyPair.secretKey,
    );
    const signedAt = msToIso(nowMs);
    const attempt: RedeemAttempt = {
      signed_at: signedAt,
      timestamp_ms: nowMs,
      rail,
      destination,
      outcome: server === undefined ? 'not_posted' : 'unknown',
      redemption_id: null,
      status: null,
      code: null,
      updated_at: signedAt,
    };
    // Recorded first: once a redeem exists this wallet will not transfer the PLC any more.
    saveToken(context.dir, {
      ...token,
      redeem_signed_at: token.redeem_signed_at ?? signedAt,
      redeem_attempts: [...(token.redeem_attempts ?? []), attempt].slice(-redeemAttemptsMax),
      updated_at: signedAt,
    });
    return { signedAt, body: { plc: plcToJson(plc), authorization: redeemAuthorizationToJson(authorization) } };
  });
  const { body, signedAt } = signed;
  if (server === undefined) return JSON.stringify(body, null, 2);
  let answer;
  try {
    answer = await postJson(server, serverPaths.redeem, body, {
      deviceId: wallet.deviceId,
      idempotencyKey: `redeem-${options.token}-${body.authorization.timestamp_ms}`,
    });
  } catch (error) {
    if (isDefiniteRefusal(error)) {
      updateAttempt(context, options.token, signedAt, { outcome: 'refused', code: error.refusal.code });
      context.notice(`the server refused this redeem; nothing was paid. Fix the cause and run "wallet redeem" again to sign a new authorisation`);
    }
    throw error;
  }
  const parsed = redemptionAnswer.safeParse(answer.body);
  if (!parsed.success) throw new WalletError('server_refused', `unexpected answer from the server: ${JSON.stringify(answer.body).slice(0, 500)}`);
  const redemption = parsed.data;
  updateAttempt(context, options.token, signedAt, { outcome: 'accepted', redemption_id: redemption.redemption_id, status: redemption.status });
  return [
    `redemption_id: ${redemption.redemption_id}`,
    `status:        ${redemption.status}`,
    `amount:        ${redemption.amount} ${redemption.currency} (fee ${redemption.fee})`,
    `to:            ${rail} ${destination}`,
    `follow it with: wallet status --token ${options.token}`,
  ].join('\n');
}

/**
 * `status`: what the server knows of a PLC (its status, chain and bearer) and of this wallet's
 * latest redemption of it (through GET /api/v1/redemptions/{id}), recording the redemption's status.
 */
export async function statusCommand(context: CommandContext, options: { readonly token: string; readonly server: string | undefined }): Promise<string> {
  const wallet = loadWallet(context.dir);
  const server = requireServer(wallet, options.server, 'status');
  const token = loadToken(context.dir, options.token);
  const ownKeyHex = bytesToHex(wallet.keyPair.publicKey);
  const lines: string[] = [];
  const known = await getJson(server, serverPaths.status(options.token), { deviceId: wallet.deviceId, absentCodes: absentCodes.plc });
  const parsed = plcStatusAnswer.extend({ redemption_in_flight: z.boolean().optional() }).safeParse(known.body);
  if (!known.found) lines.push(`plc:          not registered with ${server}`);
  else if (parsed.success) {
    const plc = parsed.data;
    lines.push(
      `plc:          ${plc.status}${plc.redemption_in_flight === true ? ' (redemption in flight)' : ''}`,
      `chain_length: ${plc.chain_length} registered (this wallet holds ${token.plc.transfer_chain.length})`,
      `bearer:       ${plc.bearer_pubkey}${plc.bearer_pubkey === ownKeyHex ? ' (this wallet)' : ''}`,
    );
  }
  const attempt = [...(token.redeem_attempts ?? [])].reverse().find((candidate) => candidate.redemption_id !== null);
  if (attempt !== undefined && attempt.redemption_id !== null) {
    const found = await getJson(server, serverPaths.redemption(attempt.redemption_id), { deviceId: wallet.deviceId, absentCodes: absentCodes.redemption });
    const redemption = redemptionAnswer.safeParse(found.body);
    if (found.found && redemption.success) {
      const r = redemption.data;
      updateAttempt(context, options.token, attempt.signed_at, { status: r.status });
      lines.push(
        `redemption:   ${r.redemption_id}`,
        `status:       ${r.status}${r.failure_reason === null ? '' : ` (${r.failure_reason})`}`,
        `amount:       ${r.amount} ${r.currency} (fee ${r.fee})`,
        `gateway:      ${r.gateway_transfer_id ?? 'no transfer yet'}${r.gateway_status === null ? '' : ` ${r.gateway_status}`}`,
      );
      if (r.status === 'FAILED') lines.push(`the payout failed: the PLC can be redeemed again ("wallet redeem --token ${options.token} ...")`);
    } else {
      lines.push(`redemption:   ${attempt.redemption_id} not found at ${server}`);
    }
  } else if ((token.redeem_attempts ?? []).length > 0) {
    lines.push(`redeem:       ${describeAttempt(token.redeem_attempts!.at(-1)!)}`);
  }
  return lines.join('\n');
}

const balanceAnswer = z.object({ currency: z.string(), available: z.string(), held: z.string(), pending: z.string(), promised: z.string(), status: z.string() });

/** `balance`: this wallet's account at the server (its public key is its owner id). */
export async function balanceCommand(context: CommandContext, options: { readonly server: string | undefined; readonly currency: string | undefined }): Promise<string> {
  const wallet = loadWallet(context.dir);
  const server = requireServer(wallet, options.server, 'balance');
  const currency = options.currency ?? 'BRL';
  if (!isPlcCurrency(currency)) throw new WalletError('usage', `--currency must be BRL, USD or EUR, got ${JSON.stringify(currency)}`);
  const path = `${serverPaths.balance(bytesToHex(wallet.keyPair.publicKey))}?currency=${currency}`;
  const answer = await getJson(server, path, { deviceId: wallet.deviceId });
  // The server answers zeros for an owner it has never seen: a 404 here is a wrong base URL, which
  // getJson refuses, never "no account".
  const parsed = balanceAnswer.safeParse(answer.body);
  if (!parsed.success) throw new WalletError('server_refused', `unexpected answer from ${server}: ${JSON.stringify(answer.body).slice(0, 500)}`);
  const b = parsed.data;
  return [
    `available: ${b.available} ${b.currency}`,
    `promised:  ${b.promised} ${b.currency} (PLCs issued and not yet redeemed, cancelled or expired)`,
    `pending:   ${b.pending} ${b.currency} (redemptions being paid out)`,
    `held:      ${b.held} ${b.currency}`,
    `account:   ${b.status}`,
  ].join('\n');
}

/**
 * A PLC this wallet issued that the server never accepted, checked before it is dropped or
 * re-issued: issued here, never sent, no cancel or redeem, and unknown to the server (asked when a
 * server is known; without one, only a PLC whose create the server refused qualifies).
 */
async function unacceptedIssue(context: CommandContext, wallet: Wallet, tokenId: string, server: string | undefined): Promise<TokenFile> {
  const token = loadToken(context.dir, tokenId);
  const plc = storedPlc(token);
  if (!bytesEqual(plc.commitment.issuerPublicKey, wallet.keyPair.publicKey)) throw new WalletError('not_issuer', `this wallet did not issue ${tokenId}`);
  if (plc.transferChain.length > 0) throw new WalletError('already_transferred', `${tokenId} was sent to another wallet: it must be registered, not dropped`);
  if (token.cancel_signed_at !== null) throw new WalletError('token_closed', `a cancel for ${tokenId} was signed at ${token.cancel_signed_at}`);
  if (token.registered_at !== null) throw new WalletError('already_registered', `${tokenId} is registered with a server: cancel it instead`);
  if (server !== undefined) {
    const known = await getJson(server, serverPaths.status(tokenId), { deviceId: wallet.deviceId, absentCodes: absentCodes.plc });
    if (known.found) {
      markRegistered(context, tokenId);
      throw new WalletError('already_registered', `${server} holds ${tokenId} (its create went through): cancel it instead`);
    }
  } else if (token.server_refusal === undefined || token.server_refusal === null) {
    throw new WalletError('no_server', `whether a server holds ${tokenId} is unknown: pass --server URL (or remember one with "wallet config --server URL")`);
  }
  return token;
}

/** `drop`: forgets a PLC this wallet issued that no server accepted and no one else received. */
export async function dropCommand(context: CommandContext, options: { readonly token: string; readonly server: string | undefined }): Promise<string> {
  const wallet = loadWallet(context.dir);
  await unacceptedIssue(context, wallet, options.token, serverOf(wallet, options.server));
  withWalletLock(context.dir, () => deleteToken(context.dir, options.token));
  return `dropped ${options.token}: it was never registered, so nothing was promised and nothing is booked`;
}

/**
 * `reissue`: replaces a PLC no server accepted (funds were short, it went stale before `publish`)
 * with a new one of the same amount, currency and life, signed now, and registers it; the old one
 * is dropped.
 */
export async function reissueCommand(context: CommandContext, options: { readonly token: string; readonly server: string | undefined }): Promise<string> {
  const wallet = loadWallet(context.dir);
  const server = requireServer(wallet, options.server, 'reissue');
  const token = await unacceptedIssue(context, wallet, options.token, server);
  const old = storedPlc(token).commitment;
  withWalletLock(context.dir, () => deleteToken(context.dir, options.token));
  context.notice(`dropped ${options.token}; issuing its replacement`);
  const ttlHours = Math.round((old.expiresAtMs - old.createdAtMs) / 3_600_000);
  return issueAndRegister(context, wallet, { amountMinor: old.amountMinor, currency: old.currency as PlcCurrency, ttlHours }, server);
}

const feeScheduleAnswer = z.object({
  version: z.number().int(),
  current_version: z.number().int(),
  description: z.string(),
  rules: z.array(z.object({ rail: z.string(), tier: z.string().nullable(), fixed: z.string(), rate_bps: z.number(), min: z.string(), max: z.string().nullable() })),
});
const feeConsentAnswer = z.object({ schedule_version: z.number().int(), device_id: z.string(), consented_at: z.string(), created: z.boolean() });

/**
 * The server's current fee schedule (docs/limits-and-fees.md); with `consent`, this wallet's key
 * signs its consent to that version and posts it: from then on its redemptions are charged by it.
 */
export async function feesCommand(context: CommandContext, options: { readonly server: string | undefined; readonly consent: boolean }): Promise<string> {
  const wallet = loadWallet(context.dir);
  const server = requireServer(wallet, options.server, 'fees');
  const answer = await getJson(server, serverPaths.feeSchedule, { deviceId: wallet.deviceId, absentCodes: absentCodes.feeSchedule });
  const parsed = feeScheduleAnswer.safeParse(answer.body);
  if (!answer.found || !parsed.success) throw new WalletError('server_refused', `${server} serves no fee schedule`);
  const schedule = parsed.data;
  const lines = [
    `fee schedule version ${schedule.version}: ${schedule.description}`,
    ...schedule.rules.map(
      (rule) => `  ${rule.rail.padEnd(6)} ${(rule.tier ?? 'any tier').padEnd(9)} ${rule.fixed} + ${rule.rate_bps} bps, min ${rule.min}, max ${rule.max ?? 'none'}`,
    ),
  ];
  if (!options.consent) return [...lines, 'consent with "wallet fees --consent" (a redemption with a fee is refused until then)'].join('\n');
  const signed = signFeeConsent({ deviceId: wallet.deviceId, scheduleVersion: schedule.current_version, operationTimestampMs: context.nowMs() }, wallet.keyPair.secretKey);
  const posted = await postJson(
    server,
    serverPaths.feeConsent,
    {
      public_key: bytesToHex(wallet.keyPair.publicKey),
      schedule_version: signed.scheduleVersion,
      device_id: signed.deviceId,
      operation_timestamp: signed.operationTimestampMs,
      device_signature: bytesToHex(signed.signature),
    },
    { deviceId: wallet.deviceId },
  );
  const consent = feeConsentAnswer.parse(posted.body);
  return [
    ...lines,
    `${consent.created ? 'consented' : 'already consented'} to fee schedule version ${consent.schedule_version} at ${consent.consented_at}`,
  ].join('\n');
}
