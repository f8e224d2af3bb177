import { z } from 'zod';
import { amountInputSchema, amountSchema, currencySchema, ownerIdSchema } from './money.ts';

/**
 * Charges (cash-in) at the API edge: `POST /api/v1/redemption/pix`, `/boleto` and
 * `GET /api/v1/redemption/payment/{payment_id}` (docs/charges.md).
 */

const paymentIdPattern = /^[A-Za-z0-9_-]{1,100}$/;

export const chargePayerSchema = z
  .strictObject({
    name: z.string().min(1).max(200).regex(/\S/, 'name must not be blank').describe("the payer's name, as the gateway shows it"),
    cpf_cnpj: z
      .string()
      .regex(/^(\d{11}|\d{14})$/, 'cpf_cnpj: a CPF (11 digits) or CNPJ (14 digits), digits only')
      .optional()
      .describe("the payer's CPF or CNPJ, digits only; the gateway checks it (check digits, registry) and may refuse it"),
    email: z
      .string()
      .max(254)
      .regex(/^[^\s@]{1,64}@[^\s@]+\.[^\s@]{2,}$/, 'email: an e-mail address')
      .optional(),
  })
  .meta({ id: 'ChargePayer', description: 'Who pays: the gateway customer the charge is issued to' });

export const redemptionRequest = z
  .strictObject({
    owner_id: ownerIdSchema,
    amount: amountInputSchema,
    currency: currencySchema.optional().describe('BRL only (the default); any other currency is refused with 422'),
    customer: chargePayerSchema,
    description: z.string().max(500).optional().describe('shown to the payer'),
  })
  .meta({
    id: 'RedemptionRequest',
    description:
      'A charge (cash-in): the payer pays `amount` over Pix or Boleto and the owner is credited. Header `Idempotency-Key` is required: the key names the charge, so a retry never creates a second one.',
  });
export type RedemptionRequest = z.infer<typeof redemptionRequest>;

export const chargeStatusSchema = z
  .enum(['PENDING', 'SETTLED', 'FAILED'])
  .meta({ id: 'ChargeStatus', description: 'PENDING until paid (SETTLED, owner AVAILABLE credited) or failed (FAILED, expectation withdrawn)' });

const chargeFields = {
  charge_id: z.string().uuid().describe('our id of the charge; the workflow is charge-<charge_id>'),
  payment_id: z.string().describe("the gateway's id of the charge (pay_...)"),
  status: chargeStatusSchema,
  gateway_status: z.string().nullable().describe("the gateway's status as last recorded (PENDING, RECEIVED, CONFIRMED, OVERDUE, REFUNDED, DELETED, ...)"),
  owner_id: z.string(),
  amount: amountSchema,
  currency: z.literal('BRL'),
  due_date: z.string().describe('YYYY-MM-DD, the gateway calendar (America/Sao_Paulo)'),
  workflow_id: z.string(),
  created_at: z.string(),
};

export const pixRedemptionResponse = z
  .object({
    ...chargeFields,
    billing_type: z.literal('PIX'),
    pix: z.object({
      payload: z.string().describe('the Pix copy-and-paste code (BR Code, EMV)'),
      image_base64: z.string().describe('the QR code as a base64 PNG'),
    }),
  })
  .meta({ id: 'PixRedemptionResponse' });

export const boletoRedemptionResponse = z
  .object({
    ...chargeFields,
    billing_type: z.literal('BOLETO'),
    boleto: z.object({
      digitable_line: z.string().describe('the 47-digit digitable line ("linha digitável")'),
      bar_code: z.string().describe('the 44-digit bar code'),
    }),
  })
  .meta({ id: 'BoletoRedemptionResponse' });

export const paymentIdParams = z.object({
  payment_id: z.string().regex(paymentIdPattern, 'payment_id: 1 to 100 characters of A-Z a-z 0-9 _ -').describe("the gateway's charge id (pay_...)"),
});

export const chargePaymentStatusResponse = z
  .object({
    charge_id: z.string().uuid(),
    payment_id: z.string(),
    billing_type: z.enum(['PIX', 'BOLETO']),
    status: chargeStatusSchema,
    gateway_status: z.string().nullable().describe('the gateway status we recorded'),
    amount: amountSchema,
    currency: z.literal('BRL'),
    due_date: z.string(),
    failure_reason: z.string().nullable(),
    created_at: z.string(),
    finished_at: z.string().nullable(),
    gateway: z
      .object({
        status: z.string().nullable().describe("the gateway's current status (getPayment); null when it could not be asked"),
        payment_date: z.string().nullable(),
        confirmed_date: z.string().nullable(),
        error: z.string().nullable().describe("why the gateway could not be asked (the client's error code); null otherwise"),
      })
      .describe('asked live, at most 3 seconds'),
  })
  .meta({ id: 'ChargePaymentStatusResponse' });
