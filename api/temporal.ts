import { isGrpcServiceError, WorkflowUpdateRPCTimeoutOrCancelledError, type Client } from '@temporalio/client';

// The services' translation of refused updates, for the routes that call Temporal themselves.
export { toDomainError, withDomainErrors } from '../services/temporal-errors.ts';

/**
 * What a failed Temporal call says about the Temporal service: `timeout` when it did not answer
 * before the call's deadline, `unavailable` when it could not be reached; null for anything
 * else (a refused update, a workflow not found: answers of a working server).
 */
export function temporalOutageOf(error: unknown): 'timeout' | 'unavailable' | null {
  let cause: unknown = error;
  for (let depth = 0; depth < 5 && cause instanceof Error; depth += 1) {
    if (cause instanceof WorkflowUpdateRPCTimeoutOrCancelledError) return 'timeout';
    if (isGrpcServiceError(cause)) {
      // gRPC status codes: 4 DEADLINE_EXCEEDED; 14 UNAVAILABLE (after the SDK's own retries).
      if (cause.code === 4) return 'timeout';
      if (cause.code === 14) return 'unavailable';
      return null;
    }
    cause = (cause as { cause?: unknown }).cause;
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
