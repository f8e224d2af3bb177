/**
 * The business customers' plans: one definition, read by B2B sign-up and the plans route
 * (docs/b2b.md) and priced by `POST /api/v1/fees/b2b/quote` (docs/limits-and-fees.md).
 *
 * A plan is a monthly subscription plus a per-redemption price that falls by volume band: the
 * band is chosen by the monthly redemption count the customer expects (or had), and every
 * redemption in the month is priced at that band's rate (no marginal tiers: one rate a month is
 * what a business can check on its invoice). Amounts are BRL minor units; rates are basis points
 * of the redeemed amount plus a fixed part, as the retail fee schedule prices them.
 */

export const b2bPlanIds = ['STARTER', 'BUSINESS', 'ENTERPRISE'] as const;
export type B2bPlanId = (typeof b2bPlanIds)[number];

export interface B2bVolumeBand {
  /** Lowest monthly redemption count the band applies to (inclusive). */
  readonly fromMonthlyCount: number;
  /** Fixed price per redemption, minor units. */
  readonly fixedMinor: bigint;
  /** Proportional price per redemption, basis points of the redeemed amount. */
  readonly rateBps: number;
}

export interface B2bPlan {
  readonly id: B2bPlanId;
  readonly name: string;
  /** Monthly subscription, minor units. */
  readonly monthlyFeeMinor: bigint;
  /** Most redemptions a month the plan accepts; null: no cap. */
  readonly maxMonthlyCount: number | null;
  /** Most items in one POS batch sync. */
  readonly posBatchMax: number;
  /** Scopes its API credentials may hold. */
  readonly scopes: readonly string[];
  /** Ascending by `fromMonthlyCount`, the first from 0. */
  readonly bands: readonly B2bVolumeBand[];
}

export const b2bPlans: Readonly<Record<B2bPlanId, B2bPlan>> = {
  STARTER: {
    id: 'STARTER',
    name: 'Starter',
    monthlyFeeMinor: 0n,
    maxMonthlyCount: 2_000,
    posBatchMax: 100,
    scopes: ['pos:sync', 'plc:read'],
    bands: [{ fromMonthlyCount: 0, fixedMinor: 10n, rateBps: 80 }],
  },
  BUSINESS: {
    id: 'BUSINESS',
    name: 'Business',
    monthlyFeeMinor: 19_900n,
    maxMonthlyCount: 100_000,
    posBatchMax: 500,
    scopes: ['pos:sync', 'plc:read', 'plc:issue'],
    bands: [
      { fromMonthlyCount: 0, fixedMinor: 8n, rateBps: 60 },
      { fromMonthlyCount: 10_000, fixedMinor: 6n, rateBps: 45 },
    ],
  },
  ENTERPRISE: {
    id: 'ENTERPRISE',
    name: 'Enterprise',
    monthlyFeeMinor: 99_900n,
    maxMonthlyCount: null,
    posBatchMax: 500,
    scopes: ['pos:sync', 'plc:read', 'plc:issue'],
    bands: [
      { fromMonthlyCount: 0, fixedMinor: 5n, rateBps: 40 },
      { fromMonthlyCount: 100_000, fixedMinor: 4n, rateBps: 30 },
      { fromMonthlyCount: 1_000_000, fixedMinor: 3n, rateBps: 20 },
    ],
  },
};

export function isB2bPlanId(value: string): value is B2bPlanId {
  return (b2bPlanIds as readonly string[]).includes(value);
}

/** The band a monthly redemption count falls in; null when the plan does not accept that volume. */
export function bandFor(plan: B2bPlan, monthlyCount: number): B2bVolumeBand | null {
  if (!Number.isSafeInteger(monthlyCount) || monthlyCount < 0) return null;
  if (plan.maxMonthlyCount !== null && monthlyCount > plan.maxMonthlyCount) return null;
  let chosen: B2bVolumeBand | null = null;
  for (const band of plan.bands) if (monthlyCount >= band.fromMonthlyCount) chosen = band;
  return chosen;
}
