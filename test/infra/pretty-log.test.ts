import { Writable } from 'node:stream';
import Fastify, { LogController } from 'fastify';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { errorCodeOf, requestLogPlugin } from '../../api/plugins/request-log.ts';
import { loggerOptions } from '../../infra/logger.ts';
import { formatRecord, prettyDestination } from '../../infra/pretty-log.ts';

/** Lines a pretty logger wrote. */
function capture(): { lines: string[]; out: { write(text: string): void } } {
  const lines: string[] = [];
  return { lines, out: { write: (text: string) => lines.push(...text.split('\n').filter((line) => line !== '')) } };
}

describe('LOG_FORMAT=pretty: one line per record', () => {
  const time = '2026-12-07T14:03:07.123Z';
  it.each([
    {
      what: 'a refused request: method, path, status, time and code',
      record: { level: 30, time, name: 'api', reqId: 'r1', msg: 'request', method: 'POST', url: '/api/v1/plc/create', statusCode: 409, responseTimeMs: 12, code: 'INSUFFICIENT_FUNDS' },
      line: '14:03:07 api    POST /api/v1/plc/create 409 12 ms INSUFFICIENT_FUNDS',
    },
    {
      what: 'an answered request without a code',
      record: { level: 30, time, name: 'api', msg: 'request', method: 'GET', url: '/readyz', statusCode: 200, responseTimeMs: 1 },
      line: '14:03:07 api    GET /readyz 200 1 ms',
    },
    {
      what: "the worker's expected refusal, without a stack",
      record: { level: 30, time, name: 'worker', msg: 'activity refused', code: 'INSUFFICIENT_FUNDS', activityType: 'issuePlc', reason: 'insufficient funds' },
      line: '14:03:07 worker activity refused  code=INSUFFICIENT_FUNDS activityType=issuePlc reason="insufficient funds"',
    },
    {
      what: 'a warning with an error: its type and message, no stack',
      record: { level: 40, time, name: 'api', msg: 'dependency outage answered 503', err: { type: 'Error', message: 'timeout', stack: 'Error: timeout\n    at x (y.ts:1:1)' } },
      line: '14:03:07 api    WARN dependency outage answered 503 Error: timeout',
    },
  ])('$what', ({ record, line }) => {
    expect(formatRecord(JSON.stringify(record))).toBe(line);
  });

  it('keeps the stack of an error logged at error level (a bug wants it)', () => {
    const text = formatRecord(JSON.stringify({ level: 50, time, name: 'api', msg: 'unhandled error', err: { type: 'TypeError', message: 'x is undefined', stack: 'TypeError: x is undefined\n    at f (a.ts:1:1)\n    at g (b.ts:2:2)' } }));
    expect(text.split('\n')).toEqual(['14:03:07 api    ERROR unhandled error TypeError: x is undefined', '    at f (a.ts:1:1)', '    at g (b.ts:2:2)']);
  });

  it('passes a line that is not JSON through, and bounds a long field', () => {
    expect(formatRecord('plain text\n')).toBe('plain text');
    expect(formatRecord(JSON.stringify({ level: 30, time, name: 'api', msg: 'm', big: 'x'.repeat(500) }))).toMatch(/big=x{120}…$/);
  });

  it('is what a pino logger writes through prettyDestination', () => {
    const { lines, out } = capture();
    const logger = pino(loggerOptions('info', 'worker'), prettyDestination(out));
    logger.info({ schedule: 'ledger-check' }, 'ledger check scheduled');
    logger.debug('not shown at info');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^\d{2}:\d{2}:\d{2} worker ledger check scheduled {2}schedule=ledger-check$/);
  });
});

describe('the request-log plugin (LOG_FORMAT=pretty)', () => {
  it('reads the code of an error body: {code} or a 422 detail type', () => {
    expect(errorCodeOf('{"code":"INSUFFICIENT_FUNDS","message":"m"}')).toBe('INSUFFICIENT_FUNDS');
    expect(errorCodeOf('{"detail":[{"type":"PLC_INVALID.bad_signature","msg":"m","loc":[]}]}')).toBe('PLC_INVALID.bad_signature');
    expect(errorCodeOf('{"ok":true}')).toBeUndefined();
    expect(errorCodeOf('not json')).toBeUndefined();
    expect(errorCodeOf(undefined)).toBeUndefined();
  });

  it('logs one record per request when it is answered, with the refusal code', async () => {
    const records: Record<string, unknown>[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        for (const line of chunk.toString('utf8').split('\n')) if (line !== '') records.push(JSON.parse(line) as Record<string, unknown>);
        done();
      },
    });
    const app = Fastify({ loggerInstance: pino(loggerOptions('info', 'api'), sink), logController: new LogController({ disableRequestLogging: true }) });
    await app.register(requestLogPlugin);
    app.post('/api/v1/plc/create', async (_request, reply) => reply.code(409).send({ code: 'INSUFFICIENT_FUNDS', message: 'insufficient funds' }));
    app.get('/readyz', async () => ({ status: 'ready' }));
    try {
      expect((await app.inject({ method: 'POST', url: '/api/v1/plc/create', payload: {} })).statusCode).toBe(409);
      expect((await app.inject({ method: 'GET', url: '/readyz?device_id=abcdefghijklmnopqrstuvwxyz' })).statusCode).toBe(200);
      expect((await app.inject({ method: 'GET', url: '/nowhere' })).statusCode).toBe(404);
    } finally {
      await app.close();
    }
    const requests = records.filter((record) => record.msg === 'request');
    expect(requests.map(({ method, url, statusCode, code }) => ({ method, url, statusCode, code }))).toEqual([
      { method: 'POST', url: '/api/v1/plc/create', statusCode: 409, code: 'INSUFFICIENT_FUNDS' },
      // The identifiers the logs truncate stay truncated (infra/logger.ts).
      { method: 'GET', url: expect.not.stringContaining('abcdefghijklmnopqrstuvwxyz') as unknown, statusCode: 200, code: undefined },
      // Fastify's own 404 body has no `code` (the API's errors plugin gives one: NOT_FOUND).
      { method: 'GET', url: '/nowhere', statusCode: 404, code: undefined },
    ]);
    expect(requests.every((record) => typeof record.responseTimeMs === 'number')).toBe(true);
    // Nothing but the one record per request (no "incoming request" / "request completed").
    expect(records).toHaveLength(3);
  });
});
