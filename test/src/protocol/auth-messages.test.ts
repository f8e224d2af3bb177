/** Cancel, redeem, key backup and recovery messages: exact bytes, signatures, freshness. */
import { describe, expect, it } from 'vitest';
import {
  bytesToHex,
  checkFreshness,
  encodeCancelMessage,
  encodeRedeemMessage,
  keyOperationMessage,
  parseCancelAuthorizationJson,
  parseRedeemAuthorizationJson,
  cancelAuthorizationToJson,
  redeemAuthorizationToJson,
  signCancel,
  signKeyOperation,
  signRedeem,
  verifyCancel,
  verifyKeyOperation,
  verifyRedeem,
  type RedeemRequest,
} from '../../../src/protocol/index.ts';
import { bob, createdAtMs, issuer, seededBytes } from './support.ts';

const tokenId = '4f0c2b1e-7d3a-4c5b-9e8f-0a1b2c3d4e5f';
const commitmentHash = seededBytes('commitment-hash');
const headHash = seededBytes('head-hash');

describe('cancel authorisation', () => {
  const request = { tokenId, commitmentHash, timestampMs: createdAtMs };

  it('signs exactly "svc:cancel:v2:" | token id | commitment hash | u64 timestamp (70 bytes)', () => {
    const message = encodeCancelMessage(request);
    expect(message.length).toBe(70);
    expect(bytesToHex(message)).toBe(
      bytesToHex(new TextEncoder().encode('svc:cancel:v2:')) + tokenId.replaceAll('-', '') + bytesToHex(commitmentHash) + createdAtMs.toString(16).padStart(16, '0'),
    );
  });

  it('verifies when untouched and refuses any changed field', () => {
    const auth = signCancel(request, issuer.secretKey);
    expect(verifyCancel(auth)).toBe(true);
    expect(verifyCancel({ ...auth, timestampMs: auth.timestampMs + 1 })).toBe(false);
    expect(verifyCancel({ ...auth, commitmentHash: headHash })).toBe(false);
    expect(verifyCancel({ ...auth, tokenId: '5f0c2b1e-7d3a-4c5b-9e8f-0a1b2c3d4e5f' })).toBe(false);
    expect(verifyCancel({ ...auth, issuerPublicKey: bob.publicKey })).toBe(false);
    expect(verifyCancel({ ...auth, tokenId: 'not-a-uuid' })).toBe(false);
  });

  it('round-trips through its JSON form', () => {
    const auth = signCancel(request, issuer.secretKey);
    const json = JSON.parse(JSON.stringify(cancelAuthorizationToJson(auth)));
    expect(Object.keys(json).sort()).toEqual(['commitment_hash', 'issuer_pubkey', 'signature', 'timestamp_ms', 'token_id']);
    expect(parseCancelAuthorizationJson(json)).toEqual(auth);
    expect(() => parseCancelAuthorizationJson({ ...json, extra: 1 })).toThrow(expect.objectContaining({ code: 'invalid_json' }));
    expect(() => parseCancelAuthorizationJson({ ...json, timestamp_ms: String(json.timestamp_ms) })).toThrow(expect.objectContaining({ code: 'invalid_json' }));
  });
});

