import { z } from 'zod';
import { ownerIdPattern } from '../../src/ledger/money-model.ts';
import { currencies, currencyMinorUnits, formatAmount, parseAmountMinor, type Currency } from '../../src/money/currency.ts';
import { DomainError } from '../../src/errors.ts';

/** ISO 4217 code of a currency the ledger books. */
export const currencySchema = z.enum(currencies as [Currency, ...Currency[]]).meta({
  id: 'Currency',
  description: 'ISO 4217 currency code',
});

export const ownerIdSchema = z
  .string()
  .regex(ownerIdPattern, 'owner ids are 1 to 128 characters of A-Z a-z 0-9 . _ -')
  .meta({ id: 'OwnerId' });

/**
 * A money amount as the client sends it: a decimal string ("12.34"), or a JSON number whose exact
 * decimal form fits the currency (the JSON parser turns an inexact number into NaN, refused here).
 * Checked against the currency's decimals by `parseMoney` once the currency is known.
 */
export const amountInputSchema = z
  .union([z.string().max(40), z.number()])
  .describe('decimal string in the currency units, e.g. "12.34" (a JSON number only if exact)');

/** A money amount as the service answers it: always a decimal string. */
export const amountSchema = z.string().regex(/^-?\d+(\.\d+)?$/).describe('decimal string, e.g. "12.34"').meta({ id: 'Amount' });

/** Amount input + currency -> minor units, or a 422-mapped INVALID_AMOUNT. */
export function parseMoney(
  amount: string | number,
  currency: Currency,
  options: { positive: boolean; field?: string },
): bigint {
  const field = options.field ?? 'amount';
  try {
    const text = typeof amount === 'number' ? numberToDecimal(amount) : amount;
    const minor = parseAmountMinor(text, currency);
    if (options.positive && minor <= 0n) throw new DomainError('INVALID_AMOUNT', 'amount must be greater than zero');
    return minor;
  } catch (error) {
    if (error instanceof DomainError) throw new DomainError(error.code, error.message, { ...error.details, field });
    throw error;
  }
}

function numberToDecimal(value: number): string {
  if (!Number.isFinite(value) || value < 0) throw new DomainError('INVALID_AMOUNT', 'amount must be a non-negative decimal');
  const text = String(value);
  if (!/e/i.test(text)) return text;
  // Small or huge numbers print with an exponent; fixed notation with the currency's decimals
  // is exact for every value the JSON parser let through.
  return value.toFixed(Math.max(...Object.values(currencyMinorUnits)) + 2);
}

export function money(amountMinor: bigint, currency: Currency): string {
  return formatAmount(amountMinor, currency);
}
