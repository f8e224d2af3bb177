import { currentFeeScheduleVersion, getFeeConsent, getFeeSchedule, latestFeeConsent, recordFeeConsent, type FeeConsentRow, type FeeScheduleVersion } from '../db/fees.ts';
import type { Queryable } from '../db/pool.ts';
import { getReputation } from '../db/reputation.ts';
import { initialReputation, tierOf } from '../src/reputation/rules.ts';
import { DomainError } from '../src/errors.ts';
import { formatAmount, isCurrency } from '../src/money/currency.ts';
import { verifyFeeConsent, type SignedFeeConsent } from '../src/fees/consent.ts';
import { checkFreshness } from '../src/protocol/auth-messages.ts';
import type { SettlementRail } from '../src/protocol/constants.ts';
import { bytesToHex } from '../src/protocol/bytes.ts';
import { computeFee, ruleFor, type FeeBreakdown, type FeeRail, type FeeRule, type FeeTier } from '../src/fees/schedule.ts';

/**
 * Fees as the routes use them (docs/limits-and-fees.md, "Fees"): the estimate, and the fee a
 * redemption is charged, refused before anything is booked when the bearer has not consented to a
 * schedule that charges it.
 */

/** The fee schedule's rail of a protocol settlement rail (`pix` -> PIX, `boleto` -> BOLETO). */
export function feeRailOf(settlementRail: SettlementRail): FeeRail {
  return settlementRail === 'pix' ? 'PIX' : 'BOLETO';
}

/**
 * The owner's reputation tier, the one place fees read it (docs/limits-and-fees.md): the tier it
 * holds now (its score less the decay due, its tier's gates met), or the tier every owner starts in
 * (STANDARD, score 500) when it has no reputation row yet.
 */
export async function tierOfOwner(db: Queryable, ownerId: string): Promise<FeeTier> {
  const reputation = await getReputation(db, ownerId);
  return reputation === null ? tierOf(initialReputation.score, initialReputation.sanctioned) : reputation.current_tier;
}

export interface PricedFee extends FeeBreakdown {
  readonly version: number;
  readonly tier: FeeTier;
  readonly rule: FeeRule;
  /** The owner's consent in force (null: none); `version` is its version when there is one. */
  readonly consent: FeeConsentRow | null;
  /** True when the fee is not zero and the owner has not consented: a redemption would be refused. */
  readonly consentRequired: boolean;
}

async function scheduleOrThrow(db: Queryable, version: number): Promise<FeeScheduleVersion> {
  const schedule = await getFeeSchedule(db, version);
  if (schedule === null) throw new DomainError('FEE_SCHEDULE_VERSION_UNKNOWN', `no fee schedule version ${version}`, { schedule_version: version });
  return schedule;
}

function price(schedule: FeeScheduleVersion, rail: FeeRail, tier: FeeTier, amountMinor: bigint) {
  // Every version carries a rule for each rail (the default row); a version without one charges nothing.
  const rule = ruleFor(schedule.rules, rail, tier) ?? { rail, tier: null, fixedMinor: 0n, rateBps: 0, minMinor: 0n, maxMinor: null };
  return { rule, breakdown: computeFee(rule, amountMinor) };
}

/**
 * The fee for an amount on a rail, without any side effect. With an owner: the owner's tier and
 * the version it consented to (its latest consent), else the current version. Without one: the
 * tier given (BASIC by default) and the version given, else the current one.
 */
export async function estimateFee(
  db: Queryable,
  input: { amountMinor: bigint; rail: FeeRail; ownerId?: string | undefined; tier?: FeeTier | undefined; version?: number | undefined },
): Promise<PricedFee> {
  const consent = input.ownerId === undefined ? null : await latestFeeConsent(db, input.ownerId);
  const tier = input.tier ?? (input.ownerId === undefined ? 'BASIC' : await tierOfOwner(db, input.ownerId));
  const version = input.version ?? consent?.version ?? (await currentFeeScheduleVersion(db));
  const schedule = await scheduleOrThrow(db, version);
  const { rule, breakdown } = price(schedule, input.rail, tier, input.amountMinor);
  return { ...breakdown, version, tier, rule, consent, consentRequired: breakdown.feeMinor > 0n && consent === null };
}

