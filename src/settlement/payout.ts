import { assert } from '../errors.ts';

/**
 * What a redemption pays out: the registered amount less the fee priced on that same amount
 * (docs/settlement.md). Never from a presented commitment: the caller passes the registered
 * amount (services/commitment-binding.ts). A fee above the amount is refused before anything is
 * booked (`FEE_EXCEEDS_AMOUNT`), so the payout is never negative here.
 */
export function payoutMinorOf(amountMinor: bigint, feeMinor: bigint): bigint {
  assert(feeMinor >= 0n && feeMinor <= amountMinor, 'a fee is between zero and the amount');
  return amountMinor - feeMinor;
}
