import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { b2bPlans } from '../../src/b2b/plans.ts';
import { createTestApp, type TestApp } from '../support/app.ts';
import { activeCustomer, newCnpj, signed, type TestCredential } from '../support/b2b.ts';

let t: TestApp;
let admin: Record<string, string>;

beforeAll(async () => {
  t = await createTestApp({ RATE_LIMIT_B2B_SIGNUP_PER_MINUTE: '1000', RATE_LIMIT_B2B_PER_MINUTE: '1000' });
  admin = await t.adminHeaders();
});
afterAll(async () => {
  await t?.close();
});

const me = (credential: TestCredential, extra: { timestamp?: number; nonce?: string } = {}, tamper?: (h: Record<string, string>) => Record<string, string>) =>
  signed(t.app, credential, { method: 'GET', url: '/api/v1/b2b/me', ...extra }, tamper);
const decide = (customerId: string, action: string, reason = 'checked by the risk team') =>
  t.app.inject({ method: 'POST', url: `/api/v1/admin/b2b/customers/${customerId}/${action}`, headers: admin, payload: { reason } });

describe('plans and sign-up', () => {
  it('lists the plans of the one definition the fee quote prices', async () => {
    const response = await t.app.inject({ method: 'GET', url: '/api/v1/b2b/plans' });
    expect(response.statusCode).toBe(200);
    const plans = response.json() as { id: string; pos_batch_max: number; monthly_fee: string; scopes: string[] }[];
    expect(plans.map((plan) => plan.id)).toEqual(['STARTER', 'BUSINESS', 'ENTERPRISE']);
    expect(plans[1]).toMatchObject({ monthly_fee: '199.00', pos_batch_max: b2bPlans.BUSINESS.posBatchMax, scopes: [...b2bPlans.BUSINESS.scopes] });
  });

  it('signs a business up as PENDING_REVIEW, shows its CNPJ truncated, and refuses a second sign-up of the CNPJ', async () => {
    const taxId = newCnpj();
    const formatted = `${taxId.slice(0, 2)}.${taxId.slice(2, 5)}.${taxId.slice(5, 8)}/${taxId.slice(8, 12)}-${taxId.slice(12)}`;
    const response = await t.app.inject({
      method: 'POST',
      url: '/api/v1/b2b/signup',
      payload: { legal_name: 'Padaria Teste Ltda', tax_id: formatted, contact_email: 'Fin@Example.com', plan: 'STARTER' },
    });
    expect(response.statusCode).toBe(201);
    const body = response.json();
    expect(body).toMatchObject({ legal_name: 'Padaria Teste Ltda', plan: 'STARTER', status: 'PENDING_REVIEW', tax_id_masked: `${taxId.slice(0, 2)}.***.***/****-${taxId.slice(12)}` });
    expect(JSON.stringify(body)).not.toContain(taxId);
    const status = await t.app.inject({ method: 'GET', url: `/api/v1/b2b/customers/${body.customer_id}` });
    expect(status.json()).toEqual(body);
    expect(status.body).not.toContain(taxId);
    const again = await t.app.inject({ method: 'POST', url: '/api/v1/b2b/signup', payload: { legal_name: 'Outra', tax_id: taxId, contact_email: 'a@example.com', plan: 'BUSINESS' } });
    expect(again.statusCode).toBe(409);
    expect(again.json().code).toBe('B2B_CUSTOMER_EXISTS');
  });

  it('refuses a CNPJ with a wrong check digit, a bad Pix key, an unknown plan; 404 for an unknown id', async () => {
    const taxId = newCnpj();
    const wrong = `${taxId.slice(0, 13)}${(Number(taxId[13]) + 1) % 10}`;
    const bad = await t.app.inject({ method: 'POST', url: '/api/v1/b2b/signup', payload: { legal_name: 'X Ltda', tax_id: wrong, contact_email: 'a@example.com', plan: 'STARTER' } });
    expect(bad.statusCode).toBe(422);
    expect(bad.json().detail[0]).toMatchObject({ loc: ['body', 'tax_id'], type: 'TAX_ID_INVALID' });
    const pix = await t.app.inject({ method: 'POST', url: '/api/v1/b2b/signup', payload: { legal_name: 'X Ltda', tax_id: taxId, contact_email: 'a@example.com', plan: 'STARTER', pix_key: 'not a key' } });
    expect(pix.json().detail[0]).toMatchObject({ loc: ['body', 'pix_key'], type: 'UNSUPPORTED_RAIL' });
    const plan = await t.app.inject({ method: 'POST', url: '/api/v1/b2b/signup', payload: { legal_name: 'X Ltda', tax_id: taxId, contact_email: 'a@example.com', plan: 'GOLD' } });
    expect(plan.statusCode).toBe(422);
    expect((await t.app.inject({ method: 'GET', url: `/api/v1/b2b/customers/${randomUUID()}` })).json().code).toBe('B2B_CUSTOMER_NOT_FOUND');
  });
});

