/**
 * The wallet's only network code: JSON requests to the settlement server, with the device id
 * header the spec requires on every request that creates or modifies a PLC, an idempotency key so
 * a retried request is answered from the server's store instead of acting twice, and a timeout.
 */
import { WalletError } from './errors.ts';

export const requestTimeoutMs = 10_000;
/** Bound on how much of a refusal body is echoed to the terminal. */
const errorBodyCharsMax = 500;

export interface PostOptions {
  readonly deviceId: string;
  readonly idempotencyKey?: string;
}

/** A 2xx answer. `replayed`: the server answered from its idempotency store (an earlier request). */
export interface ServerAnswer {
  readonly status: number;
  readonly body: unknown;
  readonly replayed: boolean;
}

function resolve(baseUrl: string, path: string): URL {
  try {
    return new URL(path, baseUrl.endsWith('/') ? baseUrl : `${baseUrl}/`);
  } catch {
    throw new WalletError('usage', `--server must be an absolute URL, got ${JSON.stringify(baseUrl)}`);
  }
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
  if (!response.ok) {
    // A refusal stored under this Idempotency-Key is replayed for the server's idempotency window
    // (5 minutes by default) even if the cause has gone away meanwhile: say so.
    const replay = replayed ? ' (replayed: the answer the server stored for an earlier request with this Idempotency-Key)' : '';
    throw new WalletError('server_refused', `POST ${url.href} answered ${response.status}${replay}: ${text.slice(0, errorBodyCharsMax)}`, {
      status: response.status,
      code: refusalCode(parseBody(text)),
      replayed,
    });
  }
  return { status: response.status, body: parseBody(text), replayed };
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

/** A GET whose 404 is an answer (`found: false`), not a failure. */
export async function getJson(baseUrl: string, path: string, options: PostOptions): Promise<{ readonly found: boolean; readonly body: unknown }> {
  const url = resolve(baseUrl, path);
  const response = await send('GET', url, { accept: 'application/json', 'x-device-id': options.deviceId }, undefined);
  const text = await response.text();
  if (response.status === 404) return { found: false, body: parseBody(text) };
  if (!response.ok) {
    throw new WalletError('server_refused', `GET ${url.href} answered ${response.status}: ${text.slice(0, errorBodyCharsMax)}`, {
      status: response.status,
      code: refusalCode(parseBody(text)),
      replayed: false,
    });
  }
  return { found: true, body: parseBody(text) };
}

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
  balance: (ownerId: string): string => `api/v1/balance/${ownerId}`,
  blocklist: 'api/v1/blocklist',
  feeSchedule: 'api/v1/fees/schedule',
  feeConsent: 'api/v1/fees/consent',
} as const;
