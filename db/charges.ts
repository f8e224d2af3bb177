import { z } from 'zod';
import { DomainError } from '../src/errors.ts';
import { moneyModel } from '../src/ledger/money-model.ts';
import { bookFor } from './ledger.ts';
import { withTransaction, type Pool, type PoolClient, type Queryable } from './pool.ts';
import { maybeOne, one } from './sql.ts';
import { reportCommitted } from './committed.ts';
import { ledgerKeys } from '../src/ledger/keys.ts';

/**
 * Charges (cash-in, docs/charges.md): an owner asks to be paid over Pix or Boleto, the gateway
 * issues the charge, and the payer's payment credits the owner. Every transition is a guarded
 * statement under the row's lock, written in one transaction with its booking:
 *
 * - open: the row (PENDING) and CHARGE_CREATED (world PENDING -> owner PENDING);
 * - settle: PENDING -> SETTLED and CHARGE_SETTLED (owner PENDING -> AVAILABLE, world AVAILABLE ->
 *   world PENDING);
 * - fail: PENDING -> FAILED and CHARGE_FAILED (owner PENDING -> world PENDING).
 *
 * A final status never moves: settle and fail of a charge that is no longer PENDING answer the
 * row as it is and book nothing.
 */

export const chargeStatuses = ['PENDING', 'SETTLED', 'FAILED'] as const;
export type ChargeStatus = (typeof chargeStatuses)[number];
export const chargeBillingTypes = ['PIX', 'BOLETO'] as const;
export type ChargeBillingType = (typeof chargeBillingTypes)[number];

export const chargeRow = z.object({
  id: z.string().uuid(),
  owner_id: z.string(),
  amount_minor: z.bigint(),
  currency: z.literal('BRL'),
  billing_type: z.enum(chargeBillingTypes),
  status: z.enum(chargeStatuses),
  gateway_payment_id: z.string().nullable(),
  gateway_customer_id: z.string().nullable(),
  gateway_status: z.string().nullable(),
  /** YYYY-MM-DD (selected as text: a `date` must not pass through a time zone). */
  due_date: z.string().regex(/^\d{4}-\d{2}-\d{2}$/),
  pix_payload: z.string().nullable(),
  pix_image_base64: z.string().nullable(),
  boleto_line: z.string().nullable(),
  boleto_bar_code: z.string().nullable(),
  failure_reason: z.string().nullable(),
  created_tx_id: z.string().uuid().nullable(),
  settle_tx_id: z.string().uuid().nullable(),
  fail_tx_id: z.string().uuid().nullable(),
  device_id: z.string().nullable(),
  request_hash: z.string().nullable(),
  payer_name: z.string().nullable(),
  payer_cpf_cnpj: z.string().nullable(),
  payer_email: z.string().nullable(),
  description: z.string().nullable(),
  created_at: z.date(),
  updated_at: z.date(),
  finished_at: z.date().nullable(),
});
export type ChargeRow = z.infer<typeof chargeRow>;

const columns = `id, owner_id, amount_minor, currency, billing_type, status, gateway_payment_id, gateway_customer_id, gateway_status,
  to_char(due_date, 'YYYY-MM-DD') AS due_date, pix_payload, pix_image_base64, boleto_line, boleto_bar_code, failure_reason,
  created_tx_id, settle_tx_id, fail_tx_id, device_id, request_hash, payer_name, payer_cpf_cnpj, payer_email, description,
  created_at, updated_at, finished_at`;

/** Whether the payer has what they need to pay: the Pix QR code or the Boleto's digitable line. */
export function hasPaymentInstructions(row: ChargeRow): boolean {
  if (row.gateway_payment_id === null) return false;
  return row.billing_type === 'PIX' ? row.pix_payload !== null : row.boleto_line !== null;
}

export function getCharge(db: Queryable, id: string): Promise<ChargeRow | null> {
  return maybeOne(db, chargeRow, { name: 'charge-get', text: `SELECT ${columns} FROM charges WHERE id = $1`, values: [id] });
}

const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * The charge a gateway payment is about: the one that recorded the payment's id, else the one its
 * `externalReference` names (our charge id; an event can overtake our record of the payment id).
 */
export async function findChargeForPayment(db: Queryable, paymentId: string, externalReference: string | null): Promise<ChargeRow | null> {
  const byPayment = await getChargeByPaymentId(db, paymentId);
  if (byPayment !== null) return byPayment;
  if (externalReference === null || !uuidPattern.test(externalReference)) return null;
  return getCharge(db, externalReference.toLowerCase());
}

export function getChargeByPaymentId(db: Queryable, paymentId: string): Promise<ChargeRow | null> {
  return maybeOne(db, chargeRow, {
    name: 'charge-by-payment-id',
    text: `SELECT ${columns} FROM charges WHERE gateway_payment_id = $1`,
    values: [paymentId],
  });
}

