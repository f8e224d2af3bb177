import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import {
  finishCharge,
  getCharge,
  hasPaymentInstructions,
  openCharge,
  recordGatewayCustomer,
  recordGatewayPayment,
  recordGatewayStatus,
  recordPaymentInstructions,
  type ChargeBillingType,
  type ChargeRow,
  type ChargeStatus,
} from '../db/charges.ts';
import type { Pool } from '../db/pool.ts';
import { gatewayIdempotencyKey, isGatewayError, type GatewayClient, type GatewayError } from '../gateway/index.ts';
import { refusalsAsFailures } from './failures.ts';

/**
 * The charge workflow's activities (docs/charges.md): open (row + CHARGE_CREATED, a local
 * activity answered inside the API's update), the gateway setup (customer, charge, Pix QR code or
 * Boleto lines; every create idempotent by the charge id), reading and cancelling the gateway
 * charge, and finishing (settle or fail, each with its booking).
 */

export interface OpenChargeInput {
  chargeId: string;
  ownerId: string;
  /** Centavos, as a decimal string (workflow payloads are JSON). */
  amountMinor: string;
  billingType: ChargeBillingType;
  payer: { name: string; cpfCnpj: string | null; email: string | null };
  description: string | null;
  deviceId: string | null;
  /** SHA-256 (hex) of the request, to refuse the same Idempotency-Key with another body. */
  requestHash: string;
  /** The due date is today (the gateway's calendar) plus this many days. */
  dueDays: number;
}

/** What the workflow keeps of a charge: small (the QR image stays in the database). */
export interface ChargeState {
  chargeId: string;
  ownerId: string;
  status: ChargeStatus;
  billingType: ChargeBillingType;
  amountMinor: string;
  dueDate: string;
  gatewayPaymentId: string | null;
  gatewayStatus: string | null;
  /** The payer has what they need to pay (QR code or digitable line). */
  ready: boolean;
  failureReason: string | null;
}

export function toChargeState(row: ChargeRow): ChargeState {
  return {
    chargeId: row.id,
    ownerId: row.owner_id,
    status: row.status,
    billingType: row.billing_type,
    amountMinor: row.amount_minor.toString(),
    dueDate: row.due_date,
    gatewayPaymentId: row.gateway_payment_id,
    gatewayStatus: row.gateway_status,
    ready: hasPaymentInstructions(row),
    failureReason: row.failure_reason,
  };
}

export type GatewaySetupResult =
  | { kind: 'done'; state: ChargeState }
  /** The gateway refused (a non-retryable answer): the charge will never be payable. */
  | { kind: 'refused'; code: string; reason: string; gatewayStatus: string | null };

/** The gateway's calendar date (America/Sao_Paulo) `plusDays` days after `nowMs`, as YYYY-MM-DD. */
export function gatewayCalendarDate(nowMs: number, plusDays: number): string {
  const today = new Intl.DateTimeFormat('en-CA', { timeZone: 'America/Sao_Paulo', year: 'numeric', month: '2-digit', day: '2-digit' }).format(
    new Date(nowMs),
  );
  return new Date(Date.parse(`${today}T00:00:00Z`) + plusDays * 86_400_000).toISOString().slice(0, 10);
}

/** A refusal as the API may show it: the gateway's code and its first description, never a URL or key. */
function refusalReason(error: GatewayError): string {
  const description = error.errors[0]?.description ?? error.message;
  return `${error.code}: ${description}`.slice(0, 300);
}

function signal(): AbortSignal | undefined {
  try {
    return Context.current().cancellationSignal;
  } catch {
    return undefined;
  }
}

