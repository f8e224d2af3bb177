import { DomainError } from '../errors.ts';
import {
  bytesToHex,
  chainHeadHash,
  checkFreshness,
  currentBearer,
  redeemAuthorizationHash,
  verifyRedeem,
  withSignatureVerifier,
  type Plc,
  type RedeemAuthorization,
  type SignatureVerifier,
} from '../protocol/index.ts';
import { checkPayoutDestination, type PayoutDestinationType, type PayoutRail } from '../settlement/payout-destination.ts';

/** What a redeem authorisation that passed every check stands for. */
export interface AuthorizedRedemption {
  tokenId: string;
  /** Hex: the bearer of the presented chain's head, who signed the authorisation. */
  bearerPubkey: string;
  /** Hex: the presented chain's head, which the authorisation names. */
  headHash: string;
  /** The payout rail: a Pix transfer, or the payment of a boleto. */
  rail: PayoutRail;
  /** A Pix key, or a boleto's digitable line (digits only). */
  destination: string;
  destinationType: PayoutDestinationType;
  /** Hex: the authorisation's hash, under which it is accepted once (docs/protocol.md 9.4). */
  authorizationHash: string;
  signedAtMs: number;
}

export interface AuthorizeRedemptionOptions {
  nowMs: number;
  clockToleranceMs: number;
  /** The Ed25519 check to run the protocol's verification with (Node's on the server). */
  verifySignature: SignatureVerifier;
}

/**
 * The redeem authorisation's own checks, on a PLC whose chain verified (docs/protocol.md 9): it
 * names this PLC, asks for a payout its rail can make (a Pix key, or a boleto's digitable line
 * with valid check digits: `checkPayoutDestination`; the line's amount is the caller's to check
 * against the payout once the fee is known), is signed by the bearer of the
 * presented chain's head over that head, within the clock tolerance of now. Refuses with the
 * domain error of the first check that fails, in that order; what the server knows (forks,
 * authorisations used before, the PLC's state) is the caller's to check.
 */
export function authorizeRedemption(plc: Plc, authorization: RedeemAuthorization, options: AuthorizeRedemptionOptions): AuthorizedRedemption {
  const { nowMs, clockToleranceMs } = options;
  if (authorization.tokenId !== plc.commitment.tokenId) throw new DomainError('PLC_MISMATCH', 'the authorisation names another PLC');
  // Where the payout goes: a Pix key, or a payable boleto line (its amount is checked against the
  // payout once the fee is known: services/redemption.ts).
  const payout = checkPayoutDestination(authorization, { amountMinor: null, currency: plc.commitment.currency });
  if (!withSignatureVerifier(options.verifySignature, () => verifyRedeem(authorization))) {
    throw new DomainError('SIGNATURE_INVALID', 'the redeem signature does not verify', { field: 'authorization.signature' });
  }
  if (!checkFreshness(authorization.timestampMs, nowMs, clockToleranceMs).ok) {
    throw new DomainError('AUTHORIZATION_STALE', `the authorisation must be signed within ${clockToleranceMs} ms of now`, {
      field: 'authorization.timestamp_ms',
    });
  }
  const bearerPubkey = bytesToHex(currentBearer(plc));
  const headHash = bytesToHex(chainHeadHash(plc));
  if (bytesToHex(authorization.bearerPublicKey) !== bearerPubkey || bytesToHex(authorization.headHash) !== headHash) {
    throw new DomainError('NOT_CURRENT_BEARER', 'the authorisation is not signed by the bearer of the presented chain head', {
      token_id: plc.commitment.tokenId,
    });
  }
  return {
    tokenId: plc.commitment.tokenId,
    bearerPubkey,
    headHash,
    rail: payout.rail,
    destination: payout.destination,
    destinationType: payout.destinationType,
    authorizationHash: bytesToHex(redeemAuthorizationHash(authorization)),
    signedAtMs: authorization.timestampMs,
  };
}
