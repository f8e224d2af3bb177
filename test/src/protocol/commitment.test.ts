/** createPlc, the canonical commitment bytes field by field, and the byte/amount helpers. */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  bytesToHex,
  commitmentBytesLength,
  computeCommitmentHash,
  createPlc,
  encodeCommitment,
  formatAmountMinor,
  hexToBytes,
  isoToMs,
  msToIso,
  parseAmountInput,
  parseCanonicalAmount,
  uuidV4FromBytes,
  verifyPlc,
  verifySignature,
} from '../../../src/protocol/index.ts';
import { amountMinorMax as ledgerAmountMinorMax, currencyMinorUnits } from '../../../src/money/currency.ts';
import { amountMinorMax, currencyDecimals } from '../../../src/protocol/index.ts';
import { sha256 } from '@noble/hashes/sha2.js';
import { isCanonicalIso, u64be } from '../../../src/protocol/bytes.ts';
import { createdAtMs, freshPlc, hourMs, issuer, seededBytes } from './support.ts';

describe('createPlc', () => {
  it('signs the SHA-256 of the canonical bytes with the issuer key', () => {
    const plc = freshPlc();
    expect(plc.commitmentHash).toEqual(sha256(encodeCommitment(plc.commitment)));
    expect(verifySignature(plc.issuerSignature, plc.commitmentHash, issuer.publicKey)).toBe(true);
    expect(verifyPlc(plc).ok).toBe(true);
  });

  it('draws a fresh token id (UUID v4) and nonce when none is given', () => {
    const a = createPlc({ issuerSecretKey: issuer.secretKey, amountMinor: 1n, currency: 'USD', createdAtMs, ttlHours: 1 });
    const b = createPlc({ issuerSecretKey: issuer.secretKey, amountMinor: 1n, currency: 'USD', createdAtMs, ttlHours: 1 });
    expect(a.commitment.tokenId).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(a.commitment.tokenId).not.toBe(b.commitment.tokenId);
    expect(a.commitment.nonce).not.toEqual(b.commitment.nonce);
    expect(a.commitmentHash).not.toEqual(b.commitmentHash);
  });

  it('accepts the TTL bounds: 1 hour and 168 hours, by hours or by expiry', () => {
    expect(freshPlc({ ttlHours: 1 }).commitment.expiresAtMs).toBe(createdAtMs + hourMs);
    expect(freshPlc({ ttlHours: 168 }).commitment.expiresAtMs).toBe(createdAtMs + 168 * hourMs);
    expect(freshPlc({ ttlHours: undefined, expiresAtMs: createdAtMs + hourMs + 1 }).commitment.expiresAtMs).toBe(createdAtMs + hourMs + 1);
  });

  it.each([
    ['ttlHours 0', { ttlHours: 0 }, 'invalid_argument'],
    ['ttlHours 169', { ttlHours: 169 }, 'invalid_argument'],
    ['ttlHours 1.5', { ttlHours: 1.5 }, 'invalid_argument'],
    ['both ttlHours and expiresAtMs', { expiresAtMs: createdAtMs + hourMs }, 'invalid_argument'],
    ['neither ttlHours nor expiresAtMs', { ttlHours: undefined }, 'invalid_argument'],
    ['expiry 168 hours and 1 ms out', { ttlHours: undefined, expiresAtMs: createdAtMs + 168 * hourMs + 1 }, 'invalid_argument'],
    ['amount zero', { amountMinor: 0n }, 'invalid_argument'],
    ['amount over 10^15', { amountMinor: 10n ** 15n + 1n }, 'invalid_argument'],
    ['currency GBP', { currency: 'GBP' }, 'invalid_argument'],
    ['token id not v4', { tokenId: '00000000-0000-0000-0000-000000000000' }, 'invalid_argument'],
    ['nonce of 8 bytes', { nonce: new Uint8Array(8) }, 'invalid_argument'],
    ['created_at negative', { createdAtMs: -1 }, 'invalid_argument'],
    ['secret key of 31 bytes', { issuerSecretKey: new Uint8Array(31) }, 'invalid_secret_key'],
  ] as const)('refuses %s', (_, change, code) => {
    expect(() => freshPlc(change as never)).toThrow(expect.objectContaining({ code }));
  });
});

