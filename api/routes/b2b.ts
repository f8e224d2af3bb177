import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { getB2bCustomer, listApiCredentials, listB2bCustomerEvents, listB2bCustomers, type ApiCredentialRow, type B2bCustomerRow } from '../../db/b2b.ts';
import { loggedOperation } from '../../db/operation-log.ts';
import { maskCnpj } from '../../src/b2b/cnpj.ts';
import { b2bAdminActions, b2bCustomerStatuses } from '../../src/b2b/customer-status.ts';
import { b2bPlanIds, b2bPlans } from '../../src/b2b/plans.ts';
import { DomainError } from '../../src/errors.ts';
import { credentialRateLimit, decorateApiCaller, requireSignedRequest } from '../api-signature.ts';
import { adminErrors, errorResponse, pageQuery, standardErrors } from '../schemas/common.ts';
import { money } from '../schemas/money.ts';
import { createB2bService, type IssuedCredential } from '../../services/b2b.ts';

/**
 * Business customers (docs/b2b.md): the public sign-up, status and plans; the customer's own
 * signed routes (who am I, rotate my key); the admin's list, detail, decisions and credentials.
 */

const exampleCustomerId = '3f6c1a2b-8d4e-4f5a-9b6c-7d8e9f0a1b2c';
const exampleKeyId = 'ak_5f2b9c1d7e3a4b6c8d0e1f2a';
const exampleCnpj = '11222333000181';

const planSchema = z.object({
  id: z.enum(b2bPlanIds),
  name: z.string(),
  monthly_fee: z.string().describe('BRL, decimal string'),
  max_monthly_count: z.number().int().nullable().describe('most redemptions a month; null: no cap'),
  pos_batch_max: z.number().int().describe('most items in one POST /api/v1/pos/sync'),
  scopes: z.array(z.string()).describe('the scopes its API credentials may hold'),
  bands: z.array(z.object({ from_monthly_count: z.number().int(), fixed: z.string(), rate_bps: z.number().int() })),
});

const customerView = z.object({
  customer_id: z.string().uuid(),
  legal_name: z.string(),
  tax_id_masked: z.string().describe('the CNPJ truncated: the full one is in the admin detail only'),
  plan: z.enum(b2bPlanIds),
  status: z.enum(b2bCustomerStatuses),
  created_at: z.string(),
  updated_at: z.string(),
});

const credentialView = z.object({
  key_id: z.string(),
  scopes: z.array(z.string()),
  created_by: z.string(),
  created_at: z.string(),
  expires_at: z.string().nullable(),
  revoked_at: z.string().nullable(),
  revoke_reason: z.string().nullable(),
  replaced_by: z.string().nullable(),
});

const issuedCredentialView = z.object({
  key_id: z.string(),
  secret: z.string().describe('shown this once: the server keeps only its hash (docs/b2b.md)'),
  scopes: z.array(z.string()),
  created_at: z.string(),
});

const adminCustomerView = customerView.extend({
  tax_id: z.string().describe('the full CNPJ (admin detail only)'),
  contact_email: z.string(),
  pix_key: z.string(),
});

const adminDetailView = adminCustomerView.extend({
  events: z.array(
    z.object({ from_status: z.enum(b2bCustomerStatuses).nullable(), to_status: z.enum(b2bCustomerStatuses), reason: z.string(), actor: z.string(), at: z.string() }),
  ),
  credentials: z.array(credentialView),
});

