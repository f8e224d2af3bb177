import { pino, type Logger, type LoggerOptions } from 'pino';

/**
 * Paths pino replaces with "[redacted]" wherever they appear in a log object: credentials,
 * tokens, key material and PIN hashes never reach the logs.
 */
export const redactedPaths = [
  'req.headers.authorization',
  'req.headers["gateway-access-token"]',
  'req.headers.cookie',
  'headers.authorization',
  'headers["gateway-access-token"]',
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
];

export function loggerOptions(level: string, name: string): LoggerOptions {
  return {
    level,
    name,
    redact: { paths: redactedPaths, censor: '[redacted]' },
    timestamp: pino.stdTimeFunctions.isoTime,
    formatters: { level: (label) => ({ level: label }) },
  };
}

export function createLogger(level: string, name: string): Logger {
  return pino(loggerOptions(level, name));
}

export type { Logger };
