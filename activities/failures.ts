import { ApplicationFailure } from '@temporalio/common';
import { DomainError } from '../src/errors.ts';

/**
 * Business refusals leave an activity as non-retryable ApplicationFailures whose `type` is the
 * domain error code, so the workflow and then the API see the same stable code. Anything else
 * (a lost connection, a timeout) is rethrown untouched and retried with the activity's bounded
 * backoff.
 */
export function toActivityFailure(error: unknown): unknown {
  if (error instanceof DomainError) {
    return ApplicationFailure.create({
      type: error.code,
      message: error.message,
      details: error.details === undefined ? [] : [error.details],
      nonRetryable: true,
    });
  }
  return error;
}

export async function refusalsAsFailures<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    throw toActivityFailure(error);
  }
}
