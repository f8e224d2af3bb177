import { createHash } from 'node:crypto';
import { WithStartWorkflowOperation } from '@temporalio/client';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { examplePubkeys } from '../schemas/examples.ts';
import { getCharge, getChargeByPaymentId, hasPaymentInstructions, type ChargeBillingType, type ChargeRow } from '../../db/charges.ts';
import { isGatewayError } from '../../gateway/index.ts';
import { DomainError } from '../../src/errors.ts';
import type { chargeWorkflow } from '../../workflows/charge.ts';
import { createChargeUpdate } from '../../workflows/charge-signals.ts';
import { businessStatusKey, ownerIdKey } from '../../workflows/search-attributes.ts';
import { deviceIdOf, deviceRateLimit } from '../device-id.ts';
import {
  boletoRedemptionResponse,
  chargePaymentStatusResponse,
  paymentIdParams,
  pixRedemptionResponse,
  redemptionRequest,
  type RedemptionRequest,
} from '../schemas/charges.ts';
import { errorResponse, standardErrors } from '../schemas/common.ts';
import { idempotencyKeyHeader } from '../schemas/ledger.ts';
import { money, parseMoney } from '../schemas/money.ts';
import { deviceIdSchema } from '../schemas/plc.ts';
import { withDomainErrors } from '../../services/temporal.ts';

/**
 * The charge id is a name-based UUID (version 5, SHA-1, RFC 9562) of the client's
 * Idempotency-Key in this namespace: the same key always names the same charge and so the same
 * workflow (`charge-<charge_id>`), whichever API replica answers and however long after.
 */
const chargeIdNamespace = '3b0f6f1e-8f43-4d6c-9a57-2f1c8e0d4a61';

