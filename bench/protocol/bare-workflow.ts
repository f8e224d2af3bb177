import { allHandlersFinished, condition, defineUpdate, proxyLocalActivities, setHandler } from '@temporalio/workflow';
import type { BareActivities, BareInsertInput } from './bare-activity.ts';

/**
 * Bench-only: the least a create can cost on Temporal. Started with update-with-start like
 * `plc-<token_id>`; the update runs one local activity (one INSERT) and answers; then the
 * workflow ends. No search attributes, no timer. Run by the benchmark's second worker on its own
 * task queue; never part of the service's workflows.
 */

const local = proxyLocalActivities<BareActivities>({
  startToCloseTimeout: '10 seconds',
  retry: { maximumAttempts: 5, initialInterval: '100 milliseconds', maximumInterval: '2 seconds' },
});

export const bareInsertUpdate = defineUpdate<{ id: string }, [BareInsertInput]>('bareInsert');

export async function bareWorkflow(): Promise<void> {
  let done = false;
  setHandler(bareInsertUpdate, async (input) => {
    const row = await local.insertBareRow(input);
    done = true;
    return row;
  });
  // Bounded like every wait: an update that never comes ends the workflow after a minute.
  await condition(() => done, '1 minute');
  await condition(allHandlersFinished);
}
