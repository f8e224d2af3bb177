/**
 * The service's issue receipt (docs/protocol.md section 19): the committed vectors
 * (test/src/protocol/vectors/receipt-v1.json) are what the generator makes from the current code;
 * each case gives its documented reason; the layout rebuilt by hand from the document; the receipt
 * carried unchanged by every form (JSON, CBOR, QR text, sealed) beside an unchanged commitment;
 * old forms without it still read; and what it costs in QR capacity, measured.
 */
import { readFileSync } from 'node:fs';
import QRCode from 'qrcode';
import { decode, encode } from 'cborg';
import { describe, expect, it } from 'vitest';
import { buildReceiptVectors, receiptVectorsPath } from '../../../scripts/gen-receipt-vectors.ts';
import {
  amountMinorMax,
  bytesToHex,
  computeCommitmentHash,
  decodeIssueReceipt,
  decodeTransport,
  decodeTransportText,
  encodeCommitment,
  encodeIssueReceiptMessage,
  encodeTransport,
  encodeTransportText,
  hexToBytes,
  issueReceiptBytes,
  openSealedPayload,
  parsePlcJson,
  plcToJson,
  qrAlphanumericCharsMax,
  receiptTrustOf,
  sealPayload,
  signIssueReceipt,
  timestampMsMax,
  transportHopsMax,
  transportHopsMaxWithReceipt,
  transportTextPrefix,
  base45Length,
  verifyBlocklistJson,
  verifyIssueReceipt,
  verifyPlc,
  verifyPlcReceipt,
  verifySignature,
  withIssueReceipt,
  generateKeyPair,
  type Plc,
  type ReceiptKey,
} from '../../../src/protocol/index.ts';
import { alternatingHolders, bob, chainThrough, createdAtMs, freshPlc, issuer, seededBytes } from './support.ts';

const committed = JSON.parse(readFileSync(receiptVectorsPath, 'utf8')) as ReturnType<typeof buildReceiptVectors>;
const rootKey = hexToBytes(committed.keys.blocklist_service, 32);

function trustFrom(name: 'rotation' | 'after_revocation'): readonly ReceiptKey[] {
  const verified = verifyBlocklistJson(committed.blocklists[name]!.json, rootKey);
  if (!verified.ok) throw new Error(`blocklist ${name}: ${verified.message}`);
  return receiptTrustOf(verified.list, rootKey);
}

const vectorPlc = parsePlcJson(committed.forms.json);

