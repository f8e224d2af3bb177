import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseWireJson } from '../../gateway/json.ts';
import { formatWireDecimal, minorFromWireValue, parseWireDecimal, WireMoneyError, wireAmountMinorMax, wireValueFromMinor } from '../../gateway/money.ts';

describe('wire money conversion', () => {
  it.each([
    [0n, 0, '0.00'],
    [1n, 0.01, '0.01'],
    [10n, 0.1, '0.10'],
    [30n, 0.3, '0.30'],
    [1234n, 12.34, '12.34'],
    [123_456_789_0n, 12_345_678.9, '12345678.90'],
    [99_999_999_999_999n, 999_999_999_999.99, '999999999999.99'],
    [wireAmountMinorMax, 1e13, '10000000000000.00'],
    [-5n, -0.05, '-0.05'],
  ])('%s minor <-> %s on the wire ("%s")', (minor, value, text) => {
    expect(formatWireDecimal(minor)).toBe(text);
    expect(wireValueFromMinor(minor)).toBe(value);
    expect(minorFromWireValue(value)).toBe(minor);
  });

  it('never turns 0.10 + 0.20 into 0.30000000000000004', () => {
    expect(JSON.stringify({ value: wireValueFromMinor(10n + 20n) })).toBe('{"value":0.3}');
    expect(() => minorFromWireValue(0.1 + 0.2)).toThrow(WireMoneyError);
  });

  it('refuses values with more than two decimals, non-finite values and out-of-range amounts', () => {
    for (const bad of [0.001, 12.345, Number.NaN, Infinity, -Infinity, 1e21, 5e-324]) {
      expect(() => minorFromWireValue(bad), String(bad)).toThrow(WireMoneyError);
    }
    expect(() => wireValueFromMinor(wireAmountMinorMax + 1n)).toThrow(WireMoneyError);
    expect(() => parseWireDecimal('1e3')).toThrow(WireMoneyError);
    expect(minorFromWireValue(-0)).toBe(0n);
  });

  it('round-trips every amount up to the maximum through JSON text exactly (property)', () => {
    fc.assert(
      fc.property(fc.bigInt({ min: 0n, max: wireAmountMinorMax }), (minor) => {
        const text = JSON.stringify({ value: wireValueFromMinor(minor) });
        const back = parseWireJson(text) as { value: number };
        expect(minorFromWireValue(back.value)).toBe(minor);
        // The JSON literal is the decimal itself, without trailing zeros.
        const expected = formatWireDecimal(minor).replace(/\.?0+$/, '') || '0';
        expect(text).toBe(`{"value":${expected}}`);
      }),
      { numRuns: 2_000 },
    );
  });

  it('parses JSON strictly: inexact numbers become NaN, exact ones stay', () => {
    expect(parseWireJson('{"a":12.30,"b":1e2,"c":0.1}')).toEqual({ a: 12.3, b: 100, c: 0.1 });
    expect(Number.isNaN((parseWireJson('{"a":12.340000000000000001}') as { a: number }).a)).toBe(true);
    expect(Number.isNaN((parseWireJson('{"a":9007199254740993}') as { a: number }).a)).toBe(true);
    expect(() => parseWireJson('{"__proto__":1}')).toThrow(SyntaxError);
  });
});
