/**
 * JSON parsed strictly for money: a number is kept only when the double holds exactly the decimal
 * that was written. `12.34` stays 12.34, but `12.3400000000000000001` (which `JSON.parse` would
 * silently round to 12.34) becomes NaN, which every number schema and money conversion refuses.
 * `__proto__` and `constructor` keys are refused outright. Uses the reviver's source-text access
 * (V8, Node >= 21). Shared by the API's body parser and the gateway adapter.
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

/** Parses JSON text strictly (see above); throws SyntaxError on malformed text or forbidden keys. */
export function parseExactJson(text: string): unknown {
  return JSON.parse(text, exactReviver as (this: unknown, key: string, value: unknown) => unknown);
}