describe('receipt vectors (format 0x01)', () => {
  it('the committed file is what the generator makes from the current code', () => {
    expect(JSON.parse(JSON.stringify(buildReceiptVectors()))).toEqual(committed);
  });

  it.each(committed.cases.map((vector) => [vector.name, vector] as const))('%s: the documented verdict', (_name, vector) => {
    const receipt = vector.receipt === null ? undefined : hexToBytes(vector.receipt);
    const result = verifyIssueReceipt(vectorPlc.commitment, receipt, trustFrom(vector.trust));
    expect(result.ok ? { ok: true } : { ok: false, reason: result.reason }).toEqual(vector.expected);
  });

  it('the signed message and the receipt rebuilt by hand from section 19', () => {
    const c = vectorPlc.commitment;
    const u64 = (value: number | bigint) => {
      const b = Buffer.alloc(8);
      b.writeBigUInt64BE(BigInt(value));
      return b;
    };
    const key = Buffer.from(committed.keys.receipt_new.public_key, 'hex');
    const hash = Buffer.from(committed.commitment.commitment_hash, 'hex');
    expect(hash.toString('hex')).toBe(bytesToHex(computeCommitmentHash(c)));
    const message = Buffer.concat([
      Buffer.from('svc:plc:receipt:v1\0', 'ascii'),
      Buffer.of(0x01),
      key,
      hash,
      Buffer.from(c.tokenId.replaceAll('-', ''), 'hex'),
      u64(c.amountMinor),
      Buffer.from('BRL', 'ascii'),
      Buffer.of(2),
      u64(c.expiresAtMs),
      u64(committed.valid.issued_at_ms),
    ]);
    expect(message.length).toBe(128);
    expect(message.toString('hex')).toBe(committed.valid.message);
    const receipt = Buffer.from(committed.valid.receipt, 'hex');
    expect(receipt.length).toBe(issueReceiptBytes);
    expect(receipt[0]).toBe(0x01);
    expect(receipt.subarray(1, 33)).toEqual(key);
    expect(receipt.subarray(33, 65)).toEqual(hash);
    expect(receipt.readBigUInt64BE(65)).toBe(BigInt(committed.valid.issued_at_ms));
    expect(verifySignature(receipt.subarray(73), message, key)).toBe(true);
    expect(bytesToHex(signIssueReceipt({ commitment: c, serviceSecretKey: hexToBytes(committed.keys.receipt_new.seed, 32), issuedAtMs: committed.valid.issued_at_ms }))).toBe(
      committed.valid.receipt,
    );
  });

  it('the blocklist v2 carrying the receipt keys: canonical bytes rebuilt by hand, signed by the blocklist key', () => {
    for (const vector of Object.values(committed.blocklists)) {
      const { json } = vector;
      if (json.format !== 'svc:blocklist:v2') throw new Error('expected a v2 list');
      const header = Buffer.alloc(20);
      header.writeBigUInt64BE(BigInt(json.version), 0);
      header.writeBigUInt64BE(BigInt(json.published_at_ms), 8);
      header.writeUInt32BE(json.keys.length, 16);
      const count = Buffer.alloc(4);
      count.writeUInt32BE(json.receipt_keys.length);
      const entries = json.receipt_keys.map((entry) => {
        const period = Buffer.alloc(16);
        period.writeBigUInt64BE(BigInt(entry.valid_from_ms), 0);
        period.writeBigUInt64BE(BigInt(entry.valid_until_ms), 8);
        return Buffer.concat([Buffer.from(entry.pubkey, 'hex'), period]);
      });
      const bytes = Buffer.concat([Buffer.from('svc:blocklist:v2\0', 'ascii'), header, ...json.keys.map((k) => Buffer.from(k, 'hex')), count, ...entries]);
      expect(bytes.toString('hex')).toBe(vector.canonical_bytes);
      expect(verifySignature(hexToBytes(json.signature, 64), bytes, rootKey)).toBe(true);
    }
  });

  it('a v2 list whose receipt keys were changed, reordered or repeated is refused', () => {
    const json = committed.blocklists.rotation!.json;
    if (json.format !== 'svc:blocklist:v2') throw new Error('expected a v2 list');
    const [first, second] = json.receipt_keys as [(typeof json.receipt_keys)[number], (typeof json.receipt_keys)[number]];
    const cases: [unknown, string][] = [
      [{ ...json, receipt_keys: [{ ...first, valid_from_ms: first.valid_from_ms - 1 }, second] }, 'bad_signature'],
      [{ ...json, receipt_keys: [second] }, 'bad_signature'],
      [{ ...json, receipt_keys: [second, first] }, 'malformed'],
      [{ ...json, receipt_keys: [first, first] }, 'malformed'],
      [{ ...json, receipt_keys: [{ ...first, valid_from_ms: first.valid_until_ms + 1 }, second] }, 'malformed'],
      [{ ...json, format: 'svc:blocklist:v1' }, 'malformed'],
    ];
    for (const [list, reason] of cases) {
      const verified = verifyBlocklistJson(list, rootKey);
      expect(verified.ok ? 'ok' : verified.reason).toBe(reason);
    }
  });

  it('before any list, or with a v1 list, the blocklist key itself is the one receipt key, for any issued_at', () => {
    expect(receiptTrustOf(undefined, rootKey)).toEqual([{ publicKey: rootKey, validFromMs: 0, validUntilMs: timestampMsMax }]);
    const receipt = signIssueReceipt({ commitment: vectorPlc.commitment, serviceSecretKey: seededBytes('root'), issuedAtMs: createdAtMs });
    const rootPublic = generateKeyPair(seededBytes('root')).publicKey;
    expect(verifyIssueReceipt(vectorPlc.commitment, receipt, receiptTrustOf(undefined, rootPublic)).ok).toBe(true);
    expect(verifyIssueReceipt(vectorPlc.commitment, receipt, receiptTrustOf(undefined, rootKey))).toMatchObject({ ok: false, reason: 'untrusted_key' });
  });

  it('never throws on hostile input', () => {
    const trust = trustFrom('rotation');
    for (const input of [null, 'text', 42, {}, new Uint8Array(issueReceiptBytes), Uint8Array.of(1), new Uint8Array(10_000)]) {
      expect(verifyIssueReceipt(vectorPlc.commitment, input, trust).ok).toBe(false);
    }
    expect(verifyIssueReceipt({ ...vectorPlc.commitment, amountMinor: 0n }, hexToBytes(committed.valid.receipt), trust)).toMatchObject({ ok: false, reason: 'malformed' });
    expect(decodeIssueReceipt(new Uint8Array(0))).toMatchObject({ ok: false, reason: 'missing' });
  });
});