describe('redeem authorisation', () => {
  const request: RedeemRequest = { tokenId, headHash, settlementRail: 'pix', destination: 'bob@example.com', timestampMs: createdAtMs };

  it('signs the documented layout: fixed fields, then length-prefixed rail and destination', () => {
    const hex = bytesToHex(encodeRedeemMessage(request));
    const ascii = (text: string): string => bytesToHex(new TextEncoder().encode(text));
    expect(hex).toBe(
      ascii('svc:redeem:v2:') +
        tokenId.replaceAll('-', '') +
        bytesToHex(headHash) +
        createdAtMs.toString(16).padStart(16, '0') +
        '03' +
        ascii('pix') +
        '000f' +
        ascii('bob@example.com'),
    );
  });

  it('verifies when untouched and refuses any changed field', () => {
    const auth = signRedeem(request, bob.secretKey);
    expect(verifyRedeem(auth)).toBe(true);
    expect(verifyRedeem({ ...auth, destination: 'mallory@example.com' })).toBe(false);
    expect(verifyRedeem({ ...auth, settlementRail: 'boleto' })).toBe(false);
    expect(verifyRedeem({ ...auth, headHash: commitmentHash })).toBe(false);
    expect(verifyRedeem({ ...auth, timestampMs: auth.timestampMs - 1 })).toBe(false);
    expect(verifyRedeem({ ...auth, bearerPublicKey: issuer.publicKey })).toBe(false);
  });

  it.each([
    ['an unknown rail', { settlementRail: 'ted' as never }],
    ['an empty destination', { destination: '' }],
    ['a destination over 140 bytes', { destination: 'x'.repeat(141) }],
  ])('refuses to sign %s', (_, change) => {
    expect(() => signRedeem({ ...request, ...change }, bob.secretKey)).toThrow(expect.objectContaining({ code: 'invalid_argument' }));
  });

  it('round-trips through its JSON form', () => {
    const auth = signRedeem(request, bob.secretKey);
    const json = JSON.parse(JSON.stringify(redeemAuthorizationToJson(auth)));
    expect(parseRedeemAuthorizationJson(json)).toEqual(auth);
    expect(() => parseRedeemAuthorizationJson({ ...json, settlement_rail: 'PIX' })).toThrow(expect.objectContaining({ code: 'invalid_json' }));
  });
});

describe('key backup and recovery messages', () => {
  const operation = { deviceId: 'phone-1', operationTimestampMs: createdAtMs };

  it('are the spec text exactly', () => {
    const publicKey = bytesToHex(issuer.publicKey);
    expect(keyOperationMessage('backup', { ...operation, publicKey: issuer.publicKey })).toBe(`svc:backup:phone-1:${publicKey}:${createdAtMs}`);
    expect(keyOperationMessage('recover', { ...operation, publicKey: issuer.publicKey })).toBe(`svc:recover:phone-1:${publicKey}:${createdAtMs}`);
  });

  it('verify for their own kind only', () => {
    const backup = signKeyOperation('backup', operation, issuer.secretKey);
    expect(verifyKeyOperation('backup', backup)).toBe(true);
    expect(verifyKeyOperation('recover', backup)).toBe(false);
    expect(verifyKeyOperation('backup', { ...backup, deviceId: 'phone-2' })).toBe(false);
    expect(verifyKeyOperation('backup', { ...backup, operationTimestampMs: createdAtMs + 1 })).toBe(false);
  });

  it.each(['', 'a:b', 'x'.repeat(129), 'tab\there'])('refuses the device id %j, which could shift the fields', (deviceId) => {
    expect(() => signKeyOperation('backup', { ...operation, deviceId }, issuer.secretKey)).toThrow(expect.objectContaining({ code: 'invalid_argument' }));
  });
});

describe('checkFreshness', () => {
  const nowMs = createdAtMs;
  it.each([
    { timestampMs: nowMs, expected: { ok: true } },
    { timestampMs: nowMs - 300_000, expected: { ok: true } },
    { timestampMs: nowMs + 300_000, expected: { ok: true } },
    { timestampMs: nowMs - 300_001, expected: { ok: false, reason: 'too_old' } },
    { timestampMs: nowMs + 300_001, expected: { ok: false, reason: 'in_future' } },
  ])('$timestampMs against now gives $expected', ({ timestampMs, expected }) => {
    expect(checkFreshness(timestampMs, nowMs)).toEqual(expected);
  });

  it('takes a window', () => {
    expect(checkFreshness(nowMs - 10_001, nowMs, 10_000)).toEqual({ ok: false, reason: 'too_old' });
  });
});
