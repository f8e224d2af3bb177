/**
 * The `pos` command: a business customer's client for the signed B2B and POS routes
 * (docs/b2b.md). It signs each request with the credential (src/b2b/request-signing.ts: the same
 * code the server checks with), sends it, and prints the answer as JSON.
 *
 *   npm run -s pos -- me
 *   npm run -s pos -- sync --batch-id terminal-7-day-1 --transport-file .wallets/to-shop.txt [--transport-file ...]
 *   npm run -s pos -- sync --batch-id ... --items-file items.json      (items: the route's item objects)
 *   npm run -s pos -- rotate [--grace-seconds 3600]
 *   npm run -s pos -- request GET /api/v1/b2b/me [--body '{"a":1}' | --body-file f.json]
 *
 * The credential comes from the environment, never from the command line (where `ps` shows it):
 * PLC_KEY_ID and PLC_SECRET, or PLC_CREDENTIAL_FILE naming the JSON the approval answered
 * ({"key_id", "secret"}). PLC_API_URL (default http://127.0.0.1:8000) or --server names the server.
 *
 * Exit status: 0 on a 2xx answer, 1 on any other answer or a failed request, 2 on a usage error.
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { keyIdPattern, secretPattern, signRequest } from '../src/b2b/request-signing.ts';

const requestTimeoutMs = 60_000;

class UsageError extends Error {}

function credentialFromEnv(env: NodeJS.ProcessEnv): { keyId: string; secret: string } {
  let keyId = env.PLC_KEY_ID;
  let secret = env.PLC_SECRET;
  if (env.PLC_CREDENTIAL_FILE !== undefined) {
    const parsed = JSON.parse(readFileSync(env.PLC_CREDENTIAL_FILE, 'utf8')) as { key_id?: string; secret?: string; credential?: { key_id?: string; secret?: string } };
    const source = parsed.credential ?? parsed;
    keyId ??= source.key_id;
    secret ??= source.secret;
  }
  if (keyId === undefined || !keyIdPattern.test(keyId)) throw new UsageError('set PLC_KEY_ID (ak_ and 24 hex digits) or PLC_CREDENTIAL_FILE');
  if (secret === undefined || !secretPattern.test(secret)) throw new UsageError('set PLC_SECRET (sk_ and 43 characters) or PLC_CREDENTIAL_FILE');
  return { keyId, secret };
}

/** Signs and sends one request; answers the status and the parsed body. */
export async function sendSigned(
  server: string,
  credential: { keyId: string; secret: string },
  method: string,
  path: string,
  body?: string,
  extraHeaders: Record<string, string> = {},
): Promise<{ status: number; body: unknown }> {
  const url = new URL(path, server.endsWith('/') ? server : `${server}/`);
  const pathWithQuery = `${url.pathname}${url.search}`;
  const headers = signRequest(credential, { method, pathWithQuery, body });
  const response = await fetch(url, {
    method,
    headers: { ...headers, ...extraHeaders, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body,
    signal: AbortSignal.timeout(requestTimeoutMs),
  });
  const text = await response.text();
  let parsed: unknown = text;
  try {
    parsed = text === '' ? null : JSON.parse(text);
  } catch {
    // Printed as text.
  }
  return { status: response.status, body: parsed };
}

export async function main(argv: readonly string[], env: NodeJS.ProcessEnv = process.env): Promise<number> {
  const { values, positionals } = parseArgs({
    args: [...argv],
    allowPositionals: true,
    options: {
      server: { type: 'string' },
      body: { type: 'string' },
      'body-file': { type: 'string' },
      'batch-id': { type: 'string' },
      'transport-file': { type: 'string', multiple: true },
      'items-file': { type: 'string' },
      'grace-seconds': { type: 'string' },
      'device-id': { type: 'string' },
    },
  });
  const [command, ...rest] = positionals;
  const server = values.server ?? env.PLC_API_URL ?? 'http://127.0.0.1:8000';
  const credential = credentialFromEnv(env);
  let method: string;
  let path: string;
  let body: string | undefined;
  switch (command) {
    case 'me':
      [method, path] = ['GET', '/api/v1/b2b/me'];
      break;
    case 'rotate':
      [method, path] = ['POST', '/api/v1/b2b/credentials/rotate'];
      body = JSON.stringify(values['grace-seconds'] === undefined ? {} : { grace_seconds: Number(values['grace-seconds']) });
      break;
    case 'sync': {
      const batchId = values['batch-id'];
      if (batchId === undefined) throw new UsageError('sync needs --batch-id');
      const items: unknown[] = [];
      for (const file of values['transport-file'] ?? []) items.push({ transport: readFileSync(file, 'utf8').trim() });
      if (values['items-file'] !== undefined) items.push(...(JSON.parse(readFileSync(values['items-file'], 'utf8')) as unknown[]));
      if (items.length === 0) throw new UsageError('sync needs --transport-file or --items-file');
      [method, path] = ['POST', '/api/v1/pos/sync'];
      body = JSON.stringify({ batch_id: batchId, items });
      break;
    }
    case 'request': {
      const [requestMethod, requestPath] = rest;
      if (requestMethod === undefined || requestPath === undefined) throw new UsageError('request needs METHOD and PATH');
      [method, path] = [requestMethod.toUpperCase(), requestPath];
      body = values['body-file'] !== undefined ? readFileSync(values['body-file'], 'utf8') : values.body;
      break;
    }
    default:
      throw new UsageError('commands: me, rotate, sync, request (docs/b2b.md)');
  }
  const answer = await sendSigned(server, credential, method, path, body, values['device-id'] === undefined ? {} : { 'x-device-id': values['device-id'] });
  process.stdout.write(`${JSON.stringify(answer.body, null, 2)}\n`);
  if (answer.status < 200 || answer.status > 299) {
    process.stderr.write(`error: HTTP ${answer.status}\n`);
    return 1;
  }
  return 0;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  main(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (error: unknown) => {
      process.stderr.write(`error: ${error instanceof Error ? error.message : String(error)}\n`);
      process.exit(error instanceof UsageError || (error as { code?: string }).code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION' ? 2 : 1);
    },
  );
}
