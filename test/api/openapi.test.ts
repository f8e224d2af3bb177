import { readFileSync } from 'node:fs';
import http from 'node:http';
import { compileErrors, validate } from '@readme/openapi-parser';
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { bodyLimitBytes, buildApp, maxParamLength } from '../../api/app.ts';
import { isRouteExtension, routeExtensions } from '../../api/extensions.ts';
import { createTestApp, type TestApp } from '../support/app.ts';
import { observeStatuses } from '../support/documented-statuses.ts';
import {
  exampleBody,
  exampleParameters,
  exampleRequest,
  loadDocument,
  operationsOf,
  requiresBearer,
  schemaValidator,
  urlOf,
  type OpenapiDocument,
  type Operation,
} from '../support/openapi.ts';

const unlimited = {
  RATE_LIMIT_PLC_PER_MINUTE: '100000',
  RATE_LIMIT_TRANSFER_PER_MINUTE: '100000',
  RATE_LIMIT_REDEEM_PER_MINUTE: '100000',
  RATE_LIMIT_SECURITY_PER_MINUTE: '100000',
  RATE_LIMIT_WEBHOOK_REMOVAL_PER_MINUTE: '100000',
  LOGIN_RATE_LIMIT_PER_MINUTE: '10000',
};

let t: TestApp;
let document: OpenapiDocument;
let operations: Operation[];
let admin: Record<string, string>;
beforeAll(async () => {
  t = await createTestApp(unlimited);
  document = await loadDocument(t.app);
  operations = operationsOf(document);
  // A super_admin: the administrators' routes refuse an admin (403) before they read a body.
  admin = await t.adminHeaders('super_admin');
});
afterAll(async () => {
  await t?.close();
});

describe('GET /openapi.json', () => {
  it('serves an OpenAPI 3.1 document, version 0.1.0, that passes a standard validator', async () => {
    const response = await t.app.inject({ method: 'GET', url: '/openapi.json' });
    expect(response.statusCode).toBe(200);
    const document = response.json();
    expect(document.openapi).toBe('3.1.0');
    expect(document.info.version).toBe('0.1.0');
    const result = await validate(structuredClone(document));
    expect(result.valid, result.valid ? '' : compileErrors(result)).toBe(true);
  });

  it('describes every route the app serves under /api/v1, with the 422 HTTPValidationError body', async () => {
    const document = (await t.app.inject({ method: 'GET', url: '/openapi.json' })).json();
    const paths = Object.keys(document.paths as Record<string, unknown>);
    expect(paths).toContain('/api/v1/auth/login');
    expect(paths).toContain('/api/v1/balance/deposit');
    expect(document.components.schemas.HTTPValidationError).toBeDefined();
    const login = document.paths['/api/v1/auth/login'].post;
    expect(login.responses['422']).toBeDefined();
  });

  it('offers only operations the spec names, plus the listed extensions (and health and docs)', async () => {
    const document = (await t.app.inject({ method: 'GET', url: '/openapi.json' })).json();
    const specOperations = new Set(
      readFileSync(new URL('../../docs/spec/endpoints.txt', import.meta.url), 'utf8')
        .split('\n')
        .map((line) => line.trim())
        .filter((line) => line !== ''),
    );
    const served: string[] = [];
    for (const [path, operations] of Object.entries(document.paths as Record<string, Record<string, unknown>>)) {
      for (const method of Object.keys(operations)) {
        const specPath = path.replace(/\{(\w+)\}/g, '{$1}');
        if (!path.startsWith('/api/v1/')) continue;
        served.push(`${method.toUpperCase()} ${specPath}`);
      }
    }
    const extra = served.filter((operation) => !specOperations.has(operation) && !isRouteExtension(operation));
    expect(extra).toEqual([]);
    // Every extension names its reason, and none shadows an operation of the spec.
    for (const extension of routeExtensions) {
      expect(extension.reason.length, extension.operation).toBeGreaterThan(20);
      expect(specOperations.has(extension.operation), extension.operation).toBe(false);
    }
  });

  it('types every signed timestamp (timestamp_ms) as an integer, and bounds the destination as the protocol does', async () => {
    const document = (await t.app.inject({ method: 'GET', url: '/openapi.json' })).json();
    const found: { where: string; schema: Record<string, unknown> }[] = [];
    const walk = (node: unknown, where: string, name: string): void => {
      if (node === null || typeof node !== 'object') return;
      if (name === 'timestamp_ms' || name === 'destination') found.push({ where, schema: node as Record<string, unknown> });
      for (const [key, value] of Object.entries(node)) walk(value, `${where}/${key}`, key);
    };
    walk(document, '', '');
    const timestamps = found.filter((entry) => entry.where.endsWith('/timestamp_ms'));
    // The redeem authorisation, the cancel authorisation and POST /settlements at least.
    expect(timestamps.length).toBeGreaterThanOrEqual(3);
    for (const { where, schema } of timestamps) {
      expect(schema.type, where).toBe('integer');
      expect(schema.minimum, where).toBe(0);
    }
    const destinations = found.filter((entry) => entry.where.endsWith('/properties/destination') && entry.schema.type === 'string');
    expect(destinations.length).toBeGreaterThanOrEqual(1);
    for (const { where, schema } of destinations) expect(schema.maxLength, where).toBe(140);
  });

  it('serves the interactive documentation page', async () => {
    const response = await t.app.inject({ method: 'GET', url: '/docs/' });
    expect([200, 302]).toContain(response.statusCode);
  });
});

