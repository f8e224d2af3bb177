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

/** Integers of at most 15 digits are exact in a double (2^53 has 16). */
const exactIntegerDigitsMax = 15;

/**
 * True when `JSON.parse` alone gives the strict answer: the text has no backslash (so no escaped
 * spelling of a key), neither forbidden key, and every number outside strings is an integer of at
 * most 15 digits. The scan jumps from string to string (with no backslash, a string ends at the
 * next quote), so it reads only the few characters between them. Malformed text may pass; then
 * `JSON.parse` refuses it as it would anyway.
 */
function isPlainJson(text: string): boolean {
  if (text.includes('\\') || text.includes('__proto__') || text.includes('constructor')) return false;
  const length = text.length;
  let i = 0;
  while (i < length) {
    const code = text.charCodeAt(i);
    if (code === 34 /* " */) {
      const end = text.indexOf('"', i + 1);
      if (end === -1) return true;
      i = end + 1;
    } else if (code === 45 /* - */ || (code >= 48 && code <= 57)) {
      let j = code === 45 ? i + 1 : i;
      const digitsFrom = j;
      while (j < length && text.charCodeAt(j) >= 48 && text.charCodeAt(j) <= 57) j += 1;
      if (j - digitsFrom > exactIntegerDigitsMax) return false;
      const next = text.charCodeAt(j);
      if (next === 46 /* . */ || next === 101 /* e */ || next === 69 /* E */) return false;
      i = j;
    } else {
      i += 1;
    }
  }
  return true;
}

/** Parses JSON text strictly (see above); throws SyntaxError on malformed text or forbidden keys. */
export function parseExactJson(text: string): unknown {
  // Most bodies (hex, ISO instants, integer milliseconds, amounts as strings) need no reviver,
  // which costs about five times the parse itself.
  if (isPlainJson(text)) return JSON.parse(text);
  return JSON.parse(text, exactReviver as (this: unknown, key: string, value: unknown) => unknown);
}
