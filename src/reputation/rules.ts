/**
 * Reputation: the score of an owner (a wallet's public key), its tiers, and what each event does
 * to it (docs/limits-and-fees.md, "Reputation"). Pure: the database applies the same rules in
 * `reputation_record` (migration 24_reputation), and test/db/reputation.test.ts holds the two equal on
 * the same table of cases; the property test holds every stored score equal to `replay` of the
 * owner's stored events.
 */

export const reputationEventKinds = [
  'ACCOUNT_AGE',
  'PLC_ISSUED',
  'PLC_EXPIRED',
  'REDEMPTION_SETTLED',
  'REDEMPTION_FAILED',
  'RISK_FLAG',
  'FORK_PROVEN',
  'KEY_BLOCKED',
  'INACTIVITY_DECAY',
] as const;
export type ReputationEventKind = (typeof reputationEventKinds)[number];

/** Kinds that put the owner in the lowest tier for good: the score drops to 0 and stays RESTRICTED. */
export const sanctionKinds: readonly ReputationEventKind[] = ['FORK_PROVEN', 'KEY_BLOCKED'];

export const riskSeverityDeltas = { low: -5, medium: -20, high: -50, critical: -100 } as const;
export type RiskSeverityName = keyof typeof riskSeverityDeltas;

export const scoreMin = 0;
export const scoreMax = 1000;
/** Where every owner starts, at its first event (in the STANDARD tier). */
export const scoreStart = 500;

/**
 * ACCOUNT_AGE is no longer credited (issue 34): an account's age is a gate of the upper tiers
 * (`tierGates`), not points. The kind stays for the events recorded before.
 */
export const accountAgeStepDays = 30;
export const accountAgeStepsMax = 12;

/**
 * A settled redemption credits its bearer only when it is economically meaningful and independent
 * (docs/limits-and-fees.md, "Reputation that cannot be farmed"): `creditEligible` (decided by the
 * database from its tables: at least the dust threshold, a counterparty that is not the same owner,
 * not already credited from that counterparty inside the gain window) and within `pointsLimit`, the
 * gain the window has left. Then: +5, plus 1 per 10.00 (1,000 minor units) of its amount, that part
 * at most +20.
 */
export const settledBase = 5;
export const settledVolumeStepMinor = 1_000n;
export const settledVolumeBonusMax = 20;

/** The facts an event's rule uses, as stored on the event (so a replay needs nothing else). */
export interface EventFacts {
  amountMinor?: bigint | null;
  severity?: string | null;
  /** REDEMPTION_SETTLED: the settlement may credit points (dust, independence and repeat checked). */
  creditEligible?: boolean | null;
  /** REDEMPTION_SETTLED: the gain left in the window; INACTIVITY_DECAY: the decay step. */
  pointsLimit?: number | null;
}

/** The points a settlement may credit before the window's cap (0 when not eligible). */
export function settlementPoints(amountMinor: bigint, creditEligible: boolean): number {
  if (!creditEligible || amountMinor <= 0n) return 0;
  const steps = amountMinor / settledVolumeStepMinor;
  return settledBase + Number(steps > BigInt(settledVolumeBonusMax) ? BigInt(settledVolumeBonusMax) : steps);
}

/** The rule delta of an event on a score (sanctions excepted: they set the score to 0, see `applyEvent`). */
export function ruleDelta(kind: ReputationEventKind, facts: EventFacts = {}, score: number = scoreStart): number {
  switch (kind) {
    case 'ACCOUNT_AGE':
    case 'PLC_ISSUED':
      return 0;
    case 'PLC_EXPIRED':
      return -3;
    case 'REDEMPTION_SETTLED':
      return Math.min(Math.max(0, facts.pointsLimit ?? 0), settlementPoints(facts.amountMinor ?? 0n, facts.creditEligible === true));
    case 'REDEMPTION_FAILED':
      return -10;
    case 'RISK_FLAG': {
      // Every point earned above the start is lost, then the flag's own penalty.
      const severity = facts.severity as RiskSeverityName | null | undefined;
      const penalty = severity !== null && severity !== undefined && Object.hasOwn(riskSeverityDeltas, severity) ? riskSeverityDeltas[severity] : riskSeverityDeltas.medium;
      return Math.min(score, scoreStart) - score + penalty;
    }
    case 'INACTIVITY_DECAY':
      // Down by the decay step, never below the start: decay takes back what was earned, no more.
      return 0 - Math.min(Math.max(0, facts.pointsLimit ?? 0), Math.max(0, score - scoreStart));
    case 'FORK_PROVEN':
    case 'KEY_BLOCKED':
      return 0;
  }
}

