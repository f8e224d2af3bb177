/**
 * verifyPlc: one row per rejection reason (including those the JSON schema already refuses, which
 * the verifier must still catch for callers that build PLCs in memory), the order of the checks,
 * the clock tolerance boundaries; then checkExpiry and fork detection.
 */
import { describe, expect, it } from 'vitest';
import {
  appendTransfer,
  chainLengthMax,
  checkExpiry,
  checkRecordClock,
  clockToleranceMsDefault,
  compareTransferChains,
  computeCommitmentHash,
  computeRecordHash,
  detectFork,
  findForkAgainstKnown,
  hexToBytes,
  rejectionReasons,
  sign,
  signTransferRecord,
  verifyForkEvidence,
  verifyPlc,
  type Plc,
  type PlcCommitment,
  type RejectionReason,
  type TransferRecord,
} from '../../../src/protocol/index.ts';
import { alternatingHolders, bob, carol, chainThrough, createdAtMs, dave, freshPlc, hourMs, issuer, keyPool, seededBytes } from './support.ts';

const smallOrderKey = hexToBytes(`01${'00'.repeat(31)}`);
/** y = 2^255 - 1 >= p: not a canonical encoding of any point. */
const nonCanonicalKey = hexToBytes(`${'ff'.repeat(31)}7f`);

const base = chainThrough([1, 2, 3]); // issuer -> bob -> carol -> dave
const [r0, r1, r2] = base.transferChain as [TransferRecord, TransferRecord, TransferRecord];
const toleranceMs = clockToleranceMsDefault;
const expiresAtMs = base.commitment.expiresAtMs;

function withCommitment(change: Partial<Record<keyof PlcCommitment, unknown>>): Plc {
  return { ...base, commitment: { ...base.commitment, ...change } as PlcCommitment };
}

function withRecord(index: number, record: unknown): Plc {
  const chain = [...base.transferChain];
  chain[index] = record as TransferRecord;
  return { ...base, transferChain: chain };
}

/** Bob signs a second record of his choosing after the genuine first one. */
function bobSigns(content: Partial<Parameters<typeof signTransferRecord>[0]>, secretKey = bob.secretKey): Plc {
  const record = signTransferRecord(
    {
      recipientPublicKey: carol.publicKey,
      timestampMs: r0.timestampMs + 60_000,
      nonce: seededBytes('other-nonce', 16),
      prevHash: computeRecordHash(r0),
      ...content,
    },
    secretKey,
  );
  return { ...base, transferChain: [r0, record] };
}

function longChain(length: number): Plc {
  const withinBound = chainThrough(alternatingHolders(Math.min(length, chainLengthMax)));
  let chain = [...withinBound.transferChain];
  while (chain.length < length) {
    const last = chain.at(-1)!;
    const senderIndex = chain.length % 2 === 0 ? 2 : 1;
    chain = [
      ...chain,
      signTransferRecord(
        {
          recipientPublicKey: keyPool[senderIndex === 1 ? 2 : 1]!.publicKey,
          timestampMs: last.timestampMs + 1,
          nonce: seededBytes(`extra-${chain.length}`, 16),
          prevHash: computeRecordHash(last),
        },
        keyPool[senderIndex]!.secretKey,
      ),
    ];
  }
  return { ...withinBound, transferChain: chain };
}

