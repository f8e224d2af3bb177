import type { ReputationTier } from '../reputation/rules.ts';

/**
 * Progressive PLC limits (docs/limits-and-fees.md, "Progressive limits"): what an owner may
 * promise per PLC and per 24 hours, from its reputation tier and settled volume, under the
 * configured ceilings (`PLC_MAX_AMOUNT_MINOR`, `PLC_DAILY_LIMIT_MINOR`: the PREMIUM tier's
 * limits). An approved increase request overrides the automatic limits of one device and owner
 * until its end date, never above the ceilings. Pure; amounts in minor units.
 */

export interface Ceilings {
  maxAmountMinor: bigint;
  dailyLimitMinor: bigint;
}

export interface Limits {
  maxAmountMinor: bigint;
  dailyLimitMinor: bigint;
}

/** Each tier's share of the ceilings, in basis points (10,000 = the whole ceiling). */
export const tierShares: Record<ReputationTier, { maxAmountBp: bigint; dailyLimitBp: bigint }> = {
  RESTRICTED: { maxAmountBp: 500n, dailyLimitBp: 500n },
  BASIC: { maxAmountBp: 2_000n, dailyLimitBp: 2_000n },
  STANDARD: { maxAmountBp: 5_000n, dailyLimitBp: 5_000n },
  TRUSTED: { maxAmountBp: 7_500n, dailyLimitBp: 7_500n },
  PREMIUM: { maxAmountBp: 10_000n, dailyLimitBp: 10_000n },
};

/** The daily limit grows by this share of the owner's settled volume (10%), up to the ceiling; tiers below STANDARD get none. */
export const volumeShareBp = 1_000n;
const volumeTiers: readonly ReputationTier[] = ['STANDARD', 'TRUSTED', 'PREMIUM'];

const bp = 10_000n;

function min(a: bigint, b: bigint): bigint {
  return a < b ? a : b;
}
function max(a: bigint, b: bigint): bigint {
  return a > b ? a : b;
}

/** A share of an amount, rounded down, but never below 1 minor unit of a positive ceiling. */
function share(amount: bigint, basisPoints: bigint): bigint {
  return max(1n, (amount * basisPoints) / bp);
}

export function automaticLimits(owner: { tier: ReputationTier; settledVolumeMinor: bigint }, ceilings: Ceilings): Limits {
  const shares = tierShares[owner.tier];
  const volumeBonus = volumeTiers.includes(owner.tier) ? (owner.settledVolumeMinor * volumeShareBp) / bp : 0n;
  return {
    maxAmountMinor: share(ceilings.maxAmountMinor, shares.maxAmountBp),
    dailyLimitMinor: min(ceilings.dailyLimitMinor, share(ceilings.dailyLimitMinor, shares.dailyLimitBp) + volumeBonus),
  };
}

export interface EffectiveLimits extends Limits {
  /** TIER: the automatic limits; OVERRIDE: an approved increase raised at least one of them. */
  source: 'TIER' | 'OVERRIDE';
  automatic: Limits;
}

/** The automatic limits, raised by an active override where it is higher, never above the ceilings. */
export function effectiveLimits(automatic: Limits, override: Limits | null, ceilings: Ceilings): EffectiveLimits {
  if (override === null) return { ...automatic, source: 'TIER', automatic };
  const maxAmountMinor = min(ceilings.maxAmountMinor, max(automatic.maxAmountMinor, override.maxAmountMinor));
  const dailyLimitMinor = min(ceilings.dailyLimitMinor, max(automatic.dailyLimitMinor, override.dailyLimitMinor));
  const raised = maxAmountMinor > automatic.maxAmountMinor || dailyLimitMinor > automatic.dailyLimitMinor;
  return { maxAmountMinor, dailyLimitMinor, source: raised ? 'OVERRIDE' : 'TIER', automatic };
}

export type IncreaseCheck = { ok: true } | { ok: false; code: 'LIMIT_ABOVE_CEILING' | 'LIMIT_INCREASE_NOT_NEEDED'; message: string };

/** An increase request must ask for more than the current limits in at least one of them, and for nothing above the ceilings. */
export function checkIncreaseRequest(requested: Limits, current: Limits, ceilings: Ceilings): IncreaseCheck {
  if (requested.maxAmountMinor > ceilings.maxAmountMinor || requested.dailyLimitMinor > ceilings.dailyLimitMinor) {
    return { ok: false, code: 'LIMIT_ABOVE_CEILING', message: 'the request is above the configured ceiling, which no review can raise' };
  }
  if (requested.maxAmountMinor <= current.maxAmountMinor && requested.dailyLimitMinor <= current.dailyLimitMinor) {
    return { ok: false, code: 'LIMIT_INCREASE_NOT_NEEDED', message: 'the device already has these limits: nothing to review' };
  }
  return { ok: true };
}

/** The route a refused create names. */
export const increaseRequestRoute = 'POST /api/v1/plc/limits/increase-request';
