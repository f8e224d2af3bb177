import {
  allHandlersFinished,
  condition,
  proxyLocalActivities,
  setHandler,
  upsertSearchAttributes,
} from '@temporalio/workflow';
import type { BookDepositResult, LedgerActivities } from '../activities/ledger.ts';
import { bookDepositUpdate } from './deposit-messages.ts';
import { failureType } from './failure-type.ts';
import { businessStatusKey } from './search-attributes.ts';

/**
 * An admin deposit (`deposit-<Idempotency-Key>`). The API starts it with update-with-start and
 * answers from the update, whose one step is a local activity booking world AVAILABLE -> owner
 * AVAILABLE under the request's idempotency key: however often the request is retried, the
 * money moves once, and the booking is findable in the Temporal UI by the workflow id.
 */

const { bookDeposit } = proxyLocalActivities<LedgerActivities>({
  startToCloseTimeout: '10 seconds',
  retry: { maximumAttempts: 5, initialInterval: '100 milliseconds', maximumInterval: '2 seconds' },
});


export interface DepositWorkflowInput {
  idempotencyKey: string;
  ownerId: string;
}

export type DepositOutcome = { status: 'BOOKED'; result: BookDepositResult } | { status: 'REFUSED'; code: string };

export async function depositWorkflow(input: DepositWorkflowInput): Promise<DepositOutcome> {
  let outcome: DepositOutcome | undefined;
  setHandler(
    bookDepositUpdate,
    async (request) => {
      if (outcome?.status === 'BOOKED') return outcome.result;
      try {
        const result = await bookDeposit(request);
        outcome = { status: 'BOOKED', result };
        upsertSearchAttributes([{ key: businessStatusKey, value: 'BOOKED' }]);
        return result;
      } catch (error) {
        outcome = { status: 'REFUSED', code: failureType(error) };
        upsertSearchAttributes([{ key: businessStatusKey, value: 'REFUSED' }]);
        throw error;
      }
    },
    {
      validator: (request) => {
        if (request.idempotencyKey !== input.idempotencyKey || request.ownerId !== input.ownerId) {
          throw new Error('the update does not belong to this deposit');
        }
      },
    },
  );
  // The workflow lives exactly as long as it takes to answer its one update.
  await condition(() => outcome !== undefined, '1 hour');
  // Concurrent retries of the same request may still be inside the handler: let them answer.
  await condition(allHandlersFinished);
  return outcome ?? { status: 'REFUSED', code: 'NO_UPDATE_RECEIVED' };
}
