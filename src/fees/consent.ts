import { bytesToHex, isBytes, isTimestampMs, utf8 } from '../protocol/bytes.ts';
import { publicKeyBytes, signatureBytes } from '../protocol/constants.ts';
import { isDeviceId } from '../protocol/auth-messages.ts';
import { ProtocolError } from '../protocol/errors.ts';
import { isValidPublicKey, publicKeyOf, sign, verifySignature } from '../protocol/keys.ts';

/**
 * An owner's consent to one fee schedule version, signed by the owner's key (the owner of a
 * bearer's redemption is its public key): nobody else can opt a key into a schedule. The exact
 * UTF-8 text signed (docs/limits-and-fees.md, "Consent"):
 *
 *   svc:fee-consent:{device_id}:{public_key}:{schedule_version}:{operation_timestamp}
 *
 * `public_key` is 64 lowercase hex digits, `schedule_version` and `operation_timestamp`
 * (milliseconds) decimal without leading zeros, `device_id` 1 to 128 characters of
 * A-Z a-z 0-9 . _ - (no ':', so the fields cannot run into each other). Its prefix differs from
 * every other message's (docs/protocol.md section 9), so a consent cannot be replayed as anything
 * else. Consent is idempotent, so a replay of a fresh consent only answers the stored one.
 */

export interface FeeConsent {
  readonly deviceId: string;
  readonly publicKey: Uint8Array;
  readonly scheduleVersion: number;
  readonly operationTimestampMs: number;
}

export interface SignedFeeConsent extends FeeConsent {
  readonly signature: Uint8Array;
}

export function feeConsentMessage(consent: FeeConsent): string {
  if (!isDeviceId(consent.deviceId)) throw new ProtocolError('invalid_argument', 'device id must be 1 to 128 characters of A-Z a-z 0-9 . _ -');
  if (!isBytes(consent.publicKey, publicKeyBytes)) throw new ProtocolError('invalid_argument', 'public key is 32 bytes');
  if (!Number.isSafeInteger(consent.scheduleVersion) || consent.scheduleVersion < 1) {
    throw new ProtocolError('invalid_argument', 'schedule version is a positive integer');
  }
  if (!isTimestampMs(consent.operationTimestampMs)) throw new ProtocolError('invalid_argument', 'timestamp out of range');
  return `svc:fee-consent:${consent.deviceId}:${bytesToHex(consent.publicKey)}:${consent.scheduleVersion}:${consent.operationTimestampMs}`;
}

export function signFeeConsent(consent: Omit<FeeConsent, 'publicKey'>, secretKey: Uint8Array): SignedFeeConsent {
  const full = { ...consent, publicKey: publicKeyOf(secretKey) };
  return { ...full, signature: sign(utf8(feeConsentMessage(full)), secretKey) };
}

export function verifyFeeConsent(signed: SignedFeeConsent): boolean {
  try {
    if (!isValidPublicKey(signed.publicKey) || !isBytes(signed.signature, signatureBytes)) return false;
    return verifySignature(signed.signature, utf8(feeConsentMessage(signed)), signed.publicKey);
  } catch {
    return false;
  }
}
