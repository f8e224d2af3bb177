import { readFileSync } from 'node:fs';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { buildApp } from '../../api/app.ts';
import { statusByCode } from '../../api/plugins/errors.ts';
import { frameworkStatusByCode } from '../../api/schemas/framework-errors.ts';
import { unstorableTextTypes } from '../../api/plugins/storable-text.ts';
import { errorResponse, httpValidationError } from '../../api/schemas/common.ts';
import { DomainError, errorCodes, type ErrorCode } from '../../src/errors.ts';
import { createTestApp, type TestApp } from '../support/app.ts';

/**
 * docs/errors.md is the one place that says which errors come as the spec's 422 `detail` list and
 * which as `{code, message, details}`, and lists every code with its status. These tests hold the
 * page and the error handler to each other: every code is on the page with the status the
 * handler answers, and every code is answered in the body the page says.
 */
const page = readFileSync(new URL('../../docs/errors.md', import.meta.url), 'utf8');

/** `| \`CODE\` | 409 | ...` rows of the page's tables. */
function documentedStatuses(): Map<string, number> {
  const rows = new Map<string, number>();
  for (const match of page.matchAll(/^\| `([A-Z][A-Z0-9_]+)` \| (\d{3}) \|/gm)) rows.set(match[1] as string, Number(match[2]));
  return rows;
}

describe('docs/errors.md', () => {
  it('lists every domain and framework code with the status the error handler answers, and no other', () => {
    const rows = documentedStatuses();
    const actual = new Map<string, number>([...Object.entries(statusByCode), ...Object.entries(frameworkStatusByCode)]);
    expect(Object.fromEntries(rows)).toEqual(Object.fromEntries(actual));
  });

  it('lists the 422 types the edge answers with beyond the schemas', () => {
    for (const type of [...Object.values(unstorableTextTypes), 'json_invalid', 'invalid_request']) {
      expect(page, type).toContain(`\`${type}\``);
    }
  });
});

describe('what the HTTP server refuses before any route', () => {
  /** Writes raw bytes to a listening app and reads what it answers before closing. */
  async function raw(request: string): Promise<string> {
    const t = await createTestApp();
    try {
      const address = new URL(await t.app.listen({ host: '127.0.0.1', port: 0 }));
      return await new Promise<string>((resolve, reject) => {
        let answer = '';
        const socket = net.connect(Number(address.port), '127.0.0.1', () => socket.write(request));
        socket.on('data', (chunk) => (answer += chunk.toString()));
        socket.on('close', () => resolve(answer));
        socket.on('error', reject);
      });
    } finally {
      await t.close();
    }
  }

  it.each([
    ['HTTP it cannot parse', 400, 'MALFORMED_REQUEST', 'GET /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: nope\r\n\r\n'],
    ['headers over the limit', 431, 'HEADERS_TOO_LARGE', `GET /healthz HTTP/1.1\r\nHost: x\r\nX-Pad: ${'a'.repeat(20_000)}\r\n\r\n`],
  ])('%s: %i %s as ErrorResponse', async (_name, status, code, request) => {
    const answer = await raw(request);
    expect(answer.startsWith(`HTTP/1.1 ${status} `), answer.slice(0, 100)).toBe(true);
    expect(errorResponse.parse(JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4)))).toMatchObject({ code });
  });
});

describe('the error handler answers every code in the body docs/errors.md gives it', () => {
  let t: TestApp;
  let app: Awaited<ReturnType<typeof buildApp>>;
  beforeAll(async () => {
    t = await createTestApp();
    app = await buildApp({ deps: t.app.deps, logger: false });
    app.withTypeProvider<ZodTypeProvider>().get(
      '/api/v1/probe/:code',
      { schema: { summary: 'probe', params: z.object({ code: z.enum(errorCodes) }), response: { 200: z.object({}) } } },
      async (request) => {
        throw new DomainError(request.params.code, `refused with ${request.params.code}`, { field: 'authorization.signature' });
      },
    );
  });
  afterAll(async () => {
    await app?.close();
    await t?.close();
  });

  it.each(errorCodes.map((code) => [code, statusByCode[code]] as [ErrorCode, number]))('%s: %i', async (code, status) => {
    const response = await app.inject({ method: 'GET', url: `/api/v1/probe/${code}` });
    expect(response.statusCode).toBe(status);
    if (status === 422) {
      const body = httpValidationError.parse(response.json());
      expect(body.detail).toEqual([{ loc: ['body', 'authorization', 'signature'], msg: `refused with ${code}`, type: code }]);
    } else {
      const body = errorResponse.parse(response.json());
      expect(body.code).toBe(code);
      // A 5xx names its request, whose log lines say the rest.
      if (status >= 500) expect(body.request_id).toBe(response.headers['x-request-id']);
    }
  });
});
