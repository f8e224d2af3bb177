import { z } from 'zod';
import type { Queryable } from './pool.ts';
import { maybeOne } from './sql.ts';

/**
 * The service's issue receipts (docs/protocol.md section 19, migration 31_plc_issue_receipts):
 * one per registered PLC, the first one written kept, so every copy the service hands out carries
 * the same bytes.
 */

const receiptRow = z.object({ receipt: z.string() });

export interface NewIssueReceipt {
  tokenId: string;
  /** The 137 receipt bytes in lowercase hex. */
  receipt: string;
  servicePubkey: string;
  issuedAt: Date;
}

/** Keeps `input` unless the PLC has a receipt already; answers the receipt kept, in one statement. */
export async function keepIssueReceipt(db: Queryable, input: NewIssueReceipt): Promise<string> {
  const row = await maybeOne(db, receiptRow, {
    name: 'plc-issue-receipt-keep',
    prepare: true,
    text: `WITH kept AS (
             INSERT INTO plc_issue_receipts (token_id, receipt, service_pubkey, issued_at) VALUES ($1, $2, $3, $4)
             ON CONFLICT (token_id) DO NOTHING
             RETURNING receipt
           )
           SELECT receipt FROM kept
           UNION ALL
           SELECT receipt FROM plc_issue_receipts WHERE token_id = $1 AND NOT EXISTS (SELECT 1 FROM kept)`,
    values: [input.tokenId, input.receipt, input.servicePubkey, input.issuedAt],
  });
  if (row !== null) return row.receipt;
  // A concurrent create of the same PLC kept its receipt after this statement's snapshot: read it.
  const kept = await getIssueReceipt(db, input.tokenId);
  if (kept === null) throw new Error(`no issue receipt kept for PLC ${input.tokenId}`);
  return kept;
}

/** The receipt kept for the PLC, or null (a PLC registered before receipts, or whose create's answer never came back). */
export async function getIssueReceipt(db: Queryable, tokenId: string): Promise<string | null> {
  const row = await maybeOne(db, receiptRow, {
    name: 'plc-issue-receipt-get',
    text: 'SELECT receipt FROM plc_issue_receipts WHERE token_id = $1',
    values: [tokenId],
  });
  return row?.receipt ?? null;
}
