/**
 * The browser wallet (docs/wallet.md): one page, a screen at a time. Keys are made here and kept
 * sealed (./vault.ts); PLCs are kept in IndexedDB (./db.ts); every protocol step is the project's
 * own library (src/protocol) through ./wallet-ops.ts. Online it issues, shows balances and
 * redeems; offline it pays and receives by QR code, static or animated.
 */
import { render } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import {
  bytesToHex,
  chainHeadHash,
  createPlc,
  currentBearer,
  developmentBlocklistPublicKey,
  encodeTransport,
  encodeTransportText,
  formatAmountMinor,
  hexToBytes,
  isValidPublicKey,
  parseAmountInput,
  parsePlcJson,
  plcToJson,
  redeemAuthorizationToJson,
  signRedeem,
  transportHopsMax,
  transportHopsMaxWithReceipt,
  ttlHoursMax,
  ttlHoursMin,
  verifyBlocklistJson,
  type Plc,
  type SignedBlocklist,
  type SignedBlocklistJson,
} from '../../src/protocol/index.ts';
import { signFeeConsent } from '../../src/fees/consent.ts';
import { pixKeyType } from '../../src/settlement/pix-key.ts';
import { checkBoletoLine } from '../../src/settlement/boleto.ts';
import { ApiError, getJson, postJson } from './api.ts';
import { backupKey, recoverKey } from './backup.ts';
import { allTokens, deleteMeta, deleteToken, getMeta, getToken, putMeta, putToken, type RedeemRecord, type TokenRecord } from './db.ts';
import { FountainDecoder, FountainEncoder, decodeFountainParts, isFountainPart } from './fountain.ts';
import { drawQr, Scanner } from './qr.ts';
import { createVault, kdfParams, loadVault, openVault, passphraseCharsMin, WrongPassphrase, type Unlocked } from './vault.ts';
import { attachIssueReceipt, decodePayload, payHop, receiptRefusal, stateOf, verifyReceived, type Refusal } from './wallet-ops.ts';
import './styles.css';

type Screen =
  | { name: 'home' }
  | { name: 'issue' }
  | { name: 'receive' }
  | { name: 'pay'; tokenId: string }
  | { name: 'show'; tokenId: string }
  | { name: 'redeem'; tokenId: string }
  | { name: 'settings' };

interface KeptBlocklist {
  json: SignedBlocklistJson;
  fetched_at: number;
}

const errorText = (error: unknown): string => (error instanceof Error ? error.message : String(error));
const short = (hex: string): string => `${hex.slice(0, 8)}…`;
/** A sum of amounts (zero included, which a PLC's amount never is), in reais. */
const formatTotal = (minor: bigint): string => (minor === 0n ? '0.00' : formatAmountMinor(minor, 'BRL'));

async function loadBlocklist(): Promise<SignedBlocklist | undefined> {
  const kept = await getMeta<KeptBlocklist>('blocklist');
  if (kept === undefined) return undefined;
  const verified = verifyBlocklistJson(kept.json, await trustedKey());
  return verified.ok ? verified.list : undefined;
}

/**
 * The service key this build trusts out of the box: `VITE_WALLET_BLOCKLIST_KEY` at build time (a
 * deployment's own key, checked by vite.wallet.config.ts), else the published development key.
 */
const builtInKeyHex: string = import.meta.env.VITE_WALLET_BLOCKLIST_KEY ?? bytesToHex(developmentBlocklistPublicKey);
const developmentKeyHex = bytesToHex(developmentBlocklistPublicKey);

/** The service key the blocklist (and through it the receipt keys) must be signed with: the one set on this phone, else the build's. */
async function trustedKeyHex(): Promise<string> {
  return (await getMeta<string>('blocklist_key')) ?? builtInKeyHex;
}

async function trustedKey(): Promise<Uint8Array> {
  return hexToBytes(await trustedKeyHex(), 32);
}

/** Why a typed service key cannot be trusted, or null when it can. */
function serviceKeyProblem(text: string): string | null {
  if (!/^[0-9a-f]{64}$/.test(text)) return 'A service key is 64 hexadecimal digits (0-9, a-f).';
  if (!isValidPublicKey(hexToBytes(text, 32))) return 'Those 64 digits are not an Ed25519 public key: check them against the published key.';
  return null;
}

/**
 * Keeps with an issued PLC the service's issue receipt (docs/protocol.md section 19) from a
 * service answer (the create's, or the PLC's JSON view), once it verifies against the receipt
 * keys this wallet trusts. Answers null when kept, else why not (receivers would refuse the PLC).
 */
async function keepReceipt(token: TokenRecord, receiptHex: unknown): Promise<string | null> {
  const attached = attachIssueReceipt(token.plc, receiptHex, await loadBlocklist(), await trustedKey());
  if (!attached.ok) return attached.message;
  const current = (await getToken(token.token_id)) ?? token;
  await putToken({ ...current, plc: { ...current.plc, issue_receipt: attached.json.issue_receipt }, updated_at: Date.now() });
  return null;
}

function Alert({ message, kind = 'error' }: { message: string | null; kind?: 'error' | 'ok' }) {
  if (message === null) return null;
  return (
    <p role={kind === 'error' ? 'alert' : 'status'} class={kind === 'error' ? 'alert' : 'notice'}>
      {message}
    </p>
  );
}

// ------------------------------------------------------------------------------------------------
// Lock screen and first run

