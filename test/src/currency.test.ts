/**
 * Unit tests of amounts at the edge: `parseAmountMinor` turns a plain decimal string into exact
 * minor units and refuses anything else with INVALID_AMOUNT; `formatAmount` writes minor units
 * back as the currency's decimal string; the two round-trip over the whole allowed range.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { DomainError } from '../../src/errors.ts';
import {
  amountMinorMax,
  currencies,
  formatAmount,
  isCurrency,
  parseAmountMinor,
  requirePositive,
} from '../../src/money/currency.ts';

function refusal(run: () => unknown): DomainError {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(DomainError);
    return error as DomainError;
  }
  throw new Error('expected a DomainError, nothing was thrown');
}

describe('parseAmountMinor', () => {
  it.each([
    ['12.34', 1234n],
    ['12', 1200n],
    ['0.5', 50n],
    ['12.3', 1230n],
    ['12.340', 1234n],
    ['12.000000000000000000', 1200n],
    ['0', 0n],
    ['0.00', 0n],
    ['0.01', 1n],
    ['007.10', 710n],
    ['9007199254740.99', 900719925474099n],
    ['10000000000000', amountMinorMax],
    ['10000000000000.00', amountMinorMax],
  ])('parses "%s" as %s minor units', (text, expected) => {
    for (const currency of currencies) expect(parseAmountMinor(text, currency)).toBe(expected);
  });

  it.each([
    ['1.234', 'more decimals than the currency has'],
    ['0.001', 'a sub-minor amount'],
    ['1.2340001', 'a non-zero digit beyond the minor unit'],
    ['-1', 'a sign'],
    ['-0.01', 'a negative amount'],
    ['+1', 'a plus sign'],
    ['1e3', 'an exponent'],
    ['1E3', 'an upper-case exponent'],
    [' 1', 'leading white space'],
    ['1 ', 'trailing white space'],
    ['1\n', 'a trailing newline'],
    ['1,00', 'a decimal comma'],
    ['1_000', 'a digit separator'],
    ['', 'the empty string'],
    ['.', 'a lone point'],
    ['.5', 'no whole part'],
    ['5.', 'a point without decimals'],
    ['Infinity', 'Infinity'],
    ['NaN', 'NaN'],
    ['0x10', 'hexadecimal'],
    ['١٢', 'non-ASCII digits'],
    ['12.345678901234567890', 'more than 18 decimals'],
    ['10000000000000.01', 'one minor unit above the maximum'],
    ['9999999999999999', 'sixteen digits, above the maximum'],
    ['99999999999999999', 'seventeen digits'],
  ])('refuses "%s" (%s) with INVALID_AMOUNT', (text) => {
    for (const currency of currencies) expect(refusal(() => parseAmountMinor(text, currency)).code).toBe('INVALID_AMOUNT');
  });
});

describe('requirePositive', () => {
  it('passes a positive amount through', () => {
    expect(requirePositive(1n)).toBe(1n);
  });
  it.each([0n, -1n])('refuses %s with INVALID_AMOUNT', (amountMinor) => {
    expect(refusal(() => requirePositive(amountMinor)).code).toBe('INVALID_AMOUNT');
  });
});

describe('formatAmount', () => {
  it.each([
    [1234n, '12.34'],
    [1200n, '12.00'],
    [50n, '0.50'],
    [5n, '0.05'],
    [0n, '0.00'],
    [-5n, '-0.05'],
    [-1234n, '-12.34'],
    [-100n, '-1.00'],
    [amountMinorMax, '10000000000000.00'],
    [2n ** 63n - 1n, '92233720368547758.07'],
    [-(2n ** 63n), '-92233720368547758.08'],
  ])('formats %s minor units as "%s"', (amountMinor, expected) => {
    for (const currency of currencies) expect(formatAmount(amountMinor, currency)).toBe(expected);
  });

  it('round-trips with parseAmountMinor for every amount from 0 to the maximum', () => {
    fc.assert(
      fc.property(fc.bigInt({ min: 0n, max: amountMinorMax }), fc.constantFrom(...currencies), (amountMinor, currency) => {
        expect(parseAmountMinor(formatAmount(amountMinor, currency), currency)).toBe(amountMinor);
      }),
      { numRuns: 500 },
    );
  });
});

describe('isCurrency', () => {
  it.each(['BRL', 'USD', 'EUR'])('accepts %s', (code) => expect(isCurrency(code)).toBe(true));
  it.each(['brl', 'GBP', '', 'toString', 'constructor', '__proto__'])('refuses "%s"', (code) => expect(isCurrency(code)).toBe(false));
});
