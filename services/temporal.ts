import {
  ActivityFailure,
  ApplicationFailure,
  isGrpcServiceError,
  WorkflowUpdateFailedError,
  WorkflowUpdateRPCTimeoutOrCancelledError,
  type Client,
} from '@temporalio/client';
import { causesOf, DomainError, errorCodes, type ErrorCode } from '../src/errors.ts';

/**
 * Turns a failed workflow update back into the domain error the activity refused with: the
 * activity raised an ApplicationFailure whose type is the error code (activities/failures.ts).
 * Anything else is an infrastructure failure and is rethrown for the 5xx handler.
 */
export function toDomainError(error: unknown): unknown {
  for (const cause of causesOf(error, 5)) {
    if (cause instanceof ApplicationFailure && typeof cause.type === 'string' && (errorCodes as readonly string[]).includes(cause.type)) {
      const details = Array.isArray(cause.details) && typeof cause.details[0] === 'object' ? (cause.details[0] as Record<string, unknown>) : undefined;
      return new DomainError(cause.type as ErrorCode, cause.message, details);
    }
    // Only the wrappers of a refusal are looked through.
    if (!(cause instanceof WorkflowUpdateFailedError || cause instanceof ActivityFailure || cause instanceof ApplicationFailure)) break;
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


/**
 * What a failed Temporal call says about the Temporal service: `timeout` when it did not answer
 * before the call's deadline, `unavailable` when it could not be reached; null for anything
 * else (a refused update, a workflow not found: answers of a working server).
 */
export function temporalOutageOf(error: unknown): 'timeout' | 'unavailable' | null {
  for (const cause of causesOf(error, 5)) {
    if (!(cause instanceof Error)) break;
    if (cause instanceof WorkflowUpdateRPCTimeoutOrCancelledError) return 'timeout';
    if (isGrpcServiceError(cause)) {
      // gRPC status codes: 4 DEADLINE_EXCEEDED; 14 UNAVAILABLE (after the SDK's own retries).
      if (cause.code === 4) return 'timeout';
      if (cause.code === 14) return 'unavailable';
      return null;
    }
  }
  return null;
}

/**
 * Runs `work` with every Temporal call it makes bounded by `deadline` (ms since the epoch): the
 * SDK sets no deadline of its own, and an update-with-start polls for the update's outcome in a
 * loop that would otherwise wait for ever on a Temporal that does not answer. A test double
 * without a connection runs `work` as it is.
 */
export function withTemporalDeadline<T>(temporal: Client, deadline: number, work: () => Promise<T>): Promise<T> {
  const connection = (temporal as Partial<Client>).connection;
  if (connection === undefined || typeof connection.withDeadline !== 'function') return work();
  return connection.withDeadline(deadline, work);
}