const rows: readonly { name: string; plc: Plc; reason: RejectionReason; index: number | null }[] = [
  { name: 'PLC is not an object', plc: null as unknown as Plc, reason: 'malformed', index: null },
  { name: 'commitment hash of 31 bytes', plc: { ...base, commitmentHash: new Uint8Array(31) }, reason: 'malformed', index: null },
  { name: 'transfer chain is not an array', plc: { ...base, transferChain: {} as never }, reason: 'malformed', index: null },
  { name: 'amount is a number, not a bigint', plc: withCommitment({ amountMinor: 1234 }), reason: 'malformed', index: null },
  { name: 'commitment nonce of 15 bytes', plc: withCommitment({ nonce: new Uint8Array(15) }), reason: 'malformed', index: null },
  { name: 'record signature of 63 bytes', plc: withRecord(1, { ...r1, signature: new Uint8Array(63) }), reason: 'malformed', index: 1 },
  { name: 'record timestamp not an integer', plc: withRecord(0, { ...r0, timestampMs: 1.5 }), reason: 'malformed', index: 0 },
  { name: 'record is null', plc: withRecord(2, null), reason: 'malformed', index: 2 },
  { name: 'version 2.1', plc: withCommitment({ version: '2.1' }), reason: 'unsupported_version', index: null },
  { name: 'token id is a UUID v1', plc: withCommitment({ tokenId: '4f0c2b1e-7d3a-1c5b-9e8f-0a1b2c3d4e5f' }), reason: 'invalid_token_id', index: null },
  { name: 'token id in upper case', plc: withCommitment({ tokenId: '4F0C2B1E-7D3A-4C5B-9E8F-0A1B2C3D4E5F' }), reason: 'invalid_token_id', index: null },
  { name: 'currency GBP', plc: withCommitment({ currency: 'GBP' }), reason: 'unsupported_currency', index: null },
  { name: 'currency in lower case', plc: withCommitment({ currency: 'brl' }), reason: 'unsupported_currency', index: null },
  { name: 'amount zero', plc: withCommitment({ amountMinor: 0n }), reason: 'invalid_amount', index: null },
  { name: 'amount negative', plc: withCommitment({ amountMinor: -1n }), reason: 'invalid_amount', index: null },
  { name: 'amount 10^15 + 1', plc: withCommitment({ amountMinor: 10n ** 15n + 1n }), reason: 'invalid_amount', index: null },
  { name: 'created_at negative', plc: withCommitment({ createdAtMs: -1 }), reason: 'invalid_timestamp', index: null },
  { name: 'expires_at after year 9999', plc: withCommitment({ expiresAtMs: 253_402_300_800_000 }), reason: 'invalid_timestamp', index: null },
  { name: 'TTL one millisecond under 1 hour', plc: withCommitment({ expiresAtMs: createdAtMs + hourMs - 1 }), reason: 'invalid_ttl', index: null },
  { name: 'TTL one millisecond over 168 hours', plc: withCommitment({ expiresAtMs: createdAtMs + 168 * hourMs + 1 }), reason: 'invalid_ttl', index: null },
  { name: 'expires before created', plc: withCommitment({ expiresAtMs: createdAtMs - hourMs }), reason: 'invalid_ttl', index: null },
  { name: 'issuer key of small order', plc: withCommitment({ issuerPublicKey: smallOrderKey }), reason: 'invalid_public_key', index: null },
  { name: 'issuer key not canonical', plc: withCommitment({ issuerPublicKey: nonCanonicalKey }), reason: 'invalid_public_key', index: null },
  { name: '33 records', plc: longChain(chainLengthMax + 1), reason: 'chain_too_long', index: chainLengthMax },
  { name: 'amount changed after signing', plc: withCommitment({ amountMinor: 9999n }), reason: 'commitment_hash_mismatch', index: null },
  {
    name: 'commitment rehashed but signed by another key',
    plc: { ...base, issuerSignature: sign(computeCommitmentHash(base.commitment), bob.secretKey) },
    reason: 'invalid_issuer_signature',
    index: null,
  },
  { name: 'second record linked to the commitment', plc: bobSigns({ prevHash: computeCommitmentHash(base.commitment) }), reason: 'broken_link', index: 1 },
  { name: 'second record signed by dave, not bob', plc: bobSigns({}, dave.secretKey), reason: 'wrong_sender', index: 1 },
  { name: 'first record with the issuer swapped for bob', plc: withRecord(0, { ...r0, senderPublicKey: bob.publicKey }), reason: 'wrong_sender', index: 0 },
  { name: 'transfer to a small-order key', plc: bobSigns({ recipientPublicKey: smallOrderKey }), reason: 'invalid_public_key', index: 1 },
  { name: 'transfer to a non-canonical key', plc: bobSigns({ recipientPublicKey: nonCanonicalKey }), reason: 'invalid_public_key', index: 1 },
  { name: 'bob transfers to bob', plc: bobSigns({ recipientPublicKey: bob.publicKey }), reason: 'self_transfer', index: 1 },
  { name: 'timestamp one ms past expiry plus tolerance', plc: bobSigns({ timestampMs: expiresAtMs + toleranceMs + 1 }), reason: 'timestamp_out_of_range', index: 1 },
  {
    name: 'first timestamp one ms before creation minus tolerance',
    plc: {
      ...base,
      transferChain: [
        signTransferRecord(
          { recipientPublicKey: bob.publicKey, timestampMs: createdAtMs - toleranceMs - 1, nonce: r0.nonce, prevHash: r0.prevHash },
          issuer.secretKey,
        ),
      ],
    },
    reason: 'timestamp_out_of_range',
    index: 0,
  },
  { name: 'timestamp before the previous record', plc: bobSigns({ timestampMs: r0.timestampMs - 1 }), reason: 'timestamp_decreasing', index: 1 },
  { name: 'nonce of the previous record reused', plc: bobSigns({ nonce: r0.nonce }), reason: 'duplicate_nonce', index: 1 },
  { name: 'carried record hash altered', plc: withRecord(2, { ...r2, hash: seededBytes('junk') }), reason: 'record_hash_mismatch', index: 2 },
  {
    name: 'recipient changed and rehashed, signature kept',
    plc: withRecord(1, { ...r1, recipientPublicKey: dave.publicKey, hash: computeRecordHash({ ...r1, recipientPublicKey: dave.publicKey }) }),
    reason: 'invalid_signature',
    index: 1,
  },
  {
    name: 'last record recipient changed and rehashed, signature kept',
    plc: withRecord(2, { ...r2, recipientPublicKey: bob.publicKey, hash: computeRecordHash({ ...r2, recipientPublicKey: bob.publicKey }) }),
    reason: 'invalid_signature',
    index: 2,
  },
  { name: 'signature of another record', plc: withRecord(1, { ...r1, signature: r2.signature }), reason: 'invalid_signature', index: 1 },
];

