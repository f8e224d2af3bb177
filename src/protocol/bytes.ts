/**
 * Byte-level helpers shared by every encoder of the protocol: lowercase hex, big-endian integers,
 * concatenation, UUID and ISO 8601 conversions. Pure and isomorphic: Uint8Array and TextEncoder
 * only, so the library runs unchanged in a browser or a mobile JS runtime.
 */
import { ProtocolError } from './errors.ts';
import { timestampMsMax, tokenIdBytes } from './constants.ts';

const hexDigits = '0123456789abcdef';
const lowercaseHexPattern = /^(?:[0-9a-f]{2})*$/;
/** The two digits of every byte value: one concatenation per byte, and no one-character strings. */
const hexPairs: readonly string[] = Array.from({ length: 256 }, (_, byte) => hexDigits[byte >> 4]! + hexDigits[byte & 0x0f]!);

export function bytesToHex(bytes: Uint8Array): string {
  let out = '';
  for (let i = 0; i < bytes.length; i++) out += hexPairs[bytes[i]!]!;
  return out;
}

/**
 * Parses lowercase hex. Uppercase is refused on purpose: the JSON form has exactly one spelling
 * of every value, so two different strings never denote the same key or hash.
 */
export function hexToBytes(hex: string, expectedBytes?: number): Uint8Array {
  if (typeof hex !== 'string' || !lowercaseHexPattern.test(hex)) {
    throw new ProtocolError('invalid_hex', 'expected lowercase hex with an even number of digits');
  }
  if (expectedBytes !== undefined && hex.length !== expectedBytes * 2) {
    throw new ProtocolError('invalid_hex', `expected ${expectedBytes} bytes of hex, got ${hex.length / 2}`);
  }
  // The pattern above admits only [0-9a-f]: map each digit's char code straight to its value.
  const out = new Uint8Array(hex.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = (nibble(hex.charCodeAt(i * 2)) << 4) | nibble(hex.charCodeAt(i * 2 + 1));
  return out;
}

/** The value of a lowercase hex digit's char code ('0'-'9' are 48-57, 'a'-'f' are 97-102). */
function nibble(code: number): number {
  return code <= 57 ? code - 48 : code - 87;
}

export function concatBytes(...parts: readonly Uint8Array[]): Uint8Array {
  let length = 0;
  for (const part of parts) length += part.length;
  const out = new Uint8Array(length);
  let offset = 0;
  for (const part of parts) {
    out.set(part, offset);
    offset += part.length;
  }
  return out;
}

/** Byte equality. Not constant time: use it on public data only (keys, hashes, signatures). */
export function bytesEqual(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

export function isBytes(value: unknown, length: number): value is Uint8Array {
  return value instanceof Uint8Array && value.length === length;
}

export function u8(value: number): Uint8Array {
  if (!Number.isInteger(value) || value < 0 || value > 0xff) throw new RangeError(`u8 out of range: ${value}`);
  return Uint8Array.of(value);
}

export function u16be(value: number): Uint8Array {
  if (!Number.isInteger(value) || value < 0 || value > 0xffff) throw new RangeError(`u16 out of range: ${value}`);
  return Uint8Array.of(value >> 8, value & 0xff);
}

/** Unsigned 64-bit big-endian. Takes a safe integer or a bigint. */
export function u64be(value: number | bigint): Uint8Array {
  const out = new Uint8Array(8);
  if (typeof value === 'number') {
    // Timestamps, mostly: a safe integer splits into two 32-bit halves without a BigInt.
    if (!Number.isSafeInteger(value)) throw new RangeError(`u64 not a safe integer: ${value}`);
    if (value < 0) throw new RangeError(`u64 out of range: ${value}`);
    const high = Math.floor(value / 0x1_0000_0000);
    const low = value - high * 0x1_0000_0000;
    for (let i = 0; i < 4; i++) {
      out[3 - i] = (high / 2 ** (8 * i)) & 0xff;
      out[7 - i] = (low / 2 ** (8 * i)) & 0xff;
    }
    return out;
  }
  if (value < 0n || value > 0xffff_ffff_ffff_ffffn) throw new RangeError(`u64 out of range: ${value}`);
  new DataView(out.buffer).setBigUint64(0, value, false);
  return out;
}

const utf8Encoder = new TextEncoder();
const utf8Decoder = new TextDecoder('utf-8', { fatal: true });

export function utf8(text: string): Uint8Array {
  return utf8Encoder.encode(text);
}

export function utf8Decode(bytes: Uint8Array): string {
  return utf8Decoder.decode(bytes);
}

/** Canonical textual UUID v4: lowercase, hyphenated, version nibble 4, RFC 4122 variant. */
const uuidV4Pattern = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

export function isUuidV4(value: unknown): value is string {
  return typeof value === 'string' && uuidV4Pattern.test(value);
}

export function uuidToBytes(uuid: string): Uint8Array {
  if (!isUuidV4(uuid)) throw new ProtocolError('invalid_argument', 'token id must be a lowercase UUID v4');
  return hexToBytes(uuid.replaceAll('-', ''), tokenIdBytes);
}

export function bytesToUuid(bytes: Uint8Array): string {
  if (!isBytes(bytes, tokenIdBytes)) throw new ProtocolError('invalid_argument', 'a UUID is 16 bytes');
  const hex = bytesToHex(bytes);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** Turns 16 random bytes into a UUID v4 by setting the version and variant bits (RFC 9562 5.4). */
export function uuidV4FromBytes(random: Uint8Array): string {
  if (!isBytes(random, tokenIdBytes)) throw new ProtocolError('invalid_argument', 'a UUID needs 16 random bytes');
  const bytes = random.slice();
  bytes[6] = (bytes[6]! & 0x0f) | 0x40;
  bytes[8] = (bytes[8]! & 0x3f) | 0x80;
  return bytesToUuid(bytes);
}

export function isTimestampMs(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0 && value <= timestampMsMax;
}

const isoMsPattern = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

/** ISO 8601 UTC with milliseconds, e.g. "2026-11-22T10:00:00.000Z": the JSON form of an instant. */
export function msToIso(timestampMs: number): string {
  if (!isTimestampMs(timestampMs)) throw new ProtocolError('invalid_argument', `timestamp out of range: ${timestampMs}`);
  return new Date(timestampMs).toISOString();
}

/**
 * Parses exactly the form `msToIso` writes. Anything else (no milliseconds, an offset, a
 * calendar-invalid date like February 30th) is refused, so each instant has one spelling.
 */
export function isoToMs(iso: string): number {
  if (typeof iso !== 'string' || !isoMsPattern.test(iso)) {
    throw new ProtocolError('invalid_argument', 'expected an ISO 8601 UTC timestamp with milliseconds');
  }
  // The pattern fixed every digit's place; each field must be in range for `msToIso` to have
  // written it (no February 30th, no 24:00), and the year at least 1970 (no negative instants).
  const year = decimalAt(iso, 0, 4);
  const month = decimalAt(iso, 5, 2);
  const day = decimalAt(iso, 8, 2);
  const hour = decimalAt(iso, 11, 2);
  const minute = decimalAt(iso, 14, 2);
  const second = decimalAt(iso, 17, 2);
  if (year < 1970 || month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month) || hour > 23 || minute > 59 || second > 59) {
    throw new ProtocolError('invalid_argument', `not a valid instant: ${iso}`);
  }
  const ms = Date.UTC(year, month - 1, day, hour, minute, second, decimalAt(iso, 20, 3));
  if (!isTimestampMs(ms)) throw new ProtocolError('invalid_argument', `not a valid instant: ${iso}`);
  return ms;
}

/** The value of `count` decimal digits of `text` from `at` (the caller has checked they are digits). */
function decimalAt(text: string, at: number, count: number): number {
  let value = 0;
  for (let i = at; i < at + count; i++) value = value * 10 + (text.charCodeAt(i) - 48);
  return value;
}

function daysInMonth(year: number, month: number): number {
  if (month === 2) return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0 ? 29 : 28;
  return month === 4 || month === 6 || month === 9 || month === 11 ? 30 : 31;
}

export function isCanonicalIso(value: unknown): value is string {
  if (typeof value !== 'string') return false;
  try {
    isoToMs(value);
    return true;
  } catch {
    return false;
  }
}
