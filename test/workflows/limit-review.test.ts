import { randomUUID } from 'node:crypto';
import { WithStartWorkflowOperation } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { workflowIds } from '../../workflows/ids.ts';
import { openLimitRequestUpdate } from '../../workflows/limit-review-messages.ts';
import { limitReviewWorkflow } from '../../workflows/limit-review.ts';
import { businessStatusKey, deviceIdKey, ownerIdKey, referenceIdKey } from '../../workflows/search-attributes.ts';
import { createTestApp, type TestApp } from '../support/app.ts';
import { eventually } from '../support/temporal-cli.ts';
import { issue, limitIncreaseBody, newWallet, plcToJson, type TestWallet } from '../support/wallet.ts';
import { replayAndRecord } from '../support/histories.ts';

/**
 * The limit-review workflow (`limit-review-<request_id>`) against the dev server: approved and
 * rejected by the admin's `decide` (a workflow update), and expired at its review deadline (an
 * input: 2 seconds here, 72 hours in production), after which a decision is a 409. Histories
 * are replayed here and recorded for test/workflows/replay.test.ts with RECORD_HISTORIES=1.
 */
let t: TestApp;
let admin: Record<string, string>;

beforeAll(async () => {
  t = await createTestApp({ RATE_LIMIT_PLC_PER_MINUTE: '100000' });
  await t.startWorker();
  admin = await t.adminHeaders();
});
afterAll(async () => {
  await t?.close();
});

async function ownerWithDevice(): Promise<{ wallet: TestWallet; deviceId: string }> {
  const wallet = newWallet();
  const deviceId = `device-${randomUUID().slice(0, 8)}`;
  await t.deposit(wallet.pubkey, '100.00');
  const created = await t.app.inject({ method: 'POST', url: '/api/v1/plc/create', headers: { 'x-device-id': deviceId }, payload: { plc: plcToJson(issue(wallet, { amountMinor: 100n })) } });
  expect(created.statusCode).toBe(200);
  return { wallet, deviceId };
}

async function openRequest(wallet: TestWallet, deviceId: string): Promise<{ request_id: string; workflow_id: string }> {
  const response = await t.app.inject({
    method: 'POST',
    url: '/api/v1/plc/limits/increase-request',
    payload: limitIncreaseBody(wallet, { device_id: deviceId, requested_max_amount: '4000.00', requested_daily_limit: '15000.00', reason: 'wholesale orders' }),
  });
  expect(response.statusCode).toBe(200);
  return response.json();
}

const decide = (requestId: string, payload: Record<string, unknown>) =>
  t.app.inject({ method: 'POST', url: `/api/v1/admin/plc-limits/requests/${requestId}/decide`, headers: admin, payload });

describe('limit-review workflow', () => {
  it('approved: the decision update records the approval and the override; BusinessStatus APPROVED', async () => {
    const { wallet, deviceId } = await ownerWithDevice();
    const request = await openRequest(wallet, deviceId);
    const found = await eventually(async () => {
      for await (const execution of t.temporal.workflow.list({ query: `DeviceId = "${deviceId}" AND OwnerId = "${wallet.pubkey}"` })) return execution.workflowId;
      return undefined;
    });
    expect(found).toBe(request.workflow_id);
    expect((await decide(request.request_id, { decision: 'APPROVE', valid_days: 30 })).json()).toMatchObject({ status: 'APPROVED' });
    const handle = t.temporal.workflow.getHandle(request.workflow_id);
    expect(await handle.result()).toMatchObject({ status: 'APPROVED', request: { status: 'APPROVED', grantedMaxAmountMinor: '400000', grantedDailyLimitMinor: '1500000' } });
    const description = await handle.describe();
    expect(description.typedSearchAttributes.get(businessStatusKey)).toBe('APPROVED');
    expect(description.typedSearchAttributes.get(deviceIdKey)).toBe(deviceId);
    const { rows } = await t.db.pool.query('SELECT max_amount_minor::text, daily_limit_minor::text FROM plc_limit_overrides WHERE device_id = $1', [deviceId]);
    expect(rows).toEqual([{ max_amount_minor: '400000', daily_limit_minor: '1500000' }]);
    await replayAndRecord(t.temporal, request.workflow_id, 'limit-review-approved');
  });

  it('rejected: BusinessStatus REJECTED, no override', async () => {
    const { wallet, deviceId } = await ownerWithDevice();
    const request = await openRequest(wallet, deviceId);
    expect((await decide(request.request_id, { decision: 'REJECT', note: 'not yet' })).json()).toMatchObject({ status: 'REJECTED' });
    const handle = t.temporal.workflow.getHandle(request.workflow_id);
    expect(await handle.result()).toMatchObject({ status: 'REJECTED' });
    expect((await handle.describe()).typedSearchAttributes.get(businessStatusKey)).toBe('REJECTED');
    const { rows } = await t.db.pool.query('SELECT 1 FROM plc_limit_overrides WHERE device_id = $1', [deviceId]);
    expect(rows).toEqual([]);
    await replayAndRecord(t.temporal, request.workflow_id, 'limit-review-rejected');
  });

  it('expired: past its review deadline (an input) the request expires, and a decision then is a 409', async () => {
    const { wallet, deviceId } = await ownerWithDevice();
    const requestId = randomUUID();
    const workflowId = workflowIds.limitReview(requestId);
    // The route's path with a 2-second deadline: the same update-with-start, the input shortened.
    const opened = await t.temporal.workflow.executeUpdateWithStart(openLimitRequestUpdate, {
      args: [
        {
          requestId,
          deviceId,
          ownerId: wallet.pubkey,
          requestedMaxAmountMinor: '400000',
          requestedDailyLimitMinor: '1500000',
          currentMaxAmountMinor: '250000',
          currentDailyLimitMinor: '1000000',
          tier: 'STANDARD',
          reason: 'wholesale orders',
        },
      ],
      startWorkflowOperation: new WithStartWorkflowOperation(limitReviewWorkflow, {
        workflowId,
        taskQueue: t.taskQueue,
        args: [{ requestId, reviewTimeoutMs: 2000 }],
        workflowIdConflictPolicy: 'USE_EXISTING',
        typedSearchAttributes: [
          { key: deviceIdKey, value: deviceId },
          { key: ownerIdKey, value: wallet.pubkey },
          { key: referenceIdKey, value: requestId },
          { key: businessStatusKey, value: 'PENDING' },
        ],
      }),
    });
    expect(opened).toMatchObject({ status: 'PENDING', requestId });
    // Another request for the device while this one is open: refused, and its workflow ends REFUSED.
    const refused = await t.app.inject({
      method: 'POST',
      url: '/api/v1/plc/limits/increase-request',
      payload: limitIncreaseBody(wallet, { device_id: deviceId, requested_max_amount: '4000.00', requested_daily_limit: '15000.00', reason: 'again' }),
    });
    expect(refused.json()).toMatchObject({ code: 'LIMIT_REQUEST_ALREADY_OPEN', details: { open_request_id: requestId } });

    const handle = t.temporal.workflow.getHandle(workflowId);
    expect(await handle.result()).toMatchObject({ status: 'EXPIRED', request: { status: 'EXPIRED' } });
    expect((await handle.describe()).typedSearchAttributes.get(businessStatusKey)).toBe('EXPIRED');
    const late = await decide(requestId, { decision: 'APPROVE' });
    expect(late.statusCode).toBe(409);
    expect(late.json()).toMatchObject({ code: 'LIMIT_REQUEST_NOT_PENDING', details: { status: 'EXPIRED' } });
    await replayAndRecord(t.temporal, workflowId, 'limit-review-expired');
  });
});
