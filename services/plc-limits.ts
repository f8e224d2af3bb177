import { readLimitFacts, type LimitFacts } from '../db/plc-limits.ts';
import type { Queryable } from '../db/pool.ts';
import { automaticLimits, effectiveLimits, type Ceilings, type EffectiveLimits } from '../src/limits/progressive.ts';

/**
 * The limits of one device and owner (docs/limits-and-fees.md, "Progressive limits"): the
 * owner's tier and settled volume, the device's active override, under the configured ceilings.
 * One read; PLC create passes the result to `plc_issue`, which enforces the daily sum under the
 * issuer account's row lock.
 */
export interface DeviceLimits {
  facts: LimitFacts;
  limits: EffectiveLimits;
}

export function ceilingsOf(config: { PLC_MAX_AMOUNT_MINOR: bigint; PLC_DAILY_LIMIT_MINOR: bigint }): Ceilings {
  return { maxAmountMinor: config.PLC_MAX_AMOUNT_MINOR, dailyLimitMinor: config.PLC_DAILY_LIMIT_MINOR };
}

/** `ownerId` null: an owner without any history (the limits a device never seen would get). */
export async function deviceLimits(db: Queryable, ceilings: Ceilings, ownerId: string | null, deviceId: string): Promise<DeviceLimits> {
  const facts = await readLimitFacts(db, ownerId, deviceId);
  const automatic = automaticLimits({ tier: facts.tier, settledVolumeMinor: facts.settledVolumeMinor }, ceilings);
  return { facts, limits: effectiveLimits(automatic, facts.override, ceilings) };
}
