import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { gatewayCalendarDate } from '../../activities/charges.ts';
import { chargeIdForKey } from '../../api/routes/charges.ts';
import { findViolations } from '../../db/ledger.ts';
import { businessStatusKey, ownerIdKey, referenceIdKey } from '../../workflows/search-attributes.ts';
import { startSettlementHarness, type SettlementHarness } from '../support/settlement.ts';
import { eventually } from '../support/temporal-cli.ts';
import { replayAndRecord } from '../support/histories.ts';

/**
 * Charges (cash-in) end to end: API -> charge workflow (update-with-start) -> gateway simulator
 * (customer, charge, QR code or digitable line) -> the payer pays on the simulator -> payment
 * webhooks -> settlement, with real Temporal and PostgreSQL. Charges wait CHARGE_WAIT_OVERRIDE_MS
 * for their payment instead of until the due date.
 */
let h: SettlementHarness;
const waitMs = 4000;
const payer = { name: 'Maria Silva', cpf_cnpj: '52998224725', email: 'maria@example.com' };

beforeAll(async () => {
  h = await startSettlementHarness({ CHARGE_WAIT_OVERRIDE_MS: String(waitMs) });
});
afterAll(async () => {
  await h?.close();
});

const newOwner = () => `owner-${randomUUID().slice(0, 8)}`;

function charge(rail: 'pix' | 'boleto', body: object, key: string = randomUUID(), headers: Record<string, string> = {}) {
  return h.t.app.inject({
    method: 'POST',
    url: `/api/v1/redemption/${rail}`,
    headers: { 'idempotency-key': key, 'x-device-id': 'device-e2e', ...headers },
    payload: body,
  });
}

async function sim(method: 'POST' | 'DELETE', path: string, body?: object): Promise<Response> {
  const response = await fetch(`${h.simulator.url}${path}`, {
    method,
    ...(body === undefined ? {} : { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }),
  });
  expect(response.status, `${method} ${path}`).toBe(200);
  return response;
}

async function balance(owner: string) {
  return (await h.t.app.inject({ method: 'GET', url: `/api/v1/balance/${owner}` })).json();
}

async function row(chargeId: string) {
  return (await h.t.db.pool.query('SELECT status, gateway_status, failure_reason FROM charges WHERE id = $1', [chargeId])).rows[0];
}

async function until(chargeId: string, done: (r: { status: string; gateway_status: string | null }) => boolean) {
  return eventually(async () => {
    const current = await row(chargeId);
    return current !== undefined && done(current) ? current : undefined;
  }, 15_000);
}

async function txTypes(chargeId: string): Promise<string[]> {
  const result = await h.t.db.pool.query(
    `SELECT tx_type FROM ledger_transactions WHERE reference_type = 'charge' AND reference_id = $1 ORDER BY created_at, tx_type`,
    [chargeId],
  );
  return result.rows.map((r: { tx_type: string }) => r.tx_type);
}

function simPayments(chargeId: string) {
  return h.simulator.state.snapshot(1000).payments.filter((payment) => payment.externalReference === chargeId);
}

