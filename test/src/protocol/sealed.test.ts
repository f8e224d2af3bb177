/** The sealed form: round trips, binding to both keys, and typed errors on any tampering. */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  encodeTransport,
  hexToBytes,
  openSealedPayload,
  sealedBytesMin,
  sealPayload,
  sealedPlaintextBytesMax,
} from '../../../src/protocol/index.ts';
import { bob, carol, chainThrough, dave, issuer, seededBytes } from './support.ts';

const plaintext = encodeTransport(chainThrough([1]));
const sealed = sealPayload({ senderSecretKey: issuer.secretKey, recipientPublicKey: bob.publicKey, plaintext });

describe('sealed form', () => {
  it('opens for the recipient, naming the sender', () => {
    const opened = openSealedPayload({ recipientSecretKey: bob.secretKey, sealed, expectedSenderPublicKey: issuer.publicKey });
    expect(opened.plaintext).toEqual(plaintext);
    expect(opened.senderPublicKey).toEqual(issuer.publicKey);
  });

  it('round-trips any payload between any two keys of the pool', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 512 }), fc.constantFrom(issuer, bob, carol, dave), fc.constantFrom(issuer, bob, carol, dave), (payload, from, to) => {
        const box = sealPayload({ senderSecretKey: from.secretKey, recipientPublicKey: to.publicKey, plaintext: payload });
        expect(box.length).toBe(sealedBytesMin + payload.length);
        expect(openSealedPayload({ recipientSecretKey: to.secretKey, sealed: box }).plaintext).toEqual(payload);
      }),
      { numRuns: 40 },
    );
  });

  it('uses a fresh nonce each time, so sealing twice gives different bytes', () => {
    const again = sealPayload({ senderSecretKey: issuer.secretKey, recipientPublicKey: bob.publicKey, plaintext });
    expect(again).not.toEqual(sealed);
  });

  it('refuses any single flipped byte with sealed_authentication_failed (or sealed_malformed for the version byte)', () => {
    fc.assert(
      fc.property(fc.nat(), fc.integer({ min: 1, max: 255 }), (at, mask) => {
        const tampered = sealed.slice();
        const index = at % tampered.length;
        tampered[index]! ^= mask;
        const expected = index === 0 ? 'sealed_malformed' : 'sealed_authentication_failed';
        expect(() => openSealedPayload({ recipientSecretKey: bob.secretKey, sealed: tampered })).toThrow(expect.objectContaining({ code: expected }));
      }),
      { numRuns: 150 },
    );
  });

  it('cannot be opened by a third party', () => {
    expect(() => openSealedPayload({ recipientSecretKey: carol.secretKey, sealed })).toThrow(
      expect.objectContaining({ code: 'sealed_authentication_failed' }),
    );
  });

  it('cannot be passed off as sealed by someone else, even with a valid key swapped in', () => {
    const relabelled = sealed.slice();
    relabelled.set(dave.publicKey, 1);
    expect(() => openSealedPayload({ recipientSecretKey: bob.secretKey, sealed: relabelled })).toThrow(
      expect.objectContaining({ code: 'sealed_authentication_failed' }),
    );
  });

  it('gives each direction its own key: a payload to bob does not open as one to the issuer', () => {
    const reply = sealPayload({ senderSecretKey: bob.secretKey, recipientPublicKey: issuer.publicKey, plaintext, nonce: sealed.slice(33, 57) });
    expect(reply.subarray(57)).not.toEqual(sealed.subarray(57));
  });

  it('refuses an unexpected sender before decrypting', () => {
    expect(() => openSealedPayload({ recipientSecretKey: bob.secretKey, sealed, expectedSenderPublicKey: carol.publicKey })).toThrow(
      expect.objectContaining({ code: 'unexpected_sender' }),
    );
  });

  it('refuses truncated, oversized and unknown-version input as sealed_malformed', () => {
    for (const bad of [sealed.slice(0, sealedBytesMin - 1), new Uint8Array(sealedBytesMin + sealedPlaintextBytesMax + 1), Uint8Array.of(3, ...sealed.subarray(1))]) {
      expect(() => openSealedPayload({ recipientSecretKey: bob.secretKey, sealed: bad })).toThrow(expect.objectContaining({ code: 'sealed_malformed' }));
    }
  });

  it('refuses to seal to a small-order key or with a bad nonce', () => {
    expect(() => sealPayload({ senderSecretKey: issuer.secretKey, recipientPublicKey: hexToBytes(`01${'00'.repeat(31)}`), plaintext })).toThrow(
      expect.objectContaining({ code: 'invalid_public_key' }),
    );
    expect(() => sealPayload({ senderSecretKey: issuer.secretKey, recipientPublicKey: bob.publicKey, plaintext, nonce: seededBytes('n', 23) })).toThrow(
      expect.objectContaining({ code: 'invalid_argument' }),
    );
  });
});