export interface NewCharge {
  chargeId: string;
  ownerId: string;
  amountMinor: bigint;
  billingType: ChargeBillingType;
  /** YYYY-MM-DD, the gateway's calendar date. */
  dueDate: string;
  /** SHA-256 (hex) of the request: the same charge id with another request is refused. */
  requestHash: string;
  payer: { name: string; cpfCnpj: string | null; email: string | null };
  description: string | null;
  deviceId: string | null;
}

/**
 * Opens a charge: the row (PENDING) and CHARGE_CREATED, in one transaction. The charge id comes
 * from the client's Idempotency-Key, so a retry finds the row it created and answers it (created
 * false); the same id with another request is refused.
 */
export async function openCharge(pool: Pool, input: NewCharge): Promise<{ charge: ChargeRow; created: boolean }> {
  return withTransaction(pool, async (client) => {
    const existing = await lockCharge(client, input.chargeId);
    if (existing !== null) return { charge: sameRequest(existing, input), created: false };
    const posting = moneyModel.chargeCreated({ ownerId: input.ownerId, currency: 'BRL', amountMinor: input.amountMinor });
    const booked = await bookFor(client, { type: 'charge', id: input.chargeId }, ledgerKeys.chargeCreated.of(input.chargeId), posting, `${input.billingType} charge ${input.chargeId}`);
    const inserted = await maybeOne(client, chargeRow, {
      name: 'charge-insert',
      text: `INSERT INTO charges (id, owner_id, amount_minor, currency, billing_type, status, due_date, created_tx_id, device_id,
                                  request_hash, payer_name, payer_cpf_cnpj, payer_email, description)
             VALUES ($1, $2, $3, 'BRL', $4, 'PENDING', $5::date, $6, $7, $8, $9, $10, $11, $12)
             ON CONFLICT (id) DO NOTHING
             RETURNING ${columns}`,
      values: [
        input.chargeId,
        input.ownerId,
        input.amountMinor.toString(),
        input.billingType,
        input.dueDate,
        booked.transactionId,
        input.deviceId,
        input.requestHash,
        input.payer.name,
        input.payer.cpfCnpj,
        input.payer.email,
        input.description,
      ],
    });
    if (inserted !== null) {
      reportCommitted(client, { kind: 'charge', outcome: 'opened' });
      return { charge: inserted, created: true };
    }
    // A concurrent open of the same id won (its posting is the one ours found): answer its row.
    const raced = await lockCharge(client, input.chargeId);
    if (raced === null) throw new Error(`charge ${input.chargeId} neither inserted nor found`);
    return { charge: sameRequest(raced, input), created: false };
  });
}

function lockCharge(client: PoolClient, id: string): Promise<ChargeRow | null> {
  return maybeOne(client, chargeRow, { name: 'charge-lock', text: `SELECT ${columns} FROM charges WHERE id = $1 FOR UPDATE`, values: [id] });
}

function sameRequest(row: ChargeRow, input: NewCharge): ChargeRow {
  const same =
    row.request_hash === input.requestHash &&
    row.owner_id === input.ownerId &&
    row.amount_minor === input.amountMinor &&
    row.billing_type === input.billingType;
  if (!same) {
    throw new DomainError('IDEMPOTENCY_KEY_REUSED', 'this Idempotency-Key already made a charge with another request', {
      location: 'header',
      field: 'idempotency-key',
    });
  }
  return row;
}

/** Records the gateway customer created for the charge (once; a retry records the same id). */
export async function recordGatewayCustomer(db: Queryable, id: string, customerId: string): Promise<ChargeRow> {
  const row = await maybeOne(db, chargeRow, {
    name: 'charge-record-customer',
    text: `UPDATE charges SET gateway_customer_id = coalesce(gateway_customer_id, $2), updated_at = now()
            WHERE id = $1 AND (gateway_customer_id IS NULL OR gateway_customer_id = $2) RETURNING ${columns}`,
    values: [id, customerId],
  });
  if (row === null) throw new Error(`charge ${id} is missing or already has another gateway customer`);
  return row;
}

/**
 * Records the gateway charge (payment) id, once: a second gateway charge for the same row is a
 * bug (the idempotency key is the charge id) and fails loudly. The status is recorded only while
 * the charge is PENDING; a final row keeps the status it was finished with.
 */
