import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { examplePlcPayloadBase64, examplePlcTransferred, exampleRedeemAuthorization, exampleRedemptionId, exampleTokenId } from '../schemas/examples.ts';
import { getRedemption, listRedemptions, type RedemptionRow } from '../../db/redemptions.ts';
import { DomainError } from '../../src/errors.ts';
import { payoutRailOf } from '../../src/settlement/payout-destination.ts';
import {
  chainHeadHash,
  currentBearer,
  hexToBytes,
  isProtocolError,
  plcFromJson,
  plcJsonSchema,
  redeemAuthorizationFromJson,
  type Plc,
  type RedeemAuthorization,
} from '../../src/protocol/index.ts';
import { deviceIdOf, deviceRateLimit } from '../device-id.ts';
import { idempotentObjectId } from '../plugins/idempotency.ts';
import { adminErrors, errorResponse, pageQuery, standardErrors } from '../schemas/common.ts';
import { idempotencyKeyHeader } from '../schemas/ledger.ts';
import { money } from '../schemas/money.ts';
import { deviceIdSchema } from '../schemas/plc.ts';
import { redeemPlcRequest, redemptionResponse, redemptionStatusSchema, settlementRequest } from '../schemas/redemption.ts';

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
    status_url: `/api/v1/redemptions/${row.id}`,
    created_at: row.created_at.toISOString(),
    finished_at: row.finished_at?.toISOString() ?? null,
  };
}

const refusals = { 404: errorResponse, 409: errorResponse, 429: errorResponse, 503: errorResponse, ...standardErrors };