function Setup({ onReady }: { onReady: (u: Unlocked) => void }) {
  const [passphrase, setPassphrase] = useState('');
  const [again, setAgain] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const [recovery, setRecovery] = useState('');
  const [restoring, setRestoring] = useState(false);
  const submit = async (event: Event) => {
    event.preventDefault();
    if (passphrase !== again) return setError('The two passphrases differ.');
    if (passphrase.length < passphraseCharsMin) return setError(`Choose a passphrase of at least ${passphraseCharsMin} characters.`);
    setBusy(true);
    setError(null);
    try {
      if (restoring) {
        const content = await recoverKey(recovery);
        onReady(await createVault(passphrase, Date.now(), { secretKey: content.walletSecretKey, deviceId: content.deviceId }));
        return;
      }
      onReady(await createVault(passphrase, Date.now()));
    } catch (e) {
      setError(errorText(e));
    } finally {
      setBusy(false);
    }
  };
  return (
    <form class="card" onSubmit={submit}>
      <h1>New wallet</h1>
      <p>A key is made on this device and kept encrypted under your passphrase. Nobody, the service included, can recover it without the passphrase.</p>
      <label class="inline">
        <input type="checkbox" checked={restoring} onChange={(e) => setRestoring(e.currentTarget.checked)} /> Restore a backed-up key instead
      </label>
      {restoring && (
        <label>
          Recovery passphrase
          <input autocomplete="off" value={recovery} onInput={(e) => setRecovery(e.currentTarget.value)} />
        </label>
      )}
      <label>
        Passphrase
        <input type="password" autocomplete="new-password" value={passphrase} onInput={(e) => setPassphrase(e.currentTarget.value)} />
      </label>
      <label>
        Passphrase again
        <input type="password" autocomplete="new-password" value={again} onInput={(e) => setAgain(e.currentTarget.value)} />
      </label>
      <Alert message={error} />
      <button type="submit" disabled={busy}>
        {busy ? 'Making the key…' : restoring ? 'Restore wallet' : 'Create wallet'}
      </button>
    </form>
  );
}

function Lock({ onReady }: { onReady: (u: Unlocked) => void }) {
  const [passphrase, setPassphrase] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const submit = async (event: Event) => {
    event.preventDefault();
    setBusy(true);
    setError(null);
    try {
      const vault = await loadVault();
      if (vault === undefined) throw new Error('No wallet on this device.');
      onReady(await openVault(vault, passphrase));
    } catch (e) {
      setError(e instanceof WrongPassphrase ? e.message : errorText(e));
    } finally {
      setBusy(false);
    }
  };
  return (
    <form class="card" onSubmit={submit}>
      <h1>Wallet locked</h1>
      <label>
        Passphrase
        <input type="password" autocomplete="current-password" value={passphrase} onInput={(e) => setPassphrase(e.currentTarget.value)} />
      </label>
      <Alert message={error} />
      <button type="submit" disabled={busy}>
        {busy ? 'Unlocking…' : 'Unlock'}
      </button>
    </form>
  );
}

// ------------------------------------------------------------------------------------------------
// Home: balances and PLCs

interface Balance {
  available: string;
  promised: string;
  pending: string;
  currency: string;
}

function Home({ me, tokens, go, reload }: { me: Unlocked; tokens: TokenRecord[]; go: (s: Screen) => void; reload: () => Promise<void> }) {
  const [balance, setBalance] = useState<Balance | null>(null);
  const [online, setOnline] = useState<string | null>(null);
  const refresh = async () => {
    try {
      const answer = (await getJson(`/api/v1/balance/${me.publicKeyHex}?currency=BRL`, me.deviceId)) as Balance;
      setBalance(answer);
      setOnline(null);
      // What the service knows of each PLC this wallet issued or holds.
      for (const token of tokens) {
        try {
          const status = (await getJson(`/api/v1/plc/${token.token_id}/status`, me.deviceId)) as { status: string };
          if (status.status !== token.server_status) await putToken({ ...token, server_status: status.status, registered: true });
          // A PLC issued here whose create answer (and its receipt) was lost: the service's view carries the receipt.
          if (token.origin === 'issued' && token.plc.issue_receipt === undefined) {
            const view = (await getJson(`/api/v1/plc/${token.token_id}/json`, me.deviceId)) as { issue_receipt?: unknown };
            await keepReceipt((await getToken(token.token_id)) ?? token, view.issue_receipt);
          }
        } catch {
          // not registered yet: nothing to show
        }
      }
      await reload();
    } catch (e) {
      setOnline(e instanceof ApiError && e.status === 404 ? 'No account at the service for this wallet yet.' : errorText(e));
    }
  };
  useEffect(() => {
    void refresh();
  }, []);
  const now = Date.now();
  const held = tokens.filter((t) => ['held', 'issued, not paid out', 'redeem failed'].includes(stateOf(t, me.publicKeyHex, now)));
  const heldTotal = held.reduce((sum, t) => sum + BigInt(parsePlcJson(t.plc).commitment.amountMinor), 0n);
  return (
    <section>
      <div class="card">
        <h2>Balance</h2>
        <p data-testid="held-total">
          Held offline: <strong>{formatTotal(heldTotal)} BRL</strong> in {held.length} PLC(s)
        </p>
        {balance !== null && (
          <p data-testid="balance">
            Account: <strong>{balance.available} {balance.currency}</strong> available, {balance.promised} promised, {balance.pending} being paid out
          </p>
        )}
        <Alert message={online} kind="ok" />
        <button type="button" onClick={() => void refresh()}>
          Refresh
        </button>
      </div>
      <div class="actions">
        <button type="button" onClick={() => go({ name: 'receive' })}>
          Receive
        </button>
        <button type="button" onClick={() => go({ name: 'issue' })}>
          Issue
        </button>
        <button type="button" onClick={() => go({ name: 'settings' })}>
          Settings
        </button>
      </div>
      <h2>PLCs</h2>
      <ul class="tokens" data-testid="tokens">
        {tokens.length === 0 && <li>No PLCs yet.</li>}
        {tokens.map((token) => {
          const plc = parsePlcJson(token.plc);
          const state = stateOf(token, me.publicKeyHex, now);
          return (
            <li key={token.token_id} data-token={token.token_id}>
              <span class="amount">
                {token.plc.amount} {token.plc.currency}
              </span>{' '}
              <span class="state" data-testid="state">
                {state}
              </span>
              <small>
                {' '}
                {short(token.token_id)} · {token.origin} · {plc.transferChain.length} hop(s)
                {token.server_status !== null && ` · service: ${token.server_status}`}
                {token.redeem !== null && token.redeem.status !== null && ` · redemption ${token.redeem.status}`}
              </small>
              <div class="row">
                {(state === 'held' || state === 'issued, not paid out') && (
                  <button type="button" onClick={() => go({ name: 'pay', tokenId: token.token_id })}>
                    Pay
                  </button>
                )}
                {(state === 'held' || state === 'redeem failed' || state === 'redeeming') && (
                  <button type="button" onClick={() => go({ name: 'redeem', tokenId: token.token_id })}>
                    Redeem
                  </button>
                )}
                {state === 'paid away' && (
                  <button type="button" onClick={() => go({ name: 'show', tokenId: token.token_id })}>
                    Show code
                  </button>
                )}
              </div>
            </li>
          );
        })}
      </ul>
    </section>
  );
}

