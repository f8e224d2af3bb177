import { assert } from '../errors.ts';
import { bandFor, type B2bPlan } from '../b2b/plans.ts';
import { reputationTierNames, type ReputationTier } from '../reputation/rules.ts';

/**
 * The retail fee schedule's rules (docs/limits-and-fees.md, "Fees"): pure, so the same function
 * prices an estimate, a redemption and a B2B quote.
 *
 * A schedule version is a set of rules, one per rail and tier, plus at most one default rule per
 * rail for every tier without a rule of its own (`tier: null`). A rule is a fixed part plus a
 * proportional part in basis points, held between a minimum and an optional maximum, and never
 * more than the amount itself.
 *
 * Rounding, the one rule: the proportional part is `amount x rate_bps / 10,000` rounded half up to
 * the minor unit (an exact half goes up), computed on integers; everything else is integer
 * arithmetic in minor units. So `fee + net = gross` exactly, for every amount and rule.
 */

export const feeRails = ['PIX', 'BOLETO'] as const;
export type FeeRail = (typeof feeRails)[number];

/** The reputation tiers, lowest first: fees are priced by the tier the reputation rules give. */
export const feeTiers = reputationTierNames;
export type FeeTier = ReputationTier;

export const basisPointsPerUnit = 10_000n;

export interface FeeRule {
  readonly rail: FeeRail;
  /** null: every tier without a rule of its own. */
  readonly tier: FeeTier | null;
  readonly fixedMinor: bigint;
  readonly rateBps: number;
  readonly minMinor: bigint;
  /** null: no maximum. */
  readonly maxMinor: bigint | null;
}

export interface FeeBreakdown {
  readonly feeMinor: bigint;
  readonly netMinor: bigint;
  readonly fixedMinor: bigint;
  readonly proportionalMinor: bigint;
  /** Which bound decided the fee, if one did. */
  readonly bound: 'MIN' | 'MAX' | 'AMOUNT' | null;
}

export function isFeeRail(value: string): value is FeeRail {
  return (feeRails as readonly string[]).includes(value);
}

export function isFeeTier(value: string): value is FeeTier {
  return (feeTiers as readonly string[]).includes(value);
}

/** `amount x bps / 10,000`, half up, for a non-negative amount. */
export function proportionalMinor(amountMinor: bigint, rateBps: number): bigint {
  assert(amountMinor >= 0n && Number.isInteger(rateBps) && rateBps >= 0 && rateBps <= 10_000, 'a non-negative amount and a rate of 0 to 10,000 bps');
  return (amountMinor * BigInt(rateBps) + basisPointsPerUnit / 2n) / basisPointsPerUnit;
}

/** The rule a tier pays on a rail: its own, else the rail's default; null when the version has neither. */
export function ruleFor(rules: readonly FeeRule[], rail: FeeRail, tier: FeeTier): FeeRule | null {
  return rules.find((rule) => rule.rail === rail && rule.tier === tier) ?? rules.find((rule) => rule.rail === rail && rule.tier === null) ?? null;
}

/** The fee of one amount under one rule: fixed + proportional, held in [min, max], never above the amount. */
export function computeFee(rule: Pick<FeeRule, 'fixedMinor' | 'rateBps' | 'minMinor' | 'maxMinor'>, amountMinor: bigint): FeeBreakdown {
  assert(amountMinor >= 0n, 'a non-negative amount');
  assert(rule.fixedMinor >= 0n && rule.minMinor >= 0n && (rule.maxMinor === null || rule.maxMinor >= rule.minMinor), 'a well-formed rule');
  const fixedMinor = rule.fixedMinor;
  const proportional = proportionalMinor(amountMinor, rule.rateBps);
  let feeMinor = fixedMinor + proportional;
  let bound: FeeBreakdown['bound'] = null;
  if (feeMinor < rule.minMinor) {
    feeMinor = rule.minMinor;
    bound = 'MIN';
  }
  if (rule.maxMinor !== null && feeMinor > rule.maxMinor) {
    feeMinor = rule.maxMinor;
    bound = 'MAX';
  }
  if (feeMinor > amountMinor) {
    feeMinor = amountMinor;
    bound = 'AMOUNT';
  }
  return { feeMinor, netMinor: amountMinor - feeMinor, fixedMinor, proportionalMinor: proportional, bound };
}

/** A schedule version's rules are well formed: known rails and tiers, one rule per (rail, tier), bounds in order. */
export function checkRules(rules: readonly FeeRule[]): string | null {
  const seen = new Set<string>();
  for (const rule of rules) {
    const key = `${rule.rail}/${rule.tier ?? '*'}`;
    if (!isFeeRail(rule.rail)) return `unknown rail ${rule.rail}`;
    if (rule.tier !== null && !isFeeTier(rule.tier)) return `unknown tier ${String(rule.tier)}`;
    if (seen.has(key)) return `two rules for ${key}`;
    seen.add(key);
    if (rule.fixedMinor < 0n || rule.minMinor < 0n) return `${key}: negative amounts`;
    if (!Number.isInteger(rule.rateBps) || rule.rateBps < 0 || rule.rateBps > 10_000) return `${key}: rate_bps out of 0..10000`;
    if (rule.maxMinor !== null && rule.maxMinor < rule.minMinor) return `${key}: max below min`;
  }
  return null;
}

// ---------------------------------------------------------------------------------------------
// B2B quotes: the plans of src/b2b/plans.ts priced for a monthly volume.

/** How long a B2B quote holds its prices. */
export const b2bQuoteValidityDays = 30;

export type B2bPlanQuote =
  | {
      readonly available: true;
      readonly plan: B2bPlan;
      readonly bandFromMonthlyCount: number;
      readonly bandFixedMinor: bigint;
      readonly bandRateBps: number;
      /** The price of one redemption of the average amount (the retail rounding rule). */
      readonly perRedemptionMinor: bigint;
      /** perRedemption x monthly count. */
      readonly usageMinor: bigint;
      /** Subscription + usage. */
      readonly totalMinor: bigint;
    }
  | { readonly available: false; readonly plan: B2bPlan; readonly reason: string };

export function quotePlan(plan: B2bPlan, monthlyCount: number, averageAmountMinor: bigint): B2bPlanQuote {
  assert(Number.isSafeInteger(monthlyCount) && monthlyCount >= 0 && averageAmountMinor > 0n, 'a count and a positive average');
  const band = bandFor(plan, monthlyCount);
  if (band === null) {
    return { available: false, plan, reason: `the ${plan.name} plan accepts at most ${plan.maxMonthlyCount ?? 'any'} redemptions a month` };
  }
  const perRedemptionMinor = computeFee({ fixedMinor: band.fixedMinor, rateBps: band.rateBps, minMinor: 0n, maxMinor: null }, averageAmountMinor).feeMinor;
  const usageMinor = perRedemptionMinor * BigInt(monthlyCount);
  return {
    available: true,
    plan,
    bandFromMonthlyCount: band.fromMonthlyCount,
    bandFixedMinor: band.fixedMinor,
    bandRateBps: band.rateBps,
    perRedemptionMinor,
    usageMinor,
    totalMinor: plan.monthlyFeeMinor + usageMinor,
  };
}