describe('every operation documents itself', () => {
  it('has a summary, a description and a request example: its body and every parameter', () => {
    const missing: string[] = [];
    for (const { name, operation } of operations) {
      if ((operation.summary ?? '').length < 10) missing.push(`${name}: summary`);
      if ((operation.description ?? '').length < 40) missing.push(`${name}: description`);
      const media = operation.requestBody?.content['application/json'];
      if (operation.requestBody !== undefined && media?.example === undefined && media?.examples === undefined) missing.push(`${name}: body example`);
      for (const parameter of operation.parameters ?? []) {
        if (parameter.example === undefined) missing.push(`${name}: example of ${parameter.in} parameter ${parameter.name}`);
      }
    }
    expect(missing).toEqual([]);
  });

  it('describes every response it can answer in words a reader can use (none is left as "Default Response")', () => {
    const vague: string[] = [];
    for (const { name, operation } of operations) {
      for (const [status, response] of Object.entries((operation as { responses?: Record<string, { description?: string }> }).responses ?? {})) {
        const description = response.description ?? '';
        if (description === 'Default Response' || description.length < 12) vague.push(`${name} ${status}: ${JSON.stringify(description)}`);
      }
    }
    expect(vague).toEqual([]);
  });

  it('has request examples that fit the schemas it documents', () => {
    const validatorOf = schemaValidator(document);
    const misfits: string[] = [];
    for (const { name, operation } of operations) {
      const media = operation.requestBody?.content['application/json'];
      if (media?.schema !== undefined && media.example !== undefined) {
        const check = validatorOf(media.schema);
        if (!check(media.example)) misfits.push(`${name} body: ${JSON.stringify(check.errors?.slice(0, 2))}`);
      }
      for (const parameter of operation.parameters ?? []) {
        if (parameter.schema === undefined || parameter.example === undefined) continue;
        const check = validatorOf(parameter.schema);
        // Query values arrive as text and are coerced; a number example stands for its text.
        const value = parameter.example;
        if (!check(value) && !check(String(value))) misfits.push(`${name} ${parameter.in} ${parameter.name}: ${JSON.stringify(check.errors?.slice(0, 2))}`);
      }
    }
    expect(misfits).toEqual([]);
  });
});

/**
 * Each operation is sent the requests that the framework, the error handler, the admin guard and
 * the rate limits refuse, and must answer each with a status its entry lists, in the body schema
 * the entry gives for it. (Every other answer any test sees is checked by test/support/app.ts.)
 */
