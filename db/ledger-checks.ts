import { findViolations, ledgerStats, type Violation } from './ledger.ts';
import { ledgerCheckRow, type LedgerCheckRow } from './ops-stats.ts';
import type { Pool } from './pool.ts';
import { one } from './sql.ts';

/** Violations kept with a check; the count goes up to `violationsCountedMax` (one more means "more"). */
const keptMax = 20;
export const violationsCountedMax = 1000;

/**
 * Stores a full ledger check in `ledger_checks`, the stats dashboard's view of the ledger: the
 * invariants' violations (`ledger_violations()`, at most `violationsCountedMax` + 1 of them) and
 * the totals per currency, bucket and account kind.
 */
export async function storeLedgerCheck(
  pool: Pool,
  check: { source: string; startedAt: Date; violations: readonly Violation[] },
): Promise<LedgerCheckRow> {
  const stats = await ledgerStats(pool);
  return one(pool, ledgerCheckRow, {
    name: 'ledger-check-insert',
    text: `INSERT INTO ledger_checks (source, started_at, ok, violations_count, violations, totals)
           VALUES ($1, $2, $3, $4, $5, $6)
           RETURNING id, source, started_at, finished_at, ok, violations_count, violations, totals`,
    values: [
      check.source.slice(0, 100),
      check.startedAt,
      check.violations.length === 0,
      Math.min(check.violations.length, violationsCountedMax + 1),
      JSON.stringify(check.violations.slice(0, keptMax)),
      JSON.stringify(
        stats.totals.map((row) => ({ currency: row.currency, bucket: row.bucket, user_minor: row.user_total_minor, system_minor: row.system_total_minor })),
      ),
    ],
  });
}

/**
 * One full ledger check, recorded. Reads the whole ledger (minutes on a large one): run by the
 * ledger-check workflow and `npm run ledger -- verify`, never by a request.
 */
export async function recordLedgerCheck(pool: Pool, source: string): Promise<LedgerCheckRow> {
  const startedAt = new Date();
  const violations = await findViolations(pool, violationsCountedMax + 1);
  return storeLedgerCheck(pool, { source, startedAt, violations });
}
