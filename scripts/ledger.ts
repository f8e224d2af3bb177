import { parseArgs } from 'node:util';
import { z } from 'zod';
import { storeLedgerCheck } from '../db/ledger-checks.ts';
import { findViolations, ledgerStats } from '../db/ledger.ts';
import { createPool, type Pool } from '../db/pool.ts';
import { one } from '../db/sql.ts';
import { formatAmount } from '../src/money/currency.ts';

/**
 * `npm run ledger -- <command>`: operator checks of the ledger database.
 *
 *   verify [--limit N]   every ledger invariant over the whole ledger (balanced transactions,
 *                        at least two entries each, snapshots equal to their entries, no
 *                        negative user bucket). Prints each violation; exit 0 when all hold,
 *                        1 when any is violated. The result is recorded in ledger_checks, which
 *                        the stats dashboard shows.
 *   stats                totals per currency and bucket, transaction counts, accounts.
 *
 * Needs DATABASE_URL (the embedded database of `npm start` is
 * postgres://postgres:<password in .data/postgres-password>@127.0.0.1:5433/settlement).
 * Exit 2: usage or connection problem. Progress goes to stderr, results to stdout.
 */

const usage = `usage: npm run ledger -- verify [--limit N]   check every ledger invariant (exit 0 ok, 1 violations)
       npm run ledger -- stats                totals, transaction counts, accounts
DATABASE_URL must name the ledger database, e.g. for the embedded one of npm start:
  DATABASE_URL=postgres://postgres:$(cat .data/postgres-password)@127.0.0.1:5433/settlement npm run ledger -- verify`;

/** Violations printed at most; the check itself always covers the whole ledger. */
const violationsLimitDefault = 1000;
const violationsLimitMax = 100_000;
/** One full pass over a large ledger may take minutes; far above the API's 30 s. */
const statementTimeoutMs = 30 * 60 * 1000;

class UsageError extends Error {}

function progress(message: string): void {
  process.stderr.write(`ledger: ${message}\n`);
}

function out(line = ''): void {
  process.stdout.write(`${line}\n`);
}

const sizeRow = z.object({ accounts: z.bigint(), transactions: z.bigint(), entries: z.bigint() });

async function ledgerSize(pool: Pool) {
  // Planner estimates for the entries (two per movement): an exact count is itself a full pass.
  return one(pool, sizeRow, {
    name: 'ledger-cli-size',
    text: `SELECT (SELECT count(*) FROM ledger_accounts)::bigint AS accounts,
                  (SELECT count(*) FROM ledger_transactions)::bigint AS transactions,
                  (2 * greatest((SELECT reltuples FROM pg_class WHERE oid = 'ledger_movements'::regclass), 0))::bigint AS entries`,
  });
}

async function verify(pool: Pool, limit: number): Promise<number> {
  const size = await ledgerSize(pool);
  progress(
    `checking every invariant over ${size.accounts.toString()} accounts, ${size.transactions.toString()} transactions, ` +
      `about ${size.entries.toString()} entries (one pass over the ledger)...`,
  );
  const started = Date.now();
  // Report the elapsed time while the one long query runs, so a big ledger does not look hung.
  const ticker = setInterval(() => progress(`still checking (${Math.round((Date.now() - started) / 1000)} s)`), 10_000);
  let violations;
  try {
    violations = await findViolations(pool, limit + 1);
  } finally {
    clearInterval(ticker);
  }
  progress(`checked in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  // The stats dashboard shows the latest check (GET /api/v1/admin/stats, ledger).
  await storeLedgerCheck(pool, { source: 'npm run ledger -- verify', startedAt: new Date(started), violations });
  if (violations.length === 0) {
    out('ok: every ledger invariant holds');
    return 0;
  }
  const shown = violations.slice(0, limit);
  out(`${violations.length > limit ? `more than ${limit}` : violations.length} violation(s):`);
  for (const violation of shown) out(`  ${violation.kind}  ${violation.subject}  ${violation.detail ?? ''}`.trimEnd());
  if (violations.length > limit) out(`  ... (raise --limit to see more, at most ${violationsLimitMax})`);
  out('snapshot mismatches: POST /api/v1/admin/reconcile/recalculate-snapshots; negative user buckets: fix-negative-balances');
  return 1;
}

async function stats(pool: Pool): Promise<number> {
  progress('reading ledger totals...');
  const result = await ledgerStats(pool);
  out('totals (users | system):');
  if (result.totals.length === 0) out('  (no balances)');
  for (const row of result.totals) {
    const users = formatAmount(BigInt(row.user_total_minor), row.currency);
    const system = formatAmount(BigInt(row.system_total_minor), row.currency);
    out(`  ${row.currency} ${row.bucket.padEnd(9)} ${users.padStart(20)} | ${system.padStart(20)}`);
  }
  let total = 0n;
  out('transactions:');
  for (const row of result.counts) {
    total += row.count;
    out(`  ${row.tx_type.padEnd(16)} ${row.count.toString().padStart(12)}`);
  }
  out(`  ${'total'.padEnd(16)} ${total.toString().padStart(12)}`);
  out(`accounts: ${result.accounts.users.toString()} user, ${result.accounts.frozen.toString()} frozen`);
  return 0;
}

function parseCommand(argv: string[]): { command: 'verify' | 'stats'; limit: number } {
  const { positionals, values } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: { limit: { type: 'string' }, help: { type: 'boolean', short: 'h' } },
  });
  if (values.help === true) throw new UsageError('');
  const [command, ...rest] = positionals;
  if ((command !== 'verify' && command !== 'stats') || rest.length > 0) {
    throw new UsageError(command === undefined ? 'a command is required' : `unknown command: ${positionals.join(' ')}`);
  }
  let limit = violationsLimitDefault;
  if (values.limit !== undefined) {
    if (command !== 'verify') throw new UsageError('--limit applies to verify only');
    if (!/^\d{1,6}$/.test(values.limit) || Number(values.limit) < 1 || Number(values.limit) > violationsLimitMax) {
      throw new UsageError(`--limit must be 1..${violationsLimitMax}`);
    }
    limit = Number(values.limit);
  }
  return { command, limit };
}

async function main(): Promise<number> {
  let parsed;
  try {
    parsed = parseCommand(process.argv.slice(2));
  } catch (error) {
    if (!(error instanceof UsageError) && !(error instanceof TypeError)) throw error;
    if (error.message !== '') process.stderr.write(`${error.message}\n`);
    process.stderr.write(`${usage}\n`);
    return 2;
  }
  const databaseUrl = process.env.DATABASE_URL;
  if (databaseUrl === undefined || databaseUrl === '') {
    process.stderr.write(`DATABASE_URL is not set: it must name the ledger database.\n${usage}\n`);
    return 2;
  }
  const pool = createPool({ connectionString: databaseUrl, max: 1, applicationName: 'ledger-cli', statementTimeoutMs });
  try {
    progress('connecting...');
    try {
      await pool.query('SELECT 1');
    } catch (error) {
      process.stderr.write(`cannot connect to DATABASE_URL: ${error instanceof Error ? error.message : String(error)}\n`);
      return 2;
    }
    return parsed.command === 'verify' ? await verify(pool, parsed.limit) : await stats(pool);
  } finally {
    await pool.end();
  }
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    process.stderr.write(`ledger: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exitCode = 2;
  },
);
