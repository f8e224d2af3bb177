import { z } from 'zod';
import { b2bPlanIds } from '../../src/b2b/plans.ts';
import { feeTiers } from '../../src/fees/schedule.ts';
import { payoutRails } from '../../src/settlement/payout-destination.ts';
import { amountInputSchema, amountSchema, currencySchema, ownerIdSchema } from './money.ts';
import { keyDeviceIdSchema, keyPublicKeySchema, operationTimestampSchema, signatureSchema } from './security.ts';

/** Schemas of the spec's fee operations; the payloads the spec leaves unshown are ours (docs/limits-and-fees.md). */

/** The rail as every route answers it. */
export const feeRailSchema = z.enum(payoutRails).describe('the payout rail: pix or boleto');
/** The rail as the estimate reads it: pix or boleto, PIX and BOLETO read as those; any other is 422 UNSUPPORTED_RAIL (src/settlement/payout-destination.ts). */
const feeRailInput = z.string().min(1).max(40).describe('the payout rail: pix or boleto (PIX and BOLETO are read as those; any other rail is 422 UNSUPPORTED_RAIL)');
export const feeTierSchema = z.enum(feeTiers).describe('a reputation tier');
const scheduleVersionSchema = z.number().int().min(1).max(1_000_000).describe('a fee schedule version');

export const feeEstimateRequest = z.strictObject({
  amount: amountInputSchema,
  currency: currencySchema.default('BRL'),
  rail: feeRailInput,
  owner_id: ownerIdSchema
    .optional()
    .describe("the owner paid out (a bearer's public key in hex): its tier and the version it consented to price the estimate"),
  tier: feeTierSchema.optional().describe("price for this tier instead of the owner's (without owner_id the default is BASIC)"),
  schedule_version: scheduleVersionSchema.optional().describe("price by this version instead of the owner's consented or the current one"),
});

const feeRuleView = z.object({
  rail: feeRailSchema,
  tier: feeTierSchema.nullable().describe('null: every tier without a rule of its own'),
  fixed: amountSchema,
  rate_bps: z.number().int(),
  min: amountSchema,
  max: amountSchema.nullable(),
});

export const feeEstimateResponse = z
  .object({
    amount: amountSchema,
    currency: currencySchema,
    rail: feeRailSchema,
    owner_id: z.string().nullable(),
    tier: feeTierSchema,
    schedule_version: z.number().int(),
    fee: amountSchema,
    net_amount: amountSchema.describe('what the payout pays: amount - fee'),
    fixed_part: amountSchema,
    proportional_part: amountSchema.describe('amount x rate_bps / 10,000, rounded half up to the minor unit'),
    bound: z.enum(['MIN', 'MAX', 'AMOUNT']).nullable().describe('the bound that decided the fee, if any'),
    rule: feeRuleView,
    consented_version: z.number().int().nullable().describe("the version of the owner's consent in force, null when none"),
    consent_required: z.boolean().describe('true: a redemption of this amount would be refused (FEE_CONSENT_REQUIRED) until the owner consents'),
  })
  .meta({ id: 'FeeEstimateResponse' });

export const feeScheduleQuery = z.object({
  version: z.coerce.number().int().min(1).max(1_000_000).optional().describe('a version; default the current one'),
});

export const feeScheduleResponse = z.object({
  version: z.number().int(),
  current_version: z.number().int(),
  description: z.string(),
  published_at: z.string(),
  rounding: z.string(),
  rules: z.array(feeRuleView),
  versions: z.array(z.object({ version: z.number().int(), description: z.string(), published_at: z.string() })).describe('the latest 20 versions, newest first'),
});

export const feeConsentRequest = z.strictObject({
  public_key: keyPublicKeySchema.describe("the owner's key (the owner of its redemptions), which signs the consent"),
  schedule_version: scheduleVersionSchema,
  device_id: keyDeviceIdSchema,
  operation_timestamp: operationTimestampSchema,
  device_signature: signatureSchema.describe('Ed25519 over svc:fee-consent:{device_id}:{public_key}:{schedule_version}:{operation_timestamp}'),
});

export const feeConsentResponse = z.object({
  owner_id: z.string(),
  schedule_version: z.number().int(),
  device_id: z.string().describe('the device of the first consent to this version'),
  consented_at: z.string().describe('when the first consent to this version was recorded'),
  created: z.boolean().describe('false: this consent was recorded before and is answered as it was'),
  in_force: z.boolean().describe("true when this version is the owner's consent in force (its latest)"),
});

export const b2bQuoteRequest = z.strictObject({
  monthly_volume: z.number().int().min(1).max(100_000_000).describe('redemptions expected a month'),
  average_amount: amountInputSchema.describe('average redeemed amount, BRL, e.g. "42.50"'),
  plan: z.enum(b2bPlanIds).optional().describe('one plan; default every plan'),
});

const b2bPlanQuoteView = z.object({
  plan: z.enum(b2bPlanIds),
  name: z.string(),
  available: z.boolean(),
  reason: z.string().nullable().describe('why the plan does not take this volume'),
  monthly_fee: amountSchema,
  band: z.object({ from_monthly_count: z.number().int(), fixed: amountSchema, rate_bps: z.number().int() }).nullable(),
  per_redemption: amountSchema.nullable(),
  usage: amountSchema.nullable().describe('per_redemption x monthly_volume'),
  total_monthly: amountSchema.nullable().describe('monthly_fee + usage'),
});

export const b2bQuoteResponse = z.object({
  quote_id: z.string().uuid(),
  created_at: z.string(),
  valid_until: z.string(),
  currency: z.literal('BRL'),
  monthly_volume: z.number().int(),
  average_amount: amountSchema,
  plans: z.array(b2bPlanQuoteView),
  cheapest_plan: z.enum(b2bPlanIds).nullable(),
});
