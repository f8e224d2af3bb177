import { randomUUID } from 'node:crypto';
import { WithStartWorkflowOperation } from '@temporalio/client';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { getRedemption, listRedemptions, type RedemptionRow } from '../../db/redemptions.ts';
import { nodeVerifyEd25519 } from '../../infra/ed25519-node.ts';
import { DomainError } from '../../src/errors.ts';
import { fromTransferRecord } from '../../src/plc/register-transfers.ts';
import {
  bytesToHex,
  chainHeadHash,
  checkFreshness,
  currentBearer,
  hexToBytes,
  isProtocolError,
  plcFromJson,
  plcJsonSchema,
  verifyPlc,
  verifyRedeem,
  withSignatureVerifier,
  type Plc,
  type RedeemAuthorization,
} from '../../src/protocol/index.ts';
import { pixKeyType } from '../../src/settlement/pix-key.ts';
import { openRedemptionUpdate, redemptionWorkflow } from '../../workflows/redemption.ts';
import { bearerIdKey, businessStatusKey, tokenIdKey } from '../../workflows/search-attributes.ts';
import { idempotent } from '../idempotency.ts';
import { adminErrors, errorResponse, pageQuery, standardErrors } from '../schemas/common.ts';
import { idempotencyKeyHeader } from '../schemas/ledger.ts';
import { money } from '../schemas/money.ts';
import { deviceIdSchema } from '../schemas/plc.ts';
import { redeemPlcRequest, redemptionResponse, redemptionStatusSchema, settlementRequest } from '../schemas/redemption.ts';
import { withDomainErrors } from '../temporal.ts';

function mask(destination: string): string {
  return destination.length <= 4 ? '****' : `${'*'.repeat(Math.min(destination.length - 4, 12))}${destination.slice(-4)}`;
}

export function toRedemptionResponse(row: RedemptionRow) {
  return {
    redemption_id: row.id,
    token_id: row.token_id,
    status: row.status,
    amount: money(row.amount_minor, row.currency),
    fee: money(row.fee_minor, row.currency),
    currency: row.currency,
    bearer_pubkey: row.bearer_pubkey,
    rail: row.rail,
    destination_masked: mask(row.destination),
    gateway_transfer_id: row.gateway_transfer_id,
    gateway_status: row.gateway_status,
    failure_reason: row.failure_reason,
    workflow_id: `redemption-${row.id}`,
    created_at: row.created_at.toISOString(),
    finished_at: row.finished_at?.toISOString() ?? null,
  };
}

const refusals = { 404: errorResponse, 409: errorResponse, 429: errorResponse, 503: errorResponse, ...standardErrors };