/**
 * The settings of the model, configuration (infra/config.ts `REPUTATION_*`) so that tests run in
 * seconds; the database keeps them in `reputation_settings` (written by the API at start).
 */
export interface ReputationSettings {
  /** A settlement below this counts nothing (dust). */
  dustMinor: bigint;
  /** The window of the gain cap and of "once per counterparty". */
  gainWindowMs: number;
  /** The most points settlements may credit in one window. */
  gainPerWindowMax: number;
  /** Idle time (no credited settlement) after which each further such period decays the score. */
  decayIdleMs: number;
  /** Points one decay step takes (never below the start). */
  decayPoints: number;
  /** What a tier needs besides its score: the account's age and distinct independent counterparties. */
  tierGates: Readonly<Record<ReputationTier, TierGate>>;
}
export interface TierGate {
  accountAgeMinMs: number;
  counterpartiesMin: number;
}

const dayMs = 86_400_000;
export const defaultReputationSettings: ReputationSettings = {
  dustMinor: 1_000n,
  gainWindowMs: dayMs,
  gainPerWindowMax: 50,
  decayIdleMs: 30 * dayMs,
  decayPoints: 10,
  tierGates: {
    RESTRICTED: { accountAgeMinMs: 0, counterpartiesMin: 0 },
    BASIC: { accountAgeMinMs: 0, counterpartiesMin: 0 },
    STANDARD: { accountAgeMinMs: 0, counterpartiesMin: 0 },
    TRUSTED: { accountAgeMinMs: 30 * dayMs, counterpartiesMin: 5 },
    PREMIUM: { accountAgeMinMs: 90 * dayMs, counterpartiesMin: 20 },
  },
};

export const reputationTiers = [
  { tier: 'RESTRICTED', scoreMin: 0, scoreMax: 199 },
  { tier: 'BASIC', scoreMin: 200, scoreMax: 399 },
  { tier: 'STANDARD', scoreMin: 400, scoreMax: 599 },
  { tier: 'TRUSTED', scoreMin: 600, scoreMax: 799 },
  { tier: 'PREMIUM', scoreMin: 800, scoreMax: 1000 },
] as const;
export type ReputationTier = (typeof reputationTiers)[number]['tier'];
export const reputationTierNames = reputationTiers.map((row) => row.tier) as [ReputationTier, ...ReputationTier[]];

export function tierOf(score: number, sanctioned: boolean): ReputationTier {
  if (sanctioned) return 'RESTRICTED';
  const row = reputationTiers.find((candidate) => score >= candidate.scoreMin && score <= candidate.scoreMax);
  if (row === undefined) throw new RangeError(`score ${score} is outside ${scoreMin}..${scoreMax}`);
  return row.tier;
}

export interface ReputationState {
  score: number;
  sanctioned: boolean;
}

export const initialReputation: ReputationState = { score: scoreStart, sanctioned: false };

export interface AppliedEvent {
  state: ReputationState;
  /** What the event changed: score after minus score before (the clamp and sanctions included). */
  delta: number;
  tier: ReputationTier;
}

export function clampScore(score: number): number {
  return Math.min(scoreMax, Math.max(scoreMin, score));
}

/** One event on a state: sanctions set 0 and the sanction for good; every other kind adds its rule delta, clamped to 0..1000. */
export function applyEvent(state: ReputationState, event: { kind: ReputationEventKind } & EventFacts): AppliedEvent {
  if (sanctionKinds.includes(event.kind)) {
    const next = { score: 0, sanctioned: true };
    return { state: next, delta: 0 - state.score, tier: tierOf(0, true) };
  }
  const score = clampScore(state.score + ruleDelta(event.kind, event, state.score));
  const next = { score, sanctioned: state.sanctioned };
  return { state: next, delta: score - state.score, tier: tierOf(score, next.sanctioned) };
}