describe('canonical commitment bytes', () => {
  const plc = freshPlc();
  const bytes = encodeCommitment(plc.commitment);
  const at = (offset: number, length: number): string => bytesToHex(bytes.subarray(offset, offset + length));
  const u64 = (value: number | bigint): string => BigInt(value).toString(16).padStart(16, '0');

  it('lays out every field at its documented offset (118 bytes)', () => {
    expect(bytes.length).toBe(commitmentBytesLength);
    expect(at(0, 22)).toBe(bytesToHex(new TextEncoder().encode('svc:plc:commitment:v2\0')));
    expect(at(22, 1)).toBe('03');
    expect(at(23, 3)).toBe(bytesToHex(new TextEncoder().encode('2.0')));
    expect(at(26, 16)).toBe(plc.commitment.tokenId.replaceAll('-', ''));
    expect(at(42, 32)).toBe(bytesToHex(issuer.publicKey));
    expect(at(74, 8)).toBe(u64(1234n));
    expect(at(82, 3)).toBe(bytesToHex(new TextEncoder().encode('BRL')));
    expect(at(85, 1)).toBe('02');
    expect(at(86, 8)).toBe(u64(createdAtMs));
    expect(at(94, 8)).toBe(u64(createdAtMs + 24 * hourMs));
    expect(at(102, 16)).toBe(bytesToHex(seededBytes('commitment-nonce', 16)));
  });

  it('hashes to a different value when any field changes', () => {
    const hashes = [
      plc.commitment,
      { ...plc.commitment, amountMinor: 1235n },
      { ...plc.commitment, currency: 'USD' },
      { ...plc.commitment, expiresAtMs: plc.commitment.expiresAtMs + 1 },
      { ...plc.commitment, nonce: seededBytes('other', 16) },
    ].map((c) => bytesToHex(computeCommitmentHash(c)));
    expect(new Set(hashes).size).toBe(hashes.length);
  });
});

describe('protocol constants agree with the ledger', () => {
  it('uses the ledger posting bound and currency decimals, so every valid PLC can be booked', () => {
    expect(amountMinorMax).toBe(ledgerAmountMinorMax);
    expect(currencyDecimals).toEqual(currencyMinorUnits);
  });
});

describe('amounts', () => {
  it.each([
    [1234n, 'BRL', '12.34'],
    [5n, 'USD', '0.05'],
    [100n, 'EUR', '1.00'],
    [10n ** 15n, 'BRL', '10000000000000.00'],
  ])('formats %s %s as %s and reads it back', (minor, currency, text) => {
    expect(formatAmountMinor(minor, currency)).toBe(text);
    expect(parseCanonicalAmount(text, currency)).toBe(minor);
  });

  it.each([
    ['12', 1200n],
    ['12.3', 1230n],
    ['12.34', 1234n],
    ['12.340', 1234n],
    ['0.01', 1n],
  ])('reads human input %j as %s minor units', (text, minor) => {
    expect(parseAmountInput(text, 'BRL')).toBe(minor);
  });

  it.each(['', '-1', '1e3', '12.345', '0', '0.00', ' 1', '1,00', '10000000000000.01'])('refuses human input %j', (text) => {
    expect(() => parseAmountInput(text, 'BRL')).toThrow(expect.objectContaining({ code: 'invalid_argument' }));
  });
});

