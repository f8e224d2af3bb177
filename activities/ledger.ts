import { recordLedgerCheck } from '../db/ledger-checks.ts';
import { getBalances, postTransaction } from '../db/ledger.ts';
import type { Pool } from '../db/pool.ts';
import { depositLedgerKey } from '../src/ledger/keys.ts';
import { moneyModel } from '../src/ledger/money-model.ts';
import type { Currency } from '../src/money/currency.ts';
import { refusalsAsFailures } from './failures.ts';

/**
 * Ledger activities. Amounts cross the Temporal boundary as decimal strings of minor units
 * (payloads are JSON; a bigint would not survive), and every posting carries the business key
 * that makes a retried activity book nothing twice.
 */

export interface BalancesMinor {
  available: string;
  held: string;
  pending: string;
  promised: string;
}

export interface BookDepositInput {
  idempotencyKey: string;
  ownerId: string;
  currency: Currency;
  amountMinor: string;
  requestedBy: string;
}

export interface BookDepositResult {
  transactionId: string;
  created: boolean;
  balances: BalancesMinor;
}

export interface LedgerCheckResult {
  checkId: string;
  ok: boolean;
  violationsCount: number;
}

export function createLedgerActivities(deps: { pool: Pool }) {
  return {
    /** One full ledger check, recorded for the stats dashboard (db/ledger-checks.ts). */
    async checkLedger(input: { source: string }): Promise<LedgerCheckResult> {
      const check = await recordLedgerCheck(deps.pool, input.source);
      return { checkId: check.id, ok: check.ok, violationsCount: check.violations_count };
    },

    async bookDeposit(input: BookDepositInput): Promise<BookDepositResult> {
      return refusalsAsFailures(async () => {
        const posting = moneyModel.deposit({
          ownerId: input.ownerId,
          currency: input.currency,
          amountMinor: BigInt(input.amountMinor),
        });
        const result = await postTransaction(deps.pool, {
          idempotencyKey: depositLedgerKey(input.idempotencyKey),
          txType: posting.txType,
          referenceType: 'admin_deposit',
          referenceId: input.idempotencyKey,
          description: `admin deposit by ${input.requestedBy}`,
          entries: posting.entries,
        });
        const balances = await getBalances(deps.pool, input.ownerId, input.currency);
        return {
          transactionId: result.transactionId,
          created: result.created,
          balances: {
            available: balances.available.toString(),
            held: balances.held.toString(),
            pending: balances.pending.toString(),
            promised: balances.promised.toString(),
          },
        };
      });
    },
  };
}

export type LedgerActivities = ReturnType<typeof createLedgerActivities>;
