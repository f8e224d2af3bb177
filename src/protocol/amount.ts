/**
 * Amounts: integers of minor units inside (bigint), decimal strings in the JSON form. The JSON
 * form is canonical (exactly the currency's number of decimals, no leading zeros, no sign), so a
 * PLC has one JSON spelling. `parseAmountInput` is the lenient reader for human input.
 */
import { amountMinorMax, currencyDecimals, isPlcCurrency } from './constants.ts';
import { ProtocolError } from './errors.ts';

export function decimalsOf(currency: string): number {
  if (!isPlcCurrency(currency)) throw new ProtocolError('invalid_argument', `unsupported currency: ${currency}`);
  return currencyDecimals[currency];
}

export function isValidAmountMinor(value: unknown): value is bigint {
  return typeof value === 'bigint' && value > 0n && value <= amountMinorMax;
}

/** 1234n, BRL -> "12.34"; 5n -> "0.05". */
export function formatAmountMinor(amountMinor: bigint, currency: string): string {
  if (!isValidAmountMinor(amountMinor)) throw new ProtocolError('invalid_argument', `amount out of range: ${amountMinor}`);
  const decimals = decimalsOf(currency);
  if (decimals === 0) return amountMinor.toString();
  const scale = 10n ** BigInt(decimals);
  const fraction = (amountMinor % scale).toString().padStart(decimals, '0');
  return `${(amountMinor / scale).toString()}.${fraction}`;
}

/** The canonical pattern for a currency: 2 decimals gives /^(0|[1-9]\d{0,15})\.\d{2}$/. */
function canonicalPattern(decimals: number): RegExp {
  return decimals === 0 ? /^(?:0|[1-9]\d{0,15})$/ : new RegExp(`^(?:0|[1-9]\\d{0,15})\\.\\d{${decimals}}$`);
}

/** Parses the canonical JSON spelling only; returns undefined for anything else or out of range. */
export function parseCanonicalAmount(text: string, currency: string): bigint | undefined {
  if (typeof text !== 'string' || !isPlcCurrency(currency)) return undefined;
  const decimals = currencyDecimals[currency];
  if (!canonicalPattern(decimals).test(text)) return undefined;
  const amountMinor = BigInt(text.replace('.', ''));
  return isValidAmountMinor(amountMinor) ? amountMinor : undefined;
}

const inputPattern = /^(\d{1,16})(?:\.(\d{1,18}))?$/;

/**
 * Reads a human-typed amount ("12", "12.3", "12.34") into minor units. Refuses signs, exponents,
 * more significant decimals than the currency has, zero and anything above `amountMinorMax`.
 */
export function parseAmountInput(text: string, currency: string): bigint {
  const decimals = decimalsOf(currency);
  const match = inputPattern.exec(text);
  if (match === null) throw new ProtocolError('invalid_argument', `"${text}" is not a plain decimal amount`);
  const whole = match[1] ?? '0';
  const fraction = (match[2] ?? '').replace(/0+$/, '');
  if (fraction.length > decimals) {
    throw new ProtocolError('invalid_argument', `${currency} amounts have at most ${decimals} decimal places`);
  }
  const amountMinor = BigInt(whole) * 10n ** BigInt(decimals) + BigInt(fraction.padEnd(decimals, '0') || '0');
  if (!isValidAmountMinor(amountMinor)) {
    throw new ProtocolError('invalid_argument', `amount must be greater than zero and at most ${amountMinorMax} minor units`);
  }
  return amountMinor;
}