describe('byte helpers', () => {
  it('writes every byte as two lowercase digits, and reads them back', () => {
    const all = Uint8Array.from({ length: 256 }, (_, byte) => byte);
    const hex = bytesToHex(all);
    expect(hex).toBe(Array.from(all, (byte) => byte.toString(16).padStart(2, '0')).join(''));
    expect(hexToBytes(hex)).toEqual(all);
    expect(bytesToHex(new Uint8Array(0))).toBe('');
  });

  it('writes unsigned 64-bit big-endian integers, from a number or a bigint, as DataView does (property)', () => {
    const reference = (value: bigint) => {
      const out = new Uint8Array(8);
      new DataView(out.buffer).setBigUint64(0, value, false);
      return out;
    };
    fc.assert(
      fc.property(fc.oneof(fc.integer({ min: 0, max: 2 ** 32 + 2 }), fc.maxSafeNat()), (value) => {
        expect(u64be(value)).toEqual(reference(BigInt(value)));
        expect(u64be(BigInt(value))).toEqual(reference(BigInt(value)));
      }),
      { numRuns: 5_000 },
    );
    expect(u64be(0xffff_ffff_ffff_ffffn)).toEqual(new Uint8Array(8).fill(0xff));
    for (const bad of [-1, 2 ** 53, 0.5, Number.NaN]) expect(() => u64be(bad), String(bad)).toThrow(RangeError);
    expect(() => u64be(-1n)).toThrow(RangeError);
    expect(() => u64be(2n ** 64n)).toThrow(RangeError);
  });

  it('reads lowercase hex only', () => {
    expect(hexToBytes('00ff')).toEqual(Uint8Array.of(0, 255));
    for (const bad of ['0', '0G', '00FF', ' 00']) expect(() => hexToBytes(bad)).toThrow(expect.objectContaining({ code: 'invalid_hex' }));
    expect(() => hexToBytes('00', 2)).toThrow(expect.objectContaining({ code: 'invalid_hex' }));
  });

  it('writes and reads instants in one ISO 8601 spelling', () => {
    expect(msToIso(createdAtMs)).toBe('2026-11-22T10:00:00.000Z');
    expect(isoToMs('2026-11-22T10:00:00.000Z')).toBe(createdAtMs);
    expect(msToIso(253_402_300_799_999)).toBe('9999-12-31T23:59:59.999Z');
    expect(() => msToIso(253_402_300_800_000)).toThrow();
    for (const bad of ['2026-11-22T10:00:00Z', '2026-11-22 10:00:00.000Z', '2026-02-29T00:00:00.000Z', '+012026-11-22T10:00:00.000Z']) {
      expect(() => isoToMs(bad)).toThrow(expect.objectContaining({ code: 'invalid_argument' }));
    }
  });

  it('reads an instant exactly when msToIso would have written it that way (property)', () => {
    const two = (max: number) => fc.integer({ min: 0, max }).map((n) => String(n).padStart(2, '0'));
    const text = fc
      .tuple(fc.integer({ min: 0, max: 9999 }), two(13), two(32), two(25), two(60), two(60), fc.integer({ min: 0, max: 999 }))
      .map(([y, mo, d, h, mi, s, ms]) => `${String(y).padStart(4, '0')}-${mo}-${d}T${h}:${mi}:${s}.${String(ms).padStart(3, '0')}Z`);
    fc.assert(
      fc.property(text, (iso) => {
        const parsed = Date.parse(iso);
        const expected = Number.isInteger(parsed) && parsed >= 0 && parsed <= 253_402_300_799_999 && new Date(parsed).toISOString() === iso ? parsed : undefined;
        let got: number | undefined;
        try {
          got = isoToMs(iso);
        } catch {
          got = undefined;
        }
        expect(got, iso).toBe(expected);
      }),
      { numRuns: 20_000 },
    );
    for (const iso of ['1969-12-31T23:59:59.999Z', '0070-01-01T00:00:00.000Z', '2024-02-29T12:00:00.000Z', '2100-02-29T00:00:00.000Z', '2000-02-29T00:00:00.000Z']) {
      expect(isCanonicalIso(iso), iso).toBe(iso.startsWith('2024') || iso.startsWith('2000'));
    }
  });

  it('makes UUID v4 from random bytes by setting the version and variant bits', () => {
    expect(uuidV4FromBytes(new Uint8Array(16).fill(0xff))).toBe('ffffffff-ffff-4fff-bfff-ffffffffffff');
    expect(uuidV4FromBytes(new Uint8Array(16))).toBe('00000000-0000-4000-8000-000000000000');
  });
});