describe('verifyPlc', () => {
  it('accepts a valid chain and names the bearer and head', () => {
    const result = verifyPlc(base);
    expect(result).toMatchObject({ ok: true, chainLength: 3, bearerPublicKey: dave.publicKey, headHash: computeRecordHash(r2) });
  });

  it('accepts a PLC with no transfers: the issuer is the bearer, the head is the commitment hash', () => {
    const plc = freshPlc();
    expect(verifyPlc(plc)).toMatchObject({ ok: true, chainLength: 0, bearerPublicKey: issuer.publicKey, headHash: plc.commitmentHash });
  });

  it('accepts the longest chain allowed (32 records)', () => {
    expect(verifyPlc(longChain(chainLengthMax))).toMatchObject({ ok: true, chainLength: chainLengthMax });
  });

  describe.each(rows)('refuses: $name', ({ plc, reason, index }) => {
    it(`with ${reason} at ${index ?? 'the commitment'}`, () => {
      const result = verifyPlc(plc);
      expect(result.ok).toBe(false);
      if (result.ok) return;
      expect({ reason: result.reason, index: result.index }).toEqual({ reason, index });
    });
  });

  it('has a table row for every rejection reason', () => {
    expect(new Set(rows.map((row) => row.reason))).toEqual(new Set(rejectionReasons));
  });

  it('reports the first failing check of a record: a broken link before a bad signature', () => {
    const plc = withRecord(1, { ...r1, prevHash: seededBytes('elsewhere'), signature: new Uint8Array(64) });
    expect(verifyPlc(plc)).toMatchObject({ ok: false, reason: 'broken_link', index: 1 });
  });

  it('reports the first failing record when several fail', () => {
    const plc = { ...base, transferChain: [r0, { ...r1, signature: r2.signature }, { ...r2, signature: r1.signature }] };
    expect(verifyPlc(plc)).toMatchObject({ ok: false, reason: 'invalid_signature', index: 1 });
  });

  describe('clock tolerance', () => {
    const at = (timestampMs: number): Plc => bobSigns({ timestampMs });

    it('accepts timestamps exactly at the edges of the PLC life plus the default 5 minutes', () => {
      expect(verifyPlc(at(expiresAtMs + toleranceMs)).ok).toBe(true);
      const early = signTransferRecord(
        { recipientPublicKey: bob.publicKey, timestampMs: createdAtMs - toleranceMs, nonce: r0.nonce, prevHash: r0.prevHash },
        issuer.secretKey,
      );
      expect(verifyPlc({ ...base, transferChain: [early] }).ok).toBe(true);
    });

    it('accepts equal timestamps (non-decreasing, not increasing)', () => {
      expect(verifyPlc(at(r0.timestampMs)).ok).toBe(true);
    });

    it('applies a configured tolerance', () => {
      expect(verifyPlc(at(expiresAtMs + 1), { clockToleranceMs: 0 })).toMatchObject({ ok: false, reason: 'timestamp_out_of_range' });
      expect(verifyPlc(at(expiresAtMs + 30 * 60_000), { clockToleranceMs: hourMs }).ok).toBe(true);
    });

    it('treats a nonsensical tolerance as a programmer error', () => {
      expect(() => verifyPlc(base, { clockToleranceMs: -1 })).toThrow(RangeError);
      expect(() => verifyPlc(base, { clockToleranceMs: hourMs + 1 })).toThrow(RangeError);
    });
  });
});