describe('charges (cash-in) through the gateway', () => {
  it('a Pix charge paid: QR code answered, SETTLED once, owner AVAILABLE credited; a later refund is recorded and moves nothing', async () => {
    const owner = newOwner();
    const response = await charge('pix', { owner_id: owner, amount: '25.50', customer: payer, description: 'top-up' });
    expect(response.statusCode).toBe(200);
    const created = response.json();
    expect(created).toMatchObject({
      status: 'PENDING',
      owner_id: owner,
      amount: '25.50',
      currency: 'BRL',
      billing_type: 'PIX',
      due_date: gatewayCalendarDate(Date.now(), h.t.config.CHARGE_DUE_DAYS),
      workflow_id: `charge-${created.charge_id}`,
    });
    expect(created.payment_id).toMatch(/^pay_/);
    expect(created.pix.payload).toMatch(/^000201/);
    expect(created.pix.image_base64.length).toBeGreaterThan(0);
    expect(await balance(owner)).toMatchObject({ available: '0.00', pending: '25.50' });

    const before = (await h.t.app.inject({ method: 'GET', url: `/api/v1/redemption/payment/${created.payment_id}` })).json();
    expect(before).toMatchObject({ charge_id: created.charge_id, status: 'PENDING', gateway: { status: 'PENDING', error: null } });

    await sim('POST', `/sim/payments/${created.payment_id}/pay`);
    await until(created.charge_id, (r) => r.status === 'SETTLED');
    expect(await balance(owner)).toMatchObject({ available: '25.50', pending: '0.00' });
    const after = (await h.t.app.inject({ method: 'GET', url: `/api/v1/redemption/payment/${created.payment_id}` })).json();
    expect(after).toMatchObject({ status: 'SETTLED', amount: '25.50', gateway: { status: 'CONFIRMED' } });

    // Refund after settlement: recorded, no money moves (clawback is out of scope).
    await sim('POST', `/sim/payments/${created.payment_id}/refund`);
    await until(created.charge_id, (r) => r.gateway_status === 'REFUNDED');
    expect(await row(created.charge_id)).toMatchObject({ status: 'SETTLED', gateway_status: 'REFUNDED' });
    const handle = h.t.temporal.workflow.getHandle(created.workflow_id);
    expect(await handle.result()).toMatchObject({ status: 'SETTLED', state: { status: 'SETTLED', gatewayStatus: 'REFUNDED' } });
    expect(await balance(owner)).toMatchObject({ available: '25.50', pending: '0.00' });
    expect(await txTypes(created.charge_id)).toEqual(['CHARGE_CREATED', 'CHARGE_SETTLED']);
    const attributes = (await handle.describe()).typedSearchAttributes;
    expect(attributes.get(ownerIdKey)).toBe(owner);
    expect(attributes.get(referenceIdKey)).toBe(created.payment_id);
    expect(attributes.get(businessStatusKey)).toBe('SETTLED_REFUNDED');
    expect(simPayments(created.charge_id)).toHaveLength(1);
    expect(await findViolations(h.t.db.pool)).toEqual([]);
    await replayAndRecord(h.t.temporal, created.workflow_id, 'charge-pix-settled-refunded');

    expect((await h.t.app.inject({ method: 'GET', url: '/api/v1/redemption/payment/pay_unknown0000000' })).json()).toMatchObject({
      code: 'CHARGE_NOT_FOUND',
    });
    expect((await h.t.app.inject({ method: 'GET', url: '/api/v1/redemption/payment/pay_unknown0000000' })).statusCode).toBe(404);
    expect((await h.t.app.inject({ method: 'GET', url: '/api/v1/redemption/payment/pay_bad%21id' })).statusCode).toBe(422);
  });

  it('a Boleto charge paid: digitable line and bar code answered, SETTLED', async () => {
    const owner = newOwner();
    const response = await charge('boleto', { owner_id: owner, amount: 150, customer: { name: 'Empresa Ltda', cpf_cnpj: '11222333000181' } });
    expect(response.statusCode).toBe(200);
    const created = response.json();
    expect(created).toMatchObject({ status: 'PENDING', amount: '150.00', billing_type: 'BOLETO' });
    expect(created.boleto.digitable_line).toMatch(/^\d{47}$/);
    expect(created.boleto.bar_code).toMatch(/^\d{44}$/);
    expect(created.pix).toBeUndefined();
    await sim('POST', `/sim/payments/${created.payment_id}/pay`);
    await until(created.charge_id, (r) => r.status === 'SETTLED');
    expect(await balance(owner)).toMatchObject({ available: '150.00', pending: '0.00' });
    expect(await h.t.temporal.workflow.getHandle(created.workflow_id).result()).toMatchObject({ status: 'SETTLED' });
    expect(await txTypes(created.charge_id)).toEqual(['CHARGE_CREATED', 'CHARGE_SETTLED']);
    expect(await findViolations(h.t.db.pool)).toEqual([]);
    await replayAndRecord(h.t.temporal, created.workflow_id, 'charge-boleto-settled');
  });

  it('a charge gone overdue: cancelled at the gateway, FAILED, the owner PENDING back to 0; a late event changes nothing', async () => {
    const owner = newOwner();
    const created = (await charge('pix', { owner_id: owner, amount: '9.99', customer: payer })).json();
    expect(await balance(owner)).toMatchObject({ pending: '9.99' });
    await sim('POST', `/sim/payments/${created.payment_id}/overdue`);
    expect(await h.t.temporal.workflow.getHandle(created.workflow_id).result()).toMatchObject({ status: 'FAILED' });
    expect(await row(created.charge_id)).toMatchObject({ status: 'FAILED', gateway_status: 'DELETED', failure_reason: 'the charge is overdue' });
    expect(await balance(owner)).toMatchObject({ available: '0.00', pending: '0.00' });
    expect(simPayments(created.charge_id)).toMatchObject([{ status: 'DELETED', deleted: true }]);
    // Deleted at the gateway: the payer can no longer pay it.
    const late = await fetch(`${h.simulator.url}/sim/payments/${created.payment_id}/pay`, { method: 'POST' });
    expect(late.status).toBe(400);
    expect(await txTypes(created.charge_id)).toEqual(['CHARGE_CREATED', 'CHARGE_FAILED']);
    expect(await findViolations(h.t.db.pool)).toEqual([]);
    await replayAndRecord(h.t.temporal, created.workflow_id, 'charge-overdue-failed');
  });

  it('every webhook delivered 10 times and out of order: settles exactly once', async () => {
    await sim('POST', '/sim/faults', { duplicateWebhooks: 10, reorderWebhooks: true, reorderWindowMs: 100 });
    try {
      const owner = newOwner();
      const created = (await charge('pix', { owner_id: owner, amount: '40.00', customer: payer })).json();
      await sim('POST', `/sim/payments/${created.payment_id}/pay`);
      await until(created.charge_id, (r) => r.status === 'SETTLED');
      // Every copy arrives (CREATED, RECEIVED, CONFIRMED, 10 times each): 27 duplicates stored once.
      await eventually(async () => {
        const result = await h.t.db.pool.query(`SELECT coalesce(sum(duplicates), 0)::int AS n FROM webhook_inbox WHERE raw_body LIKE '%' || $1 || '%'`, [
          created.payment_id,
        ]);
        return result.rows[0].n >= 27 ? true : undefined;
      }, 20_000);
      expect(await h.t.temporal.workflow.getHandle(created.workflow_id).result()).toMatchObject({ status: 'SETTLED' });
      expect(await txTypes(created.charge_id)).toEqual(['CHARGE_CREATED', 'CHARGE_SETTLED']);
      expect(await balance(owner)).toMatchObject({ available: '40.00', pending: '0.00' });
      expect(await findViolations(h.t.db.pool)).toEqual([]);
      await replayAndRecord(h.t.temporal, created.workflow_id, 'charge-duplicated-reordered-webhooks');
    } finally {
      await sim('DELETE', '/sim/faults');
    }
  });

  it('idempotent create: the same key answers the same charge and makes one gateway charge; unpaid by the deadline, it fails', async () => {
    const owner = newOwner();
    const key = `charge-key-${randomUUID()}`;
    const body = { owner_id: owner, amount: '12.00', customer: payer };
    const first = await charge('pix', body, key);
    expect(first.statusCode).toBe(200);
    const created = first.json();
    expect(created.charge_id).toBe(chargeIdForKey(key));
    const replay = await charge('pix', body, key);
    expect(replay.statusCode).toBe(200);
    expect(replay.headers['x-idempotency-replayed']).toBe('true');
    expect(replay.json()).toMatchObject({ charge_id: created.charge_id, payment_id: created.payment_id });
    const other = await charge('pix', { ...body, amount: '13.00' }, key);
    expect(other.statusCode).toBe(422);
    // Past the API's 300 s replay window the key still names the same charge (the workflow id).
    await h.t.db.pool.query('DELETE FROM idempotency_records WHERE key = $1', [key]);
    const late = await charge('pix', body, key);
    expect(late.statusCode).toBe(200);
    expect(late.headers['x-idempotency-replayed']).toBeUndefined();
    expect(late.json()).toMatchObject({ charge_id: created.charge_id, payment_id: created.payment_id, pix: created.pix });
    await h.t.db.pool.query('DELETE FROM idempotency_records WHERE key = $1', [key]);
    const lateOther = await charge('pix', { ...body, amount: '13.00' }, key);
    expect(lateOther.statusCode).toBe(422);
    expect(lateOther.json().detail[0]).toMatchObject({ loc: ['header', 'idempotency-key'], type: 'IDEMPOTENCY_KEY_REUSED' });
    await h.t.db.pool.query('DELETE FROM idempotency_records WHERE key = $1', [key]);
    // The same key on the other rail is another request too.
    expect((await charge('boleto', body, key)).statusCode).toBe(422);
    expect(simPayments(created.charge_id)).toHaveLength(1);
    expect(await balance(owner)).toMatchObject({ pending: '12.00' });

    // Nobody pays: when the wait ends the workflow asks the gateway, cancels the charge and fails it.
    expect(await h.t.temporal.workflow.getHandle(created.workflow_id).result()).toMatchObject({ status: 'FAILED' });
    expect(await row(created.charge_id)).toMatchObject({ status: 'FAILED', failure_reason: 'the due date passed unpaid' });
    expect(simPayments(created.charge_id)).toMatchObject([{ status: 'DELETED' }]);
    expect(await balance(owner)).toMatchObject({ available: '0.00', pending: '0.00' });
    expect(await findViolations(h.t.db.pool)).toEqual([]);
    await replayAndRecord(h.t.temporal, created.workflow_id, 'charge-unpaid-failed');
  });

  it('bad input answers 422 and books nothing', async () => {
    const owner = newOwner();
    const good = { owner_id: owner, amount: '10.00', customer: payer };
    const cases: [object, Record<string, string>?][] = [
      [{ ...good, amount: '10.001' }],
      [{ ...good, amount: '0' }],
      [{ ...good, amount: '-5.00' }],
      [{ ...good, amount: 'ten' }],
      [{ ...good, currency: 'USD' }],
      [{ ...good, currency: 'XYZ' }],
      [{ ...good, customer: { name: '' } }],
      [{ ...good, customer: { name: 'A', cpf_cnpj: '123' } }],
      [{ ...good, customer: { name: 'A', email: 'not-an-email' } }],
      [{ ...good, extra: true }],
      [{ ...good, owner_id: 'system:world' }],
      [{ amount: '10.00', customer: payer }],
    ];
    for (const [body] of cases) {
      const response = await charge('pix', body);
      expect(response.statusCode, JSON.stringify(body)).toBe(422);
      expect(response.json().detail.length).toBeGreaterThan(0);
    }
    const noKey = await h.t.app.inject({ method: 'POST', url: '/api/v1/redemption/pix', payload: good });
    expect(noKey.statusCode).toBe(422);
    expect(noKey.json().detail[0].loc).toEqual(['header', 'idempotency-key']);
    const count = await h.t.db.pool.query('SELECT count(*)::int AS n FROM charges WHERE owner_id = $1', [owner]);
    expect(count.rows[0].n).toBe(0);
  });

  it('a gateway refusal fails the charge (502 GATEWAY_REFUSED); an unavailable gateway answers 503 and a retry with the same key gets the charge', async () => {
    const owner = newOwner();
    // The gateway checks the CPF's check digits and refuses this one.
    const refused = await charge('pix', { owner_id: owner, amount: '5.00', customer: { name: 'Bad Document', cpf_cnpj: '52998224724' } });
    expect(refused.statusCode).toBe(502);
    expect(refused.json()).toMatchObject({ code: 'GATEWAY_REFUSED' });
    const refusedId = refused.json().details.charge_id as string;
    expect(await row(refusedId)).toMatchObject({ status: 'FAILED' });
    expect(await txTypes(refusedId)).toEqual(['CHARGE_CREATED', 'CHARGE_FAILED']);
    expect(await balance(owner)).toMatchObject({ available: '0.00', pending: '0.00' });

    const key = randomUUID();
    const body = { owner_id: owner, amount: '7.00', customer: payer };
    await sim('POST', '/sim/faults', { apiErrorRate: 1 });
    let unavailable;
    try {
      unavailable = await charge('boleto', body, key);
    } finally {
      await sim('DELETE', '/sim/faults');
    }
    expect(unavailable.statusCode).toBe(503);
    expect(unavailable.json()).toMatchObject({ code: 'GATEWAY_UNAVAILABLE' });
    expect(await balance(owner)).toMatchObject({ pending: '7.00' });
    // The workflow retries in the background; the client's retry waits for it and gets the charge.
    const retried = await charge('boleto', body, key);
    expect(retried.statusCode).toBe(200);
    expect(retried.json()).toMatchObject({ charge_id: chargeIdForKey(key), status: 'PENDING', billing_type: 'BOLETO' });
    expect(simPayments(chargeIdForKey(key))).toHaveLength(1);
    await sim('POST', `/sim/payments/${retried.json().payment_id}/pay`);
    await until(chargeIdForKey(key), (r) => r.status === 'SETTLED');
    expect(await balance(owner)).toMatchObject({ available: '7.00', pending: '0.00' });
    expect(await findViolations(h.t.db.pool)).toEqual([]);
  });
});