function toCustomerView(row: B2bCustomerRow) {
  return {
    customer_id: row.id,
    legal_name: row.legal_name,
    tax_id_masked: maskCnpj(row.tax_id),
    plan: row.plan_id,
    status: row.status,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}

function toAdminCustomerView(row: B2bCustomerRow) {
  return { ...toCustomerView(row), tax_id: row.tax_id, contact_email: row.contact_email, pix_key: row.pix_key };
}

export function toCredentialView(row: ApiCredentialRow) {
  return {
    key_id: row.key_id,
    scopes: row.scopes,
    created_by: row.created_by,
    created_at: row.created_at.toISOString(),
    expires_at: row.expires_at?.toISOString() ?? null,
    revoked_at: row.revoked_at?.toISOString() ?? null,
    revoke_reason: row.revoke_reason,
    replaced_by: row.replaced_by,
  };
}

function toIssuedView(issued: IssuedCredential) {
  return { key_id: issued.row.key_id, secret: issued.secret, scopes: issued.row.scopes, created_at: issued.row.created_at.toISOString() };
}

export function plansView() {
  return b2bPlanIds.map((id) => {
    const plan = b2bPlans[id];
    return {
      id,
      name: plan.name,
      monthly_fee: money(plan.monthlyFeeMinor, 'BRL'),
      max_monthly_count: plan.maxMonthlyCount,
      pos_batch_max: plan.posBatchMax,
      scopes: [...plan.scopes],
      bands: plan.bands.map((band) => ({ from_monthly_count: band.fromMonthlyCount, fixed: money(band.fixedMinor, 'BRL'), rate_bps: band.rateBps })),
    };
  });
}

const customerIdParam = z.object({ customer_id: z.string().uuid() });
const signedSecurity = [{ apiSignature: [] }];
const signatureHeadersSchema = z.object({
  'x-plc-key-id': z.string().describe('the credential key id (ak_...)'),
  'x-plc-timestamp': z.string().describe('Unix seconds when the request was signed'),
  'x-plc-nonce': z.string().describe('16 to 64 characters of A-Z a-z 0-9 _ -, never reused with this key'),
  'x-plc-signature': z.string().describe('v1=<hex HMAC-SHA256 of the string to sign> (docs/b2b.md)'),
});
const exampleSignatureHeaders = {
  'x-plc-key-id': exampleKeyId,
  'x-plc-timestamp': '1795996800',
  'x-plc-nonce': '9b1f0c7e2d4a4c6e8f1a3b5d7c9e0f21',
  'x-plc-signature': 'v1=4f7a2c9e1b3d5f7a9c1e3b5d7f9a1c3e5b7d9f1a3c5e7b9d1f3a5c7e9b1d3f5a',
};

/** Public and signed customer routes, under /api/v1/b2b. */
export async function b2bRoutes(app: FastifyInstance): Promise<void> {
  const routes = app.withTypeProvider<ZodTypeProvider>();
  const { pool, config } = app.deps;
  const service = createB2bService(pool);
  decorateApiCaller(app);
  const signupLimit = { rateLimit: { max: config.RATE_LIMIT_B2B_SIGNUP_PER_MINUTE, timeWindow: 60_000, groupId: 'b2b-signup' } };
  const readLimit = { rateLimit: { max: config.RATE_LIMIT_PLC_PER_MINUTE, timeWindow: 60_000, groupId: 'b2b-read' } };

  routes.get(
    '/plans',
    {
      schema: {
        tags: ['b2b'],
        summary: 'The business plans: monthly fee, per-redemption price by volume band, POS batch size, credential scopes',
        description:
          'The plans a business signs up for, from the one definition the fee quote (`POST /api/v1/fees/b2b/quote`) prices too (src/b2b/plans.ts). Amounts in BRL; a band\'s price is `fixed` plus `rate_bps` basis points of the redeemed amount, for every redemption of a month whose count falls in the band.',
        requestExample: {},
        response: { 200: z.array(planSchema), ...standardErrors },
      },
      config: readLimit,
    },
    async () => plansView(),
  );

  routes.post(
    '/signup',
    {
      schema: {
        tags: ['b2b'],
        summary: 'A business signs up (PENDING_REVIEW until an admin approves it); one sign-up per CNPJ',
        description:
          "Legal name, CNPJ (14 digits, with or without punctuation, check digits verified), contact e-mail and the plan. `pix_key` is where its POS redemptions are paid (its CNPJ when left out). The answer's `customer_id` is the key to follow the sign-up (`GET /api/v1/b2b/customers/{customer_id}`); the API credentials come with the approval. Refusals: 422 `TAX_ID_INVALID`, `UNSUPPORTED_RAIL` (a pix_key that is not one); 409 `B2B_CUSTOMER_EXISTS`.",
        body: z.strictObject({
          legal_name: z.string().trim().min(2).max(200),
          tax_id: z.string().max(18).describe('the CNPJ: 14 digits, or formatted 12.345.678/0001-95'),
          contact_email: z.email().max(254),
          plan: z.enum(b2bPlanIds),
          pix_key: z.string().min(1).max(140).optional().describe('the Pix key POS redemptions are paid to; the CNPJ by default'),
        }),
        requestExample: { body: { legal_name: 'Padaria Pão Quente Ltda', tax_id: '11.222.333/0001-81', contact_email: 'financeiro@paoquente.com.br', plan: 'BUSINESS' } },
        response: { 201: customerView, 409: errorResponse, ...standardErrors },
      },
      config: signupLimit,
    },
    async (request, reply) => {
      const body = request.body;
      const row = await service.signUp({ legalName: body.legal_name, taxId: body.tax_id, contactEmail: body.contact_email, planId: body.plan, pixKey: body.pix_key });
      request.log.info({ customer_id: row.id, plan: row.plan_id }, 'b2b sign-up');
      return reply.code(201).send(toCustomerView(row));
    },
  );

  routes.get(
    '/customers/:customer_id',
    {
      schema: {
        tags: ['b2b'],
        summary: "A business customer's status by id (the tax id truncated)",
        description:
          'The sign-up as it stands: PENDING_REVIEW, ACTIVE, SUSPENDED or BLOCKED (docs/b2b.md, "States"), its plan, its legal name and its CNPJ truncated. The id, a random UUID given only in the sign-up answer, is the key; no credential is needed (a pending customer has none yet). 404 `B2B_CUSTOMER_NOT_FOUND`.',
        params: customerIdParam,
        requestExample: { params: { customer_id: exampleCustomerId } },
        response: { 200: customerView, 404: errorResponse, ...standardErrors },
      },
      config: readLimit,
    },
    async (request) => {
      const row = await getB2bCustomer(pool, request.params.customer_id);
      if (row === null) throw new DomainError('B2B_CUSTOMER_NOT_FOUND', 'no such business customer');
      return toCustomerView(row);
    },
  );

  routes.get(
    '/me',
    {
      preValidation: requireSignedRequest(app, null),
      schema: {
        tags: ['b2b'],
        summary: 'Signed: the customer and the credential that signed the request',
        description:
          "What a signed request's credential stands for: its customer (truncated tax id), and the credential's scopes and expiry. Any scope will do; the cheapest way to check a client's signing (docs/b2b.md).",
        security: signedSecurity,
        headers: signatureHeadersSchema,
        requestExample: { headers: exampleSignatureHeaders },
        response: { 200: z.object({ customer: customerView, credential: credentialView }), ...standardErrors },
      },
      config: credentialRateLimit('b2b', config.RATE_LIMIT_B2B_PER_MINUTE),
    },
    async (request) => {
      const caller = request.apiCaller!;
      const [customer, credentials] = await Promise.all([getB2bCustomer(pool, caller.customerId), listApiCredentials(pool, caller.customerId)]);
      const credential = credentials.find((row) => row.key_id === caller.keyId);
      if (customer === null || credential === undefined) throw new Error('a verified credential without its rows');
      return { customer: toCustomerView(customer), credential: toCredentialView(credential) };
    },
  );

  routes.post(
    '/credentials/rotate',
    {
      preValidation: requireSignedRequest(app, null),
      schema: {
        tags: ['b2b'],
        summary: 'Signed: a new secret for the signing credential; the old one keeps working for a grace period',
        description: `Issues a new credential with the same scopes (its secret is in this answer only) and retires the one that signed the request: it keeps working for \`grace_seconds\` (default \`API_KEY_ROTATION_GRACE_SECONDS\`, ${config.API_KEY_ROTATION_GRACE_SECONDS} s; 0 ends it now), so terminals can switch one by one. A credential is rotated once: 409 \`API_KEY_ALREADY_ROTATED\`.`,
        security: signedSecurity,
        headers: signatureHeadersSchema,
        body: z.strictObject({ grace_seconds: z.number().int().min(0).max(config.API_KEY_ROTATION_GRACE_SECONDS).optional() }).nullish(),
        requestExample: { headers: exampleSignatureHeaders, body: { grace_seconds: 3600 } },
        response: { 200: z.object({ credential: issuedCredentialView, previous: credentialView }), 409: errorResponse, ...standardErrors },
      },
      config: credentialRateLimit('b2b', config.RATE_LIMIT_B2B_PER_MINUTE),
    },
    async (request) => {
      const caller = request.apiCaller!;
      const grace = request.body?.grace_seconds ?? config.API_KEY_ROTATION_GRACE_SECONDS;
      const { issued, previous } = await service.rotate(caller.keyId, grace, `customer:${caller.keyId}`);
      request.log.info({ customer_id: caller.customerId, key_id: caller.keyId, new_key_id: issued.row.key_id }, 'api credential rotated');
      return { credential: toIssuedView(issued), previous: toCredentialView(previous) };
    },
  );
}

/** The admin's routes for business customers, under /api/v1/admin/b2b. */
export async function adminB2bRoutes(app: FastifyInstance): Promise<void> {
  const routes = app.withTypeProvider<ZodTypeProvider>();
  const { pool } = app.deps;
  const service = createB2bService(pool);
  app.addHook('onRequest', app.requireAdmin());
  const security = [{ bearer: [] }];
  const reasonBody = z.strictObject({ reason: z.string().trim().min(3).max(500).describe('why: recorded with the change') });

  routes.get(
    '/customers',
    {
      schema: {
        tags: ['admin: b2b'],
        summary: 'Business customers, newest first, optionally by status',
        description: 'Every business customer a page at a time (limit 1 to 200, default 50), newest first, optionally only one status: the full CNPJ, contact e-mail and Pix key.',
        security,
        querystring: pageQuery.extend({ status: z.enum(b2bCustomerStatuses).optional() }),
        requestExample: { querystring: { status: 'PENDING_REVIEW', limit: 50, offset: 0 } },
        response: { 200: z.array(adminCustomerView), ...adminErrors },
      },
    },
    async (request) => {
      const { status, limit, offset } = request.query;
      return (await listB2bCustomers(pool, { status }, { limit, offset })).map(toAdminCustomerView);
    },
  );

  routes.get(
    '/customers/:customer_id',
    {
      schema: {
        tags: ['admin: b2b'],
        summary: 'One business customer in full: the CNPJ, every state change with its reason, its credentials (never a secret)',
        description: 'The admin detail, the one place the full CNPJ is shown; its state changes oldest first (who, why, when) and its API credentials with their scopes, expiry, revocation and successor. 404 `B2B_CUSTOMER_NOT_FOUND`.',
        security,
        params: customerIdParam,
        requestExample: { params: { customer_id: exampleCustomerId } },
        response: { 200: adminDetailView, 404: errorResponse, ...adminErrors },
      },
    },
    async (request) => {
      const row = await getB2bCustomer(pool, request.params.customer_id);
      if (row === null) throw new DomainError('B2B_CUSTOMER_NOT_FOUND', 'no such business customer');
      const [events, credentials] = await Promise.all([listB2bCustomerEvents(pool, row.id), listApiCredentials(pool, row.id)]);
      return {
        ...toAdminCustomerView(row),
        events: events.map((event) => ({ from_status: event.from_status, to_status: event.to_status, reason: event.reason, actor: event.actor, at: event.at.toISOString() })),
        credentials: credentials.map(toCredentialView),
      };
    },
  );

  const actionNotes = {
    approve:
      'PENDING_REVIEW -> ACTIVE, or SUSPENDED -> ACTIVE. The first approval issues the customer\'s first API credential, with every scope of its plan: its `secret` is in this answer only (hand it to the customer; the server keeps a hash).',
    suspend: 'ACTIVE -> SUSPENDED: its signed requests are refused (403 `B2B_CUSTOMER_NOT_ACTIVE`) until it is approved again; its credentials are kept.',
    block: 'Any state -> BLOCKED, for good: every credential is revoked, and no action leaves BLOCKED.',
  } as const;
  for (const action of b2bAdminActions) {
    routes.post(
      `/customers/:customer_id/${action}`,
      {
        schema: {
          tags: ['admin: b2b'],
          summary: `${action[0]!.toUpperCase()}${action.slice(1)} a business customer, with a reason (recorded)`,
          description: `${actionNotes[action]} The change and its reason are recorded with the admin's name in one transaction, and the action (or its refusal) is an operation-log entry BUSINESS_DECISION. 409 \`B2B_TRANSITION_INVALID\` when the state does not allow it (docs/b2b.md, "States"); 404 \`B2B_CUSTOMER_NOT_FOUND\`.`,
          security,
          params: customerIdParam,
          body: reasonBody,
          requestExample: { params: { customer_id: exampleCustomerId }, body: { reason: action === 'approve' ? 'CNPJ active at Receita Federal; contract signed' : 'chargebacks above the contract limit' } },
          response: {
            200: z.object({ customer: adminCustomerView, from_status: z.enum(b2bCustomerStatuses), credential: issuedCredentialView.nullable() }),
            404: errorResponse,
            409: errorResponse,
            ...adminErrors,
          },
        },
      },
      async (request) => {
        const admin = request.admin!;
        const outcome = await loggedOperation(
          pool,
          { operationType: 'BUSINESS_DECISION', step: action, ownerId: request.params.customer_id, referenceId: request.params.customer_id, actor: admin.username },
          () => service.decide(request.params.customer_id, action, request.body.reason, admin.username),
        );
        request.log.info({ customer_id: outcome.customer.id, from: outcome.from, to: outcome.customer.status, admin: admin.username }, `b2b customer ${action}`);
        return {
          customer: toAdminCustomerView(outcome.customer),
          from_status: outcome.from,
          credential: outcome.credential === null ? null : toIssuedView(outcome.credential),
        };
      },
    );
  }

  routes.post(
    '/customers/:customer_id/credentials',
    {
      schema: {
        tags: ['admin: b2b'],
        summary: 'Issue a further API credential to an ACTIVE customer, with some or all of its plan\'s scopes',
        description:
          "A credential for another terminal or system of the customer, with the scopes asked (all of its plan's when left out); its `secret` is in this answer only. 422 `API_SCOPE_NOT_IN_PLAN`; 403 `B2B_CUSTOMER_NOT_ACTIVE`; 404 `B2B_CUSTOMER_NOT_FOUND`.",
        security,
        params: customerIdParam,
        body: z.strictObject({ scopes: z.array(z.string().max(50)).min(1).max(10).optional() }).nullish(),
        requestExample: { params: { customer_id: exampleCustomerId }, body: { scopes: ['pos:sync'] } },
        response: { 201: issuedCredentialView, 404: errorResponse, ...adminErrors },
      },
    },
    async (request, reply) => {
      const admin = request.admin!;
      const issued = await loggedOperation(
        pool,
        { operationType: 'BUSINESS_DECISION', step: 'issue credential', ownerId: request.params.customer_id, referenceId: request.params.customer_id, actor: admin.username },
        () => service.issueCredential(request.params.customer_id, request.body?.scopes, admin.username),
      );
      request.log.info({ customer_id: request.params.customer_id, key_id: issued.row.key_id, admin: admin.username }, 'api credential issued');
      return reply.code(201).send(toIssuedView(issued));
    },
  );

  routes.post(
    '/credentials/:key_id/revoke',
    {
      schema: {
        tags: ['admin: b2b'],
        summary: 'Revoke an API credential at once, with a reason',
        description: 'The credential stops working now (401 `API_KEY_REVOKED`); revoking it again keeps the first revocation. 404 `API_KEY_NOT_FOUND`.',
        security,
        params: z.object({ key_id: z.string().regex(/^ak_[0-9a-f]{24}$/) }),
        body: reasonBody,
        requestExample: { params: { key_id: exampleKeyId }, body: { reason: 'terminal stolen' } },
        response: { 200: credentialView, 404: errorResponse, ...adminErrors },
      },
    },
    async (request) => {
      const row = await loggedOperation(
        pool,
        { operationType: 'BUSINESS_DECISION', step: 'revoke credential', ownerId: null, referenceId: request.params.key_id, actor: request.admin?.username ?? 'unknown' },
        () => service.revoke(request.params.key_id, request.body.reason),
      );
      request.log.info({ key_id: row.key_id, admin: request.admin?.username }, 'api credential revoked');
      return toCredentialView(row);
    },
  );
}

export { exampleCnpj, exampleSignatureHeaders, signatureHeadersSchema, signedSecurity };
