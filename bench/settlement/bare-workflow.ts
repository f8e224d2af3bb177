import {
  allHandlersFinished,
  condition,
  defineSignal,
  defineUpdate,
  getExternalWorkflowHandle,
  proxyActivities,
  proxyLocalActivities,
  setHandler,
} from '@temporalio/workflow';
import type { BareActivities, BareEventInput, BareInput } from './bare-activities.ts';

/**
 * Bench-only: a settlement of the redemption's shape with nothing but the shape. Run by the
 * benchmark's second worker on its own task queue; never part of the service's workflows.
 *
 * `bare-<id>` mirrors `redemption-<id>`: started with update-with-start, the update runs one local
 * activity (one INSERT) and answers; then one activity (createPayout's place), a wait for one
 * signal, one local activity (finishRedemption's place), done. `bare-webhook-<event_id>` mirrors
 * `webhook-<provider>-<event_id>`: one local activity (routeInboxEvent's place), the signal to
 * `bare-<id>`, one local activity (finishInboxEvent's place). Same activity kinds and options as
 * the originals; no search attributes, no PLC workflow to tell.
 */

const local = proxyLocalActivities<BareActivities>({
  startToCloseTimeout: '10 seconds',
  retry: { maximumAttempts: 5, initialInterval: '100 milliseconds', maximumInterval: '2 seconds' },
});
const activities = proxyActivities<BareActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', maximumInterval: '1 minute', backoffCoefficient: 2, maximumAttempts: 20 },
});
// The redemption books its finish in a local activity (patch `redemption-finish-local`), and the
// webhook workflow routes and records in local activities (patch `webhook-event-local-activities`):
// the same kinds here, with the same options.
const localFinish = proxyLocalActivities<BareActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', maximumInterval: '1 minute', backoffCoefficient: 2, maximumAttempts: 20 },
});
const { bareRouteEvent } = proxyLocalActivities<BareActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', maximumInterval: '30 seconds', backoffCoefficient: 2, maximumAttempts: 8 },
});
const { bareFinishEvent } = proxyLocalActivities<BareActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', maximumInterval: '30 seconds', maximumAttempts: 20 },
});

export const bareOpenUpdate = defineUpdate<{ id: string }, [BareInput]>('bareOpen');
export const bareEventSignal = defineSignal<[{ eventId: string; status: string }]>('bareEvent');

export async function bareSettlementWorkflow(input: BareInput): Promise<{ status: 'SETTLED' | 'REFUSED' }> {
  let opened = false;
  let done = false;
  setHandler(
    bareOpenUpdate,
    async (request) => {
      const row = await local.bareOpen(request);
      opened = true;
      return row;
    },
    {
      validator: (request) => {
        if (request.id !== input.id) throw new Error('the update does not belong to this workflow');
      },
    },
  );
  setHandler(bareEventSignal, (event) => {
    if (event.status === 'DONE') done = true;
  });
  if (!(await condition(() => opened, '5 minutes'))) return { status: 'REFUSED' };
  await activities.barePayout({ id: input.id });
  // Bounded like the redemption's wait; the benchmark's webhook comes within milliseconds.
  if (!(await condition(() => done, '10 minutes'))) return { status: 'REFUSED' };
  await localFinish.bareFinish({ id: input.id });
  await condition(allHandlersFinished);
  return { status: 'SETTLED' };
}

export async function bareWebhookWorkflow(input: BareEventInput): Promise<string> {
  const route = await bareRouteEvent(input);
  await getExternalWorkflowHandle(route.workflowId).signal(bareEventSignal, { eventId: input.eventId, status: 'DONE' });
  await bareFinishEvent(input);
  return 'PROCESSED';
}
