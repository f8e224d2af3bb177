import { z } from 'zod';
import { issueReceiptHexSchema, plcJsonSchema, transferRecordJsonSchema } from '../../src/protocol/index.ts';
import { plcStatuses } from '../../src/plc/lifecycle.ts';
import { amountSchema, currencySchema } from './money.ts';

export const deviceIdSchema = z
  .string()
  .regex(/^[A-Za-z0-9._:-]{1,128}$/, 'X-Device-ID: 1 to 128 characters of A-Z a-z 0-9 . _ : -')
  .meta({ examples: ['device-7f3a9c'] });

export const plcStatusSchema = z.enum(plcStatuses).meta({ id: 'PLCStatus' });
export const pubkeySchema = z.string().regex(/^[0-9a-f]{64}$/, 'expected 64 lowercase hex digits (Ed25519 public key)');
export const tokenIdParam = z.object({
  token_id: z
    .string()
    .regex(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/, 'expected a lowercase UUID v4'),
});

export const createPlcRequest = z.strictObject({ plc: plcJsonSchema }).describe('CreatePLCRequest: the issuer-signed PLC (docs/protocol.md), with an empty transfer_chain');

export const plcStatusResponse = z
  .object({
    token_id: z.string().uuid(),
    status: plcStatusSchema,
    amount: amountSchema,
    currency: currencySchema,
    issuer_pubkey: z.string(),
    bearer_pubkey: z.string(),
    chain_length: z.number().int(),
    head_hash: z.string(),
    commitment_hash: z.string(),
    created_at: z.string(),
    expires_at: z.string(),
    redemption_in_flight: z.boolean(),
    updated_at: z.string(),
  })
  .meta({ id: 'PLCStatusResponse' });

export const createPlcResponse = plcStatusResponse
  .extend({
    workflow_id: z.string(),
    issue_transaction_id: z.string().uuid(),
    created: z.boolean().describe('false when this PLC had already been created (a retry)'),
    issue_receipt: issueReceiptHexSchema.describe(
      "the service's issue receipt (docs/protocol.md section 19), 137 bytes in lowercase hex: its signature over the registered commitment, made once the amount was reserved. The wallet attaches it to the PLC (`issue_receipt` of the JSON form, key 11 of the compact form); an offline receiver refuses a PLC without a valid one",
    ),
  })
  .meta({ id: 'CreatePLCResponse' });

export const chainEntry = transferRecordJsonSchema
  .extend({ position: z.number().int(), registered_at: z.string() })
  .meta({ id: 'ChainEntry' });

export const transferPlcRequest = z
  .strictObject({
    plc: plcJsonSchema.optional().describe('the full PLC JSON with its transfer chain'),
    transport: z.string().max(4296).optional().describe('or the compact QR text form ("PLC2:...")'),
  })
  .refine((value) => (value.plc === undefined) !== (value.transport === undefined), {
    message: 'send exactly one of plc or transport',
  })
  .describe('TransferPLCRequest');

export const transferPlcResponse = z
  .object({
    token_id: z.string().uuid(),
    status: plcStatusSchema,
    chain_length: z.number().int(),
    bearer_pubkey: z.string(),
    head_hash: z.string(),
    appended: z.number().int().describe('records registered by this request (0: already known)'),
  })
  .meta({ id: 'TransferPLCResponse' });

export const cancelPlcResponse = z
  .object({
    token_id: z.string().uuid(),
    status: z.literal('CANCELLED'),
    released_amount: amountSchema,
    currency: currencySchema,
    transaction_id: z.string().uuid(),
  })
  .meta({ id: 'CancelPLCResponse' });
