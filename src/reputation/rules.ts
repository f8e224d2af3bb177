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

/** One point per full 30 days since the owner's first event: ACCOUNT_AGE events of +10, at most 12 (one year). */
export const accountAgeStepDays = 30;
export const accountAgeStepsMax = 12;

/** A settled redemption: +5, plus 1 per 100.00 (10,000 minor units) of its amount, that part at most +20. */
export const settledBase = 5;
export const settledVolumeStepMinor = 10_000n;
export const settledVolumeBonusMax = 20;

/** The rule delta of an event (sanctions excepted: they set the score to 0, see `applyEvent`). */
export function ruleDelta(kind: ReputationEventKind, facts: { amountMinor?: bigint | null; severity?: string | null } = {}): number {
  switch (kind) {
    case 'ACCOUNT_AGE':
      return 10;
    case 'PLC_ISSUED':
      return 1;
    case 'PLC_EXPIRED':
      return -3;
    case 'REDEMPTION_SETTLED': {
      const amount = facts.amountMinor ?? 0n;
      const steps = amount > 0n ? amount / settledVolumeStepMinor : 0n;
      return settledBase + Number(steps > BigInt(settledVolumeBonusMax) ? BigInt(settledVolumeBonusMax) : steps);
    }
    case 'REDEMPTION_FAILED':
      return -10;
    case 'RISK_FLAG': {
      const severity = facts.severity as RiskSeverityName | null | undefined;
      return severity !== null && severity !== undefined && Object.hasOwn(riskSeverityDeltas, severity) ? riskSeverityDeltas[severity] : riskSeverityDeltas.medium;
    }
    case 'FORK_PROVEN':
    case 'KEY_BLOCKED':
      return 0;
  }
}

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
export function applyEvent(
  state: ReputationState,
  event: { kind: ReputationEventKind; amountMinor?: bigint | null; severity?: string | null },
): AppliedEvent {
  if (sanctionKinds.includes(event.kind)) {
    const next = { score: 0, sanctioned: true };
    return { state: next, delta: 0 - state.score, tier: tierOf(0, true) };
  }
  const score = clampScore(state.score + ruleDelta(event.kind, event));
  const next = { score, sanctioned: state.sanctioned };
  return { state: next, delta: score - state.score, tier: tierOf(score, next.sanctioned) };
}

/** The state after every event in order, from the start. */
export function replay(events: readonly { kind: ReputationEventKind; amountMinor?: bigint | null; severity?: string | null }[]): ReputationState {
  let state = initialReputation;
  for (const event of events) state = applyEvent(state, event).state;
  return state;
}
