import { WithStartWorkflowOperation } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { plcTaskQueueOf } from '../../infra/config.ts';
import { bytesToHex } from '../../src/protocol/index.ts';
import { issuePlcUpdate } from '../../workflows/plc-messages.ts';
import { plcWorkflow } from '../../workflows/plc.ts';
import { businessStatusKey, ownerIdKey, tokenIdKey } from '../../workflows/search-attributes.ts';
import { createTestApp, type TestApp } from '../support/app.ts';
import { hop, issue, newWallet, plcToJson } from '../support/wallet.ts';

/**
 * PLC workflows run on a task queue of their own (TEMPORAL_PLC_TASK_QUEUE, by default the main
 * queue + `-plc`), served by the worker process's second worker with a small sticky cache. PLC
 * workflows started on the main queue before the split keep running there: the main worker still
 * has the PLC workflow and its activities.
 */
let t: TestApp;
const device = { 'x-device-id': 'device-task-queue' };

beforeAll(async () => {
  t = await createTestApp();
  await t.startWorker();
});
afterAll(async () => {
  await t?.close();
});

describe('the PLC workflows task queue', () => {
  it('a PLC created through the API has no workflow on the PLC queue: its expiry bucket runs on the main one', async () => {
    const issuer = newWallet();
    await t.deposit(issuer.pubkey, '10.00');
    const plc = await t.issuePlc(issuer, 100n, device);
    await expect(t.temporal.workflow.getHandle(`plc-${plc.commitment.tokenId}`).describe()).rejects.toThrow();
    const detail = await t.app.inject({ method: 'GET', url: `/api/v1/admin/plcs/${plc.commitment.tokenId}/detail`, headers: await t.adminHeaders() });
    const described = await t.temporal.workflow.getHandle(detail.json().workflow_id).describe();
    expect(described.taskQueue).toBe(t.taskQueue);
    expect(plcTaskQueueOf(t.config)).toBe(`${t.taskQueue}-plc`);
    const moved = await t.app.inject({ method: 'POST', url: '/api/v1/transfer/', headers: device, payload: { plc: plcToJson(hop(plc, issuer, newWallet())) } });
    expect(moved.statusCode).toBe(200);
  });

  it('a PLC workflow started on the main queue before the split (a PLC issued before buckets) is still served there, and its routes reach it like any other', async () => {
    const issuer = newWallet();
    await t.deposit(issuer.pubkey, '10.00');
    const plc = issue(issuer, { amountMinor: 250n });
    const { commitment } = plc;
    const tokenId = commitment.tokenId;
    const issuerPubkey = bytesToHex(commitment.issuerPublicKey);
    // What the create route did before the PLC queue existed: the same update-with-start on TEMPORAL_TASK_QUEUE.
    const result = await t.temporal.workflow.executeUpdateWithStart(issuePlcUpdate, {
      args: [
        {
          tokenId,
          issuerPubkey,
          amountMinor: commitment.amountMinor.toString(),
          currency: commitment.currency as 'BRL' | 'USD' | 'EUR',
          createdAtMs: commitment.createdAtMs,
          expiresAtMs: commitment.expiresAtMs,
          nonce: bytesToHex(commitment.nonce),
          commitmentHash: bytesToHex(plc.commitmentHash),
          signature: bytesToHex(plc.issuerSignature),
          deviceId: device['x-device-id'],
          amountMaxMinor: t.config.PLC_MAX_AMOUNT_MINOR.toString(),
          dailyLimitMinor: t.config.PLC_DAILY_LIMIT_MINOR.toString(),
        },
      ],
      startWorkflowOperation: new WithStartWorkflowOperation(plcWorkflow, {
        workflowId: `plc-${tokenId}`,
        taskQueue: t.taskQueue,
        args: [{ tokenId, issuerPubkey, expiryDueAtMs: commitment.expiresAtMs + t.config.CLOCK_TOLERANCE_MS }],
        workflowIdConflictPolicy: 'USE_EXISTING',
        typedSearchAttributes: [
          { key: tokenIdKey, value: tokenId },
          { key: ownerIdKey, value: issuerPubkey },
          { key: businessStatusKey, value: 'ISSUED' },
        ],
      }),
    });
    expect(result.created).toBe(true);
    const described = await t.temporal.workflow.getHandle(`plc-${tokenId}`).describe();
    expect(described.taskQueue).toBe(t.taskQueue);
    // The API's routes reach it as any other PLC: a hop, then its status.
    const moved = await t.app.inject({ method: 'POST', url: '/api/v1/transfer/', headers: device, payload: { plc: plcToJson(hop(plc, issuer, newWallet())) } });
    expect(moved.statusCode).toBe(200);
    const status = await t.app.inject({ method: 'GET', url: `/api/v1/plc/${tokenId}/status` });
    expect(status.statusCode).toBe(200);
  });
});
