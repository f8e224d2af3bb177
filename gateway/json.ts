/**
 * JSON as the gateway writes it, parsed strictly. A number is kept only when the double holds
 * exactly the decimal that was written: `12.34` stays 12.34, but `12.340000000000000001` (which
 * `JSON.parse` would silently round to 12.34) becomes NaN, which every schema and the money
 * conversion refuse. This uses the reviver's source-text access (V8, Node >= 21), the same
 * technique as the API's body parser; it is repeated here so that the adapter depends on nothing
 * outside `gateway/`.
 */

/** Canonical decimal text of a JSON number literal or of `String(number)`: no exponent, no redundant zeros. */
export function canonicalDecimalText(source: string): string | null {
  const match = /^(-?)(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/.exec(source);
  if (match === null) return null;
  const [, sign = '', intPart = '0', fracPart = '', expPart = '0'] = match;
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

interface ReviverContext {
  source?: string;
}

function exactReviver(this: unknown, key: string, value: unknown, context?: ReviverContext): unknown {
  if (key === '__proto__' || key === 'constructor') throw new SyntaxError(`forbidden key "${key}"`);
  if (typeof value === 'number' && context?.source !== undefined) {
    const written = canonicalDecimalText(context.source);
    const held = canonicalDecimalText(String(value));
    if (written === null || held === null || written !== held) return Number.NaN;
  }
  return value;
}

/** Parses JSON text from (or for) the gateway; throws SyntaxError on malformed text. */
export function parseWireJson(text: string): unknown {
  return JSON.parse(text, exactReviver as (this: unknown, key: string, value: unknown) => unknown);
}