/** The state after every event in order, from the start. */
export function replay(events: readonly ({ kind: ReputationEventKind } & EventFacts)[]): ReputationState {
  let state = initialReputation;
  for (const event of events) state = applyEvent(state, event).state;
  return state;
}

/** Decay steps due: full idle periods since the last credited settlement, less those already applied. */
export function decayStepsDue(idleMs: number, stepsApplied: number, settings: Pick<ReputationSettings, 'decayIdleMs'>): number {
  if (settings.decayIdleMs <= 0 || idleMs <= 0) return 0;
  return Math.max(0, Math.floor(idleMs / settings.decayIdleMs) - stepsApplied);
}

/**
 * The tier an owner holds: its score's tier, lowered to the highest tier whose gates (account age,
 * distinct independent counterparties) it meets. A sanctioned owner is RESTRICTED.
 */
export function gatedTier(
  score: number,
  sanctioned: boolean,
  facts: { accountAgeMs: number; counterparties: number },
  settings: Pick<ReputationSettings, 'tierGates'>,
): ReputationTier {
  const byScore = tierOf(score, sanctioned);
  let rank = reputationTierNames.indexOf(byScore);
  while (rank > 0) {
    const name = reputationTierNames[rank] as ReputationTier;
    const gate = settings.tierGates[name];
    if (facts.accountAgeMs >= gate.accountAgeMinMs && facts.counterparties >= gate.counterpartiesMin) break;
    rank -= 1;
  }
  return reputationTierNames[rank] as ReputationTier;
}

/**
 * An owner's reputation as of `nowMs`: the stored score less the decay due since its last credited
 * settlement (applied to the stored score at its next event), and the gated tier. What limits and
 * fees read.
 */
export function currentReputation(
  stored: { score: number; sanctioned: boolean; openedAtMs: number; lastCreditAtMs: number; decayStepsApplied: number; counterparties: number },
  nowMs: number,
  settings: ReputationSettings,
): { score: number; tier: ReputationTier } {
  let score = stored.score;
  const due = Math.min(1000, decayStepsDue(nowMs - stored.lastCreditAtMs, stored.decayStepsApplied, settings));
  for (let step = 0; step < due; step += 1) score = clampScore(score + ruleDelta('INACTIVITY_DECAY', { pointsLimit: settings.decayPoints }, score));
  return { score, tier: gatedTier(score, stored.sanctioned, { accountAgeMs: nowMs - stored.openedAtMs, counterparties: stored.counterparties }, settings) };
}

/** The settings from configuration (infra/config.ts `REPUTATION_*`, in seconds). */
export function reputationSettingsOf(config: {
  REPUTATION_DUST_MINOR: bigint;
  REPUTATION_GAIN_WINDOW_SECONDS: number;
  REPUTATION_GAIN_PER_WINDOW_MAX: number;
  REPUTATION_DECAY_IDLE_SECONDS: number;
  REPUTATION_DECAY_POINTS: number;
  REPUTATION_TRUSTED_MIN_AGE_SECONDS: number;
  REPUTATION_TRUSTED_MIN_COUNTERPARTIES: number;
  REPUTATION_PREMIUM_MIN_AGE_SECONDS: number;
  REPUTATION_PREMIUM_MIN_COUNTERPARTIES: number;
}): ReputationSettings {
  const none = { accountAgeMinMs: 0, counterpartiesMin: 0 };
  return {
    dustMinor: config.REPUTATION_DUST_MINOR,
    gainWindowMs: config.REPUTATION_GAIN_WINDOW_SECONDS * 1000,
    gainPerWindowMax: config.REPUTATION_GAIN_PER_WINDOW_MAX,
    decayIdleMs: config.REPUTATION_DECAY_IDLE_SECONDS * 1000,
    decayPoints: config.REPUTATION_DECAY_POINTS,
    tierGates: {
      RESTRICTED: none,
      BASIC: none,
      STANDARD: none,
      TRUSTED: { accountAgeMinMs: config.REPUTATION_TRUSTED_MIN_AGE_SECONDS * 1000, counterpartiesMin: config.REPUTATION_TRUSTED_MIN_COUNTERPARTIES },
      PREMIUM: { accountAgeMinMs: config.REPUTATION_PREMIUM_MIN_AGE_SECONDS * 1000, counterpartiesMin: config.REPUTATION_PREMIUM_MIN_COUNTERPARTIES },
    },
  };
}