// ------------------------------------------------------------------------------------------------
// Issue (online)

interface FeeEstimate {
  fee: string;
  net_amount: string;
  schedule_version: number;
  consent_required: boolean;
}

function Issue({ me, done }: { me: Unlocked; done: () => void }) {
  const [amount, setAmount] = useState('');
  const [hours, setHours] = useState('24');
  const [quote, setQuote] = useState<{ amountMinor: bigint; ttl: number; pix: FeeEstimate | null } | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [result, setResult] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const review = async (event: Event) => {
    event.preventDefault();
    setError(null);
    let amountMinor: bigint;
    try {
      amountMinor = parseAmountInput(amount.trim(), 'BRL');
    } catch {
      return setError('Enter an amount such as 12.50.');
    }
    const ttl = Number(hours);
    if (!Number.isInteger(ttl) || ttl < ttlHoursMin || ttl > ttlHoursMax) return setError(`Expiry is a whole number of hours from ${ttlHoursMin} to ${ttlHoursMax}.`);
    let pix: FeeEstimate | null = null;
    try {
      pix = (await postJson('/api/v1/fees/estimate', me.deviceId, { amount: formatAmountMinor(amountMinor, 'BRL'), currency: 'BRL', rail: 'PIX', owner_id: me.publicKeyHex })) as FeeEstimate;
    } catch (e) {
      if (e instanceof ApiError && e.code === 'offline') return setError('Issuing needs a connection: the service must register the PLC before anyone can redeem it.');
    }
    setQuote({ amountMinor, ttl, pix });
  };
  const confirm = async () => {
    if (quote === null) return;
    setBusy(true);
    setError(null);
    try {
      const plc = createPlc({ issuerSecretKey: me.keyPair.secretKey, amountMinor: quote.amountMinor, currency: 'BRL', createdAtMs: Date.now(), ttlHours: quote.ttl });
      const json = plcToJson(plc);
      const token: TokenRecord = { token_id: json.token_id, plc: json, updated_at: Date.now(), origin: 'issued', registered: false, server_status: null, redeem: null };
      await putToken(token);
      try {
        const answer = (await postJson('/api/v1/plc/create', me.deviceId, { plc: json }, json.token_id)) as { status: string; issue_receipt?: unknown };
        await putToken({ ...token, registered: true, server_status: answer.status });
        // The service's receipt travels with the PLC in every form it is shown in: receivers refuse a PLC without one.
        const notKept = await keepReceipt({ ...token, registered: true, server_status: answer.status }, answer.issue_receipt);
        if (notKept !== null) throw new Error(`registered, but the service's receipt is not kept: ${notKept}`);
        setResult(`Issued ${json.amount} BRL (${short(json.token_id)}): registered with the service, ${answer.status}; its receipt is kept.`);
      } catch (e) {
        // Nothing is promised until the service registers it: a PLC it refused is dropped here.
        if (e instanceof ApiError && e.status >= 400 && e.status < 500) {
          await deleteToken(json.token_id);
        }
        // No answer: the service may have registered it. The PLC is kept; the balance screen asks the
        // service when online, and fetches the receipt (the PLC's JSON view) if it was registered.
        if (e instanceof ApiError && e.status === 0) {
          setQuote(null);
          setError(`No answer from the service (${short(json.token_id)} is kept): the balance screen checks with the service when the wallet is online, and fetches its receipt if it was registered.`);
          return;
        }
        throw e;
      }
      setQuote(null);
    } catch (e) {
      setError(`Not issued: ${errorText(e)}`);
    } finally {
      setBusy(false);
    }
  };
  return (
    <section class="card">
      <h1>Issue a PLC</h1>
      {quote === null ? (
        <form onSubmit={review}>
          <label>
            Amount (BRL)
            <input inputMode="decimal" value={amount} onInput={(e) => setAmount(e.currentTarget.value)} />
          </label>
          <label>
            Expires in (hours)
            <input inputMode="numeric" value={hours} onInput={(e) => setHours(e.currentTarget.value)} />
          </label>
          <button type="submit">Review</button>
        </form>
      ) : (
        <div data-testid="issue-review">
          <p>
            Issue <strong>{formatAmountMinor(quote.amountMinor, 'BRL')} BRL</strong>, expiring in {quote.ttl} h.
          </p>
          <p>Issuing costs no fee: the amount is held from your available balance until the PLC is redeemed, cancelled or expires.</p>
          {quote.pix !== null && (
            <p data-testid="issue-fee">
              Whoever redeems it to Pix pays a fee of {quote.pix.fee} BRL (schedule v{quote.pix.schedule_version}) and receives {quote.pix.net_amount} BRL.
            </p>
          )}
          <div class="row">
            <button type="button" disabled={busy} onClick={() => void confirm()}>
              Confirm and issue
            </button>
            <button type="button" class="secondary" onClick={() => setQuote(null)}>
              Change
            </button>
          </div>
        </div>
      )}
      <Alert message={error} />
      <Alert message={result} kind="ok" />
      <button type="button" class="secondary" onClick={done}>
        Back
      </button>
    </section>
  );
}

