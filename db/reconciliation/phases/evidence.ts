import { z } from 'zod';
import { DomainError } from '../../../src/errors.ts';
import { ledgerKeys } from '../../../src/ledger/keys.ts';
import { compensationPlan, type CompensationFacts } from '../../../src/reconciliation/ledger-repairs.ts';
import { exec, many, maybeOne } from '../../sql.ts';
import { currencyEnum, hasTx } from '../shared.ts';
import { rowRepairPhase } from './row-repair.ts';

/**
 * compensate-cancelled-bearers (issue 32; docs/plc.md, "Cancel after transfer"): each
 * CANCEL_AFTER_TRANSFER evidence not yet compensated whose issuer has something in AVAILABLE. The
 * bearer of the longest chain shown is paid the registered amount, or what the issuer has if less,
 * from the issuer's AVAILABLE to the bearer's, under `plc-evidence:<id>:compensate` (once per
 * evidence), and the evidence row points at the booking. A dry run (the default) books nothing
 * and lists what a real run would book.
 */

const evidenceRow = z.object({
  id: z.string().uuid(),
  token_id: z.string().uuid(),
  issuer_owner_id: z.string(),
  bearer_pubkey: z.string(),
  amount_minor: z.bigint(),
  currency: currencyEnum,
  issuer_available_minor: z.bigint(),
});
type EvidenceRow = z.infer<typeof evidenceRow>;

// The issuer's ledger owner is its PLC's (a wallet is its key, docs/plc.md); AVAILABLE is read
// from the snapshot the posting checks.
const columns = `e.id, e.token_id, p.issuer_owner_id, e.bearer_pubkey, e.amount_minor, e.currency,
  coalesce((SELECT b.amount_minor FROM ledger_bucket_balances b JOIN ledger_accounts a ON a.id = b.account_id
             WHERE a.owner_id = p.issuer_owner_id AND b.bucket = 'AVAILABLE' AND b.currency::text = e.currency), 0)::bigint AS issuer_available_minor`;
const open = `e.kind = 'CANCEL_AFTER_TRANSFER' AND e.compensation_tx_id IS NULL AND NOT ${hasTx(ledgerKeys.bearerCompensation.sql('e.id::text'))}`;

function facts(row: EvidenceRow): CompensationFacts {
  return {
    evidenceId: row.id,
    tokenId: row.token_id,
    issuerId: row.issuer_owner_id,
    bearerId: row.bearer_pubkey,
    currency: row.currency,
    amountMinor: row.amount_minor,
    issuerAvailableMinor: row.issuer_available_minor,
  };
}

export const cancelledBearersPhase = rowRepairPhase<EvidenceRow>({
  name: 'cancelled-bearers',
  candidates: (db, _ctx, after, limit) =>
    many(db, evidenceRow, {
      name: 'reconcile-cancelled-bearers',
      text: `SELECT * FROM (SELECT ${columns} FROM plc_evidence e JOIN plcs p ON p.token_id = e.token_id
                              WHERE ${open} AND ($1::uuid IS NULL OR e.id > $1)) c
              WHERE c.issuer_available_minor > 0
              ORDER BY c.id LIMIT $2`,
      values: [after, limit],
    }),
  recheck: (client, _ctx, key) =>
    maybeOne(client, evidenceRow, {
      name: 'reconcile-cancelled-bearer-lock',
      text: `SELECT ${columns} FROM plc_evidence e JOIN plcs p ON p.token_id = e.token_id WHERE e.id = $1 AND ${open} FOR UPDATE OF e`,
      values: [key],
    }),
  key: (row) => row.id,
  plan: (row) => {
    const plan = compensationPlan(facts(row));
    // Candidates have something in AVAILABLE; a real run's recheck may find it spent meanwhile.
    if (plan === null) throw new DomainError('INSUFFICIENT_FUNDS', `the issuer of PLC ${row.token_id} has nothing in AVAILABLE to compensate its bearer with`);
    return plan;
  },
  afterPost: async (client, row, transactionId) => {
    const plan = compensationPlan(facts(row));
    await exec(client, {
      name: 'reconcile-cancelled-bearer-point',
      text: `UPDATE plc_evidence SET compensation_tx_id = $2, compensated_minor = $3, updated_at = now() WHERE id = $1`,
      values: [row.id, transactionId, (plan?.amountMinor ?? 0n).toString()],
    });
  },
});
