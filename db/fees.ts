import { z } from 'zod';
import { checkRules, feeRails, feeTiers, type FeeRule } from '../src/fees/schedule.ts';
import { withTransaction, type Pool, type Queryable } from './pool.ts';
import { exec, many, maybeOne, one } from './sql.ts';

/**
 * The fee schedule's versions and rules, the owners' consents, and B2B quotes (migration
 * 26_fees). Versions are immutable (the migration's triggers refuse changes), so what a consent
 * agreed to is what its version says for ever.
 */

const versionRow = z.object({ version: z.number().int(), description: z.string(), published_at: z.date() });

const ruleRow = z.object({
  rail: z.enum(feeRails),
  tier: z.enum(feeTiers).nullable(),
  fixed_minor: z.bigint(),
  rate_bps: z.number().int(),
  min_minor: z.bigint(),
  max_minor: z.bigint().nullable(),
});

export interface FeeScheduleVersion {
  version: number;
  description: string;
  publishedAt: Date;
  rules: FeeRule[];
}

const consentRow = z.object({
  owner_id: z.string(),
  version: z.number().int(),
  device_id: z.string(),
  signed_at_ms: z.bigint(),
  signature: z.string(),
  consented_at: z.date(),
});
export type FeeConsentRow = z.infer<typeof consentRow>;

function toRule(row: z.infer<typeof ruleRow>): FeeRule {
  return { rail: row.rail, tier: row.tier, fixedMinor: row.fixed_minor, rateBps: row.rate_bps, minMinor: row.min_minor, maxMinor: row.max_minor };
}

/** The current version: the highest one published. */
export async function currentFeeScheduleVersion(db: Queryable): Promise<number> {
  const row = await one(db, z.object({ version: z.number().int().nullable() }), {
    name: 'fees-current-version',
    text: 'SELECT max(version) AS version FROM fee_schedule_versions WHERE published_at <= now()',
  });
  if (row.version === null) throw new Error('no fee schedule version is published (migration 26_fees seeds version 1)');
  return row.version;
}

/** One version with its rules (rail, then tier with the default row first); null when unknown. */
export async function getFeeSchedule(db: Queryable, version: number): Promise<FeeScheduleVersion | null> {
  const head = await maybeOne(db, versionRow, {
    name: 'fees-version',
    text: 'SELECT version, description, published_at FROM fee_schedule_versions WHERE version = $1 AND published_at <= now()',
    values: [version],
  });
  if (head === null) return null;
  const rules = await many(db, ruleRow, {
    name: 'fees-rules',
    text: `SELECT rail, tier, fixed_minor, rate_bps, min_minor, max_minor FROM fee_rules WHERE version = $1
            ORDER BY rail, CASE tier WHEN 'RESTRICTED' THEN 1 WHEN 'BASIC' THEN 2 WHEN 'STANDARD' THEN 3 WHEN 'TRUSTED' THEN 4 WHEN 'PREMIUM' THEN 5 ELSE 0 END`,
    values: [version],
  });
  return { version: head.version, description: head.description, publishedAt: head.published_at, rules: rules.map(toRule) };
}

/** The versions published, newest first (bounded: a schedule changes a few times a year). */
export function listFeeScheduleVersions(db: Queryable, limit: number): Promise<{ version: number; description: string; published_at: Date }[]> {
  return many(db, versionRow, {
    name: 'fees-versions',
    text: 'SELECT version, description, published_at FROM fee_schedule_versions WHERE published_at <= now() ORDER BY version DESC LIMIT $1',
    values: [limit],
  });
}

/**
 * Publishes a new version (the next number) with its rules, in one transaction. The way to change
 * prices: earlier versions, and the consents to them, stay as they were.
 */
