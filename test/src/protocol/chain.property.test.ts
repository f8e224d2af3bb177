/**
 * Property tests of the chain rules: random valid chains verify; any single-byte change to any
 * signed or carried field is refused; chains that share a prefix and then diverge are a fork by
 * the right key. Run counts are kept moderate: every run signs and verifies up to 17 times.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  appendTransfer,
  bytesEqual,
  detectFork,
  hexToBytes,
  plcFromJson,
  plcToJson,
  verifyForkEvidence,
  verifyPlc,
  verifySignature,
  type Plc,
  type VerifiedPrefix,
} from '../../../src/protocol/index.ts';
import { bytesToUuid, u64be } from '../../../src/protocol/bytes.ts';
import { buildChain, chainSpec, keyPool, minuteMs, nonceFor, readU64, recordFieldsOf, type PlcField } from './support.ts';

const latin1 = (bytes: Uint8Array): string => String.fromCharCode(...bytes);
const ascii = (text: string): Uint8Array => Uint8Array.from(text, (char) => char.charCodeAt(0));

function fieldsOf(plc: Plc): PlcField[] {
  const c = plc.commitment;
  const withCommitment = (change: object): Plc => ({ ...plc, commitment: { ...c, ...change } });
  return [
    { name: 'version', bytes: ascii(c.version), rebuild: (b) => withCommitment({ version: latin1(b) }) },
    { name: 'token id', bytes: hexToBytes(c.tokenId.replaceAll('-', '')), rebuild: (b) => withCommitment({ tokenId: bytesToUuid(b) }) },
    { name: 'issuer key', bytes: c.issuerPublicKey, rebuild: (b) => withCommitment({ issuerPublicKey: b }) },
    { name: 'amount', bytes: u64be(c.amountMinor), rebuild: (b) => withCommitment({ amountMinor: readU64(b) }) },
    { name: 'currency', bytes: ascii(c.currency), rebuild: (b) => withCommitment({ currency: latin1(b) }) },
    { name: 'created_at', bytes: u64be(c.createdAtMs), rebuild: (b) => withCommitment({ createdAtMs: Number(readU64(b)) }) },
    { name: 'expires_at', bytes: u64be(c.expiresAtMs), rebuild: (b) => withCommitment({ expiresAtMs: Number(readU64(b)) }) },
    { name: 'commitment nonce', bytes: c.nonce, rebuild: (b) => withCommitment({ nonce: b }) },
    { name: 'commitment hash', bytes: plc.commitmentHash, rebuild: (b) => ({ ...plc, commitmentHash: b }) },
    { name: 'issuer signature', bytes: plc.issuerSignature, rebuild: (b) => ({ ...plc, issuerSignature: b }) },
    ...recordFieldsOf(plc, { timestamp: true }),
  ];
}

describe('chain properties', () => {
  it('random valid chains of 0 to 16 hops verify, with the last holder as bearer', () => {
    fc.assert(
      fc.property(chainSpec(16), (spec) => {
        const { plc, holders } = buildChain(spec);
        const result = verifyPlc(plc);
        expect(result.ok).toBe(true);
        if (!result.ok) return;
        expect(result.chainLength).toBe(spec.hops.length);
        expect(bytesEqual(result.bearerPublicKey, keyPool[holders.at(-1)!]!.publicKey)).toBe(true);
        // The JSON form carries exactly the same PLC.
        expect(plcFromJson(plcToJson(plc))).toEqual(plc);
      }),
      { numRuns: 40 },
    );
  });

  it('flipping any byte of any signed or carried field makes verification fail', () => {
    fc.assert(
      fc.property(chainSpec(8), fc.nat(), fc.nat(), fc.integer({ min: 1, max: 255 }), (spec, fieldPick, bytePick, mask) => {
        const { plc } = buildChain(spec);
        const fields = fieldsOf(plc);
        const field = fields[fieldPick % fields.length]!;
        const changed = field.bytes.slice();
        const at = bytePick % changed.length;
        changed[at]! ^= mask;
        const result = verifyPlc(field.rebuild(changed));
        expect(result.ok, `${field.name} byte ${at} ^ ${mask} still verifies`).toBe(false);
      }),
      { numRuns: 150 },
    );
  });

  it('two chains sharing a prefix, then signed twice by the bearer, are a fork by that bearer', () => {
    fc.assert(
      fc.property(
        chainSpec(8),
        fc.integer({ min: 0, max: keyPool.length - 1 }),
        fc.integer({ min: 0, max: keyPool.length - 1 }),
        fc.integer({ min: 0, max: 3 }),
        fc.integer({ min: 0, max: 3 }),
        (spec, firstTo, secondTo, firstMore, secondMore) => {
          const { plc: prefix, holders } = buildChain(spec);
          const bearer = holders.at(-1)!;
          const lastMs = prefix.transferChain.at(-1)?.timestampMs ?? spec.createdAtMs;
          const branch = (to: number, more: number, label: string): Plc => {
            let holder = to === bearer ? (to + 1) % keyPool.length : to;
            let plc = appendTransfer(prefix, {
              senderSecretKey: keyPool[bearer]!.secretKey,
              recipientPublicKey: keyPool[holder]!.publicKey,
              timestampMs: lastMs + minuteMs,
              nonce: nonceFor(spec.salt, `${label}:0`),
            });
            for (let i = 1; i <= more; i++) {
              const next = (holder + 1) % keyPool.length;
              plc = appendTransfer(plc, {
                senderSecretKey: keyPool[holder]!.secretKey,
                recipientPublicKey: keyPool[next]!.publicKey,
                timestampMs: lastMs + (i + 1) * minuteMs,
                nonce: nonceFor(spec.salt, `${label}:${i}`),
              });
              holder = next;
            }
            return plc;
          };
          const first = branch(firstTo, firstMore, 'first');
          const second = branch(secondTo, secondMore, 'second');
          expect(verifyPlc(first).ok && verifyPlc(second).ok).toBe(true);
          const result = detectFork(first, second);
          expect(result.kind).toBe('fork');
          if (result.kind !== 'fork') return;
          expect(result.index).toBe(prefix.transferChain.length);
          expect(bytesEqual(result.culpritPublicKey, keyPool[bearer]!.publicKey)).toBe(true);
          expect(verifyForkEvidence(result.evidence)).toBe(true);
        },
      ),
      { numRuns: 30 },
    );
  });

  /** What a server keeps of a PLC it verified: the issuer's signature and the first `length` records. */
  const keptOf = (plc: Plc, length: number): VerifiedPrefix => ({
    issuerSignature: plc.issuerSignature.slice(),
    records: plc.transferChain.slice(0, length).map((record) => ({ hash: record.hash.slice(), signature: record.signature.slice() })),
  });

  it('with a verified prefix, any chain (changed in any byte, or not) gets exactly the answer of a full verification', () => {
    fc.assert(
      fc.property(chainSpec(8), fc.nat(), fc.nat(), fc.nat(), fc.integer({ min: 0, max: 255 }), (spec, keptPick, fieldPick, bytePick, mask) => {
        const { plc } = buildChain(spec);
        const kept = keptOf(plc, keptPick % (plc.transferChain.length + 1));
        const fields = fieldsOf(plc);
        const field = fields[fieldPick % fields.length]!;
        const changed = field.bytes.slice();
        changed[bytePick % changed.length]! ^= mask;
        const presented = mask === 0 ? plc : field.rebuild(changed);
        expect(verifyPlc(presented, { verifiedPrefix: kept })).toEqual(verifyPlc(presented));
      }),
      { numRuns: 150 },
    );
  });

  it('with a verified prefix, only the issuer signature and records not kept are verified again', () => {
    fc.assert(
      fc.property(chainSpec(8), fc.nat(), (spec, keptPick) => {
        const { plc } = buildChain(spec);
        const keptLength = keptPick % (plc.transferChain.length + 1);
        let calls = 0;
        const counting = (signature: Uint8Array, message: Uint8Array, publicKey: Uint8Array) => {
          calls += 1;
          return verifySignature(signature, message, publicKey);
        };
        expect(verifyPlc(plc, { verifiedPrefix: keptOf(plc, keptLength), verifySignature: counting }).ok).toBe(true);
        expect(calls).toBe(plc.transferChain.length - keptLength);
        calls = 0;
        // A prefix whose issuer signature differs from the presented one is no reason to skip it.
        const other = { ...keptOf(plc, keptLength), issuerSignature: new Uint8Array(64) };
        expect(verifyPlc(plc, { verifiedPrefix: other, verifySignature: counting }).ok).toBe(true);
        expect(calls).toBe(plc.transferChain.length - keptLength + 1);
      }),
      { numRuns: 40 },
    );
  });
});
