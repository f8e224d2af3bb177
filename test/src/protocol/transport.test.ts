/**
 * Base45 (RFC 9285), the compact CBOR form and its PLC2: text: round trips, strict decoding, and
 * the measured QR capacity behind `transportHopsMax`.
 */
import fc from 'fast-check';
import { decode, encode } from 'cborg';
import { describe, expect, it } from 'vitest';
import {
  amountMinorMax,
  appendTransfer,
  base45Decode,
  base45Encode,
  base45Length,
  bytesToHex,
  chainLengthMax,
  createPlc,
  decodeTransport,
  decodeTransportText,
  encodeTransport,
  encodeTransportText,
  hexToBytes,
  qrAlphanumericCharsMax,
  signTransferRecord,
  transportHopsMax,
  transportTextPrefix,
  type Plc,
} from '../../../src/protocol/index.ts';
import { alternatingHolders, bob, buildChain, chainSpec, chainThrough, createdAtMs, freshPlc, issuer, keyPool, seededBytes } from './support.ts';

const utf8 = (text: string): Uint8Array => new TextEncoder().encode(text);

describe('base45 (RFC 9285)', () => {
  it.each([
    ['AB', 'BB8'],
    ['Hello!!', '%69 VD92EX0'],
    ['base-45', 'UJCLQE7W581'],
    ['ietf!', 'QED8WEX0'],
  ])('encodes %j as %j (RFC 9285 section 4.3 and 4.4 examples)', (text, encoded) => {
    expect(base45Encode(utf8(text))).toBe(encoded);
    expect(new TextDecoder().decode(base45Decode(encoded))).toBe(text);
  });

  it('round-trips any bytes, at the advertised length', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 200 }), (bytes) => {
        const text = base45Encode(bytes);
        expect(text.length).toBe(base45Length(bytes.length));
        expect(base45Decode(text)).toEqual(bytes);
      }),
      { numRuns: 200 },
    );
  });

  it.each([
    ['a length of 1 mod 3', 'BB8A'],
    ['a lower-case letter', 'bb8'],
    ['a character outside the alphabet', 'BB#'],
    ['a triple above 65535 (":::")', ':::'],
    ['a final pair above 255 ("::")', '::'],
  ])('refuses %s', (_, text) => {
    expect(() => base45Decode(text)).toThrow(expect.objectContaining({ code: 'invalid_base45' }));
  });
});

/** Re-encodes the CBOR map of `plc` with `change` applied, keeping (or not) canonical order. */
function variant(plc: Plc, change: (map: Map<number, unknown>) => void, canonicalOrder = true): Uint8Array {
  const map = decode(encodeTransport(plc), { useMaps: true }) as Map<number, unknown>;
  change(map);
  return encode(map, canonicalOrder ? {} : { mapSorter: () => 0 });
}

