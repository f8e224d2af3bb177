import { randomBytes } from 'node:crypto';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { expect } from 'vitest';
import { cnpjWithCheckDigits } from '../../src/b2b/cnpj.ts';
import { signRequest } from '../../src/b2b/request-signing.ts';

export interface TestCredential {
  keyId: string;
  secret: string;
}

/** A fresh valid CNPJ (random base, right check digits). */
export function newCnpj(): string {
  const base = `${randomBytes(6).readUIntBE(0, 6) % 10 ** 8}`.padStart(8, '0') + '0001';
  return cnpjWithCheckDigits(base);
}

/** Signs and sends a request with a credential; `tamper` changes the headers after signing. */
export function signed(
  app: FastifyInstance,
  credential: TestCredential,
  request: { method: 'GET' | 'POST'; url: string; body?: unknown; timestamp?: number; nonce?: string },
  tamper: (headers: Record<string, string>) => Record<string, string> = (headers) => headers,
): Promise<LightMyRequestResponse> {
  const body = request.body === undefined ? undefined : JSON.stringify(request.body);
  const headers = signRequest(credential, { method: request.method, pathWithQuery: request.url, body, timestamp: request.timestamp, nonce: request.nonce });
  return app.inject({
    method: request.method,
    url: request.url,
    headers: { ...tamper(headers), ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { payload: body }),
  });
}

/** Signs up a business and approves it; answers its id and first credential. */
export async function activeCustomer(
  app: FastifyInstance,
  admin: Record<string, string>,
  options: { plan?: string; pixKey?: string } = {},
): Promise<{ customerId: string; taxId: string; credential: TestCredential; scopes: string[] }> {
  const taxId = newCnpj();
  const signup = await app.inject({
    method: 'POST',
    url: '/api/v1/b2b/signup',
    payload: { legal_name: 'Mercado Teste Ltda', tax_id: taxId, contact_email: 'ops@example.com', plan: options.plan ?? 'BUSINESS', ...(options.pixKey === undefined ? {} : { pix_key: options.pixKey }) },
  });
  expect(signup.statusCode, signup.body).toBe(201);
  const customerId = signup.json().customer_id as string;
  const approved = await app.inject({ method: 'POST', url: `/api/v1/admin/b2b/customers/${customerId}/approve`, headers: admin, payload: { reason: 'documents checked' } });
  expect(approved.statusCode, approved.body).toBe(200);
  const credential = approved.json().credential as { key_id: string; secret: string; scopes: string[] };
  return { customerId, taxId, credential: { keyId: credential.key_id, secret: credential.secret }, scopes: credential.scopes };
}
