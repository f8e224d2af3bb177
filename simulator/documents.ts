import { createHash } from 'node:crypto';
import { crc32, deflateSync } from 'node:zlib';
import { formatWireDecimal } from '../gateway/money.ts';

/**
 * The payment documents a Brazilian gateway hands out, built well enough that a wallet or a
 * test can check them: a Pix copy-and-paste string in the BR Code (EMV QR) layout with a correct
 * CRC16, a PNG image (a deterministic placeholder pattern, not a scannable QR code), and a Boleto
 * bar code and digitable line with correct FEBRABAN check digits. The bank code and merchant are
 * fictional.
 */

/** A fictional bank code for the simulator's Boletos. */
export const simulatorBankCode = '999';
const merchantName = 'GATEWAY SIMULATOR';
const merchantCity = 'SAO PAULO';

function emvField(id: string, value: string): string {
  if (value.length > 99) throw new Error(`EMV field ${id} is longer than 99 characters`);
  return `${id}${value.length.toString().padStart(2, '0')}${value}`;
}

/** CRC16/CCITT-FALSE (poly 0x1021, init 0xFFFF), as the BR Code specification requires. */
export function crc16Ccitt(text: string): string {
  let crc = 0xffff;
  for (const byte of Buffer.from(text, 'utf8')) {
    crc ^= byte << 8;
    for (let bit = 0; bit < 8; bit += 1) {
      crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
    }
  }
  return crc.toString(16).toUpperCase().padStart(4, '0');
}

/** A dynamic Pix BR Code for a charge: "000201...6304XXXX". */
export function buildPixPayload(input: { paymentId: string; amountMinor: bigint; txid: string }): string {
  const merchantAccount = emvField('00', 'br.gov.bcb.pix') + emvField('25', `pix.gateway-simulator.invalid/qr/v2/${input.paymentId}`);
  const body =
    emvField('00', '01') +
    emvField('01', '12') +
    emvField('26', merchantAccount) +
    emvField('52', '0000') +
    emvField('53', '986') +
    emvField('54', formatWireDecimal(input.amountMinor)) +
    emvField('58', 'BR') +
    emvField('59', merchantName) +
    emvField('60', merchantCity) +
    emvField('62', emvField('05', input.txid.slice(0, 25)));
  const withCrcHeader = `${body}6304`;
  return `${withCrcHeader}${crc16Ccitt(withCrcHeader)}`;
}

/** Checks a BR Code's trailing CRC16. */
export function isValidPixPayload(payload: string): boolean {
  if (!payload.startsWith('000201') || payload.length < 8) return false;
  const head = payload.slice(0, -4);
  return head.endsWith('6304') && crc16Ccitt(head) === payload.slice(-4);
}

function pngChunk(type: string, data: Buffer): Buffer {
  const length = Buffer.alloc(4);
  length.writeUInt32BE(data.length);
  const typeAndData = Buffer.concat([Buffer.from(type, 'ascii'), data]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(typeAndData) >>> 0);
  return Buffer.concat([length, typeAndData, crc]);
}

/**
 * A 29x29-module black-and-white PNG (4 px per module) whose pattern comes from the payload's
 * SHA-256: the same payload always gives the same image. It is a placeholder that looks like a QR
 * code; the copy-and-paste payload is what a test or a wallet should use.
 */
export function renderPlaceholderQrPng(payload: string): string {
  const modules = 29;
  const scale = 4;
  const size = modules * scale;
  const seed = createHash('sha256').update(payload).digest();
  const dark = (x: number, y: number): boolean => {
    const finder = (fx: number, fy: number): boolean | null => {
      const dx = x - fx;
      const dy = y - fy;
      if (dx < 0 || dy < 0 || dx > 6 || dy > 6) return null;
      const ring = Math.max(Math.abs(dx - 3), Math.abs(dy - 3));
      return ring !== 2;
    };
    const inFinder = finder(0, 0) ?? finder(modules - 7, 0) ?? finder(0, modules - 7);
    if (inFinder !== null) return inFinder;
    const bit = (y * modules + x) % 256;
    return (((seed[bit >> 3] ?? 0) >> (bit & 7)) & 1) === 1;
  };
  const raw = Buffer.alloc((size + 1) * size);
  for (let y = 0; y < size; y += 1) {
    raw[y * (size + 1)] = 0;
    for (let x = 0; x < size; x += 1) {
      raw[y * (size + 1) + 1 + x] = dark(Math.floor(x / scale), Math.floor(y / scale)) ? 0 : 255;
    }
  }
  const header = Buffer.alloc(13);
  header.writeUInt32BE(size, 0);
  header.writeUInt32BE(size, 4);
  header[8] = 8; // bit depth
  header[9] = 0; // greyscale
  const png = Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    pngChunk('IHDR', header),
    pngChunk('IDAT', deflateSync(raw)),
    pngChunk('IEND', Buffer.alloc(0)),
  ]);
  return png.toString('base64');
}

/** Modulo 10 check digit of a digitable-line field (weights 2,1,2,1... from the right, digits of products summed). */
export function mod10(digits: string): number {
  let sum = 0;
  let weight = 2;
  for (let i = digits.length - 1; i >= 0; i -= 1) {
    const product = Number(digits[i]) * weight;
    sum += product > 9 ? product - 9 : product;
    weight = weight === 2 ? 1 : 2;
  }
  return (10 - (sum % 10)) % 10;
}