// ------------------------------------------------------------------------------------------------
// QR display (static or animated) and the camera

/** Frames a second of the animated code. */
export const animatedFps = 5;

function PlcCode({ plc }: { plc: Plc }) {
  const canvas = useRef<HTMLCanvasElement>(null);
  const [info, setInfo] = useState('');
  // One code while the text form fits version 40 (fewer hops when the PLC carries its issue receipt), else animated.
  const hopsMax = plc.issueReceipt === undefined ? transportHopsMax : transportHopsMaxWithReceipt;
  const text = plc.transferChain.length <= hopsMax ? encodeTransportText(plc) : null;
  useEffect(() => {
    const target = canvas.current;
    if (target === null) return;
    if (text !== null) {
      void drawQr(target, text).then((version) => {
        target.dataset.version = String(version);
        setInfo(`One QR code (version ${version}, ${text.length} characters).`);
      });
      return;
    }
    const encoder = new FountainEncoder(encodeTransport(plc));
    let frame = 0;
    const show = () => {
      frame += 1;
      const part = encoder.next();
      void drawQr(target, part, 3).then(() => {
        target.dataset.frame = String(frame);
        target.dataset.fragments = String(encoder.fragments);
        setInfo(`Animated code: ${encoder.fragments} parts, ${animatedFps} frames a second; keep the camera on it.`);
      });
    };
    show();
    const timer = setInterval(show, 1000 / animatedFps);
    return () => clearInterval(timer);
  }, [plc]);
  const copy = () => void navigator.clipboard?.writeText(text ?? JSON.stringify(plcToJson(plc)));
  return (
    <div class="code">
      <canvas ref={canvas} data-testid="plc-qr" data-animated={text === null ? 'true' : 'false'} />
      <p>{info}</p>
      <details>
        <summary>Text form</summary>
        <textarea readOnly rows={4} aria-label="Payment text" value={text ?? JSON.stringify(plcToJson(plc))} />
        <button type="button" onClick={copy}>
          Copy
        </button>
      </details>
    </div>
  );
}

function Camera({ onText, label }: { onText: (text: string) => void; label: string }) {
  const video = useRef<HTMLVideoElement>(null);
  const [error, setError] = useState<string | null>(null);
  const handler = useRef(onText);
  handler.current = onText;
  useEffect(() => {
    const scanner = new Scanner();
    if (video.current !== null) void scanner.start(video.current, (text) => handler.current(text), setError);
    return () => scanner.stop();
  }, []);
  return (
    <div class="camera">
      <video ref={video} aria-label={label} data-testid="camera" />
      <Alert message={error} />
    </div>
  );
}

// ------------------------------------------------------------------------------------------------
// Receive (offline)

function Receive({ me, reload, done }: { me: Unlocked; reload: () => Promise<void>; done: () => void }) {
  const canvas = useRef<HTMLCanvasElement>(null);
  const [scanning, setScanning] = useState(false);
  const [refusal, setRefusal] = useState<Refusal | null>(null);
  const [accepted, setAccepted] = useState<string | null>(null);
  const [progress, setProgress] = useState<string | null>(null);
  const [paste, setPaste] = useState('');
  const decoder = useRef(new FountainDecoder());
  const busy = useRef(false);
  const seen = useRef(new Set<string>());
  useEffect(() => {
    const target = canvas.current;
    if (target !== null) void drawQr(target, me.publicKeyHex.toUpperCase()).then((version) => (target.dataset.version = String(version)));
  }, []);

  const accept = async (payload: string | Uint8Array) => {
    const decoded = decodePayload(payload);
    // A verdict ends the scan: the person reads it, then scans again if they want to.
    if ('ok' in decoded) {
      setRefusal(decoded);
      setScanning(false);
      return;
    }
    const known = await getToken(decoded.commitment.tokenId);
    const verdict = verifyReceived(decoded, { ownKeyHex: me.publicKeyHex, nowMs: Date.now(), blocklist: await loadBlocklist(), trustedServiceKey: await trustedKey(), known });
    if (!verdict.ok) {
      setRefusal(verdict);
      setAccepted(null);
      setScanning(false);
      return;
    }
    const json = plcToJson(verdict.plc);
    await putToken({ token_id: json.token_id, plc: json, updated_at: Date.now(), origin: known?.origin ?? 'received', registered: known?.registered ?? false, server_status: known?.server_status ?? null, redeem: known?.redeem ?? null });
    const from = bytesToHex(verdict.plc.transferChain.at(-1)!.senderPublicKey);
    setRefusal(null);
    setAccepted(`Received ${json.amount} ${json.currency} from ${short(from)} (${verdict.plc.transferChain.length} hop(s)); verified offline.`);
    setScanning(false);
    await reload();
  };

  /** Pasted text: one form, or the animated code's parts one a line (what `wallet send --ur-parts` writes). */
  const acceptPasted = async (text: string) => {
    if (!isFountainPart(text.trim())) return accept(text);
    const parts = decodeFountainParts(text.split(/\r?\n/));
    if (!parts.ok) {
      setAccepted(null);
      setRefusal({ ok: false, code: 'unreadable', message: `These parts do not make a payment: ${parts.detail}. Ask the payer for the whole set.` });
      return;
    }
    return accept(parts.message);
  };

  const onText = (text: string) => {
    if (busy.current) return;
    if (isFountainPart(text)) {
      if (seen.current.has(text)) return;
      seen.current.add(text);
      let message: Uint8Array | null = null;
      try {
        message = decoder.current.receive(text);
      } catch (e) {
        decoder.current = new FountainDecoder();
        seen.current.clear();
        setProgress(errorText(e));
        return;
      }
      setProgress(`Animated code: ${Math.round(decoder.current.progress() * 100)}% (${seen.current.size} part(s) read)`);
      if (message === null) return;
      decoder.current = new FountainDecoder();
      seen.current.clear();
      busy.current = true;
      void accept(message).finally(() => (busy.current = false));
      return;
    }
    if (seen.current.has(text)) return;
    seen.current.add(text);
    busy.current = true;
    void accept(text).finally(() => (busy.current = false));
  };

  return (
    <section class="card">
      <h1>Receive</h1>
      <p>Let the payer scan this code: it is this wallet's public key.</p>
      <canvas ref={canvas} data-testid="receive-qr" aria-label="This wallet's receive code" />
      <p class="mono" data-testid="own-key">
        {me.publicKeyHex}
      </p>
      {scanning ? (
        <>
          <Camera onText={onText} label="Camera: the payer's code" />
          <button type="button" class="secondary" onClick={() => setScanning(false)}>
            Stop scanning
          </button>
        </>
      ) : (
        <button
          type="button"
          onClick={() => {
            seen.current.clear();
            setRefusal(null);
            setAccepted(null);
            setScanning(true);
          }}
        >
          Scan payment
        </button>
      )}
      <p role="status" data-testid="scan-progress">
        {progress}
      </p>
      {refusal !== null && (
        <p role="alert" class="alert" data-testid="refusal" data-code={refusal.code} data-reason={refusal.reason}>
          {refusal.message}
        </p>
      )}
      <Alert message={accepted} kind="ok" />
      <details>
        <summary>Paste a payment instead</summary>
        <textarea rows={3} aria-label="Paste payment" value={paste} onInput={(e) => setPaste(e.currentTarget.value)} />
        <button type="button" onClick={() => void acceptPasted(paste)}>
          Receive pasted payment
        </button>
      </details>
      <button type="button" class="secondary" onClick={done}>
        Back
      </button>
    </section>
  );
}

