import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findViolations } from '../../db/ledger.ts';
import { createTestApp, type TestApp } from '../support/app.ts';

let t: TestApp;
let admin: Record<string, string>;
beforeAll(async () => {
  t = await createTestApp();
  await t.startWorker();
  admin = await t.adminHeaders('admin');
});
afterAll(async () => {
  await t?.close();
});

function deposit(body: unknown, key: string = randomUUID(), headers: Record<string, string> = admin) {
  return t.app.inject({
    method: 'POST',
    url: '/api/v1/balance/deposit',
    headers: { ...headers, 'idempotency-key': key },
    payload: body as object,
  });
}

describe('POST /api/v1/balance/deposit', () => {
  it('credits AVAILABLE through the deposit workflow and answers the new balance', async () => {
    const response = await deposit({ owner_id: 'alice', amount: '12.34', currency: 'BRL' });
    expect(response.statusCode).toBe(200);
    expect(response.json()).toEqual({
      owner_id: 'alice',
      currency: 'BRL',
      available: '12.34',
      held: '0.00',
      pending: '0.00',
      promised: '0.00',
      status: 'ACTIVE',
    });
    const balance = await t.app.inject({ method: 'GET', url: '/api/v1/balance/alice' });
    expect(balance.json()).toMatchObject({ available: '12.34' });
  });

  it('books once, in one workflow run, however often the same Idempotency-Key is retried, concurrently or later', async () => {
    const key = randomUUID();
    const body = { owner_id: 'bob', amount: '5.00', currency: 'BRL' };
    const responses = await Promise.all([deposit(body, key), deposit(body, key), deposit(body, key)]);
    // One request books; each other one is answered while it runs (409) or from its stored answer.
    const fresh = responses.filter((response) => response.statusCode === 200 && response.headers['x-idempotency-replayed'] === undefined);
    expect(fresh).toHaveLength(1);
    const answer = fresh[0]?.json();
    for (const response of responses.filter((r) => !fresh.includes(r))) {
      if (response.statusCode === 200) {
        expect(response.headers['x-idempotency-replayed']).toBe('true');
        expect(response.json()).toEqual(answer);
      } else {
        expect(response.statusCode).toBe(409);
        expect(response.json()).toMatchObject({ code: 'IDEMPOTENCY_REQUEST_IN_PROGRESS' });
      }
    }
    const workflow = t.temporal.workflow.getHandle(`deposit-${key}`);
    const { runId } = await workflow.describe();
    const later = await deposit(body, key);
    expect(later.statusCode).toBe(200);
    expect(later.headers['x-idempotency-replayed']).toBe('true');
    expect(later.json()).toEqual(answer);
    // The latest run of deposit-<key> is still the first: the replay started none.
    expect((await workflow.describe()).runId).toBe(runId);
    const balance = await t.app.inject({ method: 'GET', url: '/api/v1/balance/bob' });
    expect(balance.json()).toMatchObject({ available: '5.00' });
    const transactions = await t.app.inject({ method: 'GET', url: '/api/v1/balance/bob/transactions' });
    expect(transactions.json()).toHaveLength(1);
    expect(transactions.json()[0]).toMatchObject({ tx_type: 'DEPOSIT', reference_id: key });
  });

  it('refuses the same Idempotency-Key with another body', async () => {
    const key = randomUUID();
    expect((await deposit({ owner_id: 'carol', amount: '1.00', currency: 'BRL' }, key)).statusCode).toBe(200);
    const reused = await deposit({ owner_id: 'carol', amount: '2.00', currency: 'BRL' }, key);
    expect(reused.statusCode).toBe(422);
    expect(reused.json().detail[0]).toMatchObject({ loc: ['header', 'idempotency-key'], type: 'IDEMPOTENCY_KEY_REUSED' });
  });

  it.each([
    ['too many decimals', { owner_id: 'dave', amount: '1.234', currency: 'BRL' }],
    ['zero', { owner_id: 'dave', amount: '0', currency: 'BRL' }],
    ['negative', { owner_id: 'dave', amount: '-1.00', currency: 'BRL' }],
    ['exponent string', { owner_id: 'dave', amount: '1e3', currency: 'BRL' }],
    ['Infinity string', { owner_id: 'dave', amount: 'Infinity', currency: 'BRL' }],
    ['unknown currency', { owner_id: 'dave', amount: '1.00', currency: 'XYZ' }],
    ['bad owner id', { owner_id: 'system:world', amount: '1.00', currency: 'BRL' }],
    ['missing amount', { owner_id: 'dave', currency: 'BRL' }],
  ])('answers 422 for %s and books nothing', async (_name, body) => {
    const response = await deposit(body);
    expect(response.statusCode).toBe(422);
    const balance = await t.app.inject({ method: 'GET', url: '/api/v1/balance/dave' });
    expect(balance.json()).toMatchObject({ available: '0.00' });
  });

  it('accepts a JSON number only when its exact decimal fits the currency', async () => {
    const depositText = (json: string) =>
      t.app.inject({
        method: 'POST',
        url: '/api/v1/balance/deposit',
        headers: { ...admin, 'idempotency-key': randomUUID(), 'content-type': 'application/json' },
        payload: json,
      });
    const exact = await depositText('{"owner_id":"erin","amount":7.25,"currency":"BRL"}');
    expect(exact.statusCode).toBe(200);
    expect(exact.json()).toMatchObject({ available: '7.25' });
    const inexact = await depositText('{"owner_id":"erin","amount":7.2500000000000000001,"currency":"BRL"}');
    expect(inexact.statusCode).toBe(422);
  });

  it('requires the Idempotency-Key header and an admin token', async () => {
    const noKey = await t.app.inject({
      method: 'POST',
      url: '/api/v1/balance/deposit',
      headers: admin,
      payload: { owner_id: 'frank', amount: '1.00', currency: 'BRL' },
    });
    expect(noKey.statusCode).toBe(422);
    expect(noKey.json().detail[0].loc).toEqual(['header', 'idempotency-key']);
    const noToken = await deposit({ owner_id: 'frank', amount: '1.00', currency: 'BRL' }, randomUUID(), {});
    expect(noToken.statusCode).toBe(401);
  });

  it('leaves the ledger invariants intact', async () => {
    expect(await findViolations(t.db.pool)).toEqual([]);
  });
});

describe('GET /api/v1/balance/{owner_id}', () => {
  it('answers zeros for an owner never seen, in the currency asked for', async () => {
    const response = await t.app.inject({ method: 'GET', url: '/api/v1/balance/nobody?currency=EUR' });
    expect(response.json()).toEqual({
      owner_id: 'nobody',
      currency: 'EUR',
      available: '0.00',
      held: '0.00',
      pending: '0.00',
      promised: '0.00',
      status: 'ACTIVE',
    });
  });

  it('answers 422 for an unknown currency and bounds the transactions page', async () => {
    expect((await t.app.inject({ method: 'GET', url: '/api/v1/balance/alice?currency=GBP' })).statusCode).toBe(422);
    expect((await t.app.inject({ method: 'GET', url: '/api/v1/balance/alice/transactions?limit=201' })).statusCode).toBe(422);
    expect((await t.app.inject({ method: 'GET', url: '/api/v1/balance/alice/transactions?offset=-1' })).statusCode).toBe(422);
  });
});