/** Modulo 11 general check digit of a Boleto bar code (weights 2..9 from the right; 0, 10, 11 become 1). */
export function mod11Barcode(digits: string): number {
  let sum = 0;
  let weight = 2;
  for (let i = digits.length - 1; i >= 0; i -= 1) {
    sum += Number(digits[i]) * weight;
    weight = weight === 9 ? 2 : weight + 1;
  }
  const dv = 11 - (sum % 11);
  return dv === 0 || dv === 10 || dv === 11 ? 1 : dv;
}

const boletoBaseDate = Date.UTC(1997, 9, 7);
/** Largest amount a Boleto bar code can carry: 10 digits of centavos. */
export const boletoAmountMinorMax = 9_999_999_999n;

/**
 * The due-date factor: days since 1997-10-07, restarting at 1000 after 9999 (the FEBRABAN rule
 * that took effect on 2025-02-22).
 */
export function boletoDueDateFactor(dueDate: string): string {
  const days = Math.round((Date.parse(`${dueDate}T00:00:00Z`) - boletoBaseDate) / 86_400_000);
  const factor = days <= 9999 ? days : ((days - 10_000) % 9000) + 1000;
  return factor.toString().padStart(4, '0');
}

export interface BoletoNumbers {
  barCode: string;
  identificationField: string;
}

/** Bar code (44 digits) and digitable line (47 digits) for a Boleto; `freeField` is 25 digits. */
export function buildBoleto(input: { amountMinor: bigint; dueDate: string; freeField: string }): BoletoNumbers {
  if (!/^\d{25}$/.test(input.freeField)) throw new Error('the free field must be 25 digits');
  if (input.amountMinor < 0n || input.amountMinor > boletoAmountMinorMax) throw new Error('amount does not fit a Boleto');
  const bankAndCurrency = `${simulatorBankCode}9`;
  const factor = boletoDueDateFactor(input.dueDate);
  const amount = input.amountMinor.toString().padStart(10, '0');
  const withoutDv = `${bankAndCurrency}${factor}${amount}${input.freeField}`;
  const dv = mod11Barcode(withoutDv);
  const barCode = `${bankAndCurrency}${dv}${factor}${amount}${input.freeField}`;
  const field1 = `${bankAndCurrency}${input.freeField.slice(0, 5)}`;
  const field2 = input.freeField.slice(5, 15);
  const field3 = input.freeField.slice(15, 25);
  const identificationField =
    `${field1}${mod10(field1)}` + `${field2}${mod10(field2)}` + `${field3}${mod10(field3)}` + `${dv}` + `${factor}${amount}`;
  return { barCode, identificationField };
}

function checkDigitsCpf(base: string): string {
  const digit = (slice: string, startWeight: number): number => {
    let sum = 0;
    for (let i = 0; i < slice.length; i += 1) sum += Number(slice[i]) * (startWeight - i);
    const rest = (sum * 10) % 11;
    return rest === 10 ? 0 : rest;
  };
  const d1 = digit(base, 10);
  const d2 = digit(`${base}${d1}`, 11);
  return `${d1}${d2}`;
}

function checkDigitsCnpj(base: string): string {
  const digit = (slice: string): number => {
    const weights = slice.length === 12 ? [5, 4, 3, 2, 9, 8, 7, 6, 5, 4, 3, 2] : [6, 5, 4, 3, 2, 9, 8, 7, 6, 5, 4, 3, 2];
    let sum = 0;
    for (let i = 0; i < slice.length; i += 1) sum += Number(slice[i]) * (weights[i] ?? 0);
    const rest = sum % 11;
    return rest < 2 ? 0 : 11 - rest;
  };
  const d1 = digit(base);
  const d2 = digit(`${base}${d1}`);
  return `${d1}${d2}`;
}

export function isValidCpf(value: string): boolean {
  if (!/^\d{11}$/.test(value) || /^(\d)\1{10}$/.test(value)) return false;
  return checkDigitsCpf(value.slice(0, 9)) === value.slice(9);
}

export function isValidCnpj(value: string): boolean {
  if (!/^\d{14}$/.test(value) || /^(\d)\1{13}$/.test(value)) return false;
  return checkDigitsCnpj(value.slice(0, 12)) === value.slice(12);
}

/** Completes 9 digits into a valid CPF (used by tests and examples). */
export function completeCpf(base9: string): string {
  if (!/^\d{9}$/.test(base9)) throw new Error('a CPF base is 9 digits');
  return `${base9}${checkDigitsCpf(base9)}`;
}

/** Completes 12 digits into a valid CNPJ. */
export function completeCnpj(base12: string): string {
  if (!/^\d{12}$/.test(base12)) throw new Error('a CNPJ base is 12 digits');
  return `${base12}${checkDigitsCnpj(base12)}`;
}

/** Whether a Pix key has the form its type requires. */
export function isValidPixKey(type: string, key: string): boolean {
  switch (type) {
    case 'CPF':
      return isValidCpf(key);
    case 'CNPJ':
      return isValidCnpj(key);
    case 'EMAIL':
      return key.length <= 77 && /^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(key);
    case 'PHONE':
      return /^\+?55\d{10,11}$/.test(key) || /^\d{10,11}$/.test(key);
    case 'EVP':
      return /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(key);
    default:
      return false;
  }
}
