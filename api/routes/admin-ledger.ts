import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import {
  findAccount,
  findAccountById,
  findViolations,
  getBalances,
  ledgerStats,
  listAccountsWithBalances,
  listOwnerTransactions,
  listTransactions,
  setAccountStatus,
  type AccountWithBalancesRow,
} from '../../db/ledger.ts';
import { examplePubkeys } from '../schemas/examples.ts';
import { DomainError } from '../../src/errors.ts';
import { buckets, txTypes } from '../../src/ledger/money-model.ts';
import { currencies, type Currency } from '../../src/money/currency.ts';
import { adminErrors, errorResponse, pageQuery } from '../schemas/common.ts';
import { accountStatusSchema, balanceResponse, toBalanceResponse, toTransactionItem, transactionItem } from '../schemas/ledger.ts';
import { amountSchema, currencySchema, money, ownerIdSchema } from '../schemas/money.ts';

const accountItem = z
  .object({
    account_id: z.string().uuid(),
    owner_id: z.string(),
    kind: z.enum(['user', 'system']),
    status: accountStatusSchema,
    created_at: z.string(),
    balances: z.array(z.object({ bucket: z.enum(buckets), currency: currencySchema, amount: amountSchema })),
  })
  .meta({ id: 'AccountItem' });

function toAccountItem(row: AccountWithBalancesRow): z.infer<typeof accountItem> {
  return {
    account_id: row.id,
    owner_id: row.owner_id,
    kind: row.kind,
    status: row.status,
    created_at: row.created_at.toISOString(),
    balances: row.balances.map((b) => ({ bucket: b.bucket, currency: b.currency, amount: money(b.amount_minor, b.currency) })),
  };
}

const violationItem = z.object({ kind: z.string(), subject: z.string(), detail: z.string().nullable() });
const ledgerStatsResponse = z
  .object({
    totals: z.array(
      z.object({ currency: currencySchema, bucket: z.enum(buckets), users: amountSchema, system: amountSchema }),
    ),
    transactions: z.object({ total: z.number().int(), by_type: z.record(z.string(), z.number().int()) }),
    accounts: z.object({ users: z.number().int(), frozen: z.number().int() }),
    invariants: z.object({ ok: z.boolean(), violations: z.array(violationItem) }),
  })
  .meta({ id: 'LedgerStatsResponse' });

const accountStatusResponse = z
  .object({ account_id: z.string().uuid(), owner_id: z.string(), status: accountStatusSchema })
  .meta({ id: 'AccountStatusResponse' });

