import { WithStartWorkflowOperation } from '@temporalio/client';
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { examplePubkeys } from '../schemas/examples.ts';
import { findAccount, findTransactionByIdempotencyKey, getBalances, listOwnerTransactions } from '../../db/ledger.ts';
import { listPlcs } from '../../db/plcs.ts';
import { toPlcStatus } from '../plc-views.ts';
import { plcStatusSchema } from '../schemas/plc.ts';
import { DomainError } from '../../src/errors.ts';
import { depositLedgerKey } from '../../src/ledger/keys.ts';
import { moneyModel } from '../../src/ledger/money-model.ts';
import type { Currency } from '../../src/money/currency.ts';
import { workflowIds } from '../../workflows/ids.ts';
import type { depositWorkflow } from '../../workflows/deposit.ts';
import { bookDepositUpdate } from '../../workflows/deposit-messages.ts';
import { ownerIdKey, referenceIdKey } from '../../workflows/search-attributes.ts';
import { adminErrors, errorResponse, pageQuery, standardErrors } from '../schemas/common.ts';
import { balanceResponse, idempotencyKeyHeader, toBalanceResponse, toTransactionItem, transactionItem, type BalanceResponse } from '../schemas/ledger.ts';
import { amountInputSchema, currencySchema, ownerIdSchema, parseMoney } from '../schemas/money.ts';
import { withDomainErrors } from '../../services/temporal.ts';

const ownerParams = z.object({ owner_id: ownerIdSchema });
const currencyQuery = z.object({ currency: currencySchema.default('BRL') });

const depositRequest = z
  .strictObject({ owner_id: ownerIdSchema, amount: amountInputSchema, currency: currencySchema })
  .meta({ id: 'DepositRequest' });

/**
 * Books a deposit through the deposit workflow (`deposit-<idempotencyKey>`, update-with-start):
 * the admin's deposit and the developer's fund (api/routes/dev.ts) share it. Answers the
 * owner's balances after the booking.
 */
export async function bookDeposit(
  app: FastifyInstance,
  deposit: { idempotencyKey: string; ownerId: string; currency: Currency; amountMinor: bigint; requestedBy: string },
) {
  const { temporal, config } = app.deps;
  const { idempotencyKey, ownerId } = deposit;
  const startWorkflowOperation = new WithStartWorkflowOperation<typeof depositWorkflow>('depositWorkflow', {
    workflowId: workflowIds.deposit(idempotencyKey),
    taskQueue: config.TEMPORAL_TASK_QUEUE,
    args: [{ idempotencyKey, ownerId }],
    workflowIdConflictPolicy: 'USE_EXISTING',
    typedSearchAttributes: [
      { key: ownerIdKey, value: ownerId },
      { key: referenceIdKey, value: idempotencyKey },
    ],
  });
  return withDomainErrors(() =>
    temporal.workflow.executeUpdateWithStart(bookDepositUpdate, {
      args: [{ idempotencyKey, ownerId, currency: deposit.currency, amountMinor: deposit.amountMinor.toString(), requestedBy: deposit.requestedBy }],
      startWorkflowOperation,
    }),
  );
}

/** Books a deposit (`bookDeposit`) and answers as the deposit routes do: the owner's balances after it and the account's status. */
export async function depositAnswer(app: FastifyInstance, deposit: Parameters<typeof bookDeposit>[1]): Promise<BalanceResponse> {
  const result = await bookDeposit(app, deposit);
  const account = await findAccount(app.deps.pool, deposit.ownerId);
  return toBalanceResponse(
    deposit.ownerId,
    deposit.currency,
    {
      available: BigInt(result.balances.available),
      held: BigInt(result.balances.held),
      pending: BigInt(result.balances.pending),
      promised: BigInt(result.balances.promised),
    },
    account?.status ?? 'ACTIVE',
  );
}

