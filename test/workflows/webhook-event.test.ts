import { randomUUID } from 'node:crypto';
import { ApplicationFailure } from '@temporalio/common';
import { NativeConnection, Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createWebhookActivities } from '../../activities/webhooks.ts';
import { getInboxEvent, storeInboxEvent } from '../../db/inbox.ts';
import { webhookEventWorkflow } from '../../workflows/webhook-event.ts';
import { createTestApp, type TestApp } from '../support/app.ts';
import { replayAndRecord } from '../support/histories.ts';
import { transferEvent } from '../support/gateway-events.ts';

/**
 * The webhook workflow's failure paths against the real dev server and a real database, with its
 * routing step made to fail: retried with backoff (local activities since patch
 * `webhook-event-local-activities`), and, when it cannot succeed, the event ends DEAD in the inbox
 * with the error, from where a new run reprocesses it.
 */
let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
  await t.startWorker();
});
afterAll(async () => {
  await t?.close();
});

function transferDone(): { id: string; text: string } {
  const body = transferEvent();
  return { id: body.id, text: JSON.stringify(body) };
}

/** Events about nothing we know never reach the gateway: a read here is a bug. */
const noGateway = {
  getTransfer: () => Promise.reject(new Error('the gateway must not be read for an event about nothing we know')),
  getPayment: () => Promise.reject(new Error('the gateway must not be read for an event about nothing we know')),
  getBillPayment: () => Promise.reject(new Error('the gateway must not be read for an event about nothing we know')),
};

/** Runs one webhook workflow on a worker of its own whose routing step is `route`. */
async function runWith(
  route: ReturnType<typeof createWebhookActivities>['routeInboxEvent'],
  inboxId: string,
  workflowId: string,
): Promise<string> {
  const taskQueue = `webhook-test-${randomUUID()}`;
  const connection = await NativeConnection.connect({ address: inject('temporalAddress') });
  const worker = await Worker.create({
    connection,
    namespace: t.config.TEMPORAL_NAMESPACE,
    taskQueue,
    workflowBundle: { codePath: inject('workflowBundlePath') },
    activities: { ...createWebhookActivities({ pool: t.db.pool, gateway: noGateway }), routeInboxEvent: route },
  });
  try {
    return await worker.runUntil(t.temporal.workflow.execute(webhookEventWorkflow, { workflowId, taskQueue, args: [{ inboxId }] }));
  } finally {
    await connection.close();
  }
}

describe('webhook event workflow', () => {
  it('ends DEAD with the error when routing fails for good, and a later run reprocesses the event', async () => {
    const event = transferDone();
    const { row } = await storeInboxEvent(t.db.pool, { provider: 'gateway', endpoint: 'redemption/gateway', eventId: event.id, eventType: 'TRANSFER_DONE', rawBody: event.text });
    const workflowId = `webhook-gateway-${event.id}`;
    let calls = 0;
    const broken = async (): Promise<never> => {
      calls += 1;
      throw ApplicationFailure.nonRetryable('routing is broken for this event', 'TEST_BROKEN');
    };
    expect(await runWith(broken, row.id, workflowId)).toBe('DEAD');
    expect(calls).toBe(1);
    const dead = await getInboxEvent(t.db.pool, row.id);
    expect(dead).toMatchObject({ status: 'DEAD' });
    expect(dead?.last_error).toMatch(/routing is broken/);
    await replayAndRecord(t.temporal, workflowId, 'webhook-event-dead');

    // An operator's reprocessing: a new run of the same id, routing healthy again.
    const real = createWebhookActivities({ pool: t.db.pool, gateway: noGateway }).routeInboxEvent;
    expect(await runWith(real, row.id, workflowId)).toBe('IGNORED');
    const reprocessed = await getInboxEvent(t.db.pool, row.id);
    expect(reprocessed).toMatchObject({ status: 'IGNORED', attempts: 1 });
    expect(reprocessed?.result).toMatchObject({ reason: expect.stringMatching(/^no redemption for transfer/) });
  });

  it('retries a failing routing step with backoff until it succeeds', async () => {
    const event = transferDone();
    const { row } = await storeInboxEvent(t.db.pool, { provider: 'gateway', endpoint: 'redemption/gateway', eventId: event.id, eventType: 'TRANSFER_DONE', rawBody: event.text });
    const real = createWebhookActivities({ pool: t.db.pool, gateway: noGateway }).routeInboxEvent;
    const attempts: number[] = [];
    const flaky: typeof real = async (input) => {
      attempts.push(Date.now());
      if (attempts.length < 3) throw new Error('database went away');
      return real(input);
    };
    expect(await runWith(flaky, row.id, `webhook-gateway-${event.id}`)).toBe('IGNORED');
    expect(attempts).toHaveLength(3);
    // Backoff 1 s, then 2 s.
    expect((attempts[2] as number) - (attempts[0] as number)).toBeGreaterThanOrEqual(2500);
    expect(await getInboxEvent(t.db.pool, row.id)).toMatchObject({ status: 'IGNORED' });
  });
});