describe('checkExpiry', () => {
  const c = base.commitment;
  it.each([
    { name: 'in the middle of its life', nowMs: c.createdAtMs + hourMs, expected: { ok: true } },
    { name: 'at expiry plus the tolerance', nowMs: c.expiresAtMs + toleranceMs, expected: { ok: true } },
    { name: 'one ms after expiry plus the tolerance', nowMs: c.expiresAtMs + toleranceMs + 1, expected: { ok: false, reason: 'expired' } },
    { name: 'at creation minus the tolerance', nowMs: c.createdAtMs - toleranceMs, expected: { ok: true } },
    { name: 'before creation minus the tolerance', nowMs: c.createdAtMs - toleranceMs - 1, expected: { ok: false, reason: 'not_yet_valid' } },
  ])('$name', ({ nowMs, expected }) => {
    expect(checkExpiry(c, nowMs)).toEqual(expected);
  });

  it('applies a configured tolerance', () => {
    expect(checkExpiry(c, c.expiresAtMs + 1, { clockToleranceMs: 0 })).toEqual({ ok: false, reason: 'expired' });
  });
});

describe('checkRecordClock (records against the receiving clock, section 7.4)', () => {
  const times = [createdAtMs + hourMs, createdAtMs + 2 * hourMs, createdAtMs + 2 * hourMs, createdAtMs + 3 * hourMs].map((timestampMs) => ({ timestampMs }));
  it.each([
    { name: 'an empty chain, any clock', chain: [], nowMs: 0, expected: { ok: true } },
    { name: 'every record in the past', chain: times, nowMs: createdAtMs + 4 * hourMs, expected: { ok: true } },
    { name: 'the last record exactly the tolerance ahead', chain: times, nowMs: createdAtMs + 3 * hourMs - toleranceMs, expected: { ok: true } },
    { name: 'the last record 1 ms past the tolerance', chain: times, nowMs: createdAtMs + 3 * hourMs - toleranceMs - 1, expected: { ok: false, reason: 'timestamp_in_future', index: 3 } },
    { name: 'the first record of two equal ones ahead', chain: times, nowMs: createdAtMs + hourMs, expected: { ok: false, reason: 'timestamp_in_future', index: 1 } },
    { name: 'a chain a day ahead', chain: times, nowMs: createdAtMs - 24 * hourMs, expected: { ok: false, reason: 'timestamp_in_future', index: 0 } },
  ])('$name', ({ chain, nowMs, expected }) => {
    expect(checkRecordClock(chain, nowMs)).toMatchObject(expected);
  });

  it('applies a configured tolerance', () => {
    expect(checkRecordClock(times, createdAtMs + 3 * hourMs - 1, { clockToleranceMs: 0 })).toMatchObject({ ok: false, index: 3 });
    expect(checkRecordClock(times, createdAtMs + 3 * hourMs, { clockToleranceMs: 0 })).toEqual({ ok: true });
  });
});

describe('appendTransfer', () => {
  const plc = freshPlc();
  const at = createdAtMs + 60_000;

  it('refuses a sender who is not the bearer', () => {
    expect(() => appendTransfer(plc, { senderSecretKey: bob.secretKey, recipientPublicKey: carol.publicKey, timestampMs: at })).toThrow(
      expect.objectContaining({ code: 'not_bearer' }),
    );
  });

  it('refuses a transfer to oneself, to a bad key, or outside the PLC life', () => {
    expect(() => appendTransfer(plc, { senderSecretKey: issuer.secretKey, recipientPublicKey: issuer.publicKey, timestampMs: at })).toThrow(
      expect.objectContaining({ code: 'rule_violation', detail: { reason: 'self_transfer' } }),
    );
    expect(() => appendTransfer(plc, { senderSecretKey: issuer.secretKey, recipientPublicKey: smallOrderKey, timestampMs: at })).toThrow(
      expect.objectContaining({ code: 'invalid_public_key' }),
    );
    expect(() =>
      appendTransfer(plc, { senderSecretKey: issuer.secretKey, recipientPublicKey: bob.publicKey, timestampMs: plc.commitment.expiresAtMs + toleranceMs + 1 }),
    ).toThrow(expect.objectContaining({ code: 'rule_violation', detail: { reason: 'timestamp_out_of_range' } }));
  });

  it('refuses a timestamp earlier than the previous record', () => {
    const once = appendTransfer(plc, { senderSecretKey: issuer.secretKey, recipientPublicKey: bob.publicKey, timestampMs: at });
    expect(() => appendTransfer(once, { senderSecretKey: bob.secretKey, recipientPublicKey: carol.publicKey, timestampMs: at - 1 })).toThrow(
      expect.objectContaining({ code: 'rule_violation', detail: { reason: 'timestamp_decreasing' } }),
    );
  });

  it('refuses a 33rd record', () => {
    const full = longChain(chainLengthMax);
    const bearer = full.transferChain.at(-1)!.recipientPublicKey;
    const bearerKey = keyPool.find((key) => key.publicKey.every((byte, i) => byte === bearer[i]))!;
    expect(() =>
      appendTransfer(full, { senderSecretKey: bearerKey.secretKey, recipientPublicKey: carol.publicKey === bearer ? bob.publicKey : dave.publicKey, timestampMs: at + hourMs }),
    ).toThrow(expect.objectContaining({ code: 'rule_violation', detail: { reason: 'chain_too_long' } }));
  });

  it('leaves the input PLC unchanged', () => {
    appendTransfer(plc, { senderSecretKey: issuer.secretKey, recipientPublicKey: bob.publicKey, timestampMs: at });
    expect(plc.transferChain).toHaveLength(0);
  });
});

