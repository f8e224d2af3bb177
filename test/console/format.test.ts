import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { bucketLabel, minorUnits, money, moneyFromMinor } from '../../console/src/format.ts';

/** The console's money and duration labels (console/src/format.ts): exact, from minor units. */
describe('console format', () => {
  it('reads decimal amounts as minor units exactly, and refuses what is not one', () => {
    expect(minorUnits('12.50')).toBe(1250n);
    expect(minorUnits('-0.01')).toBe(-1n);
    expect(minorUnits('7')).toBe(700n);
    expect(minorUnits('92233720368547758.07')).toBe(9223372036854775807n);
    expect(minorUnits('1.234')).toBeNull();
    expect(minorUnits('1,50')).toBeNull();
    expect(minorUnits('')).toBeNull();
  });

  it('writes reais the Brazilian way, signed when asked, without floating point', () => {
    expect(moneyFromMinor(123456n, 'BRL')).toBe('R$ 1.234,56');
    expect(moneyFromMinor(-1250n, 'BRL')).toBe('−R$ 12,50');
    expect(moneyFromMinor(1250n, 'BRL', { signed: true })).toBe('+R$ 12,50');
    expect(moneyFromMinor(0n, 'BRL', { signed: true })).toBe('R$ 0,00');
    expect(moneyFromMinor(9223372036854775807n, 'BRL')).toBe('R$ 92.233.720.368.547.758,07');
    expect(moneyFromMinor(123456n, 'USD')).toBe('1,234.56 USD');
    expect(money('3.21', 'BRL')).toBe('R$ 3,21');
    expect(money('not money', 'BRL')).toBe('not money BRL');
    fc.assert(
      fc.property(fc.bigInt({ min: -(10n ** 18n), max: 10n ** 18n }), (minor) => {
        const text = moneyFromMinor(minor, 'BRL');
        const digits = text.replace(/[^\d]/g, '');
        return BigInt(digits) === (minor < 0n ? -minor : minor) && text.startsWith(minor < 0n ? '−R$ ' : 'R$ ');
      }),
    );
  });

  it('labels a histogram bucket by the bounds it vouches for', () => {
    expect(bucketLabel({ above_ms: 0, at_most_ms: 100 })).toBe('≤ 100 ms');
    expect(bucketLabel({ above_ms: 1000, at_most_ms: 2000 })).toBe('1 s – 2 s');
    expect(bucketLabel({ above_ms: 60_000, at_most_ms: 120_000 })).toBe('1 min – 2 min');
    expect(bucketLabel({ above_ms: 86_400_000, at_most_ms: null })).toBe('> 24 h');
    expect(bucketLabel(null)).toBe('—');
  });
});
