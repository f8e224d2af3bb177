import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findUnstorableText, unstorableTextTypes } from '../../api/plugins/storable-text.ts';
import { createTestApp, type TestApp } from '../support/app.ts';
import { exampleBody, exampleParameters, exampleRequest, loadDocument, operationsOf, requiresBearer, urlOf, type Operation } from '../support/openapi.ts';

/**
 * Text PostgreSQL cannot store (a NUL; a lone UTF-16 surrogate) is refused with a 422 naming the
 * field, for every operation of the served OpenAPI and every place a string can come in: each
 * string of the documented example body, a new object key, each path and query parameter, each
 * header. Before this, a NUL in a login's username answered 500.
 */

describe('findUnstorableText', () => {
  it.each([
    ['a clean object', { a: 'x', b: ['y', 1, null, true], c: { d: 'z\u00e9\ud83d\ude00' } }, []],
    ['a NUL in a string', 'a\u0000b', [{ path: [], type: 'text_contains_nul' }]],
    ['a NUL deep in arrays and objects', { a: [{ b: 'ok' }, { b: ['x', 'y\u0000'] }] }, [{ path: ['a', 1, 'b', 1], type: 'text_contains_nul' }]],
    ['a lone high surrogate', { name: 'x\ud800' }, [{ path: ['name'], type: 'text_lone_surrogate' }]],
    ['a lone low surrogate', ['\udc00y'], [{ path: [0], type: 'text_lone_surrogate' }]],
    ['a reversed pair', 'a\ude00\ud83d', [{ path: [], type: 'text_lone_surrogate' }]],
    ['a NUL in an object key (reported at the object)', { outer: { 'k\u0000': 1 } }, [{ path: ['outer'], type: 'text_contains_nul' }]],
    ['two problems, in document order', { a: '\u0000', b: '\ud800' }, [{ path: ['a'], type: 'text_contains_nul' }, { path: ['b'], type: 'text_lone_surrogate' }]],
  ])('%s', (_name, value, expected) => {
    expect(findUnstorableText(value).map(({ path, type }) => ({ path, type }))).toEqual(expected);
  });

  it('walks a body nested deeper than the call stack in linear time, and reports at most 20 problems', () => {
    // As deep as a body within the 128 KiB limit can nest.
    let deep: unknown = 'bottom\u0000';
    for (let depth = 0; depth < 131_072; depth += 1) deep = [deep];
    const started = performance.now();
    const found = findUnstorableText(deep);
    expect(performance.now() - started).toBeLessThan(1000);
    expect(found).toHaveLength(1);
    // The reported path is bounded, so is the answer.
    expect(found[0]?.path).toHaveLength(65);
    expect(found[0]?.path.at(-1)).toBe('...');
    expect(findUnstorableText(Array.from({ length: 100 }, () => '\u0000'))).toHaveLength(20);
  });

  it('finds a bad character inserted anywhere in any JSON value, at its path (property)', () => {
    const clean = fc.jsonValue().filter((value) => findUnstorableText(value).length === 0);
    fc.assert(
      fc.property(clean, fc.constantFrom('\u0000', '\ud800', '\udbff', '\udc00', '\udfff'), fc.nat(), fc.nat(), (value, bad, pick, at) => {
        const leaves = stringLeaves(value);
        if (leaves.length === 0) return;
        const leaf = leaves[pick % leaves.length] as Leaf;
        // A lone surrogate next to its partner would complete a valid pair: such a case proves nothing.
        const text = insertAt(leaf.value, bad, at);
        if (bad !== '\u0000' && (text as string & { isWellFormed(): boolean }).isWellFormed()) return;
        const found = findUnstorableText(setAt(value, leaf.path, text));
        expect(found.map((issue) => issue.path)).toContainEqual(leaf.path);
        expect(found.find((issue) => JSON.stringify(issue.path) === JSON.stringify(leaf.path))?.type).toBe(
          bad === '\u0000' ? unstorableTextTypes.nul : unstorableTextTypes.loneSurrogate,
        );
      }),
      { numRuns: 500 },
    );
  });
});

interface Leaf {
  path: (string | number)[];
  value: string;
}

function stringLeaves(value: unknown, path: (string | number)[] = []): Leaf[] {
  if (typeof value === 'string') return [{ path, value }];
  if (Array.isArray(value)) return value.flatMap((item, index) => stringLeaves(item, [...path, index]));
  if (typeof value === 'object' && value !== null) return Object.entries(value).flatMap(([key, item]) => stringLeaves(item, [...path, key]));
  return [];
}

function objectPaths(value: unknown, path: (string | number)[] = []): (string | number)[][] {
  if (Array.isArray(value)) return value.flatMap((item, index) => objectPaths(item, [...path, index]));
  if (typeof value === 'object' && value !== null) return [path, ...Object.entries(value).flatMap(([key, item]) => objectPaths(item, [...path, key]))];
  return [];
}

function setAt(value: unknown, path: readonly (string | number)[], replacement: unknown): unknown {
  if (path.length === 0) return replacement;
  const [head, ...rest] = path as [string | number, ...(string | number)[]];
  const copy = (Array.isArray(value) ? [...value] : { ...(value as Record<string, unknown>) }) as Record<string | number, unknown>;
  copy[head] = setAt(copy[head], rest, replacement);
  return copy;
}

function getAt(value: unknown, path: readonly (string | number)[]): unknown {
  return path.reduce<unknown>((current, key) => (current as Record<string | number, unknown>)[key], value);
}

