import { readFileSync } from 'node:fs';
import { compileErrors, validate } from '@readme/openapi-parser';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../support/app.ts';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
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

  it('offers only operations the spec names (plus health and docs)', async () => {
    const document = (await t.app.inject({ method: 'GET', url: '/openapi.json' })).json();
    const specOperations = new Set(
      readFileSync(new URL('../../../shared/spec/endpoints.txt', import.meta.url), 'utf8')
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
    const extra = served.filter((operation) => !specOperations.has(operation) && !operation.includes('/api/v1/dev/'));
    expect(extra).toEqual([]);
  });

  it('serves the interactive documentation page', async () => {
    const response = await t.app.inject({ method: 'GET', url: '/docs/' });
    expect([200, 302]).toContain(response.statusCode);
  });
});
