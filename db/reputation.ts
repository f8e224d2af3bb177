import { z } from 'zod';
import { reputationEventKinds, reputationTierNames, type ReputationEventKind, type ReputationSettings, type ReputationTier } from '../src/reputation/rules.ts';
import type { Queryable } from './pool.ts';
import { exec, many, maybeOne, one } from './sql.ts';

/**
 * Reputation scores and their events (migration 24_reputation). Events are recorded by `reputation_record`
 * in the transaction of the event itself: the triggers on plcs, redemptions and risk_flags call
 * it, and `recordReputationEvent` is the way for code that proves something the tables do not
 * (a fork proven, a key blocked).
 */

export const reputationRow = z.object({
  owner_id: z.string(),
  score: z.number().int(),
  tier: z.enum(reputationTierNames),
  sanctioned: z.boolean(),
  opened_at: z.date(),
  age_credits: z.number().int(),
  settled_volume_minor: z.bigint(),
  events_count: z.bigint(),
  updated_at: z.date(),
  last_credit_at: z.date(),
  decay_steps: z.number().int(),
  counterparties: z.number().int(),
  /** The score now (the decay due applied) and the tier the owner holds (its gates applied): what limits and fees read. */
  current_score: z.number().int(),
  current_tier: z.enum(reputationTierNames),
});
export type ReputationRow = z.infer<typeof reputationRow>;

export const reputationEventRow = z.object({
  id: z.bigint(),
  owner_id: z.string(),
  kind: z.enum(reputationEventKinds),
  delta: z.number().int(),
  reason: z.string(),
  reference: z.string().nullable(),
  amount_minor: z.bigint().nullable(),
  severity: z.string().nullable(),
  counterparty: z.string().nullable(),
  credit_eligible: z.boolean().nullable(),
  points_limit: z.number().int().nullable(),
  score_after: z.number().int(),
  tier_after: z.enum(reputationTierNames),
  created_at: z.date(),
});
export type ReputationEventRow = z.infer<typeof reputationEventRow>;

const columns = `owner_id, score, tier, sanctioned, opened_at, age_credits, settled_volume_minor, events_count, updated_at,
                 last_credit_at, decay_steps, counterparties,
                 (SELECT c.score FROM reputation_current(owner_id) c) AS current_score,
                 (SELECT c.tier FROM reputation_current(owner_id) c) AS current_tier`;
const eventColumns = 'id, owner_id, kind, delta, reason, reference, amount_minor, severity, counterparty, credit_eligible, points_limit, score_after, tier_after, created_at';

/**
 * Records one reputation event of an owner in the caller's transaction (pass the transaction's
 * client), moving its score and tier at once. FORK_PROVEN and KEY_BLOCKED put the owner in the
 * lowest tier (RESTRICTED) for good. With a reference, recording the same event again records
 * nothing and answers null.
 */
export async function recordReputationEvent(
  db: Queryable,
  ownerId: string,
  kind: ReputationEventKind,
  event: { reason: string; reference?: string | null; amountMinor?: bigint | null; severity?: string | null; counterparty?: string | null },
): Promise<bigint | null> {
  const row = await one(db, z.object({ id: z.bigint().nullable() }), {
    name: 'reputation-record',
    text: 'SELECT reputation_apply($1, $2, $3, $4, $5, $6, $7) AS id',
    values: [ownerId, kind, event.reason.slice(0, 500), event.reference ?? null, event.amountMinor?.toString() ?? null, event.severity ?? null, event.counterparty ?? null],
  });
  return row.id;
}

/**
 * Writes the model's settings (configuration: infra/config.ts `REPUTATION_*`) where the database's
 * rules read them; the API does so at start. Only the TRUSTED and PREMIUM gates are stored: the
 * lower tiers have none.
 */
export async function setReputationSettings(db: Queryable, settings: ReputationSettings): Promise<void> {
  await exec(db, {
    name: 'reputation-settings-set',
    text: `UPDATE reputation_settings
              SET dust_minor = $1, gain_window_ms = $2, gain_per_window_max = $3, decay_idle_ms = $4, decay_points = $5,
                  trusted_age_min_ms = $6, trusted_counterparties_min = $7, premium_age_min_ms = $8, premium_counterparties_min = $9,
                  updated_at = now()
            WHERE (dust_minor, gain_window_ms, gain_per_window_max, decay_idle_ms, decay_points, trusted_age_min_ms,
                   trusted_counterparties_min, premium_age_min_ms, premium_counterparties_min)
                  IS DISTINCT FROM ($1::bigint, $2::bigint, $3::integer, $4::bigint, $5::integer, $6::bigint, $7::integer, $8::bigint, $9::integer)`,
    values: [
      settings.dustMinor.toString(),
      settings.gainWindowMs,
      settings.gainPerWindowMax,
      settings.decayIdleMs,
      settings.decayPoints,
      settings.tierGates.TRUSTED.accountAgeMinMs,
      settings.tierGates.TRUSTED.counterpartiesMin,
      settings.tierGates.PREMIUM.accountAgeMinMs,
      settings.tierGates.PREMIUM.counterpartiesMin,
    ],
  });
}

