import { describe, expect, it } from 'vitest';
import { exampleLimitIncrease } from '../../api/schemas/examples.ts';
import { limitIncreaseAuthorizationHash, limitIncreaseMessage, signLimitIncrease, verifyLimitIncrease } from '../../src/limits/increase-request.ts';
import { bytesToHex } from '../../src/protocol/bytes.ts';
import { generateKeyPair } from '../../src/protocol/keys.ts';

/** The signed limit increase request (docs/limits-and-fees.md, "Increase requests"). */
describe('the signed limit increase request', () => {
  const alice = generateKeyPair(new Uint8Array(32).fill(0x01));
  const bob = generateKeyPair(new Uint8Array(32).fill(0x02));
  const request = { requestedMaxAmountMinor: 400_000n, requestedDailyLimitMinor: 1_500_000n, operationTimestampMs: 1768479000000, deviceId: 'device-7f3a9c' };

  it('the test vector of the docs (the request example) verifies', () => {
    const signed = signLimitIncrease(request, alice.secretKey);
    expect(limitIncreaseMessage(signed)).toBe(`svc:limit-increase:${bytesToHex(alice.publicKey)}:400000:1500000:1768479000000:device-7f3a9c`);
    expect(exampleLimitIncrease.owner_id).toBe(bytesToHex(alice.publicKey));
    expect(exampleLimitIncrease.device_signature).toBe(bytesToHex(signed.signature));
    expect(exampleLimitIncrease.operation_timestamp).toBe(request.operationTimestampMs);
    expect(verifyLimitIncrease(signed)).toBe(true);
  });

  it('does not verify for other amounts, another time, device or key', () => {
    const signed = signLimitIncrease(request, alice.secretKey);
    expect(verifyLimitIncrease({ ...signed, requestedMaxAmountMinor: 400_001n })).toBe(false);
    expect(verifyLimitIncrease({ ...signed, requestedDailyLimitMinor: 1_500_001n })).toBe(false);
    expect(verifyLimitIncrease({ ...signed, operationTimestampMs: request.operationTimestampMs + 1 })).toBe(false);
    expect(verifyLimitIncrease({ ...signed, deviceId: 'device-7f3a9d' })).toBe(false);
    expect(verifyLimitIncrease({ ...signed, ownerPublicKey: bob.publicKey })).toBe(false);
    expect(verifyLimitIncrease({ ...signed, signature: new Uint8Array(64) })).toBe(false);
    // Malformed input answers false, never throws.
    expect(verifyLimitIncrease({ ...signed, requestedMaxAmountMinor: 0n })).toBe(false);
    expect(verifyLimitIncrease({ ...signed, deviceId: '' })).toBe(false);
  });

  it('device ids with ":" cannot make two requests sign one text (the device id comes last)', () => {
    const a = limitIncreaseMessage({ ...request, ownerPublicKey: alice.publicKey, deviceId: 'a:1' });
    const b = limitIncreaseMessage({ ...request, ownerPublicKey: alice.publicKey, deviceId: 'a' });
    expect(a).not.toBe(b);
    expect(a.startsWith('svc:limit-increase:')).toBe(true);
  });

  it('has an authorisation hash per signer and message', () => {
    const signed = signLimitIncrease(request, alice.secretKey);
    expect(limitIncreaseAuthorizationHash(signed)).toMatch(/^[0-9a-f]{64}$/);
    expect(limitIncreaseAuthorizationHash(signed)).not.toBe(limitIncreaseAuthorizationHash({ ...signed, operationTimestampMs: 1 }));
  });
});
