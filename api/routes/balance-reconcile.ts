import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { examplePubkeys } from '../schemas/examples.ts';
import { findAccount, getBalances } from '../../db/ledger.ts';
import { listPlcs } from '../../db/plcs.ts';
import { DomainError } from '../../src/errors.ts';
import { adminErrors, errorResponse } from '../schemas/common.ts';
import { balanceResponse, toBalanceResponse } from '../schemas/ledger.ts';
import { currencySchema, ownerIdSchema } from '../schemas/money.ts';
import { reconcileAccepted, resultWaitMsDefault, startRealRun, toolParams, type ReconcileRunDeps } from './admin-reconcile.ts';

/**
 * POST /api/v1/balance/{owner_id}/reconcile (the spec's Balance section: "creates deposits for
 * active PLCs lacking ledger records"): books the PLC_ISSUED (`plc:<token_id>:issue`, AVAILABLE
 * -> PROMISED) of each of the owner's live PLCs that lacks it, then answers the owner's balance.
 * The booking is a real run of the owner-scoped reconcile tool `plc-issue-bookings`, so it is a
 * workflow (`reconcile-plc-issue-bookings-<run_id>`) and is recorded like every reconcile run.
 * A PLC and its booking are written in one transaction, so normally it finds nothing.
 *
 * It writes the ledger, so it needs an admin bearer token like the deposit does (the spec marks
 * neither as public; docs/reconciliation.md).
 */

const ownerParams = z.object({ owner_id: ownerIdSchema });
const currencyQuery = z.object({ currency: currencySchema.default('BRL') });

export interface BalanceReconcileOptions {
  /** How long the request waits for the run's report before answering 202. */
  resultWaitMs?: number;
}

export async function balanceReconcileRoutes(app: FastifyInstance, options: BalanceReconcileOptions = {}): Promise<void> {
  const routes = app.withTypeProvider<ZodTypeProvider>();
  const deps: ReconcileRunDeps = app.deps;
  const resultWaitMs = options.resultWaitMs ?? resultWaitMsDefault;

  routes.post(
    '/:owner_id/reconcile',
    {
      schema: {
        tags: ['balance'],
        summary: "Book the missing PLC_ISSUED of the owner's live PLCs (admin), then answer the owner's balance",
        description:
          'Runs the reconcile tool plc-issue-bookings for this owner as the workflow reconcile-plc-issue-bookings-<run_id> ' +
          '(recorded in reconciliation_runs and reconciliation_items). 200: the balance after the run, in ?currency= (BRL by default). ' +
          '202: the run goes on (or another run for this owner is running); follow it by run_id. 404: no account and no PLC for the owner.',
        security: [{ bearer: [] }],
        params: ownerParams,
        querystring: currencyQuery,
        requestExample: { params: { owner_id: examplePubkeys.alice }, querystring: { currency: 'BRL' } },
        response: { 200: balanceResponse, 202: reconcileAccepted, 404: errorResponse, 409: errorResponse, ...adminErrors },
      },
      onRequest: app.requireAdmin(),
    },
    async (request, reply) => {
      const admin = request.admin;
      if (admin === null) throw new DomainError('UNAUTHENTICATED', 'a bearer token is required');
      const { owner_id: ownerId } = request.params;
      const { currency } = request.query;
      // An owner with PLCs but no account is exactly the damage this repairs (the booking opens the account).
      const [account, plcs] = await Promise.all([
        findAccount(deps.pool, ownerId),
        listPlcs(deps.pool, { issuerOwnerId: ownerId }, { limit: 1, offset: 0 }),
      ]);
      if (account === null && plcs.length === 0) throw new DomainError('ACCOUNT_NOT_FOUND', 'no account and no PLC for this owner');
      const outcome = await startRealRun(deps, 'plc-issue-bookings', toolParams('plc-issue-bookings', deps.config, ownerId), admin.username, resultWaitMs);
      if (outcome.kind === 'running') {
        request.log.info({ owner_id: ownerId, run_id: outcome.runId, admin: admin.username }, 'balance reconcile goes on');
        return reply
          .code(202)
          .send({ run_id: outcome.runId, workflow_id: outcome.workflowId, tool: 'plc-issue-bookings' as const, status: 'RUNNING' as const });
      }
      request.log.info(
        { owner_id: ownerId, run_id: outcome.report.runId, counts: outcome.report.counts, admin: admin.username },
        'balance reconcile completed',
      );
      const [after, balances] = await Promise.all([findAccount(deps.pool, ownerId), getBalances(deps.pool, ownerId, currency)]);
      return reply.code(200).send(toBalanceResponse(ownerId, currency, balances, after?.status ?? 'ACTIVE'));
    },
  );
}