/**
 * The fee a redemption is charged, decided before anything is booked: the schedule version the
 * bearer (its owner) consented to, at the owner's tier. Without a consent the current version
 * applies, and a fee above zero is refused (409 FEE_CONSENT_REQUIRED, with the version to consent
 * to and the fee); a fee that would leave nothing to pay out is refused (422 FEE_EXCEEDS_AMOUNT).
 */
export async function redemptionFee(
  db: Queryable,
  input: { ownerId: string; rail: FeeRail; amountMinor: bigint; currency: string },
): Promise<{ feeMinor: bigint; version: number }> {
  const currency = input.currency;
  if (!isCurrency(currency)) throw new DomainError('UNSUPPORTED_CURRENCY', `no fees for ${currency}`);
  const priced = await estimateFee(db, { ownerId: input.ownerId, rail: input.rail, amountMinor: input.amountMinor });
  if (priced.consentRequired) {
    throw new DomainError('FEE_CONSENT_REQUIRED', `a ${input.rail} redemption costs a fee under fee schedule version ${priced.version}: consent to it first`, {
      schedule_version: priced.version,
      fee: formatAmount(priced.feeMinor, currency),
      tier: priced.tier,
      consent_url: '/api/v1/fees/consent',
    });
  }
  if (priced.netMinor <= 0n) {
    throw new DomainError('FEE_EXCEEDS_AMOUNT', 'the fee would take the whole amount: nothing would be paid out', {
      schedule_version: priced.version,
      fee: formatAmount(priced.feeMinor, currency),
    });
  }
  return { feeMinor: priced.feeMinor, version: priced.version };
}

/**
 * Records an owner's consent to one schedule version, signed by the owner's key
 * (src/fees/consent.ts) within `freshnessMs` of now. Idempotent: a consent already recorded is
 * answered as it was (first time and device), even once its version is superseded. A first consent
 * must be to the current version (409 FEE_SCHEDULE_SUPERSEDED otherwise); an unknown version is a
 * 404 FEE_SCHEDULE_VERSION_UNKNOWN.
 */
export async function consentToFees(
  db: Queryable,
  input: SignedFeeConsent,
  options: { nowMs: number; freshnessMs: number },
): Promise<{ consent: FeeConsentRow; created: boolean; inForce: boolean }> {
  if (!verifyFeeConsent(input)) throw new DomainError('SIGNATURE_INVALID', 'the consent signature does not verify', { field: 'device_signature' });
  if (!checkFreshness(input.operationTimestampMs, options.nowMs, options.freshnessMs).ok) {
    throw new DomainError('AUTHORIZATION_STALE', `the consent must be signed within ${options.freshnessMs} ms of now`, { field: 'operation_timestamp' });
  }
  const ownerId = bytesToHex(input.publicKey);
  await scheduleOrThrow(db, input.scheduleVersion);
  let recorded = await getFeeConsent(db, ownerId, input.scheduleVersion);
  let created = false;
  if (recorded === null) {
    const current = await currentFeeScheduleVersion(db);
    if (input.scheduleVersion !== current) {
      throw new DomainError('FEE_SCHEDULE_SUPERSEDED', `version ${input.scheduleVersion} is superseded: consent to version ${current}`, {
        schedule_version: input.scheduleVersion,
        current_version: current,
      });
    }
    ({ consent: recorded, created } = await recordFeeConsent(db, {
      ownerId,
      version: input.scheduleVersion,
      deviceId: input.deviceId,
      signedAtMs: input.operationTimestampMs,
      signature: bytesToHex(input.signature),
    }));
  }
  const latest = await latestFeeConsent(db, ownerId);
  return { consent: recorded, created, inForce: latest?.version === recorded.version };
}