/** The spec's Balance section: balances, deposit (admin), an owner's transactions. */
export async function balanceRoutes(app: FastifyInstance): Promise<void> {
  const routes = app.withTypeProvider<ZodTypeProvider>();
  const { pool } = app.deps;

  /**
   * Whether the deposit under this Idempotency-Key is booked already: true when it is, with the
   * same owner, currency and amount; a booking of another deposit under the key is refused as the
   * ledger itself would refuse it.
   */
  async function findBookedDeposit(idempotencyKey: string, deposit: { ownerId: string; currency: Currency; amountMinor: bigint }): Promise<boolean> {
    const booked = await findTransactionByIdempotencyKey(pool, depositLedgerKey(idempotencyKey));
    if (booked === null) return false;
    const legs = (entries: readonly { ownerId: string; bucket: string; currency: string; amountMinor: bigint }[]) =>
      entries.map((entry) => `${entry.ownerId}|${entry.bucket}|${entry.currency}|${entry.amountMinor}`).sort().join(',');
    const asked = legs(moneyModel.deposit(deposit).entries);
    const found = legs(booked.entries.map((entry) => ({ ownerId: entry.owner_id, bucket: entry.bucket, currency: entry.currency, amountMinor: entry.amount_minor })));
    if (booked.tx_type !== 'DEPOSIT' || asked !== found) {
      throw new DomainError('IDEMPOTENCY_KEY_REUSED', 'this Idempotency-Key was used for another deposit', { location: 'header', field: 'idempotency-key' });
    }
    return true;
  }

  routes.get(
    '/:owner_id',
    {
      schema: {
        tags: ['balance'],
        summary: "An owner's buckets in one currency (BRL unless ?currency=)",
        description:
          "The owner's four ledger buckets (AVAILABLE, HELD, PENDING, PROMISED) in one currency, as decimal strings, and the account's status (ACTIVE or FROZEN). An owner never seen answers zeros. Public: the spec declares no security scheme for balances.",
        params: ownerParams,
        querystring: currencyQuery,
        requestExample: { params: { owner_id: examplePubkeys.alice }, querystring: { currency: 'BRL' } },
        response: { 200: balanceResponse, ...standardErrors },
      },
    },
    async (request) => {
      const { owner_id: ownerId } = request.params;
      const { currency } = request.query;
      const [account, balances] = await Promise.all([findAccount(pool, ownerId), getBalances(pool, ownerId, currency)]);
      return toBalanceResponse(ownerId, currency, balances, account?.status ?? 'ACTIVE');
    },
  );

  routes.post(
    '/deposit',
    {
      schema: {
        tags: ['balance'],
        summary: 'Credit an owner (admin). Idempotent by Idempotency-Key; booked by the deposit workflow',
        description:
          "Books system AVAILABLE -> owner AVAILABLE through the deposit workflow (`deposit-<Idempotency-Key>`, update-with-start; its one step is a local activity that books in one PostgreSQL transaction) and answers the owner's balance after it. The Idempotency-Key is required and names the deposit: a replay within the window gets the stored answer with `X-Idempotency-Replayed: true`; a later one finds the booking and answers the current balance; neither starts another workflow run, and the same key with another body is refused (422 `IDEMPOTENCY_KEY_REUSED`). A frozen account can still receive.",
        security: [{ bearer: [] }],
        headers: z.object({ 'idempotency-key': idempotencyKeyHeader }),
        body: depositRequest,
        requestExample: { body: { owner_id: examplePubkeys.alice, amount: '100.00', currency: 'BRL' } },
        response: { 200: balanceResponse, 409: errorResponse, ...adminErrors },
      },
      onRequest: app.requireAdmin(),
      config: { idempotency: { scope: 'deposit' } },
    },
    async (request) => {
      const { owner_id: ownerId, currency } = request.body;
      const amountMinor = parseMoney(request.body.amount, currency, { positive: true });
      const idempotencyKey = request.headers['idempotency-key'];
      const admin = request.admin;
      if (admin === null) throw new DomainError('UNAUTHENTICATED', 'a bearer token is required');
      // A retry within the Idempotency-Key window was answered from the stored response before
      // this handler (api/plugins/idempotency.ts). A later one finds the booking, which is the
      // deposit's lasting record, and answers from it: no second workflow run.
      const booked = await findBookedDeposit(idempotencyKey, { ownerId, currency, amountMinor });
      if (booked) {
        const [account, balances] = await Promise.all([findAccount(pool, ownerId), getBalances(pool, ownerId, currency)]);
        return toBalanceResponse(ownerId, currency, balances, account?.status ?? 'ACTIVE');
      }
      return depositAnswer(app, { idempotencyKey, ownerId, currency, amountMinor, requestedBy: admin.username });
    },
  );

  routes.get(
    '/:owner_id/transactions',
    {
      schema: {
        tags: ['balance'],
        summary: "An owner's ledger transactions, newest first",
        description:
          'The ledger transactions that touch the owner, newest first, each with all its entries (both sides of the double entry), a page at a time (`limit` up to 200, default 50; `offset`).',
        params: ownerParams,
        querystring: pageQuery,
        requestExample: { params: { owner_id: examplePubkeys.alice } },
        response: { 200: z.array(transactionItem), ...standardErrors },
      },
    },
    async (request) => {
      const rows = await listOwnerTransactions(pool, request.params.owner_id, request.query);
      return rows.map(toTransactionItem);
    },
  );
}

const promiseItem = z
  .object({
    token_id: z.string().uuid(),
    status: plcStatusSchema,
    amount: z.string(),
    currency: z.string(),
    bearer_pubkey: z.string(),
    chain_length: z.number().int(),
    created_at: z.string(),
    expires_at: z.string(),
    redemption_in_flight: z.boolean(),
  })
  .meta({ id: 'PromiseItem' });

/** The owner's PLC-backed promises: every PLC it issued, newest first (owner id = issuer public key). */
export async function promiseRoutes(app: FastifyInstance): Promise<void> {
  const routes = app.withTypeProvider<ZodTypeProvider>();
  routes.get(
    '/:owner_id/promises',
    {
      schema: {
        tags: ['balance'],
        summary: "The owner's promises (PLCs it issued), optionally by status; bounded page",
        description:
          'Every PLC the owner issued (the owner id is the issuer public key), newest first, optionally only those in one status, a page at a time; each with its current bearer, chain length, expiry and whether a redemption is in flight.',
        params: ownerParams,
        requestExample: { params: { owner_id: examplePubkeys.alice }, querystring: { status: 'TRANSFERRED' } },
        querystring: pageQuery.extend({ status: plcStatusSchema.optional() }),
        response: { 200: z.array(promiseItem), ...standardErrors },
      },
    },
    async (request) => {
      const { status, limit, offset } = request.query;
      const rows = await listPlcs(app.deps.pool, { status, issuerOwnerId: request.params.owner_id }, { limit, offset });
      return rows.map((row) => {
        const view = toPlcStatus(row);
        return {
          token_id: view.token_id,
          status: view.status,
          amount: view.amount,
          currency: view.currency,
          bearer_pubkey: view.bearer_pubkey,
          chain_length: view.chain_length,
          created_at: view.created_at,
          expires_at: view.expires_at,
          redemption_in_flight: view.redemption_in_flight,
        };
      });
    },
  );
}