describe('every status an operation answers is in its entry, with its body', () => {
  function expectDocumented(op: Operation, response: LightMyRequestResponse, expected?: { status: number; code?: string; type?: string }): void {
    const status = String(response.statusCode);
    const entry = op.operation.responses[status];
    expect(entry, `${op.name} answered ${status}, which its entry does not list: ${response.body.slice(0, 200)}`).toBeDefined();
    const schema = entry?.content?.['application/json']?.schema;
    if (schema !== undefined) {
      const check = schemaValidator(document)(schema);
      expect(check(response.json()), `${op.name} ${status} body ${response.body.slice(0, 200)}: ${JSON.stringify(check.errors?.slice(0, 2))}`).toBe(true);
    }
    if (expected !== undefined) {
      expect(response.statusCode, `${op.name}: ${response.body.slice(0, 200)}`).toBe(expected.status);
      if (expected.code !== undefined) expect(response.json().code, op.name).toBe(expected.code);
      if (expected.type !== undefined) expect(response.json().detail[0].type, op.name).toBe(expected.type);
    }
  }
  const headersOf = (op: Operation): Record<string, string> => ({ ...exampleParameters(op.operation, 'header'), ...(requiresBearer(op.operation) ? admin : {}) });
  const withPathParams = () => operations.filter((op) => op.path.includes('{'));
  const withBodies = () => operations.filter((op) => ['POST', 'PUT', 'PATCH', 'DELETE'].includes(op.method));

  it('a path parameter that is not percent-encoded UTF-8: 400 MALFORMED_URL; one too long: 414 URI_TOO_LONG', async () => {
    expect(withPathParams().length).toBeGreaterThan(10);
    for (const op of withPathParams()) {
      const params = exampleParameters(op.operation, 'path');
      const [name] = Object.keys(params) as [string];
      const malformed = await t.app.inject({ method: op.method as 'GET', url: urlOf(op.path, { ...params, [name]: '%E0%A4%A' }, {}, new Set([name])), headers: headersOf(op) });
      expectDocumented(op, malformed, { status: 400, code: 'MALFORMED_URL' });
      const long = await t.app.inject({ method: op.method as 'GET', url: urlOf(op.path, { ...params, [name]: 'a'.repeat(maxParamLength + 1) }), headers: headersOf(op) });
      expectDocumented(op, long, { status: 414, code: 'URI_TOO_LONG' });
    }
  });

  it('a body that is not JSON: 415; over the limit: 413; unparsable: 422 json_invalid', async () => {
    expect(withBodies().length).toBeGreaterThan(20);
    for (const op of withBodies()) {
      const url = urlOf(op.path, exampleParameters(op.operation, 'path'));
      const method = op.method as 'POST';
      const text = await t.app.inject({ method, url, headers: { ...headersOf(op), 'content-type': 'text/plain' }, payload: 'amount=1' });
      expectDocumented(op, text, { status: 415, code: 'UNSUPPORTED_MEDIA_TYPE' });
      // A route may take more than the app's limit (a POS batch): its 413 entry says how much.
      const limit = Number(/over (\d+) bytes/.exec(op.operation.responses['413']?.description ?? '')?.[1] ?? bodyLimitBytes);
      const large = await t.app.inject({ method, url, headers: { ...headersOf(op), 'content-type': 'application/json' }, payload: JSON.stringify({ pad: 'x'.repeat(limit) }) });
      expectDocumented(op, large, { status: 413, code: 'PAYLOAD_TOO_LARGE' });
      const broken = await t.app.inject({ method, url, headers: { ...headersOf(op), 'content-type': 'application/json' }, payload: '{"amount": ' });
      expectDocumented(op, broken, { status: 422, type: 'json_invalid' });
    }
  });

  it('without a bearer token: 401 UNAUTHENTICATED exactly where the entry requires the bearer scheme', async () => {
    const guarded = operations.filter((op) => requiresBearer(op.operation));
    expect(guarded.length).toBeGreaterThan(20);
    for (const op of operations) {
      const request = exampleRequest(op);
      // A body that cannot be parsed keeps an open operation from doing anything.
      const response = await t.app.inject(exampleBody(op.operation) === undefined ? request : { ...request, payload: '{' });
      if (requiresBearer(op.operation)) {
        expectDocumented(op, response, { status: 401, code: 'UNAUTHENTICATED' });
      } else {
        expectDocumented(op, response);
        expect(response.statusCode === 401 && response.json().code === 'UNAUTHENTICATED', `${op.name} needs a token its entry does not ask for`).toBe(false);
      }
    }
  });

  it('past a rate limit: 429 RATE_LIMITED with Retry-After exactly where the entry lists 429', async () => {
    const limited = await createTestApp({
      RATE_LIMIT_PLC_PER_MINUTE: '1',
      RATE_LIMIT_TRANSFER_PER_MINUTE: '1',
      RATE_LIMIT_REDEEM_PER_MINUTE: '1',
      RATE_LIMIT_SECURITY_PER_MINUTE: '1',
      RATE_LIMIT_FEES_PER_MINUTE: '1',
      RATE_LIMIT_WEBHOOK_REMOVAL_PER_MINUTE: '1',
      LOGIN_RATE_LIMIT_PER_MINUTE: '1',
      RATE_LIMIT_B2B_SIGNUP_PER_MINUTE: '1',
    });
    try {
      const limitedDocument = await loadDocument(limited.app);
      let seen = 0;
      for (const op of operationsOf(limitedDocument)) {
        // The first request spends a group's one request; the second is over the limit. A
        // request that fails validation or authentication still counts and does nothing.
        // Admin operations go without a token: nothing runs. The guard refuses them before any
        // limit counts, except on the backoff removals, whose limit counts first (they answer 429
        // for their cooldown too: api/routes/redemption-webhooks.ts).
        // A signed route (docs/b2b.md) counts per credential once the signature is checked: an
        // unsigned probe is refused before; test/api/b2b.test.ts checks its 429.
        if (op.operation.security?.some((requirement) => 'apiSignature' in requirement) === true) continue;
        const request = exampleRequest(op);
        const probe = exampleBody(op.operation) === undefined ? request : { ...request, payload: '{' };
        await limited.app.inject(probe);
        const second = await limited.app.inject(probe);
        if (op.operation.responses['429'] !== undefined) {
          seen += 1;
          expect(second.statusCode, `${op.name}: ${second.body.slice(0, 200)}`).toBe(429);
          expect(second.json()).toMatchObject({ code: 'RATE_LIMITED' });
          expect(Number(second.headers['retry-after']), op.name).toBeGreaterThan(0);
          expect(Object.keys(op.operation.responses['429']?.headers ?? {}), op.name).toContain('retry-after');
        } else {
          expect(second.statusCode, `${op.name} is rate limited without documenting 429`).not.toBe(429);
        }
      }
      expect(seen).toBeGreaterThanOrEqual(10);
    } finally {
      await limited.close();
    }
  });

  it('answers 503 SERVICE_UNAVAILABLE, in its documented shape, to a request arriving on an open connection while the app closes', async () => {
    const closing = await createTestApp();
    // One kept-alive connection, used again once the app has begun to close.
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const get = (port: number) =>
      new Promise<{ status: number; body: string }>((resolve, reject) => {
        http
          .get({ host: '127.0.0.1', port, path: '/api/v1/balance/alice', agent }, (response) => {
            let body = '';
            response.on('data', (chunk: Buffer) => (body += chunk.toString()));
            response.on('end', () => resolve({ status: response.statusCode ?? 0, body }));
          })
          .on('error', reject);
      });
    let port = 0;
    let answer: { status: number; body: string } | undefined;
    closing.app.addHook('preClose', async () => {
      answer = await get(port);
    });
    try {
      const address = await closing.app.listen({ host: '127.0.0.1', port: 0 });
      port = Number(new URL(address).port);
      expect((await get(port)).status).toBe(200);
      const closingDocument = await loadDocument(closing.app);
      expect(closingDocument.paths['/api/v1/balance/{owner_id}']?.get?.responses['503']).toBeDefined();
    } finally {
      await closing.close();
      agent.destroy();
    }
    expect(answer?.status).toBe(503);
    expect(JSON.parse(answer?.body ?? '{}')).toMatchObject({ code: 'SERVICE_UNAVAILABLE' });
  });

  it('the check on what tests observe fails on a status an entry does not list (the check can fail)', async () => {
    const deps = t.app.deps;
    const app = await buildApp({ deps, logger: false });
    app.get('/api/v1/probe/teapot', { schema: { summary: 'probe', response: { 200: z.object({}) } } }, async (_request, reply) => reply.code(418 as 200).send({}));
    const observer = observeStatuses(app);
    try {
      expect((await app.inject({ method: 'GET', url: '/api/v1/probe/teapot' })).statusCode).toBe(418);
      expect(() => observer.assertDocumented()).toThrow(/GET \/api\/v1\/probe\/teapot -> 418/);
    } finally {
      await app.close();
    }
  });
});

describe('isRouteExtension', () => {
  it.each([
    ['POST /api/v1/dev/simulate/payments/{id}/pay', true],
    ['GET /api/v1/dev/anything', true],
    ['GET /api/v1/devices', false],
    ['GET /api/v1/plc/{token_id}/status', false],
  ])('%s -> %s', (operation, expected) => {
    expect(isRouteExtension(operation)).toBe(expected);
  });

  it('matches an exact operation only with its method', () => {
    const list = [{ operation: 'GET /api/v1/x/{id}', reason: 'a reason long enough to pass' }];
    expect(isRouteExtension('GET /api/v1/x/{id}', list)).toBe(true);
    expect(isRouteExtension('POST /api/v1/x/{id}', list)).toBe(false);
  });
});