export async function publishFeeSchedule(pool: Pool, schedule: { description: string; rules: readonly FeeRule[] }): Promise<number> {
  const problem = checkRules(schedule.rules);
  if (problem !== null) throw new Error(`fee schedule refused: ${problem}`);
  return withTransaction(pool, async (client) => {
    await exec(client, { name: 'fees-publish-lock', text: 'LOCK TABLE fee_schedule_versions IN SHARE ROW EXCLUSIVE MODE' });
    const { version } = await one(client, z.object({ version: z.number().int() }), {
      name: 'fees-publish-version',
      text: `INSERT INTO fee_schedule_versions (version, description)
             SELECT coalesce(max(version), 0) + 1, $1 FROM fee_schedule_versions RETURNING version`,
      values: [schedule.description],
    });
    for (const rule of schedule.rules) {
      await exec(client, {
        prepare: true,
        name: 'fees-publish-rule',
        text: 'INSERT INTO fee_rules (version, rail, tier, fixed_minor, rate_bps, min_minor, max_minor) VALUES ($1, $2, $3, $4, $5, $6, $7)',
        values: [version, rule.rail, rule.tier, rule.fixedMinor.toString(), rule.rateBps, rule.minMinor.toString(), rule.maxMinor?.toString() ?? null],
      });
    }
    return version;
  });
}

/** The consent in force for an owner: the latest it gave; null when it never consented. */
export function latestFeeConsent(db: Queryable, ownerId: string): Promise<FeeConsentRow | null> {
  return maybeOne(db, consentRow, {
    name: 'fees-latest-consent',
    text: `SELECT owner_id, version, device_id, signed_at_ms, signature, consented_at FROM fee_consents
            WHERE owner_id = $1 ORDER BY consented_at DESC, version DESC LIMIT 1`,
    values: [ownerId],
  });
}

export function getFeeConsent(db: Queryable, ownerId: string, version: number): Promise<FeeConsentRow | null> {
  return maybeOne(db, consentRow, {
    name: 'fees-consent',
    text: 'SELECT owner_id, version, device_id, signed_at_ms, signature, consented_at FROM fee_consents WHERE owner_id = $1 AND version = $2',
    values: [ownerId, version],
  });
}

/** Records a consent once: a second one to the same version answers the first (its time and device). */
export async function recordFeeConsent(
  db: Queryable,
  consent: { ownerId: string; version: number; deviceId: string; signedAtMs: number; signature: string },
): Promise<{ consent: FeeConsentRow; created: boolean }> {
  const inserted = await maybeOne(db, consentRow, {
    name: 'fees-consent-insert',
    text: `INSERT INTO fee_consents (owner_id, version, device_id, signed_at_ms, signature) VALUES ($1, $2, $3, $4, $5)
           ON CONFLICT (owner_id, version) DO NOTHING
           RETURNING owner_id, version, device_id, signed_at_ms, signature, consented_at`,
    values: [consent.ownerId, consent.version, consent.deviceId, consent.signedAtMs, consent.signature],
  });
  if (inserted !== null) return { consent: inserted, created: true };
  const existing = await getFeeConsent(db, consent.ownerId, consent.version);
  if (existing === null) throw new Error(`consent of ${consent.ownerId} to version ${consent.version} neither inserted nor found`);
  return { consent: existing, created: false };
}

export async function insertB2bQuote(
  db: Queryable,
  quote: { id: string; monthlyCount: number; averageAmountMinor: bigint; currency: string; answer: unknown; validDays: number },
): Promise<{ created_at: Date; valid_until: Date }> {
  return one(db, z.object({ created_at: z.date(), valid_until: z.date() }), {
    name: 'fees-b2b-quote-insert',
    text: `INSERT INTO b2b_quotes (id, monthly_count, average_amount_minor, currency, quote, valid_until)
           VALUES ($1, $2, $3, $4, $5, now() + make_interval(days => $6)) RETURNING created_at, valid_until`,
    values: [quote.id, quote.monthlyCount, quote.averageAmountMinor.toString(), quote.currency, JSON.stringify(quote.answer), quote.validDays],
  });
}
