import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../support/app.ts';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(async () => {
  await t?.close();
});

describe('health', () => {
  it.each(['/healthz', '/livez'])('GET %s answers ok', async (url) => {
    const response = await t.app.inject({ method: 'GET', url });
    expect(response.statusCode).toBe(200);
    expect(response.json()).toEqual({ status: 'ok' });
  });

  it('GET /readyz answers ready with PostgreSQL, migrations and Temporal checked', async () => {
    const response = await t.app.inject({ method: 'GET', url: '/readyz' });
    expect(response.json()).toMatchObject({
      status: 'ready',
      checks: { postgres: { ok: true }, migrations: { ok: true }, temporal: { ok: true } },
    });
    expect(response.statusCode).toBe(200);
  });
});

describe('request ids', () => {
  it('echoes a plain X-Request-Id and makes one when it is missing or unsafe', async () => {
    const given = await t.app.inject({ method: 'GET', url: '/healthz', headers: { 'x-request-id': 'abc-123' } });
    expect(given.headers['x-request-id']).toBe('abc-123');
    const unsafe = await t.app.inject({ method: 'GET', url: '/healthz', headers: { 'x-request-id': 'a b\u00e9' } });
    expect(unsafe.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
  });
});

describe('errors', () => {
  it('answers 404 with a stable code for an unknown route', async () => {
    const response = await t.app.inject({ method: 'GET', url: '/api/v1/nope' });
    expect(response.statusCode).toBe(404);
    expect(response.json()).toMatchObject({ code: 'NOT_FOUND' });
  });

  it('answers 422 HTTPValidationError for malformed JSON', async () => {
    const response = await t.app.inject({
      method: 'POST',
      url: '/api/v1/auth/login',
      headers: { 'content-type': 'application/json' },
      payload: '{"username": ',
    });
    expect(response.statusCode).toBe(422);
    expect(response.json().detail[0]).toMatchObject({ loc: ['body'], type: 'json_invalid' });
  });

  it('answers 422 naming each missing or mistyped field', async () => {
    const response = await t.app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { username: 5 } });
    expect(response.statusCode).toBe(422);
    const locs = (response.json().detail as { loc: unknown[] }[]).map((d) => d.loc);
    expect(locs).toContainEqual(['body', 'username']);
    expect(locs).toContainEqual(['body', 'password']);
  });

  it('refuses unknown fields and __proto__ keys', async () => {
    const extra = await t.app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { username: 'a', password: 'b', admin: true } });
    expect(extra.statusCode).toBe(422);
    const proto = await t.app.inject({
      method: 'POST',
      url: '/api/v1/auth/login',
      headers: { 'content-type': 'application/json' },
      payload: '{"username":"a","password":"b","__proto__":{"x":1}}',
    });
    expect(proto.statusCode).toBe(422);
  });

  it('answers 413 for an oversized body', async () => {
    const response = await t.app.inject({
      method: 'POST',
      url: '/api/v1/auth/login',
      payload: { username: 'a', password: 'x'.repeat(200 * 1024) },
    });
    expect(response.statusCode).toBe(413);
    expect(response.json()).toMatchObject({ code: 'PAYLOAD_TOO_LARGE' });
  });

  it('answers 415 for a body that is not JSON', async () => {
    const response = await t.app.inject({
      method: 'POST',
      url: '/api/v1/auth/login',
      headers: { 'content-type': 'text/plain' },
      payload: 'hello',
    });
    expect(response.statusCode).toBe(415);
  });
});
