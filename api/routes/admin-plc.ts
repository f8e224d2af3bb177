import { randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { exampleTokenId } from '../schemas/examples.ts';
import { listTransactions } from '../../db/ledger.ts';
import { getPlc, listPlcs, listTransfers } from '../../db/plcs.ts';
import { listRedemptions } from '../../db/redemptions.ts';
import { listRiskFlags, resolveRiskFlag, riskFlagRow, riskSeverities, type RiskFlagRow } from '../../db/risk-flags.ts';
import { DomainError } from '../../src/errors.ts';
import { bytesToHex, generateKeyPair } from '../../src/protocol/index.ts';
import type { expireTokensWorkflow } from '../../workflows/expire-sweep.ts';
import { businessStatusKey, referenceIdKey } from '../../workflows/search-attributes.ts';
import { expiryWorkflowIdOf, toChainEntry, toPlcJson, toPlcStatus } from '../plc-views.ts';
import { adminErrors, booleanQuery, errorResponse, pageQuery } from '../schemas/common.ts';
import { toTransactionItem, transactionItem } from '../schemas/ledger.ts';
import { chainEntry, plcStatusResponse, plcStatusSchema, pubkeySchema, tokenIdParam } from '../schemas/plc.ts';
import { redemptionResponse } from '../schemas/redemption.ts';
import { toRedemptionResponse } from './redeem.ts';
import { plcJsonSchema } from '../../src/protocol/index.ts';
import { withTemporalDeadline } from '../../services/temporal.ts';

/** The row as stored, its times as ISO strings. */
const riskFlagResponse = riskFlagRow
  .extend({ resolved_at: z.string().nullable(), created_at: z.string(), last_seen_at: z.string() })
  .meta({ id: 'RiskFlagResponse' });

function toRiskFlag(row: RiskFlagRow): z.infer<typeof riskFlagResponse> {
  return {
    ...row,
    resolved_at: row.resolved_at?.toISOString() ?? null,
    created_at: row.created_at.toISOString(),
    last_seen_at: row.last_seen_at.toISOString(),
  };
}

/** How long the expire-tokens call waits for its sweep before answering 202. */
const sweepWaitMs = 20_000;

/** Administration of PLCs and risk flags. Every route needs an admin token. */
export async function adminPlcRoutes(app: FastifyInstance): Promise<void> {
  const routes = app.withTypeProvider<ZodTypeProvider>();
  const { pool, temporal, config } = app.deps;
  app.addHook('onRequest', app.requireAdmin());
  const security = [{ bearer: [] }];

  routes.get(
    '/plcs',
    {
      schema: {
        tags: ['admin: plc'],
        summary: 'PLCs, newest first, optionally by status, issuer key or bearer key',
        description:
          'Every registered PLC with its current status, bearer and chain length, newest first, a page at a time, optionally only one status, ' +
          'one issuer or one current bearer (the key filters go beyond the spec: the console finds PLCs by key with them).',
        security,
        querystring: pageQuery.extend({
          status: plcStatusSchema.optional(),
          issuer_pubkey: pubkeySchema.optional().describe('only PLCs of this issuer (beyond the spec\'s status filter)'),
          bearer_pubkey: pubkeySchema.optional().describe('only PLCs whose current bearer is this key (beyond the spec\'s status filter)'),
        }),
        requestExample: {
          querystring: {
            status: 'ISSUED',
            issuer_pubkey: '3b6a27bcceb6a42d62a3a8d02a6f0d73653215771de243a63ac048a18b59da29',
            bearer_pubkey: '8f4e2d1c0b9a88776655443322110ffeeddccbbaa99887766554433221100ffe',
            limit: 50,
            offset: 0,
          },
        },
        response: { 200: z.array(plcStatusResponse), ...adminErrors },
      },
    },
    async (request) => {
      const { status, issuer_pubkey: issuerPubkey, bearer_pubkey: bearerPubkey, limit, offset } = request.query;
      return (await listPlcs(pool, { status, issuerPubkey, bearerPubkey }, { limit, offset })).map(toPlcStatus);
    },
  );

  routes.get(
    '/plcs/:token_id/detail',
    {
      schema: {
        tags: ['admin: plc'],
        summary: 'The full PLC with its chain, its ledger transactions and its workflow id',
        description:
          'Everything known about one PLC: its status, the PLC JSON as registered (with its chain), each registered hop with when it was registered, the device that created it, the id of the workflow that expires it (`workflow_id`: the expiry bucket `plc-expiry-<minute>` that expires it, or `plc-<token_id>` for a PLC issued before expiry buckets, to find it in the Temporal UI; docs/plc.md, "Expiry by time buckets") and when it falls due (`expiry_due_at`), its redemptions (each `redemption-<id>` in the Temporal UI) and its ledger transactions; 404 `PLC_NOT_FOUND`.',
        security,
        params: tokenIdParam,
        requestExample: { params: { token_id: exampleTokenId } },
        response: {
          200: z
            .object({
              status: plcStatusResponse,
              plc: plcJsonSchema,
              chain: z.array(chainEntry),
              device_id: z.string(),
              workflow_id: z.string().describe('the workflow that expires it: its expiry bucket `plc-expiry-<minute>`, or its own `plc-<token_id>` (issued before buckets)'),
              expiry_due_at: z.string().nullable().describe('when it falls due for expiry (expires_at plus the clock tolerance); null for a PLC issued before buckets'),
              transactions: z.array(transactionItem),
              risk_flags: z.array(riskFlagResponse).describe('Flags raised about this PLC: a fork\'s evidence (both records, the signer) is in their details'),
              redemptions: z.array(redemptionResponse).describe('Its redemptions, newest first (at most 20)'),
            })
            .meta({ id: 'AdminPLCDetailResponse' }),
          404: errorResponse,
          ...adminErrors,
        },
      },
    },
    async (request) => {
      const row = await getPlc(pool, request.params.token_id);
      if (row === null) throw new DomainError('PLC_NOT_FOUND', 'no such PLC');
      const [transfers, flags, redemptions] = await Promise.all([
        listTransfers(pool, row.token_id),
        listRiskFlags(pool, { tokenId: row.token_id }, { limit: 50, offset: 0 }),
        listRedemptions(pool, { tokenId: row.token_id }, { limit: 20, offset: 0 }),
      ]);
      const transactions = (await listTransactions(pool, { referenceType: 'plc' }, { limit: 200, offset: 0 })).filter(
        (tx) => tx.reference_id === row.token_id,
      );
      return {
        status: toPlcStatus(row),
        plc: toPlcJson(row, transfers),
        chain: transfers.map(toChainEntry),
        device_id: row.device_id,
        workflow_id: expiryWorkflowIdOf(row, config),
        expiry_due_at: row.expiry_due_at?.toISOString() ?? null,
        transactions: transactions.map(toTransactionItem),
        risk_flags: flags.map(toRiskFlag),
        redemptions: redemptions.map(toRedemptionResponse),
      };
    },
  );

  routes.get(
    '/risk-flags',
    {
      schema: {
        tags: ['admin: risk'],
        summary: 'Risk flags, newest first',
        description:
          'Risk flags raised by the service (a double spend: two successors of one PLC state, with the culprit key; an expiry by the sweep), newest first, a page at a time, optionally only resolved or open ones, or one severity.',
        security,
        querystring: pageQuery.extend({ resolved: booleanQuery.optional(), severity: z.enum(riskSeverities).optional() }),
        requestExample: { querystring: { resolved: 'false', severity: 'high', limit: 50, offset: 0 } },
        response: { 200: z.array(riskFlagResponse), ...adminErrors },
      },
    },
    async (request) => {
      const { resolved, severity, limit, offset } = request.query;
      return (await listRiskFlags(pool, { resolved, severity }, { limit, offset })).map(toRiskFlag);
    },
  );

  routes.post(
    '/risk-flags/:flag_id/resolve',
    {
      schema: {
        tags: ['admin: risk'],
        summary: 'Mark a risk flag resolved (idempotent)',
        description:
          'Marks the flag resolved by the calling admin, with an optional note (the body may be absent); resolving a resolved flag answers it unchanged. 404 `RISK_FLAG_NOT_FOUND`.',
        security,
        params: z.object({ flag_id: z.string().uuid() }),
        body: z.strictObject({ note: z.string().max(1000).optional() }).nullish(),
        requestExample: { params: { flag_id: '5d2c9e1a-7b3f-4a8e-b6c4-2e9f1d7a3b5c' }, body: { note: 'fork reviewed: the device was cloned, key revoked' } },
        response: { 200: riskFlagResponse, 404: errorResponse, ...adminErrors },
      },
    },
    async (request) => {
      const flag = await resolveRiskFlag(pool, request.params.flag_id, {
        resolvedBy: request.admin?.username ?? 'unknown',
        note: request.body?.note ?? null,
      });
      if (flag === null) throw new DomainError('RISK_FLAG_NOT_FOUND', 'no such risk flag');
      return toRiskFlag(flag);
    },
  );

  routes.post(
    '/expire-tokens',
    {
      schema: {
        tags: ['admin: plc'],
        summary: 'Expire every overdue PLC now (ledger release and a risk flag each), through the expire-tokens workflow',
        description:
          "Starts the sweep `expire-tokens-<run_id>`: every PLC past its expiry plus the clock tolerance is set EXPIRED, its PROMISED amount released to the issuer's AVAILABLE, and a risk flag recorded. Each PLC's own workflow expires it on its timer anyway; this is the operator's lever. 200 with the expired token ids when the sweep ends within a few seconds, else 202 with the run id to follow it in the Temporal UI.",
        security,
        response: {
          200: z.object({ run_id: z.string().uuid(), workflow_id: z.string(), status: z.enum(['COMPLETED', 'PARTIAL']), expired: z.number().int(), token_ids: z.array(z.string()) }),
          202: z.object({ run_id: z.string().uuid(), workflow_id: z.string(), status: z.literal('RUNNING') }),
          ...adminErrors,
        },
      },
    },
    async (request, reply) => {
      const runId = randomUUID();
      const workflowId = `expire-tokens-${runId}`;
      const handle = await temporal.workflow.start<typeof expireTokensWorkflow>('expireTokensWorkflow', {
        workflowId,
        taskQueue: config.TEMPORAL_TASK_QUEUE,
        args: [{ runId, graceMs: config.CLOCK_TOLERANCE_MS, batchSize: 100, batchesMax: 1000 }],
        typedSearchAttributes: [
          { key: referenceIdKey, value: runId },
          { key: businessStatusKey, value: 'RUNNING' },
        ],
      });
      request.log.info({ workflow_id: workflowId, admin: request.admin?.username }, 'expire-tokens sweep started');
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<null>((resolve) => {
        timer = setTimeout(() => resolve(null), sweepWaitMs);
      });
      // A deliberate wait longer than the request's Temporal deadline: its own deadline, past the race's end.
      const outcome = withTemporalDeadline(temporal, Date.now() + sweepWaitMs + 1000, () => handle.result());
      const result = await Promise.race([outcome, timeout]).finally(() => clearTimeout(timer));
      outcome.catch(() => {});
      if (result === null) return reply.code(202).send({ run_id: runId, workflow_id: workflowId, status: 'RUNNING' as const });
      return {
        run_id: runId,
        workflow_id: workflowId,
        status: result.complete ? ('COMPLETED' as const) : ('PARTIAL' as const),
        expired: result.expiredTokenIds.length,
        token_ids: result.expiredTokenIds,
      };
    },
  );

  routes.get(
    '/generate-keypair',
    {
      schema: {
        tags: ['admin: plc'],
        summary: 'Generate an Ed25519 key pair for testing (never use it for real money: the private key travelled over the network)',
        description:
          'A fresh Ed25519 key pair as hex, for trying the protocol by hand. A wallet makes its keys on the device (`npm run wallet -- init`); a key made here is known to the server and must never hold real value.',
        security,
        response: {
          200: z.object({ public_key: z.string(), private_key: z.string(), algorithm: z.literal('Ed25519'), warning: z.string() }),
          ...adminErrors,
        },
      },
    },
    async () => {
      const keys = generateKeyPair();
      return {
        public_key: bytesToHex(keys.publicKey),
        private_key: bytesToHex(keys.secretKey),
        algorithm: 'Ed25519' as const,
        warning: 'for testing only: a private key generated by a server is known to that server',
      };
    },
  );
}