// ------------------------------------------------------------------------------------------------
// Pay (offline)

function Pay({ me, tokenId, reload, done, go }: { me: Unlocked; tokenId: string; reload: () => Promise<void>; done: () => void; go: (s: Screen) => void }) {
  const [token, setToken] = useState<TokenRecord | null>(null);
  const [recipient, setRecipient] = useState<string | null>(null);
  const [typed, setTyped] = useState('');
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    void getToken(tokenId).then((t) => setToken(t ?? null));
  }, [tokenId]);
  const take = (text: string) => {
    const hex = text.trim().toLowerCase();
    if (!/^[0-9a-f]{64}$/.test(hex) || !isValidPublicKey(hexToBytes(hex, 32))) {
      setError('That is not a wallet\'s receive code.');
      return;
    }
    if (hex === me.publicKeyHex) {
      setError('That is this wallet\'s own code: scan the receiver\'s.');
      return;
    }
    setError(null);
    setRecipient(hex);
  };
  const sign = async () => {
    if (token === null || recipient === null) return;
    try {
      const plc = parsePlcJson(token.plc);
      if (bytesToHex(currentBearer(plc)) !== me.publicKeyHex) throw new Error('This wallet no longer holds this PLC.');
      // A hop the receiver would refuse is not signed: without the service's receipt the PLC is refused offline.
      const unbacked = receiptRefusal(plc, await loadBlocklist(), await trustedKey());
      if (unbacked !== null) {
        throw new Error(
          plc.transferChain.length === 0
            ? 'Not signed: this PLC has no receipt from the service yet, and receivers refuse a PLC without one. Open the wallet online once so it fetches the receipt.'
            : `Not signed: receivers would refuse this PLC. ${unbacked.message}`,
        );
      }
      const paid = payHop(plc, me.keyPair.secretKey, hexToBytes(recipient, 32), Date.now());
      // Saved before it is shown: a hop shown but not kept could be signed again differently (a fork).
      await putToken({ ...token, plc: plcToJson(paid), updated_at: Date.now() });
      await reload();
      go({ name: 'show', tokenId });
    } catch (e) {
      setError(errorText(e));
    }
  };
  if (token === null) return <p>Loading…</p>;
  return (
    <section class="card">
      <h1>
        Pay {token.plc.amount} {token.plc.currency}
      </h1>
      {recipient === null ? (
        <>
          <p>Scan the receiver's code (Receive on their wallet).</p>
          <Camera onText={take} label="Camera: the receiver's code" />
          <label>
            Or paste the receiver's key
            <input value={typed} onInput={(e) => setTyped(e.currentTarget.value)} />
          </label>
          <button type="button" onClick={() => take(typed)}>
            Use this key
          </button>
        </>
      ) : (
        <div data-testid="pay-confirm">
          <p>
            Pay <strong>{token.plc.amount} {token.plc.currency}</strong> to <span class="mono">{short(recipient)}</span>? Once signed it cannot be taken back.
          </p>
          <button type="button" onClick={() => void sign()}>
            Sign and show code
          </button>
        </div>
      )}
      <Alert message={error} />
      <button type="button" class="secondary" onClick={done}>
        Back
      </button>
    </section>
  );
}

function Show({ tokenId, done }: { tokenId: string; done: () => void }) {
  const [plc, setPlc] = useState<Plc | null>(null);
  useEffect(() => {
    void getToken(tokenId).then((t) => t !== undefined && setPlc(parsePlcJson(t.plc)));
  }, [tokenId]);
  if (plc === null) return <p>Loading…</p>;
  return (
    <section class="card">
      <h1>Show this to the receiver</h1>
      <p>
        {plcToJson(plc).amount} {plc.commitment.currency} to {short(bytesToHex(currentBearer(plc)))} · {plc.transferChain.length} hop(s)
      </p>
      <PlcCode plc={plc} />
      <button type="button" onClick={done}>
        Done
      </button>
    </section>
  );
}

