import { z } from 'zod';
import { percentToBasisPoints, type FlagConfig } from '../src/ops/canary.ts';
import type { Queryable } from './pool.ts';
import { many, one } from './sql.ts';

/**
 * Feature flags (migration 20_operator_views): the canary rollout's configuration, changed with
 * `npm run admin -- flag set ...` and read by the canary dashboard and the routes a flag gates.
 * At most `flagsMax` flags exist: the table is configuration, not data.
 */
export const flagsMax = 100;

const flagRow = z.object({
  name: z.string(),
  description: z.string(),
  enabled: z.boolean(),
  rollout_percent: z.string(),
  unit: z.enum(['device', 'mesh']),
  min_reputation_tier: z.string().nullable(),
  exclude_blocked_keys: z.boolean(),
  updated_at: z.date(),
  updated_by: z.string(),
});
export type FlagRow = z.infer<typeof flagRow>;

export function toFlagConfig(row: FlagRow): FlagConfig {
  return {
    name: row.name,
    description: row.description,
    enabled: row.enabled,
    rolloutBasisPoints: percentToBasisPoints(row.rollout_percent),
    unit: row.unit,
    minReputationTier: row.min_reputation_tier,
    excludeBlockedKeys: row.exclude_blocked_keys,
  };
}

const columns = 'name, description, enabled, rollout_percent::text AS rollout_percent, unit, min_reputation_tier, exclude_blocked_keys, updated_at, updated_by';

export function listFlags(db: Queryable): Promise<FlagRow[]> {
  return many(db, flagRow, { name: 'flags-list', text: `SELECT ${columns} FROM feature_flags ORDER BY name LIMIT ${flagsMax}` });
}

export async function getFlag(db: Queryable, name: string): Promise<FlagRow | null> {
  const rows = await many(db, flagRow, { name: 'flags-get', text: `SELECT ${columns} FROM feature_flags WHERE name = $1`, values: [name] });
  return rows[0] ?? null;
}

export interface FlagChange {
  name: string;
  description?: string | undefined;
  enabled?: boolean | undefined;
  rolloutPercent?: string | undefined;
  unit?: 'device' | 'mesh' | undefined;
  /** null clears the rule. */
  minReputationTier?: string | null | undefined;
  excludeBlockedKeys?: boolean | undefined;
  updatedBy: string;
}

/** Creates the flag (a description is then required) or changes the given fields of it. */
export function upsertFlag(db: Queryable, change: FlagChange): Promise<FlagRow> {
  return one(db, flagRow, {
    name: 'flags-upsert',
    text: `INSERT INTO feature_flags AS f (name, description, enabled, rollout_percent, unit, min_reputation_tier, exclude_blocked_keys, updated_by)
           VALUES ($1, coalesce($2, (SELECT description FROM feature_flags WHERE name = $1)), coalesce($3, false), coalesce($4::numeric, 0), coalesce($5, 'device'), $6, coalesce($7, false), $9)
           ON CONFLICT (name) DO UPDATE SET
             description = coalesce($2, f.description),
             enabled = coalesce($3, f.enabled),
             rollout_percent = coalesce($4::numeric, f.rollout_percent),
             unit = coalesce($5, f.unit),
             min_reputation_tier = CASE WHEN $8 THEN $6 ELSE f.min_reputation_tier END,
             exclude_blocked_keys = coalesce($7, f.exclude_blocked_keys),
             updated_at = now(), updated_by = $9
           RETURNING ${columns}`,
    values: [
      change.name,
      change.description ?? null,
      change.enabled ?? null,
      change.rolloutPercent ?? null,
      change.unit ?? null,
      change.minReputationTier ?? null,
      change.excludeBlockedKeys ?? null,
      change.minReputationTier !== undefined,
      change.updatedBy,
    ],
  });
}

export async function countFlags(db: Queryable): Promise<number> {
  const row = await one(db, z.object({ count: z.number().int() }), { name: 'flags-count', text: 'SELECT count(*)::int AS count FROM feature_flags' });
  return row.count;
}
