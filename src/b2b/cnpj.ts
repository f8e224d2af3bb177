/**
 * CNPJ, the Brazilian company tax id: 12 digits (8 of the company root, 4 of the branch) and two
 * check digits, each a weighted sum modulo 11 (Receita Federal's rule). Accepted with or without
 * its punctuation (`12.345.678/0001-95`); stored as its 14 digits.
 */

const firstWeights = [5, 4, 3, 2, 9, 8, 7, 6, 5, 4, 3, 2];
const secondWeights = [6, 5, 4, 3, 2, 9, 8, 7, 6, 5, 4, 3, 2];

function checkDigit(digits: readonly number[], weights: readonly number[]): number {
  let sum = 0;
  for (let i = 0; i < weights.length; i += 1) sum += digits[i]! * weights[i]!;
  const rest = sum % 11;
  return rest < 2 ? 0 : 11 - rest;
}

/** The CNPJ's 14 digits, or null when it is not a valid CNPJ (format, check digits, or all one digit). */
export function normalizeCnpj(input: string): string | null {
  if (!/^(\d{14}|\d{2}\.\d{3}\.\d{3}\/\d{4}-\d{2})$/.test(input)) return null;
  const text = input.replace(/[./-]/g, '');
  if (/^(\d)\1{13}$/.test(text)) return null;
  const digits = [...text].map(Number);
  if (checkDigit(digits, firstWeights) !== digits[12]) return null;
  if (checkDigit(digits, secondWeights) !== digits[13]) return null;
  return text;
}

/** The two check digits of a 12-digit CNPJ base (for tests and examples). */
export function cnpjWithCheckDigits(base12: string): string {
  if (!/^\d{12}$/.test(base12)) throw new Error('a CNPJ base is 12 digits');
  const digits = [...base12].map(Number);
  const first = checkDigit(digits, firstWeights);
  const second = checkDigit([...digits, first], secondWeights);
  return `${base12}${first}${second}`;
}

/**
 * A CNPJ as shown outside the admin detail: the first two digits and the check digits, enough to
 * tell one's own from another, not enough to recover it: 11222333000181 is shown as
 * "11." then the masked middle and "-81".
 */
export function maskCnpj(digits: string): string {
  return `${digits.slice(0, 2)}.***.***/****-${digits.slice(12, 14)}`;
}