describe('the admin decides', () => {
  it('approves (issuing the first credential), suspends, approves again, blocks for good; every change recorded with its reason', async () => {
    const signup = await t.app.inject({ method: 'POST', url: '/api/v1/b2b/signup', payload: { legal_name: 'Loja Ltda', tax_id: newCnpj(), contact_email: 'a@example.com', plan: 'BUSINESS' } });
    const id = signup.json().customer_id as string;
    expect((await decide(id, 'suspend')).json()).toMatchObject({ code: 'B2B_TRANSITION_INVALID', details: { status: 'PENDING_REVIEW', action: 'suspend' } });
    const approved = await decide(id, 'approve', 'contract signed');
    expect(approved.statusCode).toBe(200);
    const first = approved.json();
    expect(first).toMatchObject({ from_status: 'PENDING_REVIEW', customer: { status: 'ACTIVE' }, credential: { scopes: ['pos:sync', 'plc:read', 'plc:issue'] } });
    expect(first.credential.key_id).toMatch(/^ak_[0-9a-f]{24}$/);
    expect(first.credential.secret).toMatch(/^sk_[A-Za-z0-9_-]{43}$/);
    const credential = { keyId: first.credential.key_id, secret: first.credential.secret };
    expect((await me(credential)).statusCode).toBe(200);
    expect((await decide(id, 'approve')).statusCode).toBe(409);
    expect((await decide(id, 'suspend', 'unpaid invoice')).json()).toMatchObject({ from_status: 'ACTIVE', customer: { status: 'SUSPENDED' }, credential: null });
    const suspended = await me(credential);
    expect(suspended.statusCode).toBe(403);
    expect(suspended.json()).toMatchObject({ code: 'B2B_CUSTOMER_NOT_ACTIVE', details: { status: 'SUSPENDED' } });
    expect((await decide(id, 'approve', 'invoice paid')).json()).toMatchObject({ from_status: 'SUSPENDED', customer: { status: 'ACTIVE' }, credential: null });
    expect((await me(credential)).statusCode).toBe(200);
    expect((await decide(id, 'block', 'fraud confirmed')).json()).toMatchObject({ from_status: 'ACTIVE', customer: { status: 'BLOCKED' } });
    for (const action of ['approve', 'suspend', 'block']) {
      const refused = await decide(id, action);
      expect(refused.statusCode).toBe(409);
      expect(refused.json().code).toBe('B2B_TRANSITION_INVALID');
    }
    expect((await me(credential)).json().code).toBe('API_KEY_REVOKED');

    const detail = (await t.app.inject({ method: 'GET', url: `/api/v1/admin/b2b/customers/${id}`, headers: admin })).json();
    expect(detail.tax_id).toMatch(/^\d{14}$/);
    expect(detail.events.map((event: { from_status: string | null; to_status: string; reason: string }) => [event.from_status, event.to_status, event.reason])).toEqual([
      [null, 'PENDING_REVIEW', 'sign-up'],
      ['PENDING_REVIEW', 'ACTIVE', 'contract signed'],
      ['ACTIVE', 'SUSPENDED', 'unpaid invoice'],
      ['SUSPENDED', 'ACTIVE', 'invoice paid'],
      ['ACTIVE', 'BLOCKED', 'fraud confirmed'],
    ]);
    expect(detail.events[1].actor).toMatch(/^admin-/);
    // Each decision, refused ones too, is an operation-log entry naming the admin (newest first).
    const logged = (await t.app.inject({ method: 'GET', url: `/api/v1/admin/monitor/operations?operation_type=BUSINESS_DECISION&reference_id=${id}`, headers: admin })).json();
    expect(logged.map((entry: { step: string; status: string; error_code: string | null }) => `${entry.step} ${entry.status} ${entry.error_code ?? ''}`.trim())).toEqual([
      'block REFUSED B2B_TRANSITION_INVALID',
      'suspend REFUSED B2B_TRANSITION_INVALID',
      'approve REFUSED B2B_TRANSITION_INVALID',
      'block SUCCEEDED',
      'approve SUCCEEDED',
      'suspend SUCCEEDED',
      'approve REFUSED B2B_TRANSITION_INVALID',
      'approve SUCCEEDED',
      'suspend REFUSED B2B_TRANSITION_INVALID',
    ]);
    expect(logged[3].actor).toBe(detail.events[1].actor);
    expect(detail.credentials).toHaveLength(1);
    expect(detail.credentials[0]).toMatchObject({ key_id: credential.keyId, revoke_reason: 'customer blocked: fraud confirmed' });
    expect(JSON.stringify(detail)).not.toContain(credential.secret);

    const list = (await t.app.inject({ method: 'GET', url: '/api/v1/admin/b2b/customers?status=BLOCKED', headers: admin })).json() as { customer_id: string }[];
    expect(list.map((row) => row.customer_id)).toContain(id);
  });

  it('blocks a pending sign-up; 404 for an unknown customer; 401 without a token; 422 without a reason', async () => {
    const signup = await t.app.inject({ method: 'POST', url: '/api/v1/b2b/signup', payload: { legal_name: 'Loja Ltda', tax_id: newCnpj(), contact_email: 'a@example.com', plan: 'STARTER' } });
    const id = signup.json().customer_id as string;
    expect((await decide(id, 'block', 'forged documents')).json()).toMatchObject({ from_status: 'PENDING_REVIEW', customer: { status: 'BLOCKED' }, credential: null });
    expect((await decide(randomUUID(), 'approve')).json().code).toBe('B2B_CUSTOMER_NOT_FOUND');
    expect((await t.app.inject({ method: 'POST', url: `/api/v1/admin/b2b/customers/${id}/approve`, payload: { reason: 'ok ok' } })).statusCode).toBe(401);
    expect((await t.app.inject({ method: 'POST', url: `/api/v1/admin/b2b/customers/${id}/approve`, headers: admin, payload: {} })).statusCode).toBe(422);
    expect((await t.app.inject({ method: 'GET', url: `/api/v1/admin/b2b/customers/${randomUUID()}`, headers: admin })).statusCode).toBe(404);
  });
});

