import { normalizeCnpj } from '../b2b/cnpj.ts';

/**
 * Pix keys ("chaves Pix"), the one validator every place a key arrives uses (the redeem routes,
 * the POS customers' sign-up, the wallet before it signs; docs/settlement.md, "Pix keys"). A key
 * is valid when it is in the form the Central Bank's directory (DICT) stores for its type; it is
 * taken exactly as sent, never rewritten, because it is signed as sent (docs/protocol.md 9.2):
 *
 * - CPF: 11 digits, no punctuation, whose two check digits hold (modulo 11) and not all one digit;
 * - CNPJ: 14 digits, no punctuation, whose two check digits hold and not all one digit;
 * - phone: E.164 with Brazil's code, `+55`, a two-digit area code (11 to 99, no 0) and a 9-digit
 *   mobile number starting with 9 (`+5511987654321`): a Pix phone key is a mobile number;
 * - e-mail: at most 77 characters in all (DICT's limit for every key), lower case; a local part of
 *   at most 64 characters of `a-z 0-9 . _ + -` with no dot first, last or doubled (no quoted
 *   local part, no comments, no IP literal, none of RFC 5322's other symbols); a domain of at least
 *   two dot-separated labels of `a-z 0-9 -` (1 to 63 each, no hyphen first or last) ending in a
 *   label of 2 or more letters;
 * - random key (EVP): a UUID in lower case, 36 characters (`123e4567-e89b-42d3-a456-556642440000`);
 *   the same UUID in upper case is refused, not lowercased: it would not be the key that was signed.
 *
 * Anything else is refused before any money moves.
 */
export type PixKeyType = 'CPF' | 'CNPJ' | 'EMAIL' | 'PHONE' | 'EVP';

/** DICT's longest key (an e-mail); every key type is bounded by it. */
export const pixKeyLengthMax = 77;
/** The longest local part of an e-mail key (RFC 5321). */
export const pixEmailLocalLengthMax = 64;

/** A CPF check digit over the first `count` digits, weighted `count + 1` down to 2 (Receita Federal's rule). */
function cpfCheckDigit(digits: readonly number[], count: number): number {
  let sum = 0;
  for (let i = 0; i < count; i += 1) sum += digits[i]! * (count + 1 - i);
  const rest = (sum * 10) % 11;
  return rest === 10 ? 0 : rest;
}

/** An 11-digit CPF whose check digits hold (Receita Federal's rule), not all one digit. */
export function isValidCpf(text: string): boolean {
  if (!/^\d{11}$/.test(text) || /^(\d)\1{10}$/.test(text)) return false;
  const digits = [...text].map(Number);
  return cpfCheckDigit(digits, 9) === digits[9] && cpfCheckDigit(digits, 10) === digits[10];
}

const emailLocal = /^[a-z0-9_+-]+(?:\.[a-z0-9_+-]+)*$/;
const domainLabel = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;

function isValidEmailKey(key: string): boolean {
  const at = key.indexOf('@');
  if (at <= 0 || at !== key.lastIndexOf('@')) return false;
  const local = key.slice(0, at);
  const labels = key.slice(at + 1).split('.');
  if (local.length > pixEmailLocalLengthMax || !emailLocal.test(local)) return false;
  if (labels.length < 2 || !labels.every((label) => domainLabel.test(label))) return false;
  return /^[a-z]{2,}$/.test(labels[labels.length - 1]!);
}

/** The key's type, or null when it is not a valid Pix key (see above). */
export function pixKeyType(key: string): PixKeyType | null {
  if (key.length === 0 || key.length > pixKeyLengthMax) return null;
  if (/^\d{11}$/.test(key)) return isValidCpf(key) ? 'CPF' : null;
  if (/^\d{14}$/.test(key)) return normalizeCnpj(key) === key ? 'CNPJ' : null;
  if (key.startsWith('+')) return /^\+55[1-9]{2}9\d{8}$/.test(key) ? 'PHONE' : null;
  if (/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/.test(key)) return 'EVP';
  if (key.includes('@')) return isValidEmailKey(key) ? 'EMAIL' : null;
  return null;
}

/** Why a key is refused, in one sentence a client can act on (the refusal's message). */
export function pixKeyRefusal(key: string): string {
  if (key.length > pixKeyLengthMax) return `a Pix key has at most ${pixKeyLengthMax} characters`;
  if (/^\d{11}$/.test(key)) return 'an 11-digit key is a CPF and its check digits do not hold';
  if (/^\d{14}$/.test(key)) return 'a 14-digit key is a CNPJ and its check digits do not hold';
  if (key.startsWith('+')) return 'a phone key is +55, a two-digit area code and a 9-digit mobile number starting with 9';
  if (/^[0-9a-f-]{36}$/i.test(key)) return 'a random key is a UUID in lower case';
  if (key.includes('@')) return 'an e-mail key is lower case, at most 77 characters, without quotes or symbols other than . _ + - in its local part';
  return 'not a Pix key: a CPF (11 digits), a CNPJ (14 digits), a +55 mobile phone, an e-mail or a random key (lower-case UUID)';
}