/** Redemption: the bearer's payout of a PLC over Pix, and the admin's view of redemptions. */
export async function redeemRoutes(app: FastifyInstance): Promise<void> {
  const routes = app.withTypeProvider<ZodTypeProvider>();
  const { pool, temporal, config } = app.deps;
  const toleranceMs = config.CLOCK_TOLERANCE_MS;
  const rateLimit = {
    rateLimit: {
      max: config.RATE_LIMIT_REDEEM_PER_MINUTE,
      timeWindow: 60_000,
      groupId: 'redeem',
      keyGenerator: (request: FastifyRequest) => `${request.ip}|${String(request.headers['x-device-id'] ?? '-')}`,
    },
  };

  async function redeem(request: FastifyRequest, reply: FastifyReply, plc: Plc, authorization: RedeemAuthorization, field: string) {
    const verification = verifyPlc(plc, { clockToleranceMs: toleranceMs, verifySignature: nodeVerifyEd25519 });
    if (!verification.ok) {
      throw new DomainError('PLC_INVALID', `the PLC does not verify: ${verification.reason}`, { field, reason: verification.reason, index: verification.index });
    }
    if (authorization.tokenId !== plc.commitment.tokenId) throw new DomainError('PLC_MISMATCH', 'the authorisation names another PLC');
    if (authorization.settlementRail !== 'pix') {
      throw new DomainError('UNSUPPORTED_RAIL', 'payouts are made over Pix only', { field: 'authorization.settlement_rail' });
    }
    const destinationType = pixKeyType(authorization.destination);
    if (destinationType === null) {
      throw new DomainError('UNSUPPORTED_RAIL', 'the destination is not a valid Pix key (CPF, CNPJ, e-mail, +55 phone or random key)', {
        field: 'authorization.destination',
      });
    }
    // The library's check with Node's Ed25519 underneath, as for the chain (infra/ed25519-node.ts).
    if (!withSignatureVerifier(nodeVerifyEd25519, () => verifyRedeem(authorization))) {
      throw new DomainError('SIGNATURE_INVALID', 'the redeem signature does not verify', { field: 'authorization.signature' });
    }
    if (!checkFreshness(authorization.timestampMs, Date.now(), toleranceMs).ok) {
      throw new DomainError('AUTHORIZATION_STALE', `the authorisation must be signed within ${toleranceMs} ms of now`, {
        field: 'authorization.timestamp_ms',
      });
    }
    const bearerPubkey = bytesToHex(currentBearer(plc));
    const headHash = bytesToHex(chainHeadHash(plc));
    if (bytesToHex(authorization.bearerPublicKey) !== bearerPubkey || bytesToHex(authorization.headHash) !== headHash) {
      throw new DomainError('NOT_CURRENT_BEARER', 'the authorisation is not signed by the bearer of the presented chain head', {
        token_id: plc.commitment.tokenId,
      });
    }
    const redemptionId = randomUUID();
    const tokenId = plc.commitment.tokenId;
    const workflowId = `redemption-${redemptionId}`;
    const startWorkflowOperation = new WithStartWorkflowOperation(redemptionWorkflow, {
      workflowId,
      taskQueue: config.TEMPORAL_TASK_QUEUE,
      args: [{ redemptionId, tokenId, webhookWaitMs: config.REDEMPTION_WEBHOOK_WAIT_MS }],
      workflowIdConflictPolicy: 'FAIL',
      typedSearchAttributes: [
        { key: tokenIdKey, value: tokenId },
        { key: bearerIdKey, value: bearerPubkey },
        { key: businessStatusKey, value: 'OPENING' },
      ],
    });
    await withDomainErrors(() =>
      temporal.workflow.executeUpdateWithStart(openRedemptionUpdate, {
        args: [
          {
            redemptionId,
            tokenId,
            bearerPubkey,
            headHash,
            destination: authorization.destination,
            destinationType,
            deviceId: String(request.headers['x-device-id'] ?? '-'),
            feeMinor: '0',
            presented: plc.transferChain.map(fromTransferRecord),
            expiryGraceMs: toleranceMs,
          },
        ],
        startWorkflowOperation,
      }),
    );
    const row = await getRedemption(pool, redemptionId);
    if (row === null) throw new Error(`redemption ${redemptionId} was opened but is not in the database`);
    void reply;
    return toRedemptionResponse(row);
  }

  function parse(json: unknown, field: string): Plc {
    try {
      return plcFromJson(plcJsonSchema.parse(json));
    } catch (error) {
      if (isProtocolError(error) || error instanceof z.ZodError) {
        throw new DomainError('PLC_INVALID', `the PLC payload is not a valid PLC: ${error.message.slice(0, 300)}`, { field });
      }
      throw error;
    }
  }

  const headers = z.object({ 'x-device-id': deviceIdSchema, 'idempotency-key': idempotencyKeyHeader.optional() });

  routes.post(
    '/redeem/',
    {
      schema: {
        tags: ['redemption'],
        summary: 'Redeem a PLC: the bearer is paid out over Pix; answers once the redemption is open (PENDING_PAYMENT)',
        headers,
        body: redeemPlcRequest,
        response: { 200: redemptionResponse, ...refusals },
      },
      config: rateLimit,
    },
    async (request, reply) =>
      idempotent(request, reply, { pool, scope: 'redeem', windowMs: config.IDEMPOTENCY_WINDOW_MS }, async () => {
        const plc = plcFromJson(request.body.plc);
        const a = request.body.authorization;
        const authorization: RedeemAuthorization = {
          tokenId: a.token_id,
          headHash: hexToBytes(a.head_hash, 32),
          settlementRail: a.settlement_rail,
          destination: a.destination,
          timestampMs: a.timestamp_ms,
          bearerPublicKey: hexToBytes(a.bearer_pubkey, 32),
          signature: hexToBytes(a.signature, 64),
        };
        return redeem(request, reply, plc, authorization, 'plc');
      }),
  );

  routes.post(
    '/settlements',
    {
      schema: {
        tags: ['redemption'],
        summary: 'Protocol-level redemption: plc_payload is the base64 PLC JSON; bearer_signature signs the redeem message',
        headers,
        body: settlementRequest,
        response: { 200: redemptionResponse, ...refusals },
      },
      config: rateLimit,
    },
    async (request, reply) =>
      idempotent(request, reply, { pool, scope: 'redeem', windowMs: config.IDEMPOTENCY_WINDOW_MS }, async () => {
        let json: unknown;
        try {
          json = JSON.parse(Buffer.from(request.body.plc_payload, 'base64').toString('utf8'));
        } catch {
          throw new DomainError('PLC_INVALID', 'plc_payload is not base64 of a JSON document', { field: 'plc_payload' });
        }
        const plc = parse(json, 'plc_payload');
        if (plc.commitment.tokenId !== request.body.plc_id) throw new DomainError('PLC_MISMATCH', 'plc_id is not the payload token id');
        const authorization: RedeemAuthorization = {
          tokenId: request.body.plc_id,
          headHash: chainHeadHash(plc),
          settlementRail: request.body.settlement_rail,
          destination: request.body.destination.pix_key,
          timestampMs: request.body.timestamp_ms,
          bearerPublicKey: currentBearer(plc),
          signature: hexToBytes(request.body.bearer_signature, 64),
        };
        return redeem(request, reply, plc, authorization, 'plc_payload');
      }),
  );

  routes.get(
    '/admin/redemptions',
    {
      onRequest: app.requireAdmin(),
      schema: {
        tags: ['admin: redemption'],
        summary: 'Redemptions, newest first, by status',
        security: [{ bearer: [] }],
        querystring: pageQuery.extend({ status: redemptionStatusSchema.optional() }),
        response: { 200: z.array(redemptionResponse), ...adminErrors },
      },
    },
    async (request) => {
      const { status, limit, offset } = request.query;
      return (await listRedemptions(pool, { status }, { limit, offset })).map(toRedemptionResponse);
    },
  );
}
