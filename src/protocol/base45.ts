/**
 * Base45 (RFC 9285): bytes as characters of the QR alphanumeric set, which QR codes store at
 * 5.5 bits per character, so 2 bytes become 3 characters (and a last odd byte 2 characters).
 * Decoding is strict: characters outside the alphabet, a length of 1 mod 3, or a group whose
 * value does not fit its bytes are refused.
 */
import { ProtocolError } from './errors.ts';

export const base45Alphabet = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ $%*+-./:';

const alphabetIndex = new Map<string, number>([...base45Alphabet].map((char, index) => [char, index]));

/** Characters base45 needs for `byteLength` bytes. */
export function base45Length(byteLength: number): number {
  return Math.floor(byteLength / 2) * 3 + (byteLength % 2) * 2;
}

export function base45Encode(bytes: Uint8Array): string {
  const out: string[] = [];
  for (let i = 0; i + 1 < bytes.length; i += 2) {
    let n = bytes[i]! * 256 + bytes[i + 1]!;
    for (let k = 0; k < 3; k++) {
      out.push(base45Alphabet[n % 45]!);
      n = Math.floor(n / 45);
    }
  }
  if (bytes.length % 2 === 1) {
    const n = bytes[bytes.length - 1]!;
    out.push(base45Alphabet[n % 45]!, base45Alphabet[Math.floor(n / 45)]!);
  }
  return out.join('');
}

export function base45Decode(text: string): Uint8Array {
  if (typeof text !== 'string' || text.length % 3 === 1) {
    throw new ProtocolError('invalid_base45', 'base45 text has an impossible length');
  }
  const values: number[] = [];
  for (const char of text) {
    const value = alphabetIndex.get(char);
    if (value === undefined) throw new ProtocolError('invalid_base45', 'character outside the base45 alphabet');
    values.push(value);
  }
  const out = new Uint8Array(Math.floor(values.length / 3) * 2 + (values.length % 3 === 2 ? 1 : 0));
  let o = 0;
  let i = 0;
  for (; i + 2 < values.length; i += 3) {
    const n = values[i]! + values[i + 1]! * 45 + values[i + 2]! * 2025;
    if (n > 0xffff) throw new ProtocolError('invalid_base45', 'base45 group exceeds two bytes');
    out[o++] = n >> 8;
    out[o++] = n & 0xff;
  }
  if (i < values.length) {
    const n = values[i]! + values[i + 1]! * 45;
    if (n > 0xff) throw new ProtocolError('invalid_base45', 'base45 final group exceeds one byte');
    out[o++] = n;
  }
  return out;
}
