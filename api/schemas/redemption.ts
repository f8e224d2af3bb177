import { z } from 'zod';
import { plcJsonSchema, redeemAuthorizationJsonSchema } from '../../src/protocol/index.ts';
import { amountSchema, currencySchema } from './money.ts';

/**
 * The redeem authorisation as the routes read it: the protocol's schema with the rail left to the
 * route, so that an unknown rail (`ted`) answers 422 `UNSUPPORTED_RAIL` as documented rather than a
 * schema refusal (`payoutRailOf`, src/settlement/payout-destination.ts).
 */
export const redeemAuthorizationInput = redeemAuthorizationJsonSchema.extend({
  settlement_rail: z.string().min(1).max(40).describe('pix or boleto, as signed (any other: 422 UNSUPPORTED_RAIL)'),
});

export const redeemPlcRequest = z
  .strictObject({ plc: plcJsonSchema, authorization: redeemAuthorizationInput })
  .describe('RedeemPLCRequest: the PLC with its full chain and the bearer-signed redeem authorisation (docs/protocol.md)');

export const settlementRequest = z
  .strictObject({
    plc_id: z.string().uuid(),
    plc_payload: z.string().max(180_000).describe('the full PLC JSON, base64-encoded'),
    settlement_rail: z
      .string()
      .min(1)
      .max(40)
      .describe('pix or boleto (PIX and BOLETO are read as those; the redemption answers pix or boleto); any other rail: 422 UNSUPPORTED_RAIL'),
    destination: z
      .union([
        z.strictObject({ pix_key: z.string().min(1).max(320).describe('a Pix key as DICT stores it (docs/settlement.md, "Pix keys"), as signed') }),
        z.strictObject({ boleto_line: z.string().min(1).max(140).describe("the boleto's digitable line, digits only (47 or 48), as signed") }),
      ])
      .describe('pix_key for rail pix, boleto_line for rail boleto'),
    bearer_signature: z.string().regex(/^[0-9a-f]{128}$/, 'expected 128 lowercase hex digits'),
    timestamp_ms: z.number().int().min(0).describe('the signed timestamp of the redeem authorisation, ms since the epoch'),
  })
  .describe('The protocol-level settlement request: the redeem authorisation spelled out field by field');

export const redemptionStatusSchema = z.enum(['PENDING_PAYMENT', 'SETTLED', 'FAILED']).meta({ id: 'RedemptionStatus' });

export const redemptionResponse = z
  .object({
    redemption_id: z.string().uuid(),
    token_id: z.string().uuid(),
    status: redemptionStatusSchema,
    amount: amountSchema,
    fee: amountSchema,
    currency: currencySchema,
    bearer_pubkey: z.string(),
    rail: z.enum(['pix', 'boleto']),
    destination_masked: z.string(),
    gateway_transfer_id: z.string().nullable(),
    gateway_status: z.string().nullable(),
    failure_reason: z.string().nullable(),
    workflow_id: z.string(),
    status_url: z
      .string()
      .describe("where the bearer follows this redemption without admin rights: GET /api/v1/redemptions/{redemption_id} (the redemption id is the key)"),
    created_at: z.string(),
    finished_at: z.string().nullable(),
  })
  .meta({ id: 'RedeemPLCResponse' });
