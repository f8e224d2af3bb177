/**
 * The wallet's only network code: JSON requests to the settlement server, with the device id
 * header the spec requires on every request that creates or modifies a PLC, an idempotency key so
 * a retried request is answered from the server's store instead of acting twice, and a timeout.
 */
import { formatAmountMinor, isPlcCurrency } from '../../src/protocol/index.ts';
import { WalletError } from './errors.ts';

export const requestTimeoutMs = 10_000;
/** Bound on how much of a refusal body is echoed to the terminal. */
const errorBodyCharsMax = 500;

export interface PostOptions {
  readonly deviceId: string;
  readonly idempotencyKey?: string;
  /** The currency amounts in a refusal are in, when the refusal does not say (a create's PLC currency). */
  readonly currency?: string;
}

/** A 2xx answer. `replayed`: the server answered from its idempotency store (an earlier request). */
export interface ServerAnswer {
  readonly status: number;
  readonly body: unknown;
  readonly replayed: boolean;
}

/** The API's version prefix: every path in `serverPaths` starts with it. */
const apiPrefix = '/api/v1';

/**
 * The service's base URL as people paste it, normalised to what the paths are resolved against:
 * `http://host:8000`, `http://host:8000/`, `http://host:8000/api/v1` and `http://host:8000/api/v1/`
 * all give `http://host:8000` (a base behind a path prefix keeps it: `https://h/plc/api/v1/` gives
 * `https://h/plc`). Query and fragment are refused: nothing of the service is addressed by them.
 */
