import { z } from 'zod';
import { reputationEventKinds, reputationTierNames, type ReputationEventKind, type ReputationTier } from '../src/reputation/rules.ts';
import type { Queryable } from './pool.ts';
import { many, maybeOne, one } from './sql.ts';

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
  score_after: z.number().int(),
  tier_after: z.enum(reputationTierNames),
  created_at: z.date(),
});
export type ReputationEventRow = z.infer<typeof reputationEventRow>;

const columns = 'owner_id, score, tier, sanctioned, opened_at, age_credits, settled_volume_minor, events_count, updated_at';
const eventColumns = 'id, owner_id, kind, delta, reason, reference, amount_minor, severity, score_after, tier_after, created_at';

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
  event: { reason: string; reference?: string | null; amountMinor?: bigint | null; severity?: string | null },
): Promise<bigint | null> {
  const row = await one(db, z.object({ id: z.bigint().nullable() }), {
    name: 'reputation-record',
    text: 'SELECT reputation_record($1, $2, $3, $4, $5, $6) AS id',
    values: [ownerId, kind, event.reason.slice(0, 500), event.reference ?? null, event.amountMinor?.toString() ?? null, event.severity ?? null],
  });
  return row.id;
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
