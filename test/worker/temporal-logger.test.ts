import { Writable } from 'node:stream';
import { ApplicationFailure } from '@temporalio/common';
import { pino, type Logger } from 'pino';
import { describe, expect, it } from 'vitest';
import { statusByCode } from '../../api/plugins/errors.ts';
import { loggerOptions } from '../../infra/logger.ts';
import { refusalCodeOf, serverErrorCodes, temporalLogger } from '../../worker/temporal-logger.ts';

function recorder(): { records: Record<string, unknown>[]; logger: Logger } {
  const records: Record<string, unknown>[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString('utf8').split('\n')) if (line !== '') records.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  return { records, logger: pino(loggerOptions('info', 'worker'), sink) };
}

describe("the worker's Temporal SDK log", () => {
  it('counts as incidents exactly the domain codes answered with a 5xx', () => {
    const fiveHundreds = Object.entries(statusByCode).filter(([, status]) => status >= 500).map(([code]) => code);
    expect([...serverErrorCodes].sort()).toEqual(fiveHundreds.sort());
  });

  it.each([
    { what: 'a non-retryable 4xx domain failure', error: ApplicationFailure.create({ type: 'INSUFFICIENT_FUNDS', message: 'insufficient funds', nonRetryable: true }), code: 'INSUFFICIENT_FUNDS' },
    { what: 'a retryable one', error: ApplicationFailure.create({ type: 'INSUFFICIENT_FUNDS', message: 'm', nonRetryable: false }), code: undefined },
    { what: 'a 5xx domain failure', error: ApplicationFailure.create({ type: 'GATEWAY_TIMEOUT', message: 'm', nonRetryable: true }), code: undefined },
    { what: 'a type that is no domain code', error: ApplicationFailure.create({ type: 'INVALID_ROW', message: 'm', nonRetryable: true }), code: undefined },
    { what: 'a plain error', error: new Error('connection reset'), code: undefined },
  ])('reads $what as refusal code $code', ({ error, code }) => {
    expect(refusalCodeOf(error)).toBe(code);
  });

  it('writes an activity refused by the domain as one info record with its code and no stack', () => {
    const { records, logger } = recorder();
    const error = ApplicationFailure.create({ type: 'INSUFFICIENT_FUNDS', message: 'insufficient funds', nonRetryable: true });
    temporalLogger(logger).warn('Activity failed', { error, activityType: 'issuePlc', workflowId: 'plc-1', durationMs: 4 });
    expect(records).toHaveLength(1);
    expect(records[0]).toMatchObject({ level: 'info', msg: 'activity refused', code: 'INSUFFICIENT_FUNDS', reason: 'insufficient funds', activityType: 'issuePlc', workflowId: 'plc-1' });
    expect(JSON.stringify(records[0])).not.toContain('    at ');
  });

  it('keeps the error, stack included, of any other failure, at the level the SDK chose', () => {
    const { records, logger } = recorder();
    const sdk = temporalLogger(logger);
    sdk.warn('Activity failed', { error: new Error('connection reset'), activityType: 'postLedger' });
    sdk.error('Worker failed', { error: ApplicationFailure.create({ type: 'GATEWAY_TIMEOUT', message: 'gateway', nonRetryable: true }) });
    sdk.debug('Activity completed', { durationMs: 3 });
    sdk.info('Worker state changed', { state: 'RUNNING' });
    expect(records.map((record) => [record.level, record.msg])).toEqual([
      ['warn', 'Activity failed'],
      ['error', 'Worker failed'],
      ['info', 'Worker state changed'],
    ]);
    expect((records[0]!.err as { stack: string }).stack).toContain('connection reset\n    at ');
  });
});