export function normaliseServerUrl(value: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new WalletError('usage', `--server must be an absolute http(s) URL, got ${JSON.stringify(value)}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new WalletError('usage', `--server must be an absolute http(s) URL, got ${JSON.stringify(value)}`);
  if (url.search !== '' || url.hash !== '') throw new WalletError('usage', `--server takes the service's base URL without ?query or #fragment, got ${JSON.stringify(value)}`);
  let path = url.pathname.replace(/\/+$/, '');
  if (path.endsWith(apiPrefix)) path = path.slice(0, -apiPrefix.length);
  url.pathname = `${path.replace(/\/+$/, '')}/`;
  return url.href.replace(/\/$/, '');
}

function resolve(baseUrl: string, path: string): URL {
  return new URL(path, `${normaliseServerUrl(baseUrl)}/`);
}

/**
 * A 404 the API's own not-found handler answered (api/plugins/errors.ts: code NOT_FOUND, "no
 * route METHOD PATH"), or one that is not the API's error JSON at all (a proxy, another program on
 * the port): the request went to the wrong place, which says nothing about the resource asked for.
 */
function isMissingRoute(body: unknown): boolean {
  if (body === null || typeof body !== 'object') return true;
  const record = body as { code?: unknown; message?: unknown };
  if (typeof record.code !== 'string') return true;
  return record.code === 'NOT_FOUND' && typeof record.message === 'string' && record.message.startsWith('no route ');
}

function missingRoute(method: string, url: URL, baseUrl: string): WalletError {
  return new WalletError(
    'no_such_route',
    `${method} ${url.href} answered 404 for the route itself, not for what it asked about: is ${baseUrl} the settlement service's base URL (http://host:port, with or without /api/v1)? Nothing was concluded from it`,
  );
}

function parseBody(text: string): unknown {
  if (text === '') return null;
  try {
    return JSON.parse(text);
  } catch {
    return text.slice(0, errorBodyCharsMax);
  }
}

async function send(method: 'GET' | 'POST', url: URL, headers: Record<string, string>, body: string | undefined): Promise<Response> {
  try {
    return await fetch(url, { method, headers, body, signal: AbortSignal.timeout(requestTimeoutMs) });
  } catch (error) {
    // fetch reports "fetch failed"; the cause says why (ECONNREFUSED, a DNS failure, the timeout).
    const cause = error instanceof Error && error.cause instanceof Error ? ` (${error.cause.message})` : '';
    throw new WalletError('server_unreachable', `${method} ${url.href} failed: ${error instanceof Error ? error.message : String(error)}${cause}`);
  }
}

export async function postJson(baseUrl: string, path: string, body: unknown, options: PostOptions): Promise<ServerAnswer> {
  const url = resolve(baseUrl, path);
  const headers: Record<string, string> = { 'content-type': 'application/json', 'x-device-id': options.deviceId };
  if (options.idempotencyKey !== undefined) headers['idempotency-key'] = options.idempotencyKey;
  const response = await send('POST', url, headers, JSON.stringify(body));
  const text = await response.text();
  const replayed = response.headers.get('x-idempotency-replayed') === 'true';
  if (response.status === 404 && isMissingRoute(parseBody(text))) throw missingRoute('POST', url, baseUrl);
  if (!response.ok) {
    // A refusal stored under this Idempotency-Key is replayed for the server's idempotency window
    // (5 minutes by default) even if the cause has gone away meanwhile: say so.
    const replay = replayed ? ' (replayed: the answer the server stored for an earlier request with this Idempotency-Key)' : '';
    throw new WalletError('server_refused', `POST ${url.href} answered ${response.status}${replay}: ${describeRefusal(parseBody(text), options.currency)}`, {
      status: response.status,
      code: refusalCode(parseBody(text)),
      replayed,
    });
  }
  return { status: response.status, body: parseBody(text), replayed };
}

/** `1234` minor units of `currency` as `12.34 BRL`; the number as it came when the currency is unknown. */
function amountText(minor: unknown, currency: string | undefined): string {
  const text = typeof minor === 'number' ? String(minor) : typeof minor === 'string' ? minor : '';
  if (!/^-?\d{1,19}$/.test(text) || currency === undefined || !isPlcCurrency(currency)) return `${JSON.stringify(minor)} minor units`;
  try {
    return `${formatAmountMinor(BigInt(text), currency)} ${currency}`;
  } catch {
    return `${text} minor units`;
  }
}

/** A refusal's details in words: `_minor` amounts in the currency's decimals, the rest as they are. */
function describeDetails(details: unknown, currency: string | undefined): string {
  if (details === null || typeof details !== 'object' || Array.isArray(details)) return '';
  const record = details as Record<string, unknown>;
  const inCurrency = typeof record.currency === 'string' ? record.currency : currency;
  const parts = Object.entries(record)
    .filter(([key]) => key !== 'currency')
    .slice(0, 12)
    .map(([key, value]) => {
      if (key.endsWith('_minor')) return `${key.slice(0, -'_minor'.length).replaceAll('_', ' ')} ${amountText(value, inCurrency)}`;
      return `${key.replaceAll('_', ' ')} ${typeof value === 'string' ? value : JSON.stringify(value)}`;
    });
  return parts.length === 0 ? '' : ` (${parts.join(', ')})`;
}

/** The server's "N minor units" wording in the currency's decimals, as the wallet prints amounts everywhere. */
function inDecimals(message: string, currency: string | undefined): string {
  return message.replace(/(-?\d{1,19}) minor units/g, (whole, digits: string) => (currency !== undefined && isPlcCurrency(currency) ? amountText(digits, currency) : whole));
}

/**
 * A refusal body in words, amounts in the currency's decimals like everything else the wallet
 * prints: `CODE: message (detail, ...)` for the API's `{code, message, details}`, each item's
 * `type: msg` for a 422's `detail[]`, else the body's first characters.
 */
export function describeRefusal(body: unknown, currency?: string): string {
  if (body !== null && typeof body === 'object') {
    const record = body as { code?: unknown; message?: unknown; details?: unknown; detail?: unknown };
    const inCurrency = record.details !== null && typeof record.details === 'object' && typeof (record.details as { currency?: unknown }).currency === 'string'
      ? ((record.details as { currency: string }).currency)
      : currency;
    if (typeof record.code === 'string') {
      const message = typeof record.message === 'string' ? `: ${inDecimals(record.message, inCurrency)}` : '';
      return `${record.code}${message}${describeDetails(record.details, inCurrency)}`.slice(0, errorBodyCharsMax);
    }
    if (Array.isArray(record.detail)) {
      return record.detail
        .slice(0, 5)
        .map((item: unknown) => {
          const entry = (item ?? {}) as { type?: unknown; msg?: unknown; ctx?: unknown };
          const message = typeof entry.msg === 'string' ? `: ${inDecimals(entry.msg, currency)}` : '';
          return `${typeof entry.type === 'string' ? entry.type : 'invalid'}${message}${describeDetails(entry.ctx, currency)}`;
        })
        .join('; ')
        .slice(0, errorBodyCharsMax);
    }
  }
  return (typeof body === 'string' ? body : JSON.stringify(body)).slice(0, errorBodyCharsMax);
}

/** The stable code of a refusal body: `code` ({code, message}), or the first `detail[].type` (a 422). */
function refusalCode(body: unknown): string | null {
  if (body === null || typeof body !== 'object') return null;
  const record = body as { code?: unknown; detail?: unknown };
  if (typeof record.code === 'string') return record.code;
  if (Array.isArray(record.detail)) {
    const first = record.detail[0] as { type?: unknown } | undefined;
    if (typeof first?.type === 'string') return first.type;
  }
  return null;
}

export interface GetOptions extends PostOptions {
  /**
   * The API's codes that say "no such resource" for this route (`PLC_NOT_FOUND`, ...): a 404 with
   * one of them is an answer (`found: false`). Any other 404, a missing route above all, is a failure.
   */
  readonly absentCodes?: readonly string[];
}

/** A GET whose 404 with one of `absentCodes` is an answer (`found: false`), not a failure. */
export async function getJson(baseUrl: string, path: string, options: GetOptions): Promise<{ readonly found: boolean; readonly body: unknown }> {
  const url = resolve(baseUrl, path);
  const response = await send('GET', url, { accept: 'application/json', 'x-device-id': options.deviceId }, undefined);
  const text = await response.text();
  if (response.status === 404) {
    const body = parseBody(text);
    if (isMissingRoute(body)) throw missingRoute('GET', url, baseUrl);
    const code = refusalCode(body);
    if (code !== null && (options.absentCodes ?? []).includes(code)) return { found: false, body };
  }
  if (!response.ok) {
    throw new WalletError('server_refused', `GET ${url.href} answered ${response.status}: ${describeRefusal(parseBody(text))}`, {
      status: response.status,
      code: refusalCode(parseBody(text)),
      replayed: false,
    });
  }
  return { found: true, body: parseBody(text) };
}

/** What each lookup's "no such resource" 404 carries (api/plugins/errors.ts; the redemption route answers NOT_FOUND). */
export const absentCodes = {
  plc: ['PLC_NOT_FOUND'],
  redemption: ['NOT_FOUND', 'REDEMPTION_NOT_FOUND'],
  blocklist: ['NOT_FOUND'],
  feeSchedule: ['FEE_SCHEDULE_VERSION_UNKNOWN'],
} as const;

/** The server paths the wallet calls (docs/protocol.md, "Server API"). */
export const serverPaths = {
  create: 'api/v1/plc/create',
  status: (tokenId: string): string => `api/v1/plc/${tokenId}/status`,
  plcJson: (tokenId: string): string => `api/v1/plc/${tokenId}/json`,
  cancel: (tokenId: string): string => `api/v1/plc/${tokenId}/cancel`,
  transfer: 'api/v1/transfer/',
  redeem: 'api/v1/redeem/',
  keyBackup: 'api/v1/security/key/backup',
  keyRecover: 'api/v1/security/key/recover',
  keyCheck: (publicKey: string): string => `api/v1/security/key/check/${publicKey}`,
  redemption: (redemptionId: string): string => `api/v1/redemptions/${redemptionId}`,
  plcRedemptions: (tokenId: string): string => `api/v1/plc/${tokenId}/redemptions`,
  balance: (ownerId: string): string => `api/v1/balance/${ownerId}`,
  blocklist: 'api/v1/blocklist',
  feeSchedule: 'api/v1/fees/schedule',
  feeConsent: 'api/v1/fees/consent',
} as const;
