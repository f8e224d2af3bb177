import { sha256 } from '@noble/hashes/sha2.js';

/**
 * Canary rollout of the service's feature flags (docs/operations-console.md, "Canary"), as pure
 * rules. A flag is on for a device (or a mesh, per flag) when it is enabled, the subject's hashed
 * id falls in the rollout share, and every eligibility rule the flag names passes. The hash makes
 * the answer deterministic and stable: the same id is in or out on every replica and every day,
 * and raising the share only ever adds subjects (bucket < share).
 */

export type RolloutUnit = 'device' | 'mesh';

export interface FlagConfig {
  name: string;
  description: string;
  enabled: boolean;
  /** The rollout share in basis points: 0 (nobody) to 10,000 (everyone). */
  rolloutBasisPoints: number;
  unit: RolloutUnit;
  /** Rule: the device's owner holds at least this reputation tier. */
  minReputationTier: string | null;
  /** Rule: no key of the device is on the blocklist of keys proven to cheat. */
  excludeBlockedKeys: boolean;
}

export interface CanarySubject {
  deviceId: string | null;
  meshId: string | null;
}

/** What a rule says about a subject: pass, fail, or pending while the facts it needs do not exist. */
export type RuleState = { state: 'pass' } | { state: 'fail'; detail: string } | { state: 'pending'; detail: string };

/**
 * Where eligibility rules get their facts. Reputation tiers and the blocklist belong to another
 * part of the service (issue 21, not built yet): until it exists, `pendingEligibilitySources`
 * answers `pending` and a flag naming such a rule includes nobody, rather than guessing.
 */
export interface EligibilitySources {
  meetsReputationTier(deviceId: string, minTier: string): Promise<RuleState>;
  hasBlockedKey(deviceId: string): Promise<RuleState>;
}

export const pendingEligibilitySources: EligibilitySources = {
  meetsReputationTier: async () => ({ state: 'pending', detail: 'reputation tiers are not available yet (issue 21)' }),
  hasBlockedKey: async () => ({ state: 'pending', detail: 'the blocklist of keys proven to cheat is not available yet (issue 21)' }),
};

export interface RuleResult {
  rule: 'enabled' | 'rollout' | 'min_reputation_tier' | 'exclude_blocked_keys';
  state: RuleState['state'];
  detail: string;
}

export interface FlagEvaluation {
  name: string;
  description: string;
  enabled: boolean;
  rolloutPercent: string;
  unit: RolloutUnit;
  /** off: nobody; partial: a share; full: every subject that passes the rules. */
  status: 'off' | 'partial' | 'full';
  /** Null when the id of the flag's unit was not given. */
  eligible: boolean | null;
  /** The subject's bucket (0..9,999) for this flag, null without an id of the flag's unit. */
  bucket: number | null;
  rules: RuleResult[];
}

export const bucketCount = 10_000;

/** The subject's bucket for a flag: the first 32 bits of SHA-256("<flag>:<unit>:<id>") mod 10,000. */
export function rolloutBucket(flagName: string, unit: RolloutUnit, id: string): number {
  const digest = sha256(new TextEncoder().encode(`${flagName}:${unit}:${id}`));
  const first = ((digest[0]! << 24) | (digest[1]! << 16) | (digest[2]! << 8) | digest[3]!) >>> 0;
  return first % bucketCount;
}

/** A decimal percentage ("12.5", "100.00") as basis points, exactly; throws outside 0..100 or past 2 decimals. */
export function percentToBasisPoints(percent: string): number {
  const match = /^(\d{1,3})(?:\.(\d{1,2}))?$/.exec(percent.trim());
  if (match === null) throw new RangeError(`not a percentage with at most 2 decimals: ${percent}`);
  const basisPoints = Number(match[1]) * 100 + Number((match[2] ?? '').padEnd(2, '0'));
  if (basisPoints > bucketCount) throw new RangeError(`percentage above 100: ${percent}`);
  return basisPoints;
}

export function basisPointsToPercent(basisPoints: number): string {
  return `${Math.floor(basisPoints / 100)}.${String(basisPoints % 100).padStart(2, '0')}`;
}

/**
 * An identifier as the canary route shows and logs it: at most its first 6 characters and never
 * more than a third of it, then an ellipsis, so a truncated id cannot be turned back into the
 * id. The full id appears in no answer and no log line.
 */
export function truncateIdentifier(id: string): string {
  const keep = Math.min(6, Math.floor(id.length / 3));
  return `${id.slice(0, keep)}…`;
}

export async function evaluateFlag(flag: FlagConfig, subject: CanarySubject, sources: EligibilitySources): Promise<FlagEvaluation> {
  const status = !flag.enabled || flag.rolloutBasisPoints === 0 ? 'off' : flag.rolloutBasisPoints === bucketCount ? 'full' : 'partial';
  const id = flag.unit === 'device' ? subject.deviceId : subject.meshId;
  const rules: RuleResult[] = [
    { rule: 'enabled', state: flag.enabled ? 'pass' : 'fail', detail: flag.enabled ? 'the flag is enabled' : 'the flag is disabled' },
  ];
  const bucket = id === null ? null : rolloutBucket(flag.name, flag.unit, id);
  if (bucket === null) {
    rules.push({ rule: 'rollout', state: 'pending', detail: `no ${flag.unit} id given` });
  } else {
    const inShare = bucket < flag.rolloutBasisPoints;
    rules.push({
      rule: 'rollout',
      state: inShare ? 'pass' : 'fail',
      detail: `bucket ${bucket} of ${bucketCount} is ${inShare ? 'below' : 'at or above'} the rollout's ${flag.rolloutBasisPoints}`,
    });
  }
  if (flag.minReputationTier !== null) {
    const state = subject.deviceId === null
      ? ({ state: 'pending', detail: 'no device id given' } as const)
      : await sources.meetsReputationTier(subject.deviceId, flag.minReputationTier);
    rules.push({ rule: 'min_reputation_tier', ...withDetail(state, `the owner holds tier ${flag.minReputationTier} or above`) });
  }
  if (flag.excludeBlockedKeys) {
    const state = subject.deviceId === null
      ? ({ state: 'pending', detail: 'no device id given' } as const)
      : await sources.hasBlockedKey(subject.deviceId);
    rules.push({ rule: 'exclude_blocked_keys', ...withDetail(state, 'no key of the device is blocked') });
  }
  const eligible = id === null ? null : rules.every((rule) => rule.state === 'pass');
  return {
    name: flag.name,
    description: flag.description,
    enabled: flag.enabled,
    rolloutPercent: basisPointsToPercent(flag.rolloutBasisPoints),
    unit: flag.unit,
    status,
    eligible,
    bucket,
    rules,
  };
}

function withDetail(state: RuleState, passDetail: string): { state: RuleState['state']; detail: string } {
  return state.state === 'pass' ? { state: 'pass', detail: passDetail } : { state: state.state, detail: state.detail };
}
