import { randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createTestApp, type TestApp } from '../support/app.ts';
import { eventually, temporalCliJson } from '../support/temporal-cli.ts';

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

describe('deposit workflow', () => {
  it('books through the worker and shows in `temporal workflow list` with its search attributes', async () => {
    const key = `wf-${randomUUID()}`;
    const ownerId = `owner-${randomUUID().slice(0, 8)}`;
    const response = await t.app.inject({
      method: 'POST',
      url: '/api/v1/balance/deposit',
      headers: { ...admin, 'idempotency-key': key },
      payload: { owner_id: ownerId, amount: '42.00', currency: 'USD' },
    });
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

    const history = await t.temporal.workflow.getHandle(workflowId).fetchHistory();
    await Worker.runReplayHistory({ workflowBundle: { codePath: inject('workflowBundlePath') } }, history, workflowId);
    if (process.env.RECORD_HISTORIES === '1') {
      const json = await temporalCliJson(['workflow', 'show', '--workflow-id', workflowId]);
      writeFileSync(fileURLToPath(new URL('./histories/deposit-booked.json', import.meta.url)), `${JSON.stringify(json, null, 1)}\n`);
    }
  });

  it('answers a refusal with its domain code, books nothing and ends the workflow', async () => {
    const key = `wf-${randomUUID()}`;
    await t.db.pool.query(`INSERT INTO ledger_accounts (owner_id, kind, status) VALUES ('frozen-owner', 'user', 'FROZEN')
                           ON CONFLICT DO NOTHING`);
    // Deposits credit; a frozen account can still receive, so the refusal here is a reused key.
    const first = await t.app.inject({
      method: 'POST',
      url: '/api/v1/balance/deposit',
      headers: { ...admin, 'idempotency-key': key },
      payload: { owner_id: 'frozen-owner', amount: '1.00', currency: 'BRL' },
    });
    expect(first.statusCode).toBe(200);
    expect(first.json()).toMatchObject({ status: 'FROZEN', available: '1.00' });
    const second = await t.app.inject({
      method: 'POST',
      url: '/api/v1/balance/deposit',
      headers: { ...admin, 'idempotency-key': key },
      payload: { owner_id: 'frozen-owner', amount: '2.00', currency: 'BRL' },
    });
    expect(second.statusCode).toBe(422);
    // The retry after the first run ended started a second run, which refused and ended too.
    const result = await t.temporal.workflow.getHandle(`deposit-${key}`).result();
    expect(result).toEqual({ status: 'REFUSED', code: 'IDEMPOTENCY_KEY_REUSED' });
    const balance = await t.app.inject({ method: 'GET', url: '/api/v1/balance/frozen-owner' });
    expect(balance.json()).toMatchObject({ available: '1.00' });
  });
});
