/**
 * Pix keys ("chaves Pix") and their types, as the payout API needs them. A key is one of: a CPF
 * (11 digits), a CNPJ (14 digits), an e-mail, a phone number in E.164 (+55 and 10 or 11 digits),
 * or a random key (EVP, a UUID). Anything else is refused before any money moves.
 */
export type PixKeyType = 'CPF' | 'CNPJ' | 'EMAIL' | 'PHONE' | 'EVP';

export const pixKeyLengthMax = 77;

export function pixKeyType(key: string): PixKeyType | null {
  if (key.length === 0 || key.length > pixKeyLengthMax) return null;
  if (/^\d{11}$/.test(key)) return 'CPF';
  if (/^\d{14}$/.test(key)) return 'CNPJ';
  if (/^\+55\d{10,11}$/.test(key)) return 'PHONE';
  if (/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(key)) return 'EVP';
  if (/^[^\s@]{1,64}@[^\s@]+\.[^\s@]{2,}$/.test(key)) return 'EMAIL';
  return null;
}
