import { z } from 'zod';
import type { Queryable } from './pool.ts';
import { many, maybeOne, one } from './sql.ts';

export const riskSeverities = ['low', 'medium', 'high', 'critical'] as const;
export type RiskSeverity = (typeof riskSeverities)[number];
export const riskFlagTypes = [
  'DOUBLE_SPEND_FORK',
  'DOUBLE_REDEMPTION_ATTEMPT',
  'OVERDUE_EXPIRY',
  'WEBHOOK_CONTRADICTS_GATEWAY',
  'GATEWAY_AUDIT_MISMATCH',
  'ISSUER_DOUBLE_ISSUE',
  'CANCEL_AFTER_TRANSFER',
] as const;
export type RiskFlagType = (typeof riskFlagTypes)[number];

export const riskFlagRow = z.object({
  id: z.string().uuid(),
  flag_type: z.enum(riskFlagTypes),
  severity: z.enum(riskSeverities),
  subject_pubkey: z.string().nullable(),
  token_id: z.string().uuid().nullable(),
  details: z.record(z.string(), z.unknown()),
  occurrences: z.number().int(),
  resolved: z.boolean(),
  resolved_at: z.date().nullable(),
  resolved_by: z.string().nullable(),
  resolution_note: z.string().nullable(),
  created_at: z.date(),
  last_seen_at: z.date(),
});
export type RiskFlagRow = z.infer<typeof riskFlagRow>;

const columns = `id, flag_type, severity, subject_pubkey, token_id, details, occurrences, resolved, resolved_at, resolved_by,
  resolution_note, created_at, last_seen_at`;

/**
 * Raises a flag, or counts one more occurrence of the same incident (same dedupe key): the same
 * fork shown a hundred times is one flag seen a hundred times, not a hundred flags.
 */
export function raiseRiskFlag(
  db: Queryable,
  flag: {
    flagType: RiskFlagType;
    severity: RiskSeverity;
    subjectPubkey: string | null;
    tokenId: string | null;
    dedupeKey: string;
    details: Record<string, unknown>;
  },
): Promise<RiskFlagRow> {
  return one(db, riskFlagRow, {
    name: 'risk-flag-raise',
    text: `INSERT INTO risk_flags (flag_type, severity, subject_pubkey, token_id, dedupe_key, details)
           VALUES ($1, $2, $3, $4, $5, $6)
           ON CONFLICT (dedupe_key) DO UPDATE SET occurrences = risk_flags.occurrences + 1, last_seen_at = now()
           RETURNING ${columns}`,
    values: [flag.flagType, flag.severity, flag.subjectPubkey, flag.tokenId, flag.dedupeKey, JSON.stringify(flag.details)],
  });
}

export function listRiskFlags(
  db: Queryable,
  filter: { resolved?: boolean | undefined; severity?: RiskSeverity | undefined; subjectPubkey?: string | undefined; tokenId?: string | undefined },
  page: { limit: number; offset: number },
): Promise<RiskFlagRow[]> {
  return many(db, riskFlagRow, {
    name: 'risk-flag-list',
    text: `SELECT ${columns} FROM risk_flags
            WHERE ($1::boolean IS NULL OR resolved = $1) AND ($2::text IS NULL OR severity = $2)
              AND ($3::text IS NULL OR subject_pubkey = $3) AND ($6::uuid IS NULL OR token_id = $6)
            ORDER BY created_at DESC, id LIMIT $4 OFFSET $5`,
    values: [filter.resolved ?? null, filter.severity ?? null, filter.subjectPubkey ?? null, page.limit, page.offset, filter.tokenId ?? null],
  });
}

/** Marks a flag resolved once; resolving it again answers the row as it is. */
export async function resolveRiskFlag(
  db: Queryable,
  id: string,
  resolution: { resolvedBy: string; note: string | null },
): Promise<RiskFlagRow | null> {
  const updated = await maybeOne(db, riskFlagRow, {
    name: 'risk-flag-resolve',
    text: `UPDATE risk_flags SET resolved = true, resolved_at = now(), resolved_by = $2, resolution_note = $3
            WHERE id = $1 AND NOT resolved RETURNING ${columns}`,
    values: [id, resolution.resolvedBy, resolution.note],
  });
  if (updated !== null) return updated;
  return maybeOne(db, riskFlagRow, { name: 'risk-flag-get', text: `SELECT ${columns} FROM risk_flags WHERE id = $1`, values: [id] });
}
