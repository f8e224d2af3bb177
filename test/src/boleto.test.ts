/**
 * Boleto digitable lines and their FEBRABAN check digits, against lines published by others (a
 * PHP validator's README and a bank-slip decoder's samples), and every single-digit change of them.
 */
import { describe, expect, it } from 'vitest';
import { checkBoletoLine, modulo10 } from '../../src/settlement/boleto.ts';

const published = [
  { line: '83640000001-1 33120138000-2 81288462711-6 08013618155-1', kind: 'COLLECTION', amountMinor: 13312n },
  { line: '85890000460-9 52460179160-5 60759305086-5 83148300001-0', kind: 'COLLECTION', amountMinor: 4605246n },
  { line: '42297.11504 00001.954411 60020.034520 2 68610000054659', kind: 'BANK_SLIP', amountMinor: 54659n },
  { line: '23793.38128 60001.524978 60000.063309 4 77060000002000', kind: 'BANK_SLIP', amountMinor: 2000n },
].map((entry) => ({ ...entry, digits: entry.line.replace(/\D/g, '') }));

describe('checkBoletoLine', () => {
  it.each(published)('accepts the published $kind line $line, reading its amount', ({ digits, kind, amountMinor }) => {
    expect(checkBoletoLine(digits)).toEqual({ ok: true, boleto: { kind, barcode: expect.stringMatching(/^\d{44}$/), amountMinor } });
  });

  it('refuses every single-digit change of a published line (a check digit catches it)', () => {
    for (const { digits } of published) {
      for (let i = 0; i < digits.length; i++) {
        const changed = digits.slice(0, i) + String((Number(digits[i]) + 1) % 10) + digits.slice(i + 1);
        expect(checkBoletoLine(changed).ok, `${digits} with digit ${i} changed`).toBe(false);
      }
    }
  });

  it('refuses the printed form, wrong lengths and a collection line not starting with 8', () => {
    expect(checkBoletoLine(published[2]!.line)).toEqual({ ok: false, reason: 'not_digits' });
    expect(checkBoletoLine(published[2]!.digits.slice(1))).toEqual({ ok: false, reason: 'wrong_length' });
    expect(checkBoletoLine(`1${published[0]!.digits.slice(1)}`)).toEqual({ ok: false, reason: 'not_a_collection_slip' });
  });

  it('computes modulo 10 as FEBRABAN does (products over 9 have their digits summed)', () => {
    // Field 1 of the first bank slip above: 422971150, check digit 4.
    expect(modulo10('422971150')).toBe(4);
    expect(modulo10('0')).toBe(0);
  });
});