function insertAt(text: string, bad: string, at: number): string {
  const index = at % (text.length + 1);
  return `${text.slice(0, index)}${bad}${text.slice(index)}`;
}

/** One place of one operation where a string comes in, and the `loc` a refusal must name. */
interface Target {
  op: Operation;
  place: 'body' | 'body key' | 'path' | 'query' | 'header';
  path: (string | number)[];
  /** Whether a lone surrogate can be sent there at all (a URL carries UTF-8 only). */
  surrogates: boolean;
}

let t: TestApp;
let admin: Record<string, string>;
let targets: Target[];
beforeAll(async () => {
  t = await createTestApp({
    RATE_LIMIT_PLC_PER_MINUTE: '1000000',
    RATE_LIMIT_TRANSFER_PER_MINUTE: '1000000',
    RATE_LIMIT_REDEEM_PER_MINUTE: '1000000',
    RATE_LIMIT_SECURITY_PER_MINUTE: '1000000',
    RATE_LIMIT_WEBHOOK_REMOVAL_PER_MINUTE: '1000000',
    LOGIN_RATE_LIMIT_PER_MINUTE: '10000',
    RATE_LIMIT_B2B_PER_MINUTE: '1000000',
    RATE_LIMIT_B2B_SIGNUP_PER_MINUTE: '1000000',
    RATE_LIMIT_FEES_PER_MINUTE: '1000000',
  });
  // A super_admin: the administrators' routes refuse anyone else before they read a body.
  admin = await t.adminHeaders('super_admin');
  const operations = operationsOf(await loadDocument(t.app));
  targets = operations.flatMap((op): Target[] => {
    const body = exampleBody(op.operation);
    const headers = new Set(['x-device-id', ...Object.keys(exampleParameters(op.operation, 'header'))]);
    return [
      ...(body === undefined ? [] : stringLeaves(body).map((leaf) => ({ op, place: 'body' as const, path: leaf.path, surrogates: true }))),
      ...(body === undefined ? [] : objectPaths(body).map((path) => ({ op, place: 'body key' as const, path, surrogates: true }))),
      ...Object.keys(exampleParameters(op.operation, 'path')).map((name) => ({ op, place: 'path' as const, path: [name], surrogates: false })),
      ...Object.keys(exampleParameters(op.operation, 'query')).map((name) => ({ op, place: 'query' as const, path: [name], surrogates: false })),
      ...[...headers].map((name) => ({ op, place: 'header' as const, path: [name], surrogates: true })),
    ];
  });
});
afterAll(async () => {
  await t?.close();
});

async function send(target: Target, bad: string, at: number) {
  const { op } = target;
  const request = exampleRequest(op, requiresBearer(op.operation) ? admin : {});
  const headers = { ...(request.headers as Record<string, string>) };
  const params = exampleParameters(op.operation, 'path');
  const query = exampleParameters(op.operation, 'query');
  let body = exampleBody(op.operation);
  const [name] = target.path as [string];
  switch (target.place) {
    case 'body':
      body = setAt(body, target.path, insertAt(getAt(body, target.path) as string, bad, at));
      break;
    case 'body key':
      body = setAt(body, target.path, { ...(getAt(body, target.path) as object), [insertAt('extra', bad, at)]: 'x' });
      break;
    case 'path':
      params[name] = insertAt(params[name] ?? '', bad, at);
      break;
    case 'query':
      query[name] = insertAt(query[name] ?? '', bad, at);
      break;
    case 'header':
      headers[name] = insertAt(headers[name] ?? 'device-1', bad, at);
      break;
  }
  // urlOf percent-encodes: a NUL travels as %00, as a client would send it.
  return t.app.inject({
    method: request.method,
    url: urlOf(op.path, params, query),
    headers,
    ...(body === undefined ? {} : { payload: JSON.stringify(body) }),
  });
}

function expectedLoc(target: Target): (string | number)[] {
  switch (target.place) {
    case 'body':
    case 'body key':
      return ['body', ...target.path];
    case 'path':
      return ['path', ...target.path];
    case 'query':
      return ['query', ...target.path];
    case 'header':
      return ['header', ...target.path];
  }
}

async function expectRefused(target: Target, bad: string, at: number): Promise<void> {
  const response = await send(target, bad, at);
  const where = `${target.op.name} ${target.place} ${JSON.stringify(target.path)} with ${JSON.stringify(bad)} at ${at}`;
  expect(response.statusCode, `${where}: ${response.body.slice(0, 300)}`).toBe(422);
  const type = bad === '\u0000' ? unstorableTextTypes.nul : unstorableTextTypes.loneSurrogate;
  expect(response.json().detail, where).toContainEqual(expect.objectContaining({ loc: expectedLoc(target), type }));
}

describe('every operation of the served OpenAPI', () => {
  it('refuses a NUL in every string it takes in with 422 naming the field (each place once)', async () => {
    expect(new Set(targets.map((target) => target.op.name)).size).toBeGreaterThanOrEqual(60);
    for (const target of targets) await expectRefused(target, '\u0000', 1);
  });

  it('refuses NULs and lone surrogates anywhere in any of them, never with a 5xx (property)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...targets),
        fc.constantFrom('\u0000', '\ud800', '\udbff', '\udc00', '\udfff'),
        fc.nat(200),
        async (target, bad, at) => {
          if (bad !== '\u0000' && !target.surrogates) return;
          await expectRefused(target, bad, at);
        },
      ),
      { numRuns: 300 },
    );
  });
});
