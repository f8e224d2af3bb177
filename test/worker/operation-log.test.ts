import { ApplicationFailure } from '@temporalio/common';
import type { Context } from '@temporalio/activity';
import { describe, expect, it } from 'vitest';
import { createActivities } from '../../activities/index.ts';
import type { Pool } from '../../db/pool.ts';
import { classifyFailure, loggedActivities, operationLogInterceptor, unloggedActivities } from '../../worker/operation-log.ts';

/**
 * The operation log's interceptor, without a server: every registered activity is classified,
 * failures are told apart, and no attempt completes without its entry.
 */
const activityNames = Object.keys(createActivities({ pool: {} as Pool, gateway: {} as never, temporal: {} as never }));

function context(activityType: string): Context {
  return {
    info: { activityType, activityId: '1', attempt: 2, workflowExecution: { workflowId: 'deposit-k', runId: 'r1' } },
  } as unknown as Context;
}

function recordingPool(fail = false): { pool: Pool; calls: unknown[][] } {
  const calls: unknown[][] = [];
  const pool = {
    async query(query: { values: unknown[] }) {
      calls.push(query.values);
      if (fail) throw new Error('database unreachable');
      return { rows: [], rowCount: 1 };
    },
  } as unknown as Pool;
  return { pool, calls };
}

describe('operation log interceptor', () => {
  it('knows every activity the worker registers: logged (money or gateway) or not, never both', () => {
    const unclassified = activityNames.filter((name) => loggedActivities[name] === undefined && !unloggedActivities.includes(name));
    expect(unclassified).toEqual([]);
    expect(activityNames.filter((name) => loggedActivities[name] !== undefined && unloggedActivities.includes(name))).toEqual([]);
    const stale = [...Object.keys(loggedActivities), ...unloggedActivities].filter((name) => !activityNames.includes(name));
    expect(stale).toEqual([]);
  });

  it('tells refusals from failures, and failures Temporal retries from final ones', () => {
    expect(classifyFailure(ApplicationFailure.create({ type: 'INSUFFICIENT_FUNDS', message: 'no', nonRetryable: true }))).toMatchObject({
      status: 'REFUSED',
      retryable: false,
      code: 'INSUFFICIENT_FUNDS',
    });
    expect(classifyFailure(ApplicationFailure.create({ type: 'GATEWAY_ERROR', message: 'down' }))).toMatchObject({ status: 'FAILED', retryable: true });
    expect(classifyFailure(ApplicationFailure.create({ type: 'SomethingElse', message: 'x', nonRetryable: true }))).toMatchObject({
      status: 'FAILED',
      retryable: false,
    });
    expect(classifyFailure(new TypeError('bug'))).toMatchObject({ status: 'FAILED', retryable: true, code: 'TypeError' });
  });

  it('records an attempt with its type, owner, reference and attempt number, and fails the attempt when the entry cannot be written', async () => {
    const { pool, calls } = recordingPool();
    const inbound = operationLogInterceptor(pool)(context('bookDeposit')).inbound;
    const input = { args: [{ idempotencyKey: 'k', ownerId: 'alice', currency: 'BRL', amountMinor: '100', requestedBy: 'admin' }], headers: {} };
    expect(await inbound?.execute?.(input, async () => ({ transactionId: 't', created: true }))).toEqual({ transactionId: 't', created: true });
    expect(calls).toHaveLength(1);
    const [type, step, status, owner, reference, workflowId, runId, activityId, attempts] = calls[0] as unknown[];
    expect([type, step, status, owner, reference, workflowId, runId, activityId, attempts]).toEqual(['DEPOSIT', 'bookDeposit', 'SUCCEEDED', 'alice', 'k', 'deposit-k', 'r1', '1', 2]);

    const refusal = ApplicationFailure.create({ type: 'ACCOUNT_FROZEN', message: 'frozen', nonRetryable: true });
    await expect(inbound?.execute?.(input, async () => Promise.reject(refusal))).rejects.toBe(refusal);
    expect((calls[1] as unknown[])[2]).toBe('REFUSED');

    const broken = operationLogInterceptor(recordingPool(true).pool)(context('bookDeposit')).inbound;
    await expect(broken?.execute?.(input, async () => ({ transactionId: 't', created: true }))).rejects.toThrow('database unreachable');
  });

  it('does not log activities that neither move money nor call the gateway', async () => {
    const { pool, calls } = recordingPool();
    const inbound = operationLogInterceptor(pool)(context('readPlcState')).inbound;
    expect(await inbound?.execute?.({ args: [{ tokenId: 't' }], headers: {} }, async () => null)).toBeNull();
    expect(calls).toEqual([]);
  });
});
