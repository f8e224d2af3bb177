import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  examplePin,
  examplePlcIssued,
  examplePlcPayloadBase64,
  examplePlcTransferred,
  examplePubkeys,
  exampleCancelAuthorization,
  exampleFeeConsent,
  exampleKeyBackup,
  exampleKeyRecover,
  exampleRedeemAuthorization,
  exampleTokenId,
  exampleTransportText,
} from '../../api/schemas/examples.ts';
import {
  appendTransfer,
  bytesToHex,
  cancelAuthorizationToJson,
  chainHeadHash,
  createPlc,
  encodeTransportText,
  generateKeyPair,
  hexToBytes,
  parsePlcJson,
  plcToJson,
  redeemAuthorizationToJson,
  signCancel,
  signKeyOperation,
  signRedeem,
  verifyKeyOperation,
  verifyPlc,
} from '../../src/protocol/index.ts';
import { signFeeConsent } from '../../src/fees/consent.ts';
import { openBackup, sealBackup } from '../../src/protocol/key-recovery.ts';
import { isResetTokenShaped } from '../../src/security/pin.ts';

/**
 * The request examples of /openapi.json (api/schemas/examples.ts) are real: each is made again
 * here from its fixed keys, dates and nonces with the protocol library and must come out
 * byte for byte, so every signature in them verifies and every sealed seed opens. An example
 * edited by hand, or a protocol change that leaves them behind, fails here.
 */

const fill = (length: number, byte: number): Uint8Array => new Uint8Array(length).fill(byte);
const alice = generateKeyPair(fill(32, 0x01));
const bob = generateKeyPair(fill(32, 0x02));
const at = (iso: string): number => Date.parse(iso);

const issued = createPlc({
  issuerSecretKey: alice.secretKey,
  amountMinor: 2500n,
  currency: 'BRL',
  createdAtMs: at('2026-01-15T12:00:00.000Z'),
  ttlHours: 24,
  tokenId: exampleTokenId,
  nonce: fill(16, 0x03),
});
const transferred = appendTransfer(issued, {
  senderSecretKey: alice.secretKey,
  recipientPublicKey: bob.publicKey,
  timestampMs: at('2026-01-15T12:10:00.000Z'),
  nonce: fill(16, 0x04),
});

describe('the request examples of the OpenAPI', () => {
  it('name the keys of the fixed seeds (alice 0x01 x 32, bob 0x02 x 32)', () => {
    expect(examplePubkeys).toEqual({ alice: bytesToHex(alice.publicKey), bob: bytesToHex(bob.publicKey) });
  });

  it('hold the PLC alice issued and its hop to bob, which verify, in the JSON, QR text and base64 forms', () => {
    expect(examplePlcIssued).toEqual(plcToJson(issued));
    expect(examplePlcTransferred).toEqual(plcToJson(transferred));
    for (const json of [examplePlcIssued, examplePlcTransferred]) expect(verifyPlc(parsePlcJson(json)).ok).toBe(true);
    expect(exampleTransportText).toBe(encodeTransportText(transferred));
    expect(examplePlcPayloadBase64).toBe(Buffer.from(JSON.stringify(plcToJson(transferred))).toString('base64'));
  });

  it('hold the cancel alice signed and the redeem bob signed', () => {
    const cancel = signCancel({ tokenId: exampleTokenId, commitmentHash: issued.commitmentHash, timestampMs: exampleCancelAuthorization.timestamp_ms }, alice.secretKey);
    expect(exampleCancelAuthorization).toEqual(cancelAuthorizationToJson(cancel));
    const redeem = signRedeem(
      {
        tokenId: exampleTokenId,
        headHash: chainHeadHash(transferred),
        settlementRail: 'pix',
        destination: exampleRedeemAuthorization.destination,
        timestampMs: exampleRedeemAuthorization.timestamp_ms,
      },
      bob.secretKey,
    );
    expect(exampleRedeemAuthorization).toEqual(redeemAuthorizationToJson(redeem));
  });

  it('hold a key backup and recovery signed by alice over the messages of docs/protocol.md 9.3, with a seed sealed as 9.6 says', () => {
    const backup = signKeyOperation('backup', { deviceId: exampleKeyBackup.device_id, operationTimestampMs: exampleKeyBackup.operation_timestamp }, alice.secretKey);
    const recover = signKeyOperation('recover', { deviceId: exampleKeyRecover.device_id, operationTimestampMs: exampleKeyRecover.operation_timestamp }, alice.secretKey);
    expect(exampleKeyBackup.public_key).toBe(bytesToHex(alice.publicKey));
    expect(exampleKeyRecover.public_key).toBe(bytesToHex(alice.publicKey));
    expect(exampleKeyBackup.device_signature).toBe(bytesToHex(backup.signature));
    expect(exampleKeyRecover.device_signature).toBe(bytesToHex(recover.signature));
    expect(verifyKeyOperation('backup', backup)).toBe(true);
    const consent = signFeeConsent({ deviceId: exampleFeeConsent.device_id, scheduleVersion: exampleFeeConsent.schedule_version, operationTimestampMs: exampleFeeConsent.operation_timestamp }, bob.secretKey);
    expect(exampleFeeConsent.public_key).toBe(bytesToHex(bob.publicKey));
    expect(exampleFeeConsent.device_signature).toBe(bytesToHex(consent.signature));
    expect(verifyKeyOperation('recover', recover)).toBe(true);
    // A backup signature is no recovery signature.
    expect(verifyKeyOperation('recover', { ...recover, signature: backup.signature })).toBe(false);

    const keys = { recovery: alice, sealingKey: fill(32, 0x05) };
    const sealed = sealBackup({ walletSecretKey: bob.secretKey, deviceId: exampleKeyBackup.device_id }, keys, fill(24, 0x06));
    expect(exampleKeyBackup.encrypted_seed).toBe(bytesToHex(sealed));
    const opened = openBackup(hexToBytes(exampleKeyBackup.encrypted_seed, sealed.length), keys);
    expect(bytesToHex(opened.walletSecretKey)).toBe(bytesToHex(bob.secretKey));
    expect(opened.deviceId).toBe(exampleKeyBackup.device_id);
  });

  it("hold alice's PIN hashed as the comment says, and a reset code of the e-mail's shape", () => {
    const pinHash = (pin: string): string =>
      createHash('sha256')
        .update(Buffer.concat([Buffer.from(examplePin.salt, 'hex'), Buffer.from(pin, 'utf8')]))
        .digest('hex');
    expect(examplePin.ownerId).toBe(examplePubkeys.alice);
    expect(examplePin.pinHash).toBe(pinHash('1234'));
    expect(examplePin.newPinHash).toBe(pinHash('5678'));
    expect(isResetTokenShaped(examplePin.resetToken)).toBe(true);
    expect(examplePin.resetToken).toBe(Buffer.from(fill(32, 0x08)).toString('base64url'));
  });
});
