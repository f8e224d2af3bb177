/**
 * The one Pix key validator (src/settlement/pix-key.ts), by the forms the Central Bank's
 * directory (DICT) stores: the vectors docs/settlement.md ("Pix keys") states.
 */
import { describe, expect, it } from 'vitest';
import { cnpjWithCheckDigits } from '../../src/b2b/cnpj.ts';
import { isValidCpf, pixKeyLengthMax, pixKeyRefusal, pixKeyType } from '../../src/settlement/pix-key.ts';

const at77 = `${'a'.repeat(64)}@examples.com`; // 64 + 13 = 77
const at78 = `${'a'.repeat(64)}@exampless.com`; // 78

describe('pixKeyType: valid keys by type', () => {
  it.each([
    ['12345678909', 'CPF'],
    ['52998224725', 'CPF'],
    ['11222333000181', 'CNPJ'],
    [cnpjWithCheckDigits('123456780001'), 'CNPJ'],
    ['+5511987654321', 'PHONE'],
    ['+5521999990000', 'PHONE'],
    ['a@example.com', 'EMAIL'],
    ['joao.silva+pix@banco-exemplo.com.br', 'EMAIL'],
    ['first_last-1@sub.example.org', 'EMAIL'],
    [at77, 'EMAIL'],
    ['123e4567-e89b-42d3-a456-556642440000', 'EVP'],
  ] as const)('%s is a %s key', (key, type) => {
    expect(pixKeyType(key)).toBe(type);
  });

  it('bounds every key by 77 characters, the longest e-mail included', () => {
    expect(pixKeyLengthMax).toBe(77);
    expect(at77).toHaveLength(77);
    expect(at78).toHaveLength(78);
    expect(pixKeyType(at78)).toBeNull();
    expect(pixKeyRefusal(at78)).toMatch(/77/);
    expect(pixKeyType(`${'a'.repeat(65)}@example.com`)).toBeNull(); // local part above 64
  });
});

describe('pixKeyType: refused', () => {
  it.each([
    // CPF and CNPJ: check digits, one repeated digit, punctuation
    ['12345678901', 'CPF with a wrong check digit'],
    ['11111111111', 'CPF of one repeated digit (its check digits hold)'],
    ['123.456.789-09', 'CPF with punctuation'],
    ['11222333000180', 'CNPJ with a wrong check digit'],
    ['00000000000000', 'CNPJ of zeros'],
    ['11.222.333/0001-81', 'CNPJ with punctuation'],
    // phone
    ['+551198765432', 'phone with 8 digits after the area code'],
    ['+5511887654321', 'phone whose number does not start with 9'],
    ['+5501987654321', 'phone with a 0 in the area code'],
    ['+14155550123', 'phone outside Brazil'],
    ['5511987654321', 'phone without +'],
    ['+55 11 98765-4321', 'phone with spaces'],
    // e-mail: quoted and exotic forms, case, shape
    ['"<svg/onload=x>"@example.com', 'quoted local part with markup'],
    ['"a b"@example.com', 'quoted local part'],
    ['a(comment)@example.com', 'comment'],
    ["o'brien@example.com", 'apostrophe'],
    ['a{b}@example.com', 'braces'],
    ['a%b@example.com', 'percent'],
    ['user@[192.168.0.1]', 'IP literal'],
    ['A@example.com', 'upper case'],
    ['a@Example.com', 'upper-case domain'],
    ['.a@example.com', 'leading dot'],
    ['a.@example.com', 'trailing dot'],
    ['a..b@example.com', 'doubled dot'],
    ['a@b@example.com', 'two @'],
    ['a@localhost', 'one-label domain'],
    ['a@-example.com', 'label starting with a hyphen'],
    ['a@example.c', 'one-letter top-level label'],
    ['a@example.123', 'numeric top-level label'],
    ['a@ex ample.com', 'space'],
    ['ação@example.com', 'non-ASCII'],
    // random key
    ['123E4567-E89B-42D3-A456-556642440000', 'random key in upper case'],
    ['123e4567e89b42d3a456556642440000', 'random key without hyphens'],
    ['{123e4567-e89b-42d3-a456-556642440000}', 'random key in braces'],
    // nothing
    ['', 'empty'],
    ['12345', 'five digits'],
    ['not a key', 'text'],
  ])('%s (%s)', (key) => {
    expect(pixKeyType(key)).toBeNull();
    expect(pixKeyRefusal(key).length).toBeGreaterThan(10);
  });

  it('names the rule a refused key broke', () => {
    expect(pixKeyRefusal('12345678901')).toMatch(/CPF/);
    expect(pixKeyRefusal('11222333000180')).toMatch(/CNPJ/);
    expect(pixKeyRefusal('+551198765432')).toMatch(/mobile/);
    expect(pixKeyRefusal('123E4567-E89B-42D3-A456-556642440000')).toMatch(/lower case/);
    expect(pixKeyRefusal('"x"@example.com')).toMatch(/e-mail/);
  });
});

describe('isValidCpf', () => {
  it('checks both digits', () => {
    expect(isValidCpf('52998224725')).toBe(true);
    expect(isValidCpf('52998224715')).toBe(false);
    expect(isValidCpf('52998224726')).toBe(false);
  });
});
