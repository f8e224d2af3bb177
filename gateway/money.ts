/**
 * Money on the gateway's wire. The gateway writes amounts as JSON numbers in BRL units with at
 * most two decimals (`12.34`); everything on our side of the adapter is an integer count of
 * centavos (`bigint`). The conversion never does arithmetic on a binary float: to send, we print
 * the decimal text ("12.34") from the integer and let `Number` parse that exact literal; to read,
 * we print the number back (`String(12.34)` is the shortest text that round-trips, "12.34") and
 * parse the digits. Both directions check that the text survives the round trip, so a value a
 * double cannot carry exactly is refused instead of silently rounded.
 */

/** Decimal places of BRL, the only currency this gateway settles. */
export const wireMinorDigits = 2;

/**
 * Largest amount the adapter puts on or reads from the wire: 10^15 centavos. Any integer up to
 * it has at most 15 significant digits, which a double always carries exactly, and it matches the
 * ledger's own ceiling.
 */
export const wireAmountMinorMax = 10n ** 15n;

const scale = 10n ** BigInt(wireMinorDigits);
const wireDecimalPattern = /^(-?)(\d{1,16})(?:\.(\d{1,2}))?$/;

export class WireMoneyError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'WireMoneyError';
  }
}

/** Formats centavos as the wire's decimal text: 1234n -> "12.34", 5n -> "0.05", -5n -> "-0.05". */
export function formatWireDecimal(amountMinor: bigint): string {
  const negative = amountMinor < 0n;
  const abs = negative ? -amountMinor : amountMinor;
  const whole = abs / scale;
  const fraction = (abs % scale).toString().padStart(wireMinorDigits, '0');
  return `${negative ? '-' : ''}${whole.toString()}.${fraction}`;
}

/** Parses the wire's decimal text ("12.34", "12.3", "12", "-0.05") into centavos. */
export function parseWireDecimal(text: string): bigint {
  const match = wireDecimalPattern.exec(text);
  if (match === null) throw new WireMoneyError(`"${text}" is not an amount with at most ${wireMinorDigits} decimals`);
  const [, sign = '', whole = '0', fraction = ''] = match;
  const minor = BigInt(whole) * scale + BigInt(fraction.padEnd(wireMinorDigits, '0'));
  const signed = sign === '-' ? -minor : minor;
  assertWithinBounds(signed);
  return signed;
}

/**
 * Centavos to the JSON number the gateway expects: 1234n -> 12.34. The number is produced by
 * parsing the exact decimal literal, and the function asserts that printing it gives the same
 * decimal back, so the JSON text on the wire is exactly the amount we meant.
 */
export function wireValueFromMinor(amountMinor: bigint): number {
  assertWithinBounds(amountMinor);
  const text = formatWireDecimal(amountMinor);
  const value = Number(text);
  if (parseWireDecimal(String(value)) !== amountMinor) {
    // Cannot happen inside the bounds (15 significant digits round-trip through a double); the
    // check stays because a wrong amount on a payment is the one bug we never want to ship.
    throw new WireMoneyError(`amount ${text} does not survive the trip through a JSON number`);
  }
  return value;
}

/**
 * The gateway's JSON number to centavos: 12.34 -> 1234n, 0.3 -> 30n. Refuses NaN, infinities and
 * anything whose shortest decimal form has more than two decimals (such as 0.30000000000000004,
 * which is what `0.1 + 0.2` would have produced).
 */
export function minorFromWireValue(value: number): bigint {
  if (!Number.isFinite(value)) throw new WireMoneyError(`${String(value)} is not a finite amount`);
  // Normalise -0 so that it reads as "0", not "-0".
  return parseWireDecimal(String(value === 0 ? 0 : value));
}

function assertWithinBounds(amountMinor: bigint): void {
  if (amountMinor > wireAmountMinorMax || amountMinor < -wireAmountMinorMax) {
    throw new WireMoneyError(`amount ${amountMinor.toString()} (minor units) is outside ±${wireAmountMinorMax.toString()}`);
  }
}
