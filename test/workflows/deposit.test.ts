import { randomUUID } from 'node:crypto';
import { WithStartWorkflowOperation } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { withDomainErrors } from '../../services/temporal.ts';
import { bookDepositUpdate } from '../../workflows/deposit-messages.ts';
import { depositWorkflow } from '../../workflows/deposit.ts';
import { createTestApp, type TestApp } from '../support/app.ts';
import { eventually, temporalCliJson } from '../support/temporal-cli.ts';
import { replayAndRecord } from '../support/histories.ts';

/**
 * The slice every money operation follows, end to end against the real dev server and a real
 * database: API -> update-with-start -> worker -> local activity -> PostgreSQL -> answer, and the
 * workflow findable by its business id and search attributes.
 */
let t: TestApp;
let admin: Record<string, string>;
beforeAll(async () => {
  t = await createTestApp();
  await t.startWorker();
  admin = await t.adminHeaders();
});
afterAll(async () => {
  await t?.close();
});

/** An admin deposit through the API under this Idempotency-Key. */
function deposit(key: string, ownerId: string, amount: string, currency = 'BRL') {
  return t.app.inject({
    method: 'POST',
    url: '/api/v1/balance/deposit',
    headers: { ...admin, 'idempotency-key': key },
    payload: { owner_id: ownerId, amount, currency },
  });
}

describe('deposit workflow', () => {
  it('books through the worker and shows in `temporal workflow list` with its search attributes', async () => {
    const key = `wf-${randomUUID()}`;
    const ownerId = `owner-${randomUUID().slice(0, 8)}`;
    const response = await deposit(key, ownerId, '42.00', 'USD');
    expect(response.statusCode).toBe(200);
    expect(response.json()).toMatchObject({ available: '42.00', currency: 'USD' });

    const rows = await t.db.pool.query(
      `SELECT t.tx_type, t.reference_id FROM ledger_transactions t WHERE t.idempotency_key = $1`,
      [`deposit:${key}`],
    );
    expect(rows.rows).toEqual([{ tx_type: 'DEPOSIT', reference_id: key }]);

    const workflowId = `deposit-${key}`;
    const listed = await eventually(async () => {
      const list = (await temporalCliJson(['workflow', 'list', '--query', `OwnerId = '${ownerId}'`])) as {
        execution: { workflowId: string };
        status: string;
      }[];
      return list.find((entry) => entry.execution.workflowId === workflowId && entry.status.endsWith('COMPLETED'));
    });
    expect(listed.execution.workflowId).toBe(workflowId);
    const described = (await temporalCliJson(['workflow', 'describe', '--workflow-id', workflowId])) as {
      workflowExecutionInfo: { searchAttributes: { indexedFields: Record<string, unknown> } };
    };
    expect(Object.keys(described.workflowExecutionInfo.searchAttributes.indexedFields)).toEqual(
      expect.arrayContaining(['OwnerId', 'ReferenceId', 'BusinessStatus']),
    );

    await replayAndRecord(t.temporal, workflowId, 'deposit-booked');
  });

  it('answers a replay, even after the Idempotency-Key window, without another workflow run', async () => {
    const key = `wf-${randomUUID()}`;
    await t.db.pool.query(`INSERT INTO ledger_accounts (owner_id, kind, status) VALUES ('frozen-owner', 'user', 'FROZEN')
                           ON CONFLICT DO NOTHING`);
    const depositToFrozen = (amount: string) => deposit(key, 'frozen-owner', amount);
    // Deposits credit; a frozen account can still receive.
    const first = await depositToFrozen('1.00');
    expect(first.statusCode).toBe(200);
    expect(first.json()).toMatchObject({ status: 'FROZEN', available: '1.00' });
    const workflow = t.temporal.workflow.getHandle(`deposit-${key}`);
    expect(await workflow.result()).toMatchObject({ status: 'BOOKED' });
    const { runId } = await workflow.describe();

    // The same key with another deposit is refused at the edge.
    const reused = await depositToFrozen('2.00');
    expect(reused.statusCode).toBe(422);
    expect(reused.json().detail[0]).toMatchObject({ loc: ['header', 'idempotency-key'], type: 'IDEMPOTENCY_KEY_REUSED' });
    // Past the window the stored answer is gone; the booking answers instead (the current
    // balance, not marked replayed), and another deposit under the key is still refused.
    await t.db.pool.query(`UPDATE idempotency_records SET expires_at = now() - interval '1 second' WHERE scope = 'deposit' AND key = $1`, [key]);
    const late = await depositToFrozen('1.00');
    expect(late.statusCode).toBe(200);
    expect(late.headers['x-idempotency-replayed']).toBeUndefined();
    expect(late.json()).toMatchObject({ status: 'FROZEN', available: '1.00' });
    await t.db.pool.query(`UPDATE idempotency_records SET expires_at = now() - interval '1 second' WHERE scope = 'deposit' AND key = $1`, [key]);
    expect((await depositToFrozen('2.00')).statusCode).toBe(422);
    expect((await workflow.describe()).runId).toBe(runId);
    const balance = await t.app.inject({ method: 'GET', url: '/api/v1/balance/frozen-owner' });
    expect(balance.json()).toMatchObject({ available: '1.00' });
  });

  it('refuses in the workflow what the ledger refuses, books nothing and ends the run REFUSED', async () => {
    const key = `wf-${randomUUID()}`;
    const ownerId = `owner-${randomUUID().slice(0, 8)}`;
    const booked = await deposit(key, ownerId, '1.00');
    expect(booked.statusCode).toBe(200);
    await t.temporal.workflow.getHandle(`deposit-${key}`).result();
    // A run started behind the API's back with another amount under the same key: the ledger
    // refuses the posting, the update fails with its code and the run ends REFUSED.
    const update = t.temporal.workflow.executeUpdateWithStart(bookDepositUpdate, {
      args: [{ idempotencyKey: key, ownerId, currency: 'BRL', amountMinor: '200', requestedBy: 'test' }],
      startWorkflowOperation: new WithStartWorkflowOperation(depositWorkflow, {
        workflowId: `deposit-${key}`,
        taskQueue: t.taskQueue,
        args: [{ idempotencyKey: key, ownerId }],
        workflowIdConflictPolicy: 'USE_EXISTING',
      }),
    });
    await expect(withDomainErrors(() => update)).rejects.toMatchObject({ code: 'IDEMPOTENCY_KEY_REUSED' });
    expect(await t.temporal.workflow.getHandle(`deposit-${key}`).result()).toEqual({ status: 'REFUSED', code: 'IDEMPOTENCY_KEY_REUSED' });
    const balance = await t.app.inject({ method: 'GET', url: `/api/v1/balance/${ownerId}` });
    expect(balance.json()).toMatchObject({ available: '1.00' });
  });
});
