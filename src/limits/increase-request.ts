import { authorizationHash } from '../protocol/auth-messages.ts';
import { bytesToHex, isBytes, isTimestampMs, utf8 } from '../protocol/bytes.ts';
import { publicKeyBytes, signatureBytes } from '../protocol/constants.ts';
import { ProtocolError } from '../protocol/errors.ts';
import { isValidPublicKey, publicKeyOf, sign, verifySignature } from '../protocol/keys.ts';

/**
 * A PLC limit increase request, signed by the key of the owner it is for (issue 34: a stranger
 * could file one for someone else's device and lock the owner out for 72 hours). The exact UTF-8
 * text signed (docs/limits-and-fees.md, "Increase requests"; docs/protocol.md section 3):
 *
 *   svc:limit-increase:{owner_id}:{requested_max_amount_minor}:{requested_daily_limit_minor}:{operation_timestamp}:{device_id}
 *
 * `owner_id` is the owner's public key, 64 lowercase hex digits; the amounts are minor units and
 * the timestamp milliseconds, decimal without leading zeros; `device_id` comes last, so that the
 * `:` the device id may contain cannot make two requests sign the same text (every field before
 * it has a fixed form without `:`). The prefix differs from every other signed message's, so the
 * signature cannot be taken for anything else. The free-text `reason` is not signed.
 */
export const limitIncreasePrefix = 'svc:limit-increase:';

export interface LimitIncreaseAuthorization {
  readonly ownerPublicKey: Uint8Array;
  readonly requestedMaxAmountMinor: bigint;
  readonly requestedDailyLimitMinor: bigint;
  readonly operationTimestampMs: number;
  readonly deviceId: string;
}

export interface SignedLimitIncrease extends LimitIncreaseAuthorization {
  readonly signature: Uint8Array;
}

const deviceIdPattern = /^[A-Za-z0-9._:-]{1,128}$/;

export function limitIncreaseMessage(request: LimitIncreaseAuthorization): string {
  if (!isBytes(request.ownerPublicKey, publicKeyBytes)) throw new ProtocolError('invalid_argument', 'public key is 32 bytes');
  if (request.requestedMaxAmountMinor <= 0n || request.requestedDailyLimitMinor <= 0n) throw new ProtocolError('invalid_argument', 'amounts are positive');
  if (!isTimestampMs(request.operationTimestampMs)) throw new ProtocolError('invalid_argument', 'timestamp out of range');
  if (!deviceIdPattern.test(request.deviceId)) throw new ProtocolError('invalid_argument', 'device id must be 1 to 128 characters of A-Z a-z 0-9 . _ : -');
  return `${limitIncreasePrefix}${bytesToHex(request.ownerPublicKey)}:${request.requestedMaxAmountMinor}:${request.requestedDailyLimitMinor}:${request.operationTimestampMs}:${request.deviceId}`;
}

export function signLimitIncrease(request: Omit<LimitIncreaseAuthorization, 'ownerPublicKey'>, secretKey: Uint8Array): SignedLimitIncrease {
  const full = { ...request, ownerPublicKey: publicKeyOf(secretKey) };
  return { ...full, signature: sign(utf8(limitIncreaseMessage(full)), secretKey) };
}

/** Strict verification (docs/protocol.md section 2); false for anything malformed. */
export function verifyLimitIncrease(signed: SignedLimitIncrease): boolean {
  try {
    if (!isValidPublicKey(signed.ownerPublicKey) || !isBytes(signed.signature, signatureBytes)) return false;
    return verifySignature(signed.signature, utf8(limitIncreaseMessage(signed)), signed.ownerPublicKey);
  } catch {
    return false;
  }
}

/** The request's identity as an authorisation (docs/protocol.md section 9.4): accepted once. */
export function limitIncreaseAuthorizationHash(request: LimitIncreaseAuthorization): string {
  return bytesToHex(authorizationHash(request.ownerPublicKey, utf8(limitIncreaseMessage(request))));
}