// ------------------------------------------------------------------------------------------------
// Redeem (online)

interface Redemption {
  redemption_id: string;
  status: string;
  amount: string;
  fee: string;
  failure_reason: string | null;
}

function Redeem({ me, tokenId, done }: { me: Unlocked; tokenId: string; done: () => void }) {
  const [token, setToken] = useState<TokenRecord | null>(null);
  const [rail, setRail] = useState<'pix' | 'boleto'>('pix');
  const [destination, setDestination] = useState('');
  const [quote, setQuote] = useState<FeeEstimate | null>(null);
  const [consent, setConsent] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [live, setLive] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const load = async () => setToken((await getToken(tokenId)) ?? null);
  useEffect(() => {
    void load();
  }, [tokenId]);

  // Follow the redemption: the PLC's event stream, and the redemption's own record for the reason.
  const redemptionId = token?.redeem?.redemption_id ?? null;
  useEffect(() => {
    if (redemptionId === null) return;
    let closed = false;
    const check = async () => {
      try {
        const r = (await getJson(`/api/v1/redemptions/${redemptionId}`, me.deviceId)) as Redemption;
        const current = await getToken(tokenId);
        if (current !== undefined && current.redeem !== null) await putToken({ ...current, redeem: { ...current.redeem, status: r.status, failure_reason: r.failure_reason, fee: r.fee } });
        setLive(`${r.status}${r.failure_reason === null ? '' : `: ${r.failure_reason}`}`);
        await load();
        return r.status === 'SETTLED' || r.status === 'FAILED';
      } catch {
        return false;
      }
    };
    const events = new EventSource(`/api/v1/plc/${tokenId}/events?device_id=${encodeURIComponent(me.deviceId)}`);
    events.addEventListener('redemption', () => void check().then((end) => end && events.close()));
    events.addEventListener('plc', () => void check());
    // The stream may be off for this device (a canary flag): the record is read every few seconds too.
    const timer = setInterval(() => void check().then((end) => end && !closed && (clearInterval(timer), events.close())), 3000);
    void check();
    return () => {
      closed = true;
      clearInterval(timer);
      events.close();
    };
  }, [redemptionId]);

  const review = async (event: Event) => {
    event.preventDefault();
    setError(null);
    if (token === null) return;
    const dest = destination.trim();
    if (rail === 'pix' && pixKeyType(dest) === null) return setError('That is not a Pix key (CPF, CNPJ, phone +55…, e-mail or random key).');
    if (rail === 'boleto') {
      const line = checkBoletoLine(dest.replace(/[\s.]/g, ''));
      if (!line.ok) return setError(`That boleto line is not valid: ${line.reason}.`);
    }
    try {
      setQuote((await postJson('/api/v1/fees/estimate', me.deviceId, { amount: token.plc.amount, currency: token.plc.currency, rail: rail.toUpperCase(), owner_id: me.publicKeyHex })) as FeeEstimate);
    } catch (e) {
      setError(errorText(e));
    }
  };

  const redeem = async () => {
    if (token === null) return;
    // A retry after a lost answer re-sends the same signed body under the same key: the service answers with the redemption it opened.
    const previous = token.redeem !== null && token.redeem.outcome === 'unknown' ? token.redeem : null;
    if (previous === null && quote === null) return;
    setBusy(true);
    setError(null);
    try {
      if (previous === null && quote !== null && quote.consent_required) {
        if (!consent) throw new Error('Tick the box to accept the fee first.');
        const signed = signFeeConsent({ deviceId: me.deviceId, scheduleVersion: quote.schedule_version, operationTimestampMs: Date.now() }, me.keyPair.secretKey);
        await postJson('/api/v1/fees/consent', me.deviceId, {
          public_key: me.publicKeyHex,
          schedule_version: signed.scheduleVersion,
          device_id: signed.deviceId,
          operation_timestamp: signed.operationTimestampMs,
          device_signature: bytesToHex(signed.signature),
        });
      }
      const plc = parsePlcJson(token.plc);
      const dest = rail === 'boleto' ? destination.trim().replace(/[\s.]/g, '') : destination.trim();
      const timestampMs = previous?.timestamp_ms ?? Date.now();
      const authorization = signRedeem({ tokenId: plc.commitment.tokenId, headHash: chainHeadHash(plc), settlementRail: previous?.rail ?? rail, destination: previous?.destination ?? dest, timestampMs }, me.keyPair.secretKey);
      const record: RedeemRecord = {
        redemption_id: null,
        status: null,
        failure_reason: null,
        rail: previous?.rail ?? rail,
        destination: previous?.destination ?? dest,
        timestamp_ms: timestampMs,
        idempotency_key: previous?.idempotency_key ?? `redeem-${plc.commitment.tokenId}-${timestampMs}`,
        fee: previous?.fee ?? quote?.fee ?? null,
        outcome: 'unknown',
        code: null,
      };
      await putToken({ ...token, redeem: record });
      try {
        const answer = (await postJson('/api/v1/redeem/', me.deviceId, { plc: plcToJson(plc), authorization: redeemAuthorizationToJson(authorization) }, record.idempotency_key)) as Redemption;
        await putToken({ ...token, redeem: { ...record, outcome: 'accepted', redemption_id: answer.redemption_id, status: answer.status } });
      } catch (e) {
        if (e instanceof ApiError && e.status >= 400 && e.status < 500 && e.status !== 429) await putToken({ ...token, redeem: { ...record, outcome: 'refused', code: e.code } });
        throw e;
      }
      await load();
    } catch (e) {
      setError(errorText(e));
      await load();
    } finally {
      setBusy(false);
    }
  };

  if (token === null) return <p>Loading…</p>;
  const open = token.redeem !== null && token.redeem.outcome !== 'refused' && token.redeem.status !== 'FAILED';
  return (
    <section class="card">
      <h1>
        Redeem {token.plc.amount} {token.plc.currency}
      </h1>
      {token.redeem !== null && token.redeem.status === 'FAILED' && (
        <p role="status" class="alert" data-testid="redemption-status">
          {`Redemption ${token.redeem.redemption_id === null ? '' : short(token.redeem.redemption_id)}: FAILED${token.redeem.failure_reason ? `: ${token.redeem.failure_reason}` : ''}. Nothing was paid out; you can redeem it again.`}
        </p>
      )}
      {open ? (
        <div data-testid="redemption">
          <p>
            To {token.redeem!.rail} {token.redeem!.destination} · fee {token.redeem!.fee ?? '?'}
          </p>
          <p role="status" data-testid="redemption-status">
            {token.redeem!.redemption_id === null ? 'Sent; no answer yet.' : `Redemption ${short(token.redeem!.redemption_id)}: ${live ?? token.redeem!.status ?? '…'}`}
          </p>
          {token.redeem!.redemption_id === null && (
            <button type="button" disabled={busy} onClick={() => void redeem()}>
              Retry
            </button>
          )}
        </div>
      ) : quote === null ? (
        <form onSubmit={review}>
          <fieldset>
            <legend>Pay out to</legend>
            <label class="inline">
              <input type="radio" name="rail" checked={rail === 'pix'} onChange={() => setRail('pix')} /> Pix
            </label>
            <label class="inline">
              <input type="radio" name="rail" checked={rail === 'boleto'} onChange={() => setRail('boleto')} /> Boleto
            </label>
          </fieldset>
          <label>
            {rail === 'pix' ? 'Pix key' : 'Boleto line'}
            <input value={destination} onInput={(e) => setDestination(e.currentTarget.value)} />
          </label>
          <button type="submit">Get fee quote</button>
        </form>
      ) : (
        <div data-testid="redeem-quote">
          <p>
            Fee <strong>{quote.fee} BRL</strong>; you receive <strong>{quote.net_amount} BRL</strong> (fee schedule v{quote.schedule_version}).
          </p>
          {quote.consent_required && (
            <label class="inline">
              <input type="checkbox" checked={consent} onChange={(e) => setConsent(e.currentTarget.checked)} /> I accept fee schedule v{quote.schedule_version}
            </label>
          )}
          <div class="row">
            <button type="button" disabled={busy} onClick={() => void redeem()}>
              Redeem now
            </button>
            <button type="button" class="secondary" onClick={() => setQuote(null)}>
              Change
            </button>
          </div>
        </div>
      )}
      <Alert message={error} />
      <button type="button" class="secondary" onClick={done}>
        Back
      </button>
    </section>
  );
}

