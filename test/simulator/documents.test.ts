import { describe, expect, it } from 'vitest';
import {
  boletoDueDateFactor,
  buildBoleto,
  buildPixPayload,
  completeCnpj,
  completeCpf,
  crc16Ccitt,
  isValidCnpj,
  isValidCpf,
  isValidPixKey,
  isValidPixPayload,
  mod10,
  mod11Barcode,
} from '../../simulator/documents.ts';

describe('Pix BR Code', () => {
  it('computes CRC16/CCITT-FALSE (check value of "123456789" is 29B1)', () => {
    expect(crc16Ccitt('123456789')).toBe('29B1');
  });

  it('builds an EMV payload with amount, currency and a valid CRC', () => {
    const payload = buildPixPayload({ paymentId: 'pay_abc', amountMinor: 1_234_567_890n, txid: 'payabc' });
    expect(payload.startsWith('000201010212')).toBe(true);
    expect(payload).toContain('0014br.gov.bcb.pix');
    expect(payload).toContain('541112345678.90');
    expect(payload).toContain('5303986');
    expect(payload).toContain('5802BR');
    expect(isValidPixPayload(payload)).toBe(true);
    const tampered = payload.replace('12345678.90', '12345678.91');
    expect(isValidPixPayload(tampered)).toBe(false);
  });
});

describe('Boleto numbers', () => {
  it('check digits match a published Banco do Brasil example', () => {
    // Bar code 00193373700000001000500940144816060680935031,
    // digitable line 00190.50095 40144.816069 06809.350314 3 37370000000100.
    expect(mod11Barcode('0019' + '3737' + '0000000100' + '0500940144816060680935031')).toBe(3);
    expect(mod10('001905009')).toBe(5);
    expect(mod10('4014481606')).toBe(9);
    expect(mod10('0680935031')).toBe(4);
  });

  it('builds a 44-digit bar code and a 47-digit line that agree', () => {
    const { barCode, identificationField } = buildBoleto({ amountMinor: 1_234_567_890n, dueDate: '2026-12-01', freeField: '1234567890123456789012345' });
    expect(barCode).toMatch(/^\d{44}$/);
    expect(identificationField).toMatch(/^\d{47}$/);
    // The line's general check digit (position 33) is the bar code's (position 5).
    expect(identificationField[32]).toBe(barCode[4]);
    expect(identificationField.slice(33)).toBe(barCode.slice(5, 19));
    expect(mod11Barcode(barCode.slice(0, 4) + barCode.slice(5))).toBe(Number(barCode[4]));
    // Each of the first three fields ends with its own modulo-10 digit.
    for (const [start, end] of [[0, 9], [10, 20], [21, 31]] as const) {
      expect(mod10(identificationField.slice(start, end))).toBe(Number(identificationField[end]));
    }
  });

  it('computes the due-date factor across the 2025 restart', () => {
    expect(boletoDueDateFactor('2000-07-03')).toBe('1000');
    expect(boletoDueDateFactor('2025-02-21')).toBe('9999');
    expect(boletoDueDateFactor('2025-02-22')).toBe('1000');
    expect(boletoDueDateFactor('2025-02-23')).toBe('1001');
  });
});

describe('CPF, CNPJ and Pix keys', () => {
  it.each([
    ['52998224725', true],
    ['52998224726', false],
    ['11111111111', false],
    ['123', false],
  ])('CPF %s valid: %s', (cpf, valid) => {
    expect(isValidCpf(cpf)).toBe(valid);
  });

  it.each([
    ['11222333000181', true],
    ['11222333000182', false],
    ['00000000000000', false],
  ])('CNPJ %s valid: %s', (cnpj, valid) => {
    expect(isValidCnpj(cnpj)).toBe(valid);
  });

  it('completes CPF and CNPJ bases', () => {
    expect(completeCpf('529982247')).toBe('52998224725');
    expect(completeCnpj('112223330001')).toBe('11222333000181');
  });

  it.each([
    ['EMAIL', 'a@b.co', true],
    ['EMAIL', 'not-an-email', false],
    ['PHONE', '+5511987654321', true],
    ['PHONE', '+1555123', false],
    ['EVP', '7d9f0335-8dcc-4054-9bf9-0dbd61d36906', true],
    ['EVP', 'abc', false],
    ['CPF', '52998224725', true],
    ['CNPJ', '52998224725', false],
    ['IBAN', 'x', false],
  ])('%s key %s valid: %s', (type, key, valid) => {
    expect(isValidPixKey(type, key)).toBe(valid);
  });
});