export function getReputation(db: Queryable, ownerId: string): Promise<ReputationRow | null> {
  return maybeOne(db, reputationRow, {
    name: 'reputation-get',
    text: `SELECT ${columns} FROM reputation_scores WHERE owner_id = $1`,
    values: [ownerId],
  });
}

export const reputationSortKeys = ['score', 'owner_id', 'tier', 'settled_volume', 'opened_at', 'updated_at', 'events'] as const;
export type ReputationSortKey = (typeof reputationSortKeys)[number];
const sortColumns: Record<ReputationSortKey, string> = {
  score: 'score',
  owner_id: 'owner_id',
  tier: '(SELECT t.rank FROM reputation_tiers t WHERE t.tier = reputation_scores.tier)',
  settled_volume: 'settled_volume_minor',
  opened_at: 'opened_at',
  updated_at: 'updated_at',
  events: 'events_count',
};

export function listReputation(
  db: Queryable,
  filter: { tier?: ReputationTier | undefined; sortBy: ReputationSortKey; sortDir: 'asc' | 'desc' },
  page: { limit: number; offset: number },
): Promise<ReputationRow[]> {
  // Both the column and the direction come from closed lists above, never from the request's text.
  const direction = filter.sortDir === 'asc' ? 'ASC' : 'DESC';
  return many(db, reputationRow, {
    name: 'reputation-list',
    text: `SELECT ${columns} FROM reputation_scores
            WHERE ($1::text IS NULL OR tier = $1)
            ORDER BY ${sortColumns[filter.sortBy]} ${direction}, owner_id ${direction}
            LIMIT $2 OFFSET $3`,
    values: [filter.tier ?? null, page.limit, page.offset],
  });
}

const statsRow = z.object({
  owners: z.bigint(),
  sanctioned: z.bigint(),
  average_score: z.string().nullable(),
  events_last_24h: z.bigint(),
  by_tier: z.array(z.object({ tier: z.enum(reputationTierNames), score_min: z.number(), score_max: z.number(), owners: z.number() })),
});
export type ReputationStats = z.infer<typeof statsRow>;

export function reputationStats(db: Queryable): Promise<ReputationStats> {
  return one(db, statsRow, {
    name: 'reputation-stats',
    text: `SELECT (SELECT count(*) FROM reputation_scores) AS owners,
                  (SELECT count(*) FROM reputation_scores WHERE sanctioned) AS sanctioned,
                  (SELECT round(avg(score), 1)::text FROM reputation_scores) AS average_score,
                  (SELECT count(*) FROM reputation_events WHERE created_at > now() - interval '24 hours') AS events_last_24h,
                  (SELECT coalesce(jsonb_agg(jsonb_build_object('tier', t.tier, 'score_min', t.score_min, 'score_max', t.score_max,
                                                                'owners', (SELECT count(*) FROM reputation_scores s WHERE s.tier = t.tier))
                                             ORDER BY t.rank), '[]'::jsonb)
                     FROM reputation_tiers t) AS by_tier`,
    values: [],
  });
}

/** An owner's events, newest first, at most `limit`. */
export function listReputationEvents(db: Queryable, ownerId: string, limit: number): Promise<ReputationEventRow[]> {
  return many(db, reputationEventRow, {
    name: 'reputation-events',
    text: `SELECT ${eventColumns} FROM reputation_events WHERE owner_id = $1 ORDER BY id DESC LIMIT $2`,
    values: [ownerId, limit],
  });
}

/** An owner's events in order, oldest first, at most `limit` (for replays). */
export function listReputationEventsInOrder(db: Queryable, ownerId: string, limit: number): Promise<ReputationEventRow[]> {
  return many(db, reputationEventRow, {
    name: 'reputation-events-in-order',
    text: `SELECT ${eventColumns} FROM reputation_events WHERE owner_id = $1 ORDER BY id LIMIT $2`,
    values: [ownerId, limit],
  });
}