// ------------------------------------------------------------------------------------------------
// Settings: blocklist, key

/**
 * The service key this phone trusts (docs/wallet.md, "Trusted service key"): shown with what it
 * is, and replaced only after the person has compared the new one with the key the service's
 * operator publishes. A kept blocklist that the new key did not sign is dropped at once: its
 * blocked keys and receipt keys would otherwise stand on a key no longer trusted.
 */
function TrustedServiceKey({ onChanged }: { onChanged: (kept: KeptBlocklist | null, note: string) => void }) {
  const [current, setCurrent] = useState<string | null>(null);
  const [typed, setTyped] = useState('');
  const [candidate, setCandidate] = useState<string | null>(null);
  const [problem, setProblem] = useState<string | null>(null);
  useEffect(() => {
    void trustedKeyHex().then(setCurrent);
  }, []);
  const review = (text: string) => {
    const hex = text.trim().toLowerCase();
    const why = serviceKeyProblem(hex);
    setProblem(why);
    if (why === null && hex === current) {
      setProblem('This phone already trusts that key.');
      return;
    }
    setCandidate(why === null ? hex : null);
  };
  const trust = async (hex: string) => {
    if (hex === builtInKeyHex) await deleteMeta('blocklist_key');
    else await putMeta('blocklist_key', hex);
    const kept = await getMeta<KeptBlocklist>('blocklist');
    let dropped = false;
    if (kept !== undefined && !verifyBlocklistJson(kept.json, hexToBytes(hex, 32)).ok) {
      await deleteMeta('blocklist');
      dropped = true;
    }
    setCurrent(hex);
    setCandidate(null);
    setTyped('');
    onChanged(
      dropped ? null : (kept ?? null),
      dropped
        ? `Service key ${short(hex)} trusted. The kept blocklist was not signed by it and is dropped: refresh the blocklist.`
        : `Service key ${short(hex)} trusted.`,
    );
  };
  if (current === null) return null;
  const what =
    current === developmentKeyHex
      ? 'the published development key: for testing only, never for real money'
      : current === builtInKeyHex
        ? 'the key this wallet was built with'
        : 'set on this phone';
  return (
    <>
      <h2>Trusted service key</h2>
      <p>
        The blocklist, and the keys the service signs issue receipts with, must be signed by this key ({what}):
      </p>
      <p class="mono" data-testid="service-key">
        {current}
      </p>
      {candidate === null ? (
        <>
          <label>
            Another service key (64 hex digits)
            <input value={typed} autocomplete="off" spellcheck={false} onInput={(e) => setTyped((e.target as HTMLInputElement).value)} />
          </label>
          <button type="button" class="secondary" disabled={typed.trim() === ''} onClick={() => review(typed)}>
            Review key
          </button>
          {current !== builtInKeyHex && (
            <button type="button" class="secondary" onClick={() => review(builtInKeyHex)}>
              Back to the built-in key
            </button>
          )}
        </>
      ) : (
        <div data-testid="key-confirm">
          <p>
            Trust <span class="mono">{candidate}</span>? Compare every digit with the key your service's operator publishes: a wrong key lets its holder
            decide which PLCs this wallet accepts.
          </p>
          <button type="button" onClick={() => void trust(candidate)}>
            Trust this key
          </button>
          <button type="button" class="secondary" onClick={() => setCandidate(null)}>
            Cancel
          </button>
        </div>
      )}
      <Alert message={problem} />
    </>
  );
}