describe('the receipt in every form, beside an unchanged commitment', () => {
  const receipt = hexToBytes(committed.valid.receipt);
  const trust = trustFrom('rotation');
  const carried = withIssueReceipt(vectorPlc, receipt);
  const bare: Plc = { commitment: vectorPlc.commitment, commitmentHash: vectorPlc.commitmentHash, issuerSignature: vectorPlc.issuerSignature, transferChain: vectorPlc.transferChain };

  it('leaves the commitment bytes, its hash and the chain verification as they are', () => {
    expect(bytesToHex(encodeCommitment(carried.commitment))).toBe(bytesToHex(encodeCommitment(bare.commitment)));
    expect(verifyPlc(carried)).toEqual(verifyPlc(bare));
    expect(committed.forms.json.commitment_hash).toBe(committed.commitment.commitment_hash);
  });

  it('JSON: issue_receipt in lowercase hex, read back; a PLC without it reads as before', () => {
    expect(committed.forms.json.issue_receipt).toBe(committed.valid.receipt);
    expect(verifyPlcReceipt(parsePlcJson(committed.forms.json), trust).ok).toBe(true);
    const { issue_receipt: _receipt, ...old } = committed.forms.json;
    const parsed = parsePlcJson(old);
    expect(parsed.issueReceipt).toBeUndefined();
    expect(plcToJson(parsed)).toEqual(old);
    expect(verifyPlcReceipt(parsed, trust)).toMatchObject({ ok: false, reason: 'missing' });
    expect(() => parsePlcJson({ ...committed.forms.json, issue_receipt: committed.valid.receipt.toUpperCase() })).toThrow(expect.objectContaining({ code: 'invalid_json' }));
    // Cut in JSON, it still reads: the verifier names it.
    expect(verifyPlcReceipt(parsePlcJson({ ...committed.forms.json, issue_receipt: committed.valid.receipt.slice(0, 200) }), trust)).toMatchObject({ reason: 'truncated' });
  });

  it('CBOR: key 11, the same bytes otherwise; the 10-entry map without it is the form as first published', () => {
    const bytes = encodeTransport(carried);
    expect(bytesToHex(bytes)).toBe(committed.forms.cbor);
    expect(bytes[0]).toBe(0xab);
    expect(bytesToHex(encodeTransport(bare))).toBe(committed.forms.cbor_without_receipt);
    expect(bytes.length - encodeTransport(bare).length).toBe(140);
    const decoded = decodeTransport(bytes);
    expect(decoded.issueReceipt).toEqual(receipt);
    expect(verifyPlcReceipt(decoded, trust).ok).toBe(true);
    expect(decodeTransport(hexToBytes(committed.forms.cbor_without_receipt)).issueReceipt).toBeUndefined();
  });

  it('CBOR: a receipt of the wrong type or size, or an unknown 12th key, is refused', () => {
    const withEntry = (key: number, value: unknown) => {
      const map = new Map<number, unknown>([...(decode(hexToBytes(committed.forms.cbor_without_receipt), { useMaps: true }) as Map<number, unknown>)]);
      map.set(key, value);
      return encode(map);
    };
    for (const bytes of [withEntry(11, 'text'), withEntry(11, new Uint8Array(0)), withEntry(11, new Uint8Array(257)), withEntry(12, receipt)]) {
      expect(() => decodeTransport(bytes)).toThrow(expect.objectContaining({ code: 'invalid_transport' }));
    }
    expect(() => encodeTransport({ ...bare, issueReceipt: new Uint8Array(0) })).toThrow(expect.objectContaining({ code: 'invalid_argument' }));
  });

  it('QR text and the sealed form carry it', () => {
    expect(encodeTransportText(carried)).toBe(committed.forms.text);
    expect(decodeTransportText(committed.forms.text).issueReceipt).toEqual(receipt);
    const sealed = sealPayload({ senderSecretKey: issuer.secretKey, recipientPublicKey: bob.publicKey, plaintext: encodeTransport(carried), nonce: seededBytes('sealed', 24) });
    const opened = decodeTransport(openSealedPayload({ recipientSecretKey: bob.secretKey, sealed }).plaintext);
    expect(verifyPlcReceipt(opened, trust).ok).toBe(true);
  });

  it(`text form: ${transportHopsMaxWithReceipt} records beside a receipt in the worst case, not one more (measured)`, () => {
    const worstCase = (hops: number) => withIssueReceipt(chainThrough(alternatingHolders(hops), freshPlc({ amountMinor: amountMinorMax })), receipt);
    const fits = worstCase(transportHopsMaxWithReceipt);
    expect(encodeTransport(fits).length).toBe(2810);
    expect(encodeTransportText(fits).length).toBe(4220);
    const tooMany = worstCase(transportHopsMaxWithReceipt + 1);
    expect(encodeTransport(tooMany).length).toBe(2941);
    expect(transportTextPrefix.length + base45Length(encodeTransport(tooMany).length)).toBe(4417);
    expect(4417).toBeGreaterThan(qrAlphanumericCharsMax);
    expect(() => encodeTransportText(tooMany)).toThrow(expect.objectContaining({ code: 'transport_too_large' }));
    expect(transportHopsMaxWithReceipt).toBe(transportHopsMax - 1);
  });

  it('QR cost of the receipt for a typical PLC (50.00 BRL), 1 and 5 hops: the figures of docs/protocol.md 19.6', () => {
    const figures = [1, 5].map((hops) => {
      const plain = chainThrough(alternatingHolders(hops), freshPlc({ amountMinor: 5000n }));
      const signed = signIssueReceipt({ commitment: plain.commitment, serviceSecretKey: seededBytes('service'), issuedAtMs: createdAtMs + 1_000 });
      return [plain, withIssueReceipt(plain, signed)].map((plc) => {
        const text = encodeTransportText(plc);
        const { version } = QRCode.create([{ data: text, mode: 'alphanumeric' }], { errorCorrectionLevel: 'L' });
        return { hops, cbor: encodeTransport(plc).length, chars: text.length, version, modules: 17 + 4 * version };
      });
    });
    expect(figures).toEqual([
      [
        { hops: 1, cbor: 306, chars: 464, version: 11, modules: 61 },
        { hops: 1, cbor: 446, chars: 674, version: 15, modules: 77 },
      ],
      [
        { hops: 5, cbor: 830, chars: 1250, version: 21, modules: 101 },
        { hops: 5, cbor: 970, chars: 1460, version: 22, modules: 105 },
      ],
    ]);
  });

  it('the signed message binds the amount, currency, expiry and token id as well as the hash', () => {
    const c = vectorPlc.commitment;
    const key = generateKeyPair(seededBytes('k')).publicKey;
    const base = bytesToHex(encodeIssueReceiptMessage(c, key, createdAtMs));
    for (const changed of [{ ...c, amountMinor: c.amountMinor + 1n }, { ...c, currency: 'USD' }, { ...c, expiresAtMs: c.expiresAtMs + 1 }, { ...c, tokenId: '9b2d6f4a-1c3e-4a5b-8d7f-6e5d4c3b2a19' }]) {
      expect(bytesToHex(encodeIssueReceiptMessage(changed, key, createdAtMs))).not.toBe(base);
    }
  });
});