describe('transport form', () => {
  it('round-trips random chains through CBOR and text, re-deriving every omitted field', () => {
    fc.assert(
      fc.property(chainSpec(transportHopsMax), (spec) => {
        const { plc } = buildChain(spec);
        expect(decodeTransport(encodeTransport(plc))).toEqual(plc);
        expect(decodeTransportText(encodeTransportText(plc))).toEqual(plc);
      }),
      { numRuns: 25 },
    );
  });

  it('writes the text form with QR alphanumeric characters only, behind PLC2:', () => {
    const text = encodeTransportText(chainThrough([1, 2]));
    expect(text.startsWith(transportTextPrefix)).toBe(true);
    expect(text).toMatch(/^[0-9A-Z $%*+\-./:]+$/);
  });

  it('carries a full 32-record chain in the binary form', () => {
    const plc = chainThrough(alternatingHolders(chainLengthMax));
    expect(decodeTransport(encodeTransport(plc))).toEqual(plc);
  });

  describe('capacity: one QR code, version 40-L, 4,296 alphanumeric characters', () => {
    // Worst case: the largest amount and every integer at its widest CBOR encoding (8 bytes).
    const worstCase = (hops: number): Plc => chainThrough(alternatingHolders(hops), freshPlc({ amountMinor: amountMinorMax }));

    it(`fits ${transportHopsMax} records and not one more (measured)`, () => {
      const fits = worstCase(transportHopsMax);
      expect(encodeTransport(fits).length).toBe(2801);
      expect(encodeTransportText(fits).length).toBe(4207);
      expect(encodeTransportText(fits).length).toBeLessThanOrEqual(qrAlphanumericCharsMax);
      const tooMany = worstCase(transportHopsMax + 1);
      const length = transportTextPrefix.length + base45Length(encodeTransport(tooMany).length);
      expect(length).toBe(4403);
      expect(length).toBeGreaterThan(qrAlphanumericCharsMax);
    });

    it('guarantees at least the 16 hops the brief requires', () => {
      expect(transportHopsMax).toBeGreaterThanOrEqual(16);
    });

    it(`refuses to write text for ${transportHopsMax + 1} records, whatever the amount`, () => {
      const plc = chainThrough(alternatingHolders(transportHopsMax + 1), freshPlc({ amountMinor: 1n }));
      expect(() => encodeTransportText(plc)).toThrow(expect.objectContaining({ code: 'transport_too_large' }));
    });

    it('refuses to read text longer than one QR code', () => {
      expect(() => decodeTransportText(transportTextPrefix + '0'.repeat(qrAlphanumericCharsMax))).toThrow(
        expect.objectContaining({ code: 'invalid_transport' }),
      );
    });
  });

  it('refuses to encode a chain whose omitted fields could not be re-derived', () => {
    const base = chainThrough([1]);
    const unlinked = signTransferRecord(
      { recipientPublicKey: keyPool[2]!.publicKey, timestampMs: createdAtMs + 120_000, nonce: seededBytes('n', 16), prevHash: seededBytes('elsewhere') },
      bob.secretKey,
    );
    expect(() => encodeTransport({ ...base, transferChain: [...base.transferChain, unlinked] })).toThrow(
      expect.objectContaining({ code: 'invalid_argument' }),
    );
  });

  describe('strict decoding', () => {
    const plc = chainThrough([1]);
    const canonical = encodeTransport(plc);
    const hex = bytesToHex(canonical);
    const record = (map: Map<number, unknown>): Map<number, unknown> => (map.get(10) as Map<number, unknown>[])[0]!;

    const cases: [string, Uint8Array][] = [
      ['empty input', new Uint8Array(0)],
      ['trailing bytes', hexToBytes(`${hex}00`)],
      ['truncated input', canonical.slice(0, -1)],
      ['a JSON-like string-keyed map', encode({ version: '2.0' })],
      ['an unknown top-level key', variant(plc, (m) => m.set(11, 0))],
      ['a missing top-level key', variant(plc, (m) => m.delete(8))],
      ['an unknown record key', variant(plc, (m) => record(m).set(5, 0))],
      ['a missing record key', variant(plc, (m) => record(m).delete(3))],
      ['a duplicate key', hexToBytes(hex.replace(/^aa/, 'ab') + '0a80')],
      ['keys out of canonical order', variant(plc, (m) => {
        const entries = [...m.entries()].reverse();
        m.clear();
        for (const [k, v] of entries) m.set(k, v);
      }, false)],
      ['an integer in a longer form than needed', hexToBytes(hex.replace('041904d2', '041a000004d2'))],
      ['a float amount', variant(plc, (m) => m.set(4, 12.5))],
      ['a tagged amount', hexToBytes(hex.replace('041904d2', '04c11904d2'))],
      ['an indefinite-length chain', hexToBytes(hex.replace(/0a81a4/, '0a9fa4') + 'ff')],
      ['the token id as text', variant(plc, (m) => m.set(2, '4f0c2b1e-7d3a-4c5b-9e8f-0a1b2c3d4e5f'))],
      ['a 31-byte issuer key', variant(plc, (m) => m.set(3, new Uint8Array(31)))],
      ['a 15-byte nonce', variant(plc, (m) => m.set(8, new Uint8Array(15)))],
      ['a 63-byte record signature', variant(plc, (m) => record(m).set(4, new Uint8Array(63)))],
      ['a negative timestamp', variant(plc, (m) => record(m).set(2, -1))],
      ['version 2.1', variant(plc, (m) => m.set(1, '2.1'))],
      ['an unsupported currency', variant(plc, (m) => m.set(5, 'GBP'))],
      ['a zero amount', variant(plc, (m) => m.set(4, 0))],
      ['an amount over 2^53', hexToBytes(hex.replace('041904d2', '041b0020000000000001'))],
      ['a TTL over 168 hours', variant(plc, (m) => m.set(7, (m.get(6) as number) + 169 * 3_600_000))],
      ['a token id that is not a UUID v4', variant(plc, (m) => m.set(2, new Uint8Array(16)))],
      ['the chain as a map', variant(plc, (m) => m.set(10, new Map()))],
      ['33 records', variant(plc, (m) => m.set(10, Array.from({ length: 33 }, () => record(m))))],
    ];

    it.each(cases)('refuses %s', (_, bytes) => {
      expect(() => decodeTransport(bytes)).toThrow(expect.objectContaining({ code: 'invalid_transport' }));
    });

    it('applies the hand-made variants above to this fixture (amount 1234 as 19 04d2, a one-record chain)', () => {
      expect(hex.match(/041904d2/g)).toHaveLength(1);
      expect(hex.match(/0a81a4/g)).toHaveLength(1);
      expect(hex.startsWith('aa')).toBe(true);
    });

    it('accepts the canonical bytes themselves', () => {
      expect(decodeTransport(canonical)).toEqual(plc);
    });

    it.each([
      ['no prefix', base45Encode(canonical)],
      ['another prefix', `PLC3:${base45Encode(canonical)}`],
      ['a lower-case prefix', `plc2:${base45Encode(canonical)}`],
      ['bad base45', `${transportTextPrefix}${base45Encode(canonical)}~`],
      ['a trailing newline', `${transportTextPrefix}${base45Encode(canonical)}\n`],
    ])('refuses text with %s', (_, text) => {
      expect(() => decodeTransportText(text)).toThrow(expect.objectContaining({ code: 'invalid_transport' }));
    });

    it('does not verify implicitly: a bad signature decodes, and only verification refuses it', () => {
      const broken = { ...plc, issuerSignature: new Uint8Array(64) };
      expect(decodeTransport(encodeTransport(broken)).issuerSignature).toEqual(new Uint8Array(64));
    });
  });

  it('keeps every commitment field through the transport form, including the largest amount', () => {
    const plc = createPlc({ issuerSecretKey: issuer.secretKey, amountMinor: amountMinorMax, currency: 'EUR', createdAtMs, ttlHours: 168 });
    const next = appendTransfer(plc, { senderSecretKey: issuer.secretKey, recipientPublicKey: bob.publicKey, timestampMs: createdAtMs });
    expect(decodeTransportText(encodeTransportText(next))).toEqual(next);
  });
});