describe('fork detection', () => {
  const shared = chainThrough([1]); // issuer -> bob
  const toCarol = appendTransfer(shared, { senderSecretKey: bob.secretKey, recipientPublicKey: carol.publicKey, timestampMs: createdAtMs + hourMs, nonce: seededBytes('a', 16) });
  const toDave = appendTransfer(shared, { senderSecretKey: bob.secretKey, recipientPublicKey: dave.publicKey, timestampMs: createdAtMs + hourMs, nonce: seededBytes('b', 16) });

  it('reports two records after the same previous hash as a fork by their common sender', () => {
    const result = detectFork(toCarol, toDave);
    expect(result).toMatchObject({ kind: 'fork', index: 1, culpritPublicKey: bob.publicKey });
    if (result.kind !== 'fork') return;
    expect(result.evidence.first).toBe(toCarol.transferChain[1]);
    expect(result.evidence.second).toBe(toDave.transferChain[1]);
    expect(verifyForkEvidence(result.evidence)).toBe(true);
  });

  it('reports a fork however far each branch went on', () => {
    const carolOn = appendTransfer(toCarol, { senderSecretKey: carol.secretKey, recipientPublicKey: issuer.publicKey, timestampMs: createdAtMs + 2 * hourMs });
    expect(detectFork(carolOn, toDave)).toMatchObject({ kind: 'fork', index: 1, culpritPublicKey: bob.publicKey });
  });

  it('tells an extension, an older state, an identical chain and another PLC apart', () => {
    expect(findForkAgainstKnown(shared.transferChain, toCarol.transferChain)).toEqual({
      kind: 'extends',
      commonLength: 1,
      newRecords: [toCarol.transferChain[1]],
    });
    expect(findForkAgainstKnown(toCarol.transferChain, shared.transferChain)).toEqual({ kind: 'behind', commonLength: 1 });
    expect(findForkAgainstKnown(toCarol.transferChain, toCarol.transferChain)).toEqual({ kind: 'identical', length: 2 });
    expect(findForkAgainstKnown([], toCarol.transferChain)).toMatchObject({ kind: 'extends', commonLength: 0 });
    expect(detectFork(toCarol, freshPlc({ nonce: seededBytes('other-plc', 16) }))).toEqual({ kind: 'different_plc' });
  });

  it('compares records by identity (their hash), not by signature bytes', () => {
    const resigned = { ...toCarol.transferChain[1]!, signature: new Uint8Array(64) };
    expect(compareTransferChains(toCarol.transferChain, [toCarol.transferChain[0]!, resigned])).toEqual({ kind: 'identical', length: 2 });
  });

  it('reports diverging records without a common previous hash as unrelated', () => {
    const elsewhere = { ...toDave.transferChain[1]!, prevHash: seededBytes('elsewhere') };
    expect(compareTransferChains(toCarol.transferChain, [toCarol.transferChain[0]!, elsewhere])).toEqual({ kind: 'unrelated', index: 1 });
  });

  describe('verifyForkEvidence', () => {
    const result = detectFork(toCarol, toDave);
    if (result.kind !== 'fork') throw new Error('fixture is not a fork');
    const evidence = result.evidence;

    it.each([
      { name: 'a forged signature', change: { second: { ...evidence.second, signature: evidence.first.signature } } },
      { name: 'the same record twice', change: { second: evidence.first } },
      { name: 'another culprit', change: { culpritPublicKey: carol.publicKey } },
      { name: 'another previous hash', change: { prevHash: seededBytes('elsewhere') } },
      { name: 'garbage', change: { first: null as unknown as TransferRecord } },
    ])('refuses $name', ({ change }) => {
      expect(verifyForkEvidence({ ...evidence, ...change })).toBe(false);
    });
  });
});