export async function recordGatewayPayment(db: Queryable, id: string, paymentId: string, gatewayStatus: string): Promise<ChargeRow> {
  const row = await maybeOne(db, chargeRow, {
    name: 'charge-record-payment',
    text: `UPDATE charges SET gateway_payment_id = coalesce(gateway_payment_id, $2),
                              gateway_status = CASE WHEN status = 'PENDING' THEN $3 ELSE gateway_status END,
                              updated_at = now()
            WHERE id = $1 AND (gateway_payment_id IS NULL OR gateway_payment_id = $2) RETURNING ${columns}`,
    values: [id, paymentId, gatewayStatus],
  });
  if (row === null) throw new Error(`charge ${id} is missing or already has another gateway payment`);
  return row;
}

export type PaymentInstructions =
  | { kind: 'PIX'; payload: string; imageBase64: string }
  | { kind: 'BOLETO'; digitableLine: string; barCode: string };

/** Stores what the payer needs: the Pix copy-and-paste payload and QR image, or the Boleto's lines. */
export async function recordPaymentInstructions(db: Queryable, id: string, instructions: PaymentInstructions): Promise<ChargeRow> {
  const values =
    instructions.kind === 'PIX'
      ? [id, instructions.payload, instructions.imageBase64, null, null]
      : [id, null, null, instructions.digitableLine, instructions.barCode];
  return one(db, chargeRow, {
    name: 'charge-record-instructions',
    text: `UPDATE charges SET pix_payload = coalesce($2, pix_payload), pix_image_base64 = coalesce($3, pix_image_base64),
                              boleto_line = coalesce($4, boleto_line), boleto_bar_code = coalesce($5, boleto_bar_code),
                              updated_at = now()
            WHERE id = $1 RETURNING ${columns}`,
    values,
  });
}

/**
 * Records a later gateway status of a finished charge (CONFIRMED after RECEIVED, REFUNDED after
 * settlement). Informational only: it moves no money and never changes `status`. The caller (the
 * charge's workflow, the one writer) applies statuses only forward.
 */
export async function recordGatewayStatus(db: Queryable, id: string, gatewayStatus: string): Promise<ChargeRow> {
  return one(db, chargeRow, {
    name: 'charge-record-status',
    text: `UPDATE charges SET gateway_status = $2, updated_at = now() WHERE id = $1 RETURNING ${columns}`,
    values: [id, gatewayStatus],
  });
}

/** From the request (the row's creation) to now, its final state, for the metrics' histogram. */
function secondsSince(createdAt: Date): number {
  return Math.max(0, (Date.now() - createdAt.getTime()) / 1000);
}

export type FinishOutcome = { status: 'SETTLED'; gatewayStatus: string } | { status: 'FAILED'; gatewayStatus: string | null; reason: string };

/**
 * Settles or fails a PENDING charge: the guarded UPDATE and its booking in one transaction under
 * the row's lock. A charge already final is answered as it is (finished false).
 */
export async function finishCharge(pool: Pool, id: string, outcome: FinishOutcome): Promise<{ finished: boolean; charge: ChargeRow }> {
  return withTransaction(pool, async (client) => {
    const current = await lockCharge(client, id);
    if (current === null) throw new DomainError('CHARGE_NOT_FOUND', `no charge ${id}`);
    if (current.status !== 'PENDING') return { finished: false, charge: current };
    const amount = { ownerId: current.owner_id, currency: current.currency, amountMinor: current.amount_minor };
    if (outcome.status === 'SETTLED') {
      const booked = await bookFor(client, { type: 'charge', id: id }, ledgerKeys.chargeSettle.of(id), moneyModel.chargeSettled(amount));
      const charge = await one(client, chargeRow, {
        name: 'charge-settle',
        text: `UPDATE charges SET status = 'SETTLED', gateway_status = $2, settle_tx_id = $3, updated_at = now(), finished_at = now()
                WHERE id = $1 AND status = 'PENDING' RETURNING ${columns}`,
        values: [id, outcome.gatewayStatus, booked.transactionId],
      });
      reportCommitted(client, { kind: 'charge', outcome: 'SETTLED', seconds: secondsSince(charge.created_at) });
      return { finished: true, charge };
    }
    const booked = await bookFor(client, { type: 'charge', id: id }, ledgerKeys.chargeFail.of(id), moneyModel.chargeFailed(amount));
    const charge = await one(client, chargeRow, {
      name: 'charge-fail',
      text: `UPDATE charges SET status = 'FAILED', gateway_status = coalesce($2, gateway_status), failure_reason = $3, fail_tx_id = $4,
                    updated_at = now(), finished_at = now()
              WHERE id = $1 AND status = 'PENDING' RETURNING ${columns}`,
      values: [id, outcome.gatewayStatus, outcome.reason.slice(0, 500), booked.transactionId],
    });
    reportCommitted(client, { kind: 'charge', outcome: 'FAILED', seconds: secondsSince(charge.created_at) });
    return { finished: true, charge };
  });
}
