import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';

/**
 * Strict JSON bodies. Bodies are parsed once, never coerced (the zod schemas decide types), and a
 * JSON number is kept only when the binary double holds exactly the decimal the client wrote:
 * `12.34` stays 12.34, but `12.3400000000000000001` (which a double would silently round to
 * 12.34) becomes NaN, which every number schema refuses. Money then never rides on a rounded
 * float. `__proto__` and `constructor` keys are refused outright.
 */

/** Canonical decimal text of a finite number's source: no exponent, no redundant zeros. */
export function canonicalDecimal(source: string): string | null {
  const match = /^(-?)(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/.exec(source);
  if (match === null) return null;
  const [, sign, intPart, fracPart = '', expPart = '0'] = match as unknown as [string, string, string, string?, string?];
  const exponent = Number(expPart);
  if (!Number.isSafeInteger(exponent) || Math.abs(exponent) > 400) return null;
  let digits = `${intPart}${fracPart}`;
  let pointAt = intPart.length + exponent;
  if (pointAt < 0) {
    digits = '0'.repeat(-pointAt) + digits;
    pointAt = 0;
  }
  if (pointAt > digits.length) digits = digits + '0'.repeat(pointAt - digits.length);
  const whole = digits.slice(0, pointAt).replace(/^0+/, '') || '0';
  const fraction = digits.slice(pointAt).replace(/0+$/, '');
  const text = fraction === '' ? whole : `${whole}.${fraction}`;
  return text === '0' ? '0' : `${sign}${text}`;
}

function exactNumberReviver(this: unknown, key: string, value: unknown, context?: { source?: string }): unknown {
  if (key === '__proto__' || key === 'constructor') throw new SyntaxError(`forbidden key "${key}"`);
  if (typeof value === 'number' && context?.source !== undefined) {
    const written = canonicalDecimal(context.source);
    const held = canonicalDecimal(String(value));
    if (written === null || held === null || written !== held) return Number.NaN;
  }
  return value;
}

export function parseStrictJson(text: string): unknown {
  return JSON.parse(text, exactNumberReviver as (this: unknown, key: string, value: unknown) => unknown);
}

export const jsonBodyPlugin = fp(
  async (app: FastifyInstance) => {
    // JSON only: no text/plain or other parsers that would hand a schema a string body.
    app.removeAllContentTypeParsers();
    app.addContentTypeParser('application/json', { parseAs: 'string' }, (_request, body, done) => {
      const text = typeof body === 'string' ? body : body.toString('utf8');
      if (text.trim() === '') {
        done(Object.assign(new Error('body is empty'), { statusCode: 422, code: 'FST_ERR_CTP_EMPTY_JSON_BODY' }), undefined);
        return;
      }
      try {
        done(null, parseStrictJson(text));
      } catch (error) {
        const message = error instanceof Error ? error.message : 'invalid JSON';
        done(Object.assign(new Error(`invalid JSON: ${message}`), { statusCode: 422, code: 'FST_ERR_CTP_INVALID_JSON_BODY' }), undefined);
      }
    });
  },
  { name: 'json-body' },
);
