import { z } from 'zod';
import type { Queryable } from './pool.ts';
import { many, maybeOne } from './sql.ts';

/**
 * The proofs of an issuer's cheat (migration 30): a double issue (two commitments the issuer
 * signed under one token id) and a cancel after a transfer (a chain whose first record the issuer
 * signed, shown for a PLC it cancelled). One row per incident (its risk flag), written in the
 * transaction that raises the flag and blocks the key (services/commitment-binding.ts).
 */

export const plcEvidenceKinds = ['ISSUER_DOUBLE_ISSUE', 'CANCEL_AFTER_TRANSFER'] as const;
export type PlcEvidenceKind = (typeof plcEvidenceKinds)[number];

export const plcEvidenceRow = z.object({
  id: z.string().uuid(),
  kind: z.enum(plcEvidenceKinds),
  token_id: z.string().uuid(),
  culprit_pubkey: z.string(),
  risk_flag_id: z.string().uuid(),
  evidence: z.record(z.string(), z.unknown()),
  bearer_pubkey: z.string().nullable(),
  amount_minor: z.bigint(),
  currency: z.enum(['BRL', 'USD', 'EUR']),
  route: z.string(),
  device_id: z.string(),
  created_at: z.date(),
  updated_at: z.date(),
  compensation_tx_id: z.string().uuid().nullable(),
  compensated_minor: z.bigint().nullable(),
});
export type PlcEvidenceRow = z.infer<typeof plcEvidenceRow>;

export const plcEvidenceColumns = `id, kind, token_id, culprit_pubkey, risk_flag_id, evidence, bearer_pubkey, amount_minor, currency, route, device_id,
  created_at, updated_at, compensation_tx_id, compensated_minor`;

export interface EvidenceInput {
  kind: PlcEvidenceKind;
  tokenId: string;
  culpritPubkey: string;
  riskFlagId: string;
  evidence: Record<string, unknown>;
  /** Cancel after transfer: the bearer of the chain shown (its last recipient), and its length. */
  bearerPubkey: string | null;
  chainLength: number;
  amountMinor: bigint;
  currency: string;
  route: string;
  deviceId: string;
}

/**
 * Keeps the evidence of one incident (its flag), once. A longer chain shown later for the same
 * incident (the PLC passed on offline since) replaces the one kept, as long as no compensation was
 * booked: the caller has checked that it extends the kept one.
 */
export async function keepEvidence(db: Queryable, input: EvidenceInput): Promise<PlcEvidenceRow> {
  const written = await maybeOne(db, plcEvidenceRow, {
    name: 'plc-evidence-keep',
    text: `INSERT INTO plc_evidence (kind, token_id, culprit_pubkey, risk_flag_id, evidence, bearer_pubkey, amount_minor, currency, route, device_id)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
           ON CONFLICT (risk_flag_id) DO UPDATE SET evidence = EXCLUDED.evidence, bearer_pubkey = EXCLUDED.bearer_pubkey, updated_at = now()
             WHERE plc_evidence.compensation_tx_id IS NULL
               AND jsonb_array_length(coalesce(plc_evidence.evidence -> 'transfer_chain', '[]')) < $11
           RETURNING ${plcEvidenceColumns}`,
    values: [
      input.kind,
      input.tokenId,
      input.culpritPubkey,
      input.riskFlagId,
      JSON.stringify(input.evidence),
      input.bearerPubkey,
      input.amountMinor.toString(),
      input.currency,
      input.route.slice(0, 64),
      input.deviceId,
      input.chainLength,
    ],
  });
  if (written !== null) return written;
  // ON CONFLICT ... WHERE that does not update returns no row: the kept evidence stands.
  const kept = await evidenceOfFlag(db, input.riskFlagId);
  if (kept === null) throw new Error(`evidence of risk flag ${input.riskFlagId} neither written nor kept`);
  return kept;
}

export function evidenceOfFlag(db: Queryable, riskFlagId: string): Promise<PlcEvidenceRow | null> {
  return maybeOne(db, plcEvidenceRow, {
    name: 'plc-evidence-of-flag',
    text: `SELECT ${plcEvidenceColumns} FROM plc_evidence WHERE risk_flag_id = $1`,
    values: [riskFlagId],
  });
}

export function getEvidence(db: Queryable, id: string): Promise<PlcEvidenceRow | null> {
  return maybeOne(db, plcEvidenceRow, { name: 'plc-evidence-get', text: `SELECT ${plcEvidenceColumns} FROM plc_evidence WHERE id = $1`, values: [id] });
}

/** A PLC's evidence, newest first (bounded). */
export function evidenceOfPlc(db: Queryable, tokenId: string, limit = 50): Promise<PlcEvidenceRow[]> {
  return many(db, plcEvidenceRow, {
    name: 'plc-evidence-of-plc',
    text: `SELECT ${plcEvidenceColumns} FROM plc_evidence WHERE token_id = $1 ORDER BY created_at DESC, id LIMIT $2`,
    values: [tokenId, limit],
  });
}