export function chargeIdForKey(idempotencyKey: string): string {
  const digest = createHash('sha1')
    .update(Buffer.from(chargeIdNamespace.replace(/-/g, ''), 'hex'))
    .update(`charge:${idempotencyKey}`, 'utf8')
    .digest()
    .subarray(0, 16);
  digest.writeUInt8((digest.readUInt8(6) & 0x0f) | 0x50, 6);
  digest.writeUInt8((digest.readUInt8(8) & 0x3f) | 0x80, 8);
  const hex = digest.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20, 32)}`;
}

function isoOrNull(date: Date | null): string | null {
  return date === null ? null : date.toISOString();
}

function commonFields(row: ChargeRow) {
  if (row.gateway_payment_id === null) throw new Error(`charge ${row.id} has no gateway payment`);
  return {
    charge_id: row.id,
    payment_id: row.gateway_payment_id,
    status: row.status,
    gateway_status: row.gateway_status,
    owner_id: row.owner_id,
    amount: money(row.amount_minor, row.currency),
    currency: row.currency,
    due_date: row.due_date,
    workflow_id: `charge-${row.id}`,
    created_at: row.created_at.toISOString(),
  };
}

export function toPixRedemptionResponse(row: ChargeRow): z.infer<typeof pixRedemptionResponse> {
  if (row.billing_type !== 'PIX' || row.pix_payload === null || row.pix_image_base64 === null) {
    throw new Error(`charge ${row.id} has no Pix QR code`);
  }
  return { ...commonFields(row), billing_type: 'PIX', pix: { payload: row.pix_payload, image_base64: row.pix_image_base64 } };
}

export function toBoletoRedemptionResponse(row: ChargeRow): z.infer<typeof boletoRedemptionResponse> {
  if (row.billing_type !== 'BOLETO' || row.boleto_line === null || row.boleto_bar_code === null) {
    throw new Error(`charge ${row.id} has no Boleto lines`);
  }
  return { ...commonFields(row), billing_type: 'BOLETO', boleto: { digitable_line: row.boleto_line, bar_code: row.boleto_bar_code } };
}

/** What makes two requests "the same request" for one Idempotency-Key (and so one charge). */
function requestHash(billingType: ChargeBillingType, body: RedemptionRequest, amountMinor: bigint): string {
  const canonical = [
    billingType,
    body.owner_id,
    amountMinor.toString(),
    'BRL',
    body.customer.name,
    body.customer.cpf_cnpj ?? null,
    body.customer.email ?? null,
    body.description ?? null,
  ];
  return createHash('sha256').update(JSON.stringify(canonical)).digest('hex');
}

/** The request example of both charge routes. */
const chargeExample = {
  owner_id: examplePubkeys.alice,
  amount: '150.00',
  currency: 'BRL',
  customer: { name: 'Maria Silva', cpf_cnpj: '52998224725', email: 'maria@example.com' },
  description: 'Wallet top-up',
};

const refusals = {
  409: errorResponse,
  429: errorResponse,
  502: errorResponse,
  503: errorResponse,
  ...standardErrors,
};

/**
 * Charges (cash-in) through the payment gateway: the owner is credited when the payer pays the Pix
 * QR code or the Boleto (docs/charges.md). The answer comes from the charge workflow's create
 * update: the row and CHARGE_CREATED booked, the gateway charge made, its payment instructions
 * stored.
 */
export async function chargeRoutes(app: FastifyInstance): Promise<void> {
  const routes = app.withTypeProvider<ZodTypeProvider>();
  const { pool, temporal, config, gateway } = app.deps;
  const rateLimit = (groupId: string) => deviceRateLimit(groupId, config.RATE_LIMIT_REDEEM_PER_MINUTE);
  const headers = z.object({ 'idempotency-key': idempotencyKeyHeader, 'x-device-id': deviceIdSchema.optional() });

  async function createCharge(billingType: ChargeBillingType, request: FastifyRequest, body: RedemptionRequest, key: string): Promise<ChargeRow> {
    if (body.currency !== undefined && body.currency !== 'BRL') {
      throw new DomainError('UNSUPPORTED_CURRENCY', 'charges are in BRL only', { field: 'currency' });
    }
    const amountMinor = parseMoney(body.amount, 'BRL', { positive: true });
    const chargeId = chargeIdForKey(key);
    const ownerId = body.owner_id;
    const startWorkflowOperation = new WithStartWorkflowOperation<typeof chargeWorkflow>('chargeWorkflow', {
      workflowId: `charge-${chargeId}`,
      taskQueue: config.TEMPORAL_TASK_QUEUE,
      args: [{ chargeId, ownerId, billingType, ...(config.CHARGE_WAIT_OVERRIDE_MS === undefined ? {} : { waitOverrideMs: config.CHARGE_WAIT_OVERRIDE_MS }) }],
      // A retry while the charge is alive joins it; after it has ended, a new run answers the stored row.
      workflowIdConflictPolicy: 'USE_EXISTING',
      typedSearchAttributes: [
        { key: ownerIdKey, value: ownerId },
        { key: businessStatusKey, value: 'OPENING' },
      ],
    });
    await withDomainErrors(() =>
      temporal.workflow.executeUpdateWithStart(createChargeUpdate, {
        args: [
          {
            chargeId,
            ownerId,
            amountMinor: amountMinor.toString(),
            billingType,
            payer: { name: body.customer.name, cpfCnpj: body.customer.cpf_cnpj ?? null, email: body.customer.email ?? null },
            description: body.description ?? null,
            deviceId: deviceIdOf(request) ?? null,
            requestHash: requestHash(billingType, body, amountMinor),
            dueDays: config.CHARGE_DUE_DAYS,
          },
        ],
        startWorkflowOperation,
      }),
    );
    const row = await getCharge(pool, chargeId);
    if (row === null) throw new Error(`charge ${chargeId} was opened but is not in the database`);
    if (!hasPaymentInstructions(row)) {
      if (row.status === 'FAILED') {
        throw new DomainError('GATEWAY_REFUSED', 'the payment gateway refused the charge', {
          charge_id: row.id,
          failure_reason: row.failure_reason,
        });
      }
      throw new DomainError('GATEWAY_UNAVAILABLE', 'the payment gateway is unavailable; repeat the request with the same Idempotency-Key', {
        charge_id: row.id,
      });
    }
    return row;
  }

  routes.post(
    '/redemption/pix',
    {
      schema: {
        tags: ['redemption'],
        summary: 'Charge (cash-in) over Pix: answers the QR code; the owner is credited when the payment is confirmed by webhook',
        description:
          "Creates a charge at the payment gateway for the payer to pay by Pix and answers its QR code (payload and image). The charge workflow (`charge-<charge_id>`) books the expectation (owner PENDING), waits for the gateway's payment webhook, then credits the owner's AVAILABLE (SETTLED) or withdraws the expectation when the charge is overdue or refunded (FAILED); docs/charges.md. The Idempotency-Key is required and names the charge: a retry never creates a second one. 502 `GATEWAY_REFUSED` when the gateway refuses the charge, 503 `GATEWAY_UNAVAILABLE` when it cannot be reached (retry with the same key).",
        headers,
        body: redemptionRequest,
        requestExample: { body: chargeExample },
        response: { 200: pixRedemptionResponse, ...refusals },
      },
      config: { ...rateLimit('redemption-charge'), idempotency: { scope: 'charge-pix' } },
    },
    async (request) => toPixRedemptionResponse(await createCharge('PIX', request, request.body, request.headers['idempotency-key'])),
  );

  routes.post(
    '/redemption/boleto',
    {
      schema: {
        tags: ['redemption'],
        summary: 'Charge (cash-in) over Boleto: answers the digitable line; the owner is credited when the payment is confirmed by webhook',
        description:
          'The same as `POST /api/v1/redemption/pix`, paid by Boleto: answers the digitable line and bar code. A Boleto is confirmed days after it is paid; the charge stays PENDING until then, or FAILED once overdue.',
        headers,
        body: redemptionRequest,
        requestExample: { body: chargeExample },
        response: { 200: boletoRedemptionResponse, ...refusals },
      },
      config: { ...rateLimit('redemption-charge'), idempotency: { scope: 'charge-boleto' } },
    },
    async (request) => toBoletoRedemptionResponse(await createCharge('BOLETO', request, request.body, request.headers['idempotency-key'])),
  );

  routes.get(
    '/redemption/payment/:payment_id',
    {
      schema: {
        tags: ['redemption'],
        summary: "A charge by the gateway's payment id: our status and the gateway's current one",
        description:
          "The charge as recorded here (status, amount, due date, failure reason) and the gateway's current status of the payment, read live with a 3 s bound; when the gateway does not answer, `gateway.error` says why and the recorded status stands. 404 `CHARGE_NOT_FOUND`.",
        params: paymentIdParams,
        requestExample: { params: { payment_id: 'pay_8f3a2c1e9b7d' } },
        response: { 200: chargePaymentStatusResponse, 404: errorResponse, 429: errorResponse, ...standardErrors },
      },
      config: rateLimit('redemption-payment'),
    },
    async (request) => {
      const { payment_id: paymentId } = request.params;
      const row = await getChargeByPaymentId(pool, paymentId);
      if (row === null) throw new DomainError('CHARGE_NOT_FOUND', 'no charge with this payment id', { payment_id: paymentId });
      let live: { status: string | null; payment_date: string | null; confirmed_date: string | null; error: string | null };
      try {
        const payment = await gateway.getPayment(paymentId, { signal: AbortSignal.timeout(3000) });
        live = { status: payment.status, payment_date: payment.paymentDate, confirmed_date: payment.confirmedDate, error: null };
      } catch (error) {
        if (!isGatewayError(error)) throw error;
        request.log.warn({ payment_id: paymentId, code: error.code }, 'gateway status of a charge unavailable');
        live = { status: null, payment_date: null, confirmed_date: null, error: error.code };
      }
      return {
        charge_id: row.id,
        payment_id: paymentId,
        billing_type: row.billing_type,
        status: row.status,
        gateway_status: row.gateway_status,
        amount: money(row.amount_minor, row.currency),
        currency: row.currency,
        due_date: row.due_date,
        failure_reason: row.failure_reason,
        created_at: row.created_at.toISOString(),
        finished_at: isoOrNull(row.finished_at),
        gateway: live,
      };
    },
  );
}
