import { WithStartWorkflowOperation } from '@temporalio/client';
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { findAccount, getBalances, listOwnerTransactions } from '../../db/ledger.ts';
import { listPlcs } from '../../db/plcs.ts';
import { toPlcStatus } from '../plc-views.ts';
import { plcStatusSchema } from '../schemas/plc.ts';
import { DomainError } from '../../src/errors.ts';
import { bookDepositUpdate, depositWorkflow } from '../../workflows/deposit.ts';
import { ownerIdKey, referenceIdKey } from '../../workflows/search-attributes.ts';
import { adminErrors, errorResponse, pageQuery, standardErrors } from '../schemas/common.ts';
import { balanceResponse, idempotencyKeyHeader, toBalanceResponse, toTransactionItem, transactionItem } from '../schemas/ledger.ts';
import { amountInputSchema, currencySchema, ownerIdSchema, parseMoney } from '../schemas/money.ts';
import { withDomainErrors } from '../temporal.ts';

const ownerParams = z.object({ owner_id: ownerIdSchema });
const currencyQuery = z.object({ currency: currencySchema.default('BRL') });

const depositRequest = z
  .strictObject({ owner_id: ownerIdSchema, amount: amountInputSchema, currency: currencySchema })
  .meta({ id: 'DepositRequest' });

/** The spec's Balance section: balances, deposit (admin), an owner's transactions. */
export async function balanceRoutes(app: FastifyInstance): Promise<void> {
  const routes = app.withTypeProvider<ZodTypeProvider>();
  const { pool, temporal, config } = app.deps;

  routes.get(
    '/:owner_id',
    {
      schema: {
        tags: ['balance'],
        summary: "An owner's buckets in one currency (BRL unless ?currency=)",
        params: ownerParams,
        querystring: currencyQuery,
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
        security: [{ bearer: [] }],
        headers: z.object({ 'idempotency-key': idempotencyKeyHeader }),
        body: depositRequest,
        response: { 200: balanceResponse, 409: errorResponse, ...adminErrors },
      },
      onRequest: app.requireAdmin(),
    },
    async (request) => {
      const { owner_id: ownerId, currency } = request.body;
      const amountMinor = parseMoney(request.body.amount, currency, { positive: true });
      const idempotencyKey = request.headers['idempotency-key'];
      const admin = request.admin;
      if (admin === null) throw new DomainError('UNAUTHENTICATED', 'a bearer token is required');
      const startWorkflowOperation = new WithStartWorkflowOperation(depositWorkflow, {
        workflowId: `deposit-${idempotencyKey}`,
        taskQueue: config.TEMPORAL_TASK_QUEUE,
        args: [{ idempotencyKey, ownerId }],
        workflowIdConflictPolicy: 'USE_EXISTING',
        typedSearchAttributes: [
          { key: ownerIdKey, value: ownerId },
          { key: referenceIdKey, value: idempotencyKey },
        ],
      });
      const result = await withDomainErrors(() =>
        temporal.workflow.executeUpdateWithStart(bookDepositUpdate, {
          args: [{ idempotencyKey, ownerId, currency, amountMinor: amountMinor.toString(), requestedBy: admin.username }],
          startWorkflowOperation,
        }),
      );
      const account = await findAccount(pool, ownerId);
      return toBalanceResponse(
        ownerId,
        currency,
        {
          available: BigInt(result.balances.available),
          held: BigInt(result.balances.held),
          pending: BigInt(result.balances.pending),
          promised: BigInt(result.balances.promised),
        },
        account?.status ?? 'ACTIVE',
      );
    },
  );

  routes.get(
    '/:owner_id/transactions',
    {
      schema: {
        tags: ['balance'],
        summary: "An owner's ledger transactions, newest first",
        params: ownerParams,
        querystring: pageQuery,
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
        params: ownerParams,
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