export function createChargeActivities(deps: { pool: Pool; gateway: GatewayClient }) {
  const { pool, gateway } = deps;

  async function load(chargeId: string): Promise<ChargeRow> {
    const row = await getCharge(pool, chargeId);
    if (row === null) throw ApplicationFailure.nonRetryable(`no charge ${chargeId}`, 'CHARGE_NOT_FOUND');
    return row;
  }

  /** A non-retryable gateway answer ends the retries of the calling activity at once. */
  function asFailure(error: unknown): unknown {
    if (isGatewayError(error) && !error.retryable) {
      return ApplicationFailure.create({ type: 'GATEWAY_REFUSED', message: refusalReason(error), nonRetryable: true });
    }
    return error;
  }

  return {
    /** Local activity of the create update: the row (PENDING) and CHARGE_CREATED, once per charge id. */
    async openCharge(input: OpenChargeInput): Promise<{ created: boolean; state: ChargeState }> {
      return refusalsAsFailures(async () => {
        const result = await openCharge(pool, {
          chargeId: input.chargeId,
          ownerId: input.ownerId,
          amountMinor: BigInt(input.amountMinor),
          billingType: input.billingType,
          dueDate: gatewayCalendarDate(Date.now(), input.dueDays),
          requestHash: input.requestHash,
          payer: input.payer,
          description: input.description,
          deviceId: input.deviceId,
        });
        return { created: result.created, state: toChargeState(result.charge) };
      });
    },

    /**
     * Creates the gateway customer and charge and fetches the payment instructions, storing each
     * as it comes. Every create carries an idempotency key derived from the charge id, so a retry
     * (a lost answer, a crashed worker) gets the same customer and charge back. A refusal is
     * returned, not thrown: the workflow fails the charge; anything retryable is thrown.
     */
    async setupGatewayCharge(input: { chargeId: string }): Promise<GatewaySetupResult> {
      const options = { signal: signal() };
      let row = await load(input.chargeId);
      if (row.status !== 'PENDING' || hasPaymentInstructions(row)) return { kind: 'done', state: toChargeState(row) };
      try {
        if (row.gateway_customer_id === null) {
          const customer = await gateway.createCustomer(
            {
              idempotencyKey: gatewayIdempotencyKey('customer', row.id),
              name: row.payer_name ?? row.owner_id,
              ...(row.payer_cpf_cnpj === null ? {} : { cpfCnpj: row.payer_cpf_cnpj }),
              ...(row.payer_email === null ? {} : { email: row.payer_email }),
              externalReference: row.owner_id,
            },
            options,
          );
          row = await recordGatewayCustomer(pool, row.id, customer.id);
        }
        if (row.gateway_payment_id === null) {
          const payment = await gateway.createPayment(
            {
              idempotencyKey: gatewayIdempotencyKey('charge', row.id),
              customerId: row.gateway_customer_id as string,
              billingType: row.billing_type,
              amountMinor: row.amount_minor,
              dueDate: row.due_date,
              ...(row.description === null ? {} : { description: row.description }),
              externalReference: row.id,
            },
            options,
          );
          row = await recordGatewayPayment(pool, row.id, payment.id, payment.status);
        }
        const paymentId = row.gateway_payment_id as string;
        if (row.billing_type === 'PIX') {
          const qr = await gateway.getPixQrCode(paymentId, options);
          row = await recordPaymentInstructions(pool, row.id, { kind: 'PIX', payload: qr.payload, imageBase64: qr.encodedImage });
        } else {
          const field = await gateway.getBoletoIdentificationField(paymentId, options);
          row = await recordPaymentInstructions(pool, row.id, { kind: 'BOLETO', digitableLine: field.identificationField, barCode: field.barCode });
        }
        return { kind: 'done', state: toChargeState(row) };
      } catch (error) {
        if (!isGatewayError(error) || error.retryable) throw error;
        let gatewayStatus: string | null = null;
        if (row.gateway_payment_id !== null) {
          // The charge exists but cannot be completed: take it off the payer's reach (best effort).
          gatewayStatus = await gateway.cancelPayment(row.gateway_payment_id, options).then(
            () => 'DELETED',
            () => null,
          );
        }
        return { kind: 'refused', code: error.code, reason: refusalReason(error), gatewayStatus };
      }
    },

    /**
     * After the gateway stayed unavailable through every retry: cancels any charge the gateway
     * made for us whose answer we never got (found by externalReference), best effort.
     */
    async abandonGatewayCharge(input: { chargeId: string }): Promise<{ cancelled: number }> {
      const options = { signal: signal() };
      const page = await gateway.listPayments({ externalReference: input.chargeId, limit: 10 }, options);
      let cancelled = 0;
      for (const payment of page.items) {
        if (payment.status !== 'PENDING' && payment.status !== 'OVERDUE') continue;
        await gateway.cancelPayment(payment.id, options);
        cancelled += 1;
      }
      return { cancelled };
    },

    /** The gateway's current status of the charge (the fallback when no webhook decided it). */
    async readChargePaymentStatus(input: { chargeId: string }): Promise<{ status: string }> {
      const row = await load(input.chargeId);
      if (row.gateway_payment_id === null) return { status: 'DELETED' };
      try {
        const payment = await gateway.getPayment(row.gateway_payment_id, { signal: signal() });
        return { status: payment.status };
      } catch (error) {
        throw asFailure(error);
      }
    },

    /**
     * Cancels the gateway charge before the charge is failed, so that nobody can pay it after.
     * The gateway refuses to cancel a charge that is paid (or refunded): the current status is
     * then read and returned, and the workflow settles instead.
     */
    async cancelGatewayCharge(input: { chargeId: string }): Promise<{ status: string }> {
      const row = await load(input.chargeId);
      if (row.gateway_payment_id === null) return { status: 'DELETED' };
      const options = { signal: signal() };
      try {
        await gateway.cancelPayment(row.gateway_payment_id, options);
        return { status: 'DELETED' };
      } catch (error) {
        if (!isGatewayError(error) || error.retryable) throw error;
        try {
          const payment = await gateway.getPayment(row.gateway_payment_id, options);
          return { status: payment.status };
        } catch (readError) {
          throw asFailure(readError);
        }
      }
    },

    async settleCharge(input: { chargeId: string; gatewayStatus: string }): Promise<ChargeState> {
      return refusalsAsFailures(async () => {
        const result = await finishCharge(pool, input.chargeId, { status: 'SETTLED', gatewayStatus: input.gatewayStatus });
        return toChargeState(result.charge);
      });
    },

    async failCharge(input: { chargeId: string; gatewayStatus: string | null; reason: string }): Promise<ChargeState> {
      return refusalsAsFailures(async () => {
        const result = await finishCharge(pool, input.chargeId, { status: 'FAILED', gatewayStatus: input.gatewayStatus, reason: input.reason });
        return toChargeState(result.charge);
      });
    },

    /** A later gateway status of a finished charge (CONFIRMED, REFUNDED after settlement): recorded, no money moves. */
    async recordChargeGatewayStatus(input: { chargeId: string; gatewayStatus: string }): Promise<ChargeState> {
      return toChargeState(await recordGatewayStatus(pool, input.chargeId, input.gatewayStatus));
    },
  };
}

export type ChargeActivities = ReturnType<typeof createChargeActivities>;
