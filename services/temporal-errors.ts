import { ActivityFailure, ApplicationFailure, WorkflowUpdateFailedError } from '@temporalio/client';
import { DomainError, errorCodes, type ErrorCode } from '../src/errors.ts';

/**
 * Turns a failed workflow update back into the domain error the activity refused with: the
 * activity raised an ApplicationFailure whose type is the error code (activities/failures.ts).
 * Anything else is an infrastructure failure and is rethrown for the 5xx handler.
 */
export function toDomainError(error: unknown): unknown {
  let cause: unknown = error;
  for (let depth = 0; depth < 5 && cause !== undefined; depth += 1) {
    if (cause instanceof ApplicationFailure && typeof cause.type === 'string' && (errorCodes as readonly string[]).includes(cause.type)) {
      const details = Array.isArray(cause.details) && typeof cause.details[0] === 'object' ? (cause.details[0] as Record<string, unknown>) : undefined;
      return new DomainError(cause.type as ErrorCode, cause.message, details);
    }
    if (cause instanceof WorkflowUpdateFailedError || cause instanceof ActivityFailure || cause instanceof ApplicationFailure) {
      cause = (cause as { cause?: unknown }).cause;
      continue;
    }
    break;
  }
  return error;
}

export async function withDomainErrors<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    throw toDomainError(error);
  }
}