describe('credentials', () => {
  it('issues a further credential with a subset of the plan scopes; refuses scopes outside the plan', async () => {
    const customer = await activeCustomer(t.app, admin, { plan: 'STARTER' });
    expect(customer.scopes).toEqual(['pos:sync', 'plc:read']);
    const issued = await t.app.inject({ method: 'POST', url: `/api/v1/admin/b2b/customers/${customer.customerId}/credentials`, headers: admin, payload: { scopes: ['plc:read'] } });
    expect(issued.statusCode).toBe(201);
    expect(issued.json().scopes).toEqual(['plc:read']);
    const reading = { keyId: issued.json().key_id, secret: issued.json().secret };
    expect((await me(reading)).json().credential).toMatchObject({ key_id: reading.keyId, scopes: ['plc:read'] });
    const outside = await t.app.inject({ method: 'POST', url: `/api/v1/admin/b2b/customers/${customer.customerId}/credentials`, headers: admin, payload: { scopes: ['plc:issue'] } });
    expect(outside.json().detail[0]).toMatchObject({ loc: ['body', 'scopes'], type: 'API_SCOPE_NOT_IN_PLAN' });
    expect((await t.app.inject({ method: 'POST', url: `/api/v1/admin/b2b/customers/${randomUUID()}/credentials`, headers: admin, payload: {} })).statusCode).toBe(404);
  });

  it('rotates: the new key works, the old one through its grace period, then expires; a key rotates once', async () => {
    const customer = await activeCustomer(t.app, admin);
    const rotated = await signed(t.app, customer.credential, { method: 'POST', url: '/api/v1/b2b/credentials/rotate', body: { grace_seconds: 3600 } });
    expect(rotated.statusCode, rotated.body).toBe(200);
    const next = { keyId: rotated.json().credential.key_id, secret: rotated.json().credential.secret };
    expect(rotated.json().previous).toMatchObject({ key_id: customer.credential.keyId, replaced_by: next.keyId });
    expect(Date.parse(rotated.json().previous.expires_at) - Date.now()).toBeGreaterThan(3500_000);
    expect((await me(next)).statusCode).toBe(200);
    expect((await me(customer.credential)).statusCode).toBe(200);
    const twice = await signed(t.app, customer.credential, { method: 'POST', url: '/api/v1/b2b/credentials/rotate', body: {} });
    expect(twice.json()).toMatchObject({ code: 'API_KEY_ALREADY_ROTATED', details: { replaced_by: next.keyId } });
    // No grace: the signing key ends now.
    const now = await signed(t.app, next, { method: 'POST', url: '/api/v1/b2b/credentials/rotate', body: { grace_seconds: 0 } });
    expect(now.statusCode).toBe(200);
    const expired = await me(next);
    expect(expired.statusCode).toBe(401);
    expect(expired.json().code).toBe('API_KEY_EXPIRED');
  });

  it('revokes at once, keeping the first reason; 404 for an unknown key', async () => {
    const customer = await activeCustomer(t.app, admin);
    const revoke = (reason: string) =>
      t.app.inject({ method: 'POST', url: `/api/v1/admin/b2b/credentials/${customer.credential.keyId}/revoke`, headers: admin, payload: { reason } });
    expect((await revoke('terminal stolen')).json()).toMatchObject({ key_id: customer.credential.keyId, revoke_reason: 'terminal stolen' });
    expect((await revoke('again')).json().revoke_reason).toBe('terminal stolen');
    const refused = await me(customer.credential);
    expect(refused.statusCode).toBe(401);
    expect(refused.json().code).toBe('API_KEY_REVOKED');
    const unknown = await t.app.inject({ method: 'POST', url: `/api/v1/admin/b2b/credentials/ak_${'0'.repeat(24)}/revoke`, headers: admin, payload: { reason: 'nope nope' } });
    expect(unknown.json().code).toBe('API_KEY_NOT_FOUND');
  });
});