/** Administration: the ledger, accounts, freeze and unfreeze. Every route needs an admin token. */
export async function adminLedgerRoutes(app: FastifyInstance): Promise<void> {
  const routes = app.withTypeProvider<ZodTypeProvider>();
  const { pool } = app.deps;
  app.addHook('onRequest', app.requireAdmin());
  const security = [{ bearer: [] }];

  routes.get(
    '/ledger/transactions',
    {
      schema: {
        tags: ['admin: ledger'],
        summary: 'Ledger transactions, newest first, filtered by tx_type and reference_type',
        description:
          'Every ledger transaction with its entries, newest first, a page at a time, optionally only one transaction type (DEPOSIT, PLC_ISSUED, REDEEM_SETTLED, ...) or one reference type (admin_deposit, plc, redemption, charge, reconciliation).',
        security,
        querystring: pageQuery.extend({ tx_type: z.enum(txTypes).optional(), reference_type: z.string().max(64).optional() }),
        requestExample: { querystring: { tx_type: 'DEPOSIT', reference_type: 'admin_deposit', limit: 50, offset: 0 } },
        response: { 200: z.array(transactionItem), ...adminErrors },
      },
    },
    async (request) => {
      const { tx_type: txType, reference_type: referenceType, limit, offset } = request.query;
      const rows = await listTransactions(pool, { txType, referenceType }, { limit, offset });
      return rows.map(toTransactionItem);
    },
  );

  routes.get(
    '/ledger/accounts',
    {
      schema: {
        tags: ['admin: ledger'],
        summary: 'All accounts (system and user) with their balance snapshots',
        description:
          "Every ledger account, the system's (`system:world`) included, with its status and its balance snapshot per bucket and currency, a page at a time.",
        security,
        querystring: pageQuery,
        response: { 200: z.array(accountItem), ...adminErrors },
      },
    },
    async (request) => (await listAccountsWithBalances(pool, {}, request.query)).map(toAccountItem),
  );

  routes.get(
    '/ledger/stats',
    {
      schema: {
        tags: ['admin: ledger'],
        summary: 'Ledger KPIs: totals per bucket and currency, transaction counts, the invariant check',
        description:
          'Totals per currency and bucket (users and system apart), transaction counts by type, account counts, and the result of every ledger invariant check (balanced transactions, snapshots equal to the sum of entries, no negative bucket where none is allowed); `invariants.ok` false lists up to 100 violations.',
        security,
        response: { 200: ledgerStatsResponse, ...adminErrors },
      },
    },
    async () => {
      const [stats, violations] = await Promise.all([ledgerStats(pool), findViolations(pool, 100)]);
      const byType: Record<string, number> = {};
      let total = 0;
      for (const row of stats.counts) {
        byType[row.tx_type] = Number(row.count);
        total += Number(row.count);
      }
      return {
        totals: stats.totals.map((row) => ({
          currency: row.currency,
          bucket: row.bucket,
          users: money(BigInt(row.user_total_minor), row.currency),
          system: money(BigInt(row.system_total_minor), row.currency),
        })),
        transactions: { total, by_type: byType },
        accounts: { users: Number(stats.accounts.users), frozen: Number(stats.accounts.frozen) },
        invariants: { ok: violations.length === 0, violations },
      };
    },
  );

  routes.get(
    '/accounts/public',
    {
      schema: {
        tags: ['admin: accounts'],
        summary: 'User accounts with their balances',
        description: 'The user accounts (not the system one) with their status and balances per bucket and currency, a page at a time.',
        security,
        querystring: pageQuery,
        response: { 200: z.array(accountItem), ...adminErrors },
      },
    },
    async (request) => (await listAccountsWithBalances(pool, { kind: 'user' }, request.query)).map(toAccountItem),
  );

  routes.get(
    '/accounts/:owner_id/detail',
    {
      schema: {
        tags: ['admin: accounts'],
        summary: "An owner's balances in every currency, latest transactions and promises",
        description: "One owner's account: its id and status, its balances in every currency, and its 50 latest ledger transactions; 404 `ACCOUNT_NOT_FOUND` when the owner has no account.",
        security,
        params: z.object({ owner_id: ownerIdSchema }),
        requestExample: { params: { owner_id: examplePubkeys.alice } },
        response: {
          200: z
            .object({
              account_id: z.string().uuid(),
              owner_id: z.string(),
              status: accountStatusSchema,
              balances: z.array(balanceResponse),
              transactions: z.array(transactionItem),
            })
            .meta({ id: 'AccountDetailResponse' }),
          404: errorResponse,
          ...adminErrors,
        },
      },
    },
    async (request) => {
      const account = await findAccount(pool, request.params.owner_id);
      if (account === null) throw new DomainError('ACCOUNT_NOT_FOUND', 'no account for this owner');
      const balances = await Promise.all(
        (currencies as Currency[]).map(async (currency) =>
          toBalanceResponse(account.owner_id, currency, await getBalances(pool, account.owner_id, currency), account.status),
        ),
      );
      const transactions = await listOwnerTransactions(pool, account.owner_id, { limit: 50, offset: 0 });
      return {
        account_id: account.id,
        owner_id: account.owner_id,
        status: account.status,
        balances,
        transactions: transactions.map(toTransactionItem),
      };
    },
  );

  for (const [action, status] of [
    ['freeze', 'FROZEN'],
    ['unfreeze', 'ACTIVE'],
  ] as const) {
    routes.post(
      `/accounts/:account_id/${action}`,
      {
        schema: {
          tags: ['admin: accounts'],
          summary: action === 'freeze' ? 'Freeze an account: it can receive but not spend' : 'Unfreeze an account',
          description:
            action === 'freeze'
              ? 'Sets a user account FROZEN: the ledger then refuses any posting that takes money out of it (409 `ACCOUNT_FROZEN` on PLC create, for example) while credits still arrive. Idempotent; 404 `ACCOUNT_NOT_FOUND` for an unknown id or the system account.'
              : 'Sets a user account back to ACTIVE. Idempotent; 404 `ACCOUNT_NOT_FOUND` for an unknown id or the system account.',
          security,
          params: z.object({ account_id: z.string().uuid() }),
          requestExample: { params: { account_id: '0f8e2b7a-3c1d-4e5f-9a6b-7c8d9e0f1a2b' } },
          response: { 200: accountStatusResponse, 404: errorResponse, ...adminErrors },
        },
      },
      async (request) => {
        const existing = await findAccountById(pool, request.params.account_id);
        if (existing === null || existing.kind !== 'user') throw new DomainError('ACCOUNT_NOT_FOUND', 'no user account with this id');
        const updated = await setAccountStatus(pool, existing.id, status);
        if (updated === null) throw new DomainError('ACCOUNT_NOT_FOUND', 'no user account with this id');
        request.log.info({ account_id: updated.id, status, admin: request.admin?.username }, `account ${action}`);
        return { account_id: updated.id, owner_id: updated.owner_id, status: updated.status };
      },
    );
  }
}
