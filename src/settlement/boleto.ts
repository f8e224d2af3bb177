/**
 * A boleto's digitable line ("linha digitável"), checked with its FEBRABAN check digits before any
 * money moves. Two kinds:
 *
 * - a bank slip ("boleto de cobrança"): 47 digits in five fields. Fields 1 to 3 each end in a
 *   modulo 10 check digit; field 4 is the barcode's general check digit (modulo 11); field 5 is
 *   the due-date factor (4 digits) and the amount in centavos (10 digits, 0 for "any amount").
 *   The 44-digit barcode is bank (3) | currency (1, 9 = real) | general check digit (1) | factor
 *   (4) | amount (10) | free field (25, spread over fields 1 to 3).
 * - a collection slip ("arrecadação": utilities, taxes): 48 digits, four blocks of 11 digits each
 *   followed by its check digit. The barcode (the four blocks' 44 digits) starts with 8; its third
 *   digit says the modulus (6 or 7: modulo 10; 8 or 9: modulo 11) and whether positions 5 to 15
 *   are the amount in centavos (6 or 8) or a reference (7 or 9); its fourth digit is the general
 *   check digit over the other 43.
 *
 * Only digits are accepted (a wallet strips the dots and spaces of the printed form before it
 * signs): the destination signed is the canonical string.
 */

export type BoletoKind = 'BANK_SLIP' | 'COLLECTION';

export interface Boleto {
  readonly kind: BoletoKind;
  /** The 44-digit barcode the line encodes. */
  readonly barcode: string;
  /** The amount in centavos written in the line, or null when the line leaves it open. */
  readonly amountMinor: bigint | null;
}

export type BoletoCheck =
  | { readonly ok: true; readonly boleto: Boleto }
  | { readonly ok: false; readonly reason: 'not_digits' | 'wrong_length' | 'bad_check_digit' | 'unsupported_currency' | 'not_a_collection_slip' };

/** FEBRABAN modulo 10: weights 2, 1, 2, ... from the right, the digits of each product summed. */
export function modulo10(digits: string): number {
  let sum = 0;
  let weight = 2;
  for (let i = digits.length - 1; i >= 0; i -= 1) {
    const product = Number(digits[i]) * weight;
    sum += product > 9 ? product - 9 : product;
    weight = weight === 2 ? 1 : 2;
  }
  return (10 - (sum % 10)) % 10;
}

/** Sum of digits times weights 2 to 9 (cycling) from the right. */
function weightedSum(digits: string): number {
  let sum = 0;
  let weight = 2;
  for (let i = digits.length - 1; i >= 0; i -= 1) {
    sum += Number(digits[i]) * weight;
    weight = weight === 9 ? 2 : weight + 1;
  }
  return sum;
}

/** The bank slip's general check digit: 11 - (sum mod 11), with 0, 10 and 11 written as 1. */
export function bankSlipModulo11(digits: string): number {
  const digit = 11 - (weightedSum(digits) % 11);
  return digit === 0 || digit === 10 || digit === 11 ? 1 : digit;
}

/** The collection slip's modulo 11: 11 - (sum mod 11), with 10 and 11 written as 0. */
export function collectionModulo11(digits: string): number {
  const digit = 11 - (weightedSum(digits) % 11);
  return digit === 10 || digit === 11 ? 0 : digit;
}

export function checkBoletoLine(line: string): BoletoCheck {
  if (!/^\d+$/.test(line)) return { ok: false, reason: 'not_digits' };
  if (line.length === 47) return checkBankSlip(line);
  if (line.length === 48) return checkCollection(line);
  return { ok: false, reason: 'wrong_length' };
}

function checkBankSlip(line: string): BoletoCheck {
  const fields = [line.slice(0, 10), line.slice(10, 21), line.slice(21, 32)];
  for (const field of fields) {
    if (modulo10(field.slice(0, -1)) !== Number(field.at(-1))) return { ok: false, reason: 'bad_check_digit' };
  }
  const barcode = line.slice(0, 4) + line[32] + line.slice(33, 47) + line.slice(4, 9) + line.slice(10, 20) + line.slice(21, 31);
  if (bankSlipModulo11(barcode.slice(0, 4) + barcode.slice(5)) !== Number(barcode[4])) return { ok: false, reason: 'bad_check_digit' };
  if (barcode[3] !== '9') return { ok: false, reason: 'unsupported_currency' };
  const amountMinor = BigInt(barcode.slice(9, 19));
  return { ok: true, boleto: { kind: 'BANK_SLIP', barcode, amountMinor: amountMinor === 0n ? null : amountMinor } };
}

function checkCollection(line: string): BoletoCheck {
  if (line[0] !== '8') return { ok: false, reason: 'not_a_collection_slip' };
  const valueId = line[2];
  const modulus = valueId === '6' || valueId === '7' ? modulo10 : valueId === '8' || valueId === '9' ? collectionModulo11 : null;
  if (modulus === null) return { ok: false, reason: 'not_a_collection_slip' };
  let barcode = '';
  for (let block = 0; block < 4; block += 1) {
    const digits = line.slice(block * 12, block * 12 + 11);
    if (modulus(digits) !== Number(line[block * 12 + 11])) return { ok: false, reason: 'bad_check_digit' };
    barcode += digits;
  }
  if (modulus(barcode.slice(0, 3) + barcode.slice(4)) !== Number(barcode[3])) return { ok: false, reason: 'bad_check_digit' };
  const effective = valueId === '6' || valueId === '8';
  const amountMinor = effective ? BigInt(barcode.slice(4, 15)) : null;
  return { ok: true, boleto: { kind: 'COLLECTION', barcode, amountMinor: amountMinor === 0n ? null : amountMinor } };
}