function Settings({ me, done }: { me: Unlocked; done: () => void }) {
  const [message, setMessage] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [kept, setKept] = useState<KeptBlocklist | null>(null);
  useEffect(() => {
    void getMeta<KeptBlocklist>('blocklist').then((k) => setKept(k ?? null));
  }, []);
  const [backup, setBackup] = useState<{ passphrase: string; backedUpAt: string } | null>(null);
  const [backingUp, setBackingUp] = useState(false);
  const makeBackup = async () => {
    setError(null);
    setBackingUp(true);
    try {
      setBackup(await backupKey(me));
    } catch (e) {
      setError(`Not backed up: ${errorText(e)}`);
    } finally {
      setBackingUp(false);
    }
  };
  const refresh = async () => {
    setError(null);
    setMessage(null);
    try {
      const json = (await getJson('/api/v1/blocklist', me.deviceId)) as SignedBlocklistJson;
      const verified = verifyBlocklistJson(json, await trustedKey());
      if (!verified.ok) throw new Error(`The service's blocklist does not verify (${verified.reason}): not kept.`);
      const current = await loadBlocklist();
      if (current !== undefined && verified.list.version < current.version) throw new Error(`The service sent version ${verified.list.version}, older than the kept ${current.version}: not kept.`);
      const record = { json, fetched_at: Date.now() };
      await putMeta('blocklist', record);
      setKept(record);
      setMessage(`Blocklist version ${verified.list.version} kept: ${verified.list.keys.length} blocked key(s).`);
    } catch (e) {
      setError(errorText(e));
    }
  };
  return (
    <section class="card">
      <h1>Settings</h1>
      <p>
        Public key: <span class="mono">{me.publicKeyHex}</span>
      </p>
      <p>Device: {me.deviceId}</p>
      <p>
        Key sealed with scrypt (N = 2^{Math.log2(kdfParams.N)}, r = {kdfParams.r}, p = {kdfParams.p}) and XChaCha20-Poly1305.
      </p>
      <h2>Key backup</h2>
      {backup === null ? (
        <button type="button" disabled={backingUp} onClick={() => void makeBackup()}>
          {backingUp ? 'Backing up…' : 'Back up key'}
        </button>
      ) : (
        <div data-testid="backup">
          <p>Backed up at {backup.backedUpAt}. Write this recovery passphrase down and keep it apart from this phone; it is not shown again:</p>
          <p class="mono" data-testid="recovery-passphrase">
            {backup.passphrase}
          </p>
        </div>
      )}
      <TrustedServiceKey
        onChanged={(record, note) => {
          setKept(record);
          setError(null);
          setMessage(note);
        }}
      />
      <h2>Blocklist</h2>
      <p data-testid="blocklist">{kept === null ? 'No blocklist kept yet.' : `Blocklist version ${kept.json.version}, fetched ${new Date(kept.fetched_at).toISOString()}.`}</p>
      <button type="button" onClick={() => void refresh()}>
        Refresh blocklist
      </button>
      <Alert message={message} kind="ok" />
      <Alert message={error} />
      <button type="button" class="secondary" onClick={done}>
        Back
      </button>
    </section>
  );
}

// ------------------------------------------------------------------------------------------------

function App() {
  const [phase, setPhase] = useState<'loading' | 'setup' | 'locked' | 'open'>('loading');
  const [me, setMe] = useState<Unlocked | null>(null);
  const [screen, setScreen] = useState<Screen>({ name: 'home' });
  const [tokens, setTokens] = useState<TokenRecord[]>([]);
  const reload = async () => setTokens((await allTokens()).sort((a, b) => b.updated_at - a.updated_at));
  useEffect(() => {
    void loadVault().then((vault) => setPhase(vault === undefined ? 'setup' : 'locked'));
  }, []);
  const ready = (unlocked: Unlocked) => {
    setMe(unlocked);
    setPhase('open');
    setScreen({ name: 'home' });
    void reload();
  };
  const lock = () => {
    me?.keyPair.secretKey.fill(0);
    setMe(null);
    setPhase('locked');
  };
  const home = () => setScreen({ name: 'home' });
  return (
    <main>
      <header>
        <strong>PLC wallet</strong>
        <span class="net" data-testid="network">
          {navigator.onLine ? 'online' : 'offline'}
        </span>
        {me !== null && (
          <button type="button" class="secondary" onClick={lock}>
            Lock
          </button>
        )}
      </header>
      {phase === 'loading' && <p>Loading…</p>}
      {phase === 'setup' && <Setup onReady={ready} />}
      {phase === 'locked' && <Lock onReady={ready} />}
      {phase === 'open' && me !== null && (
        <>
          {screen.name === 'home' && <Home me={me} tokens={tokens} go={setScreen} reload={reload} />}
          {screen.name === 'issue' && <Issue me={me} done={() => void reload().then(home)} />}
          {screen.name === 'receive' && <Receive me={me} reload={reload} done={home} />}
          {screen.name === 'pay' && <Pay me={me} tokenId={screen.tokenId} reload={reload} done={home} go={setScreen} />}
          {screen.name === 'show' && <Show tokenId={screen.tokenId} done={home} />}
          {screen.name === 'redeem' && <Redeem me={me} tokenId={screen.tokenId} done={() => void reload().then(home)} />}
          {screen.name === 'settings' && <Settings me={me} done={home} />}
        </>
      )}
    </main>
  );
}

if ('serviceWorker' in navigator) {
  void navigator.serviceWorker.register('/wallet/sw.js', { scope: '/wallet/' }).catch(() => undefined);
}
render(<App />, document.getElementById('app')!);