/** Redemption: the bearer's payout of a PLC (a Pix transfer, or the payment of a boleto), and the admin's view of redemptions. */
export async function redeemRoutes(app: FastifyInstance): Promise<void> {
  const routes = app.withTypeProvider<ZodTypeProvider>();
  const { pool, config } = app.deps;
  const rateLimit = deviceRateLimit('redeem', config.RATE_LIMIT_REDEEM_PER_MINUTE);

  const { redemptions } = app.services;

  async function redeem(request: FastifyRequest, plc: Plc, authorization: RedeemAuthorization, field: 'plc' | 'plc_payload') {
    const route = field === 'plc' ? 'redeem' : 'settlements';
    // With an Idempotency-Key the redemption's id is derived from it: a retry finds what the first attempt opened.
    const redemptionId = idempotentObjectId(request);
    return toRedemptionResponse(await redemptions.openRedemption({ plc, authorization, field, route, deviceId: deviceIdOf(request) ?? '-', redemptionId }));
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
        summary: "Redeem a PLC: the bearer is paid out over Pix, or the bearer's boleto is paid; answers once the redemption is open (PENDING_PAYMENT)",
        description:
          "The current bearer presents the PLC with its full chain and a redeem authorisation it signed (token, chain head, rail, destination, timestamp; docs/protocol.md 9.2). Rail `pix`: the destination is a Pix key, paid by a Pix transfer. Rail `boleto`: the destination is a boleto's digitable line, digits only (47: bank slip, 48: collection slip), whose check digits must hold and whose written amount, if any, must be the payout (the PLC's amount less the fee: a bill is paid in full; a line with an open amount is paid the payout), paid by the gateway's bill payment; the PLC must be in BRL. The chain is verified, the authorisation must be the bearer's and fresh, and the PLC must not be redeemed already through any fork of its chain. The redemption workflow (`redemption-<id>`) books the bearer's PENDING, answers with the redemption in PENDING_PAYMENT, then pays out through the gateway and settles (SETTLED, PLC REDEEMED) or reverts (FAILED) on the gateway's answer; follow it at `status_url`. With an `Idempotency-Key` the redemption's id is derived from the key and the body: a retry with both the same answers the redemption its first attempt opened, in its current state, even when that attempt timed out (503) or lost its answer (docs/protocol.md 9.4); the same authorisation under another key is `AUTHORIZATION_REPLAYED`. The fee is the one of the fee schedule version the bearer consented to (`POST /api/v1/fees/consent`; docs/limits-and-fees.md); the payout is the amount less the fee. Refusals: 409 `PLC_ALREADY_REDEEMED`, `DOUBLE_SPEND_DETECTED`, `NOT_CURRENT_BEARER`, `PLC_NOT_REDEEMABLE`, `PLC_EXPIRED`, `FEE_CONSENT_REQUIRED` (a fee the bearer has not consented to; nothing booked), `FEE_EXCEEDS_AMOUNT`; 422 `PLC_INVALID.<reason>`, `SIGNATURE_INVALID`, `AUTHORIZATION_STALE`, `UNSUPPORTED_RAIL` (a rail other than pix and boleto, or a pix destination that is not a Pix key), `BOLETO_INVALID.<reason>` (not_digits, wrong_length, bad_check_digit, unsupported_currency, not_a_collection_slip, not_brl), `BOLETO_AMOUNT_MISMATCH`; 404 `PLC_NOT_FOUND`.",
        headers,
        body: redeemPlcRequest,
        requestExample: { body: { plc: examplePlcTransferred, authorization: exampleRedeemAuthorization } },
        response: { 200: redemptionResponse, ...refusals },
      },
      config: { ...rateLimit, idempotency: { scope: 'redeem' } },
    },
    async (request) => {
      const plc = plcFromJson(request.body.plc);
      const { authorization } = request.body;
      const rail = payoutRailOf(authorization.settlement_rail, 'authorization.settlement_rail', { signed: true });
      return redeem(request, plc, redeemAuthorizationFromJson({ ...authorization, settlement_rail: rail }), 'plc');
    },
  );

  routes.post(
    '/settlements',
    {
      schema: {
        tags: ['redemption'],
        summary: 'Protocol-level redemption: plc_payload is the base64 PLC JSON; bearer_signature signs the redeem message',
        description:
          'The same operation as `POST /api/v1/redeem/`, in the protocol\'s integrator shape: the PLC as base64 JSON, the redeem authorisation spelled out field by field (the bearer and chain head are those of the payload); `destination` is `{pix_key}` for rail pix, `{boleto_line}` (the digitable line, digits only) for rail boleto (422 `UNSUPPORTED_RAIL` when it does not fit the rail); `settlement_rail` is `pix` or `boleto` (`PIX` and `BOLETO` are read as those; any other rail, `ted` say, is 422 `UNSUPPORTED_RAIL`). Same checks, same answer, same Idempotency-Key scope.',
        headers,
        body: settlementRequest,
        requestExample: {
          body: {
            plc_id: exampleTokenId,
            plc_payload: examplePlcPayloadBase64,
            settlement_rail: 'pix',
            destination: { pix_key: exampleRedeemAuthorization.destination },
            bearer_signature: exampleRedeemAuthorization.signature,
            timestamp_ms: exampleRedeemAuthorization.timestamp_ms,
          },
        },
        response: { 200: redemptionResponse, ...refusals },
      },
      config: { ...rateLimit, idempotency: { scope: 'redeem' } },
    },
    async (request) => {
        let json: unknown;
        try {
          json = JSON.parse(Buffer.from(request.body.plc_payload, 'base64').toString('utf8'));
        } catch {
          throw new DomainError('PLC_INVALID', 'plc_payload is not base64 of a JSON document', { field: 'plc_payload' });
        }
        const plc = parse(json, 'plc_payload');
        if (plc.commitment.tokenId !== request.body.plc_id) throw new DomainError('PLC_MISMATCH', 'plc_id is not the payload token id');
        const { destination } = request.body;
        const rail = payoutRailOf(request.body.settlement_rail, 'settlement_rail', { signed: false });
        const destinationText = 'pix_key' in destination ? destination.pix_key : destination.boleto_line;
        if (('pix_key' in destination ? 'pix' : 'boleto') !== rail) {
          throw new DomainError('UNSUPPORTED_RAIL', 'the destination does not fit the rail: pix_key for pix, boleto_line for boleto', { field: 'destination' });
        }
        const authorization: RedeemAuthorization = {
          tokenId: request.body.plc_id,
          headHash: chainHeadHash(plc),
          settlementRail: rail,
          destination: destinationText,
          timestampMs: request.body.timestamp_ms,
          bearerPublicKey: currentBearer(plc),
          signature: hexToBytes(request.body.bearer_signature, 64),
        };
      return redeem(request, plc, authorization, 'plc_payload');
    },
  );

  routes.get(
    '/redemptions/:redemption_id',
    {
      schema: {
        tags: ['redemption'],
        summary:
          "The bearer's view of one redemption (status, amounts, the gateway's transfer id once known), without admin rights: the redemption id, a random UUID v4 (or with an Idempotency-Key one derived from it and the body) only the redeem answer gives out, is the key",
        description:
          "What the bearer follows after `POST /api/v1/redeem/` or `POST /api/v1/settlements` (their answer's `status_url`): the redemption's status (PENDING_PAYMENT, then SETTLED, or FAILED with `failure_reason`, after which the PLC can be redeemed again with a newly signed authorisation), amount and fee, the masked destination, and the gateway's transfer id and status once the gateway has the payout. A read, counted in a rate limit of its own (the PLC routes' rate, per client address and `X-Device-ID`), so that following a redemption never uses up the bearer's redeem allowance. 404 `NOT_FOUND`: no redemption with this id.",
        params: z.object({ redemption_id: z.string().uuid() }),
        requestExample: { params: { redemption_id: exampleRedemptionId } },
        response: { 200: redemptionResponse, 404: errorResponse, 429: errorResponse, ...standardErrors },
      },
      config: deviceRateLimit('redemption-status', config.RATE_LIMIT_PLC_PER_MINUTE),
    },
    async (request) => {
      const row = await getRedemption(pool, request.params.redemption_id);
      if (row === null) throw new DomainError('NOT_FOUND', 'no such redemption');
      return toRedemptionResponse(row);
    },
  );

  routes.get(
    '/plc/:token_id/redemptions',
    {
      schema: {
        tags: ['redemption'],
        summary: "A PLC's redemptions, newest first, at most 20: how a bearer whose redeem answer was lost finds its redemption by the token id",
        description:
          "Every redemption opened for this PLC, newest first, at most 20 (a PLC has at most one in flight or settled; the others FAILED), each as `GET /api/v1/redemptions/{redemption_id}` answers it. A bearer whose redeem timed out or lost its answer finds its redemption here by the token id it holds (or retries with the same Idempotency-Key and body, which answers the same redemption: docs/protocol.md 9.4). An empty list when there is none, whether or not the PLC is known. Counted in the rate limit of the redemption status route.",
        params: z.object({ token_id: z.string().uuid() }),
        requestExample: { params: { token_id: exampleTokenId } },
        response: { 200: z.array(redemptionResponse), 429: errorResponse, ...standardErrors },
      },
      config: deviceRateLimit('redemption-status', config.RATE_LIMIT_PLC_PER_MINUTE),
    },
    async (request) => (await listRedemptions(pool, { tokenId: request.params.token_id }, { limit: 20, offset: 0 })).map(toRedemptionResponse),
  );

  routes.get(
    '/admin/redemptions',
    {
      onRequest: app.requireAdmin(),
      schema: {
        tags: ['admin: redemption'],
        summary: 'Redemptions, newest first, by status',
        description:
          'Every redemption, newest first, a page at a time, optionally only one status (PENDING_PAYMENT, SETTLED, FAILED): amount, bearer, masked destination, the gateway transfer and its status, the failure reason, and the workflow id.',
        security: [{ bearer: [] }],
        querystring: pageQuery.extend({ status: redemptionStatusSchema.optional() }),
        requestExample: { querystring: { status: 'PENDING_PAYMENT', limit: 50, offset: 0 } },
        response: { 200: z.array(redemptionResponse), ...adminErrors },
      },
    },
    async (request) => {
      const { status, limit, offset } = request.query;
      return (await listRedemptions(pool, { status }, { limit, offset })).map(toRedemptionResponse);
    },
  );
}
