import { pino, type Logger, type LoggerOptions } from 'pino';
import { truncateIdentifier } from '../src/ops/canary.ts';
import { prettyDestination } from './pretty-log.ts';
import { traceFields } from './trace-context.ts';

/**
 * Paths pino replaces with "[redacted]" wherever they appear in a log object: credentials,
 * tokens, key material and PIN hashes never reach the logs.
 */
export const redactedPaths = [
  'req.headers.authorization',
  'req.headers["gateway-access-token"]',
  'req.headers["asaas-access-token"]',
  'req.headers.cookie',
  'headers.authorization',
  'headers["gateway-access-token"]',
  'headers["asaas-access-token"]',
  'password',
  '*.password',
  'access_token',
  '*.access_token',
  'token',
  '*.token',
  'secret',
  '*.secret',
  'pin_hash',
  '*.pin_hash',
  'current_pin_hash',
  '*.current_pin_hash',
  'encrypted_seed',
  '*.encrypted_seed',
  'private_key',
  '*.private_key',
  'databaseUrl',
  'DATABASE_URL',
  'JWT_SECRET',
  'PIN_PEPPER',
  'SMTP_URL',
  'pepper',
  '*.pepper',
  'salt',
  '*.salt',
  'email',
  '*.email',
  'recovery_email',
  '*.recovery_email',
  'device_signature',
  '*.device_signature',
  // A business customer's CNPJ (docs/b2b.md) and the signed requests' signature headers.
  'tax_id',
  '*.tax_id',
  'req.headers["x-plc-signature"]',
  'headers["x-plc-signature"]',
];

/**
 * Query parameters whose values are identifiers the logs show truncated (the canary dashboard's
 * rule, docs/operations-console.md): a request line keeps the first characters only.
 */
export const truncatedQueryParameters = ['device_id', 'mesh_id'] as const;

/** A request URL as logged: the values of `truncatedQueryParameters` truncated. */
export function urlForLog(url: string): string {
  const at = url.indexOf('?');
  if (at === -1) return url;
  const params = new URLSearchParams(url.slice(at + 1));
  let changed = false;
  for (const name of truncatedQueryParameters) {
    const values = params.getAll(name);
    if (values.length === 0) continue;
    params.delete(name);
    for (const value of values) params.append(name, truncateIdentifier(value));
    changed = true;
  }
  return changed ? `${url.slice(0, at)}?${params.toString()}` : url;
}

interface LoggedRequest {
  method: string;
  url: string;
  host?: string;
  ip?: string;
  socket?: { remotePort?: number } | null;
}

export function loggerOptions(level: string, name: string): LoggerOptions {
  return {
    level,
    name,
    redact: { paths: redactedPaths, censor: '[redacted]' },
    // Fastify's request serializer, with the URL's identifiers truncated (a logger's own
    // serializers take precedence over Fastify's defaults).
    serializers: {
      req: (request: LoggedRequest) => ({
        method: request.method,
        url: urlForLog(request.url),
        host: request.host,
        remoteAddress: request.ip,
        remotePort: request.socket?.remotePort,
      }),
    },
    timestamp: pino.stdTimeFunctions.isoTime,
    // trace_id and span_id on every line written inside a trace (docs/operations.md, "Traces").
    mixin: traceFields,
    formatters: { level: (label) => ({ level: label }) },
  };
}

/** `json`: pino's lines, for files, collectors and production; `pretty`: one short line each for a terminal (infra/pretty-log.ts). */
export type LogFormat = 'json' | 'pretty';

export function createLogger(level: string, name: string, format: LogFormat = 'json'): Logger {
  return format === 'pretty' ? pino(loggerOptions(level, name), prettyDestination()) : pino(loggerOptions(level, name));
}

export type { Logger };
