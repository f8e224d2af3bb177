/**
 * The wallet's only network code: one JSON POST to the settlement server, with the device id
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

export async function postJson(baseUrl: string, path: string, body: unknown, options: PostOptions): Promise<unknown> {
  let url: URL;
  try {
    url = new URL(path, baseUrl.endsWith('/') ? baseUrl : `${baseUrl}/`);
  } catch {
    throw new WalletError('usage', `--server must be an absolute URL, got ${JSON.stringify(baseUrl)}`);
  }
  const headers: Record<string, string> = { 'content-type': 'application/json', 'x-device-id': options.deviceId };
  if (options.idempotencyKey !== undefined) headers['idempotency-key'] = options.idempotencyKey;
  let response: Response;
  try {
    response = await fetch(url, { method: 'POST', headers, body: JSON.stringify(body), signal: AbortSignal.timeout(requestTimeoutMs) });
  } catch (error) {
    throw new WalletError('server_unreachable', `POST ${url.href} failed: ${error instanceof Error ? error.message : String(error)}`);
  }
  const text = await response.text();
  if (!response.ok) {
    throw new WalletError('server_refused', `POST ${url.href} answered ${response.status}: ${text.slice(0, errorBodyCharsMax)}`);
  }
  if (text === '') return null;
  try {
    return JSON.parse(text);
  } catch {
    return text.slice(0, errorBodyCharsMax);
  }
}

/** The server paths the wallet calls (docs/protocol.md, "Server API"). */
export const serverPaths = {
  create: 'api/v1/plc/create',
  cancel: (tokenId: string): string => `api/v1/plc/${tokenId}/cancel`,
  redeem: 'api/v1/redeem/',
} as const;
