import { DomainError } from '../errors.ts';

/**
 * Currencies the ledger books, with their ISO 4217 minor units. Inside the system every amount
 * is an integer count of minor units (`bigint`); at the API edge it is a decimal string.
 */
export const currencyMinorUnits = { BRL: 2, USD: 2, EUR: 2 } as const;
export type Currency = keyof typeof currencyMinorUnits;
export const currencies = Object.keys(currencyMinorUnits) as Currency[];

export function isCurrency(value: string): value is Currency {
  return Object.hasOwn(currencyMinorUnits, value);
}

/** Largest amount any single posting may carry: 10^15 minor units, far inside int64. */
export const amountMinorMax = 10n ** 15n;

const decimalPattern = /^(\d{1,16})(?:\.(\d{1,18}))?$/;

/**
 * Parses a decimal amount ("12.34", "12", "0.5") into minor units. Refuses signs, exponents,
 * more decimals than the currency has, and anything above `amountMinorMax`. Zero is allowed here;
 * callers that need a positive amount say so with `requirePositive`.
 */
export function parseAmountMinor(text: string, currency: Currency): bigint {
  const match = decimalPattern.exec(text);
  if (match === null) throw new DomainError('INVALID_AMOUNT', `"${text}" is not a plain decimal amount`);
  const [, whole = '0', fraction = ''] = match;
  const digits = currencyMinorUnits[currency];
  const trimmed = fraction.replace(/0+$/, '');
  if (trimmed.length > digits) {
    throw new DomainError('INVALID_AMOUNT', `${currency} amounts have at most ${digits} decimal places`, { amount: text });
  }
  const minor = BigInt(whole) * 10n ** BigInt(digits) + BigInt((trimmed + '0'.repeat(digits)).slice(0, digits) || '0');
  if (minor > amountMinorMax) throw new DomainError('INVALID_AMOUNT', 'amount is too large', { amount: text });
  return minor;
}

export function requirePositive(amountMinor: bigint): bigint {
  if (amountMinor <= 0n) throw new DomainError('INVALID_AMOUNT', 'amount must be greater than zero');
  return amountMinor;
}

/** Formats minor units as the currency's decimal string: 1234n BRL -> "12.34", -5n -> "-0.05". */
export function formatAmount(amountMinor: bigint, currency: Currency): string {
  const digits = currencyMinorUnits[currency];
  const negative = amountMinor < 0n;
  const abs = negative ? -amountMinor : amountMinor;
  const scale = 10n ** BigInt(digits);
  const whole = abs / scale;
  const fraction = (abs % scale).toString().padStart(digits, '0');
  return `${negative ? '-' : ''}${whole.toString()}${digits > 0 ? `.${fraction}` : ''}`;
}