describe('signed requests', () => {
  let credential: TestCredential;
  beforeAll(async () => {
    credential = (await activeCustomer(t.app, admin)).credential;
  });

  it('admits a correctly signed request once: the same nonce again is a replay', async () => {
    const nonce = randomUUID();
    const first = await me(credential, { nonce });
    expect(first.statusCode).toBe(200);
    expect(first.json().credential.key_id).toBe(credential.keyId);
    const replay = await me(credential, { nonce });
    expect(replay.statusCode).toBe(401);
    expect(replay.json().code).toBe('API_NONCE_REPLAYED');
  });

  it('of two requests racing with one nonce, one is admitted', async () => {
    const nonce = randomUUID();
    const answers = await Promise.all(Array.from({ length: 6 }, () => me(credential, { nonce })));
    expect(answers.map((answer) => answer.statusCode).sort()).toEqual([200, 401, 401, 401, 401, 401]);
  });

  it('refuses missing and malformed headers with API_SIGNATURE_MISSING, naming the header', async () => {
    for (const header of ['x-plc-key-id', 'x-plc-timestamp', 'x-plc-nonce', 'x-plc-signature']) {
      const response = await me(credential, {}, (headers) => Object.fromEntries(Object.entries(headers).filter(([name]) => name !== header)));
      expect(response.statusCode).toBe(401);
      expect(response.json()).toMatchObject({ code: 'API_SIGNATURE_MISSING', details: { header } });
    }
    const short = await me(credential, {}, (headers) => ({ ...headers, 'x-plc-nonce': 'short' }));
    expect(short.json()).toMatchObject({ code: 'API_SIGNATURE_MISSING', details: { header: 'x-plc-nonce' } });
    expect((await t.app.inject({ method: 'GET', url: '/api/v1/b2b/me' })).json().code).toBe('API_SIGNATURE_MISSING');
  });

  it('refuses an unknown key, a wrong secret, a tampered body or path, and a stale or future timestamp', async () => {
    const unknown = await me({ keyId: `ak_${'f'.repeat(24)}`, secret: credential.secret });
    expect([unknown.statusCode, unknown.json().code]).toEqual([401, 'API_KEY_UNKNOWN']);
    const wrongSecret = await me({ keyId: credential.keyId, secret: `sk_${'B'.repeat(43)}` });
    expect([wrongSecret.statusCode, wrongSecret.json().code]).toEqual([401, 'API_SIGNATURE_INVALID']);
    const otherPath = await me(credential, {}, (headers) => headers);
    expect(otherPath.statusCode).toBe(200);
    const signedForOther = await signed(t.app, credential, { method: 'GET', url: '/api/v1/b2b/me?x=1' }, (headers) => headers);
    expect(signedForOther.statusCode).toBe(200);
    const tamperedBody = await t.app.inject({
      method: 'POST',
      url: '/api/v1/b2b/credentials/rotate',
      headers: {
        ...(await import('../../src/b2b/request-signing.ts')).signRequest(credential, { method: 'POST', pathWithQuery: '/api/v1/b2b/credentials/rotate', body: '{"grace_seconds":10}' }),
        'content-type': 'application/json',
      },
      payload: '{"grace_seconds":0}',
    });
    expect([tamperedBody.statusCode, tamperedBody.json().code]).toEqual([401, 'API_SIGNATURE_INVALID']);
    const nowS = Math.floor(Date.now() / 1000);
    for (const timestamp of [nowS - 301, nowS + 301]) {
      const stale = await me(credential, { timestamp });
      expect([stale.statusCode, stale.json().code]).toEqual([401, 'API_TIMESTAMP_STALE']);
    }
    expect((await me(credential, { timestamp: nowS - 290 })).statusCode).toBe(200);
  });

  it('documents the signature refusals on the signed routes', async () => {
    const document = (await t.app.inject({ method: 'GET', url: '/openapi.json' })).json();
    const operation = document.paths['/api/v1/b2b/me'].get;
    expect(operation.security).toEqual([{ apiSignature: [] }]);
    expect(operation.responses['401'].description).toContain('API_NONCE_REPLAYED');
    expect(operation.responses['403'].description).toContain('API_SCOPE_MISSING');
    expect(operation.responses['429'].description).toContain('this API credential');
  });
});

describe('rate limits per credential', () => {
  it('counts each credential apart, after its signature is checked', async () => {
    const limited = await createTestApp({ RATE_LIMIT_B2B_PER_MINUTE: '2' });
    try {
      const limitedAdmin = await limited.adminHeaders();
      const first = await activeCustomer(limited.app, limitedAdmin);
      const second = await activeCustomer(limited.app, limitedAdmin);
      const call = (credential: TestCredential) => signed(limited.app, credential, { method: 'GET', url: '/api/v1/b2b/me' });
      // Unsigned and badly signed requests are refused before they count.
      for (let i = 0; i < 3; i += 1) await call({ keyId: first.credential.keyId, secret: `sk_${'C'.repeat(43)}` });
      expect((await call(first.credential)).statusCode).toBe(200);
      expect((await call(first.credential)).statusCode).toBe(200);
      const over = await call(first.credential);
      expect(over.statusCode).toBe(429);
      expect(over.json().code).toBe('RATE_LIMITED');
      expect(Number(over.headers['retry-after'])).toBeGreaterThan(0);
      expect((await call(second.credential)).statusCode).toBe(200);
    } finally {
      await limited.close();
    }
  });
});
