/**
 * Unit tests of the strict JSON parser (src/money/exact-json.ts): a number is kept only when its
 * double holds exactly what was written, and prototype keys are refused, whether the text takes
 * the plain `JSON.parse` path or the reviver path.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { canonicalDecimalText, parseExactJson } from '../../src/money/exact-json.ts';

/** What the parser must give for one number literal. */
function expectedNumber(literal: string): number {
  const value = Number(literal);
  return canonicalDecimalText(literal) === canonicalDecimalText(String(value)) ? value : Number.NaN;
}

describe('parseExactJson', () => {
  it('keeps integers of up to 15 digits and refuses inexact longer ones', () => {
    expect(parseExactJson('{"a":999999999999999,"b":-123,"c":0}')).toEqual({ a: 999_999_999_999_999, b: -123, c: 0 });
    expect(parseExactJson('[9007199254740992]')).toEqual([9_007_199_254_740_992]);
    expect(Number.isNaN((parseExactJson('[9007199254740993]') as number[])[0])).toBe(true);
  });

  it('ignores digits, dots and exponents inside strings', () => {
    const text = '{"hash":"3e5a.1e9","n":1763900000000,"s":"12345678901234567890"}';
    expect(parseExactJson(text)).toEqual(JSON.parse(text));
  });

  it('refuses prototype keys however they are spelled', () => {
    expect(() => parseExactJson('{"__proto__":{"x":1}}')).toThrow(SyntaxError);
    expect(() => parseExactJson('{"a":{"constructor":1}}')).toThrow(SyntaxError);
    expect(() => parseExactJson('{"\\u005f_proto__":1}')).toThrow(SyntaxError);
    expect(() => parseExactJson('{"constructo\\u0072":1}')).toThrow(SyntaxError);
    // The words inside a value are harmless.
    expect(parseExactJson('{"note":"the constructor of __proto__"}')).toEqual({ note: 'the constructor of __proto__' });
  });

  it('refuses malformed text as JSON.parse does', () => {
    for (const text of ['{"a":01}', '{"a":-}', '{"a":1', '{"a":"x}', '', '{"a":1.}', '[1e]']) {
      expect(() => parseExactJson(text), text).toThrow(SyntaxError);
    }
  });

  it('gives every number literal its exact value or NaN, among strings and escapes (property)', () => {
    const literal = fc
      .tuple(
        fc.boolean(),
        fc.stringMatching(/^(0|[1-9][0-9]{0,21})$/),
        fc.option(fc.stringMatching(/^[0-9]{1,20}$/), { nil: undefined }),
        fc.option(fc.integer({ min: -30, max: 30 }), { nil: undefined }),
      )
      .map(([negative, whole, fraction, exponent]) => `${negative ? '-' : ''}${whole}${fraction === undefined ? '' : `.${fraction}`}${exponent === undefined ? '' : `e${exponent}`}`);
    const filler = fc.stringMatching(/^[0-9a-f.eE \\-]{0,40}$/).map((text) => JSON.stringify(text));
    fc.assert(
      fc.property(fc.array(fc.tuple(literal, filler), { minLength: 1, maxLength: 8 }), (items) => {
        const text = `{${items.map(([number, string], index) => `"n${index}":${number},"s${index}":${string}`).join(',')}}`;
        const parsed = parseExactJson(text) as Record<string, unknown>;
        items.forEach(([number, string], index) => {
          expect(parsed[`n${index}`]).toEqual(expectedNumber(number));
          expect(parsed[`s${index}`]).toBe(JSON.parse(string));
        });
      }),
      { numRuns: 3_000 },
    );
  });

  it('agrees with JSON.parse on any JSON value that JSON.stringify wrote (property)', () => {
    fc.assert(
      fc.property(fc.jsonValue({ noUnicodeString: false }), (value) => {
        const text = JSON.stringify(value);
        if (/"(__proto__|constructor)":/.test(text)) return;
        expect(parseExactJson(text)).toEqual(JSON.parse(text));
      }),
      { numRuns: 2_000 },
    );
  });
});
