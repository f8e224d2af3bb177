import { ApplicationFailure, type LogLevel, type LogMetadata, type Logger as TemporalLogger } from '@temporalio/common';
import { errorCodes, type ErrorCode } from '../src/errors.ts';
import type { Logger } from '../infra/logger.ts';

/**
 * The domain codes answered with a 5xx (api/plugins/errors.ts; test/worker/temporal-logger.test.ts
 * checks this list against that map): an activity failing with one of them is an incident, not a
 * refusal.
 */
export const serverErrorCodes: ReadonlySet<ErrorCode> = new Set<ErrorCode>([
  'SERVICE_UNAVAILABLE',
  'DEPENDENCY_TIMEOUT',
  'DEPENDENCY_UNAVAILABLE',
  'LEDGER_UNBALANCED',
  'LEDGER_INVALID_POSTING',
  'GATEWAY_UNAVAILABLE',
  'GATEWAY_REFUSED',
  'GATEWAY_ERROR',
  'GATEWAY_TIMEOUT',
  'PIN_RESET_EMAIL_UNAVAILABLE',
]);

const domainCodes: ReadonlySet<string> = new Set(errorCodes);

/**
 * An expected refusal: a non-retryable ApplicationFailure whose type is a domain code answered
 * with a 4xx (INSUFFICIENT_FUNDS, PLC_DAILY_LIMIT_EXCEEDED, ...). The workflow turns it into the
 * caller's answer; nothing went wrong in the service.
 */
export function refusalCodeOf(error: unknown): string | undefined {
  // By class, or by name for a failure built by another copy of the SDK's module.
  const failure = error instanceof ApplicationFailure || (error instanceof Error && error.name === 'ApplicationFailure') ? (error as ApplicationFailure) : undefined;
  if (failure === undefined || failure.nonRetryable !== true || typeof failure.type !== 'string') return undefined;
  const type = failure.type;
  return domainCodes.has(type) && !serverErrorCodes.has(type as ErrorCode) ? type : undefined;
}

const pinoLevel: Record<LogLevel, 'trace' | 'debug' | 'info' | 'warn' | 'error'> = { TRACE: 'trace', DEBUG: 'debug', INFO: 'info', WARN: 'warn', ERROR: 'error' };

/**
 * The Temporal SDK's log (the worker's, the activities' "Activity failed") written through the
 * process's pino logger, so it is JSON in production and one line at a terminal like the rest,
 * instead of the SDK's default console lines. An activity that failed with an expected refusal is
 * one info record with its code and no stack (the 33-line trace a person saw for an insufficient
 * balance); any other failure keeps its error, stack included.
 */
export function temporalLogger(logger: Logger): TemporalLogger {
  const log = (level: LogLevel, message: string, meta?: LogMetadata): void => {
    const { error, ...rest } = (meta ?? {}) as LogMetadata & { error?: unknown };
    const code = refusalCodeOf(error);
    if (code !== undefined && message === 'Activity failed') {
      // What a person needs to find it; the SDK's task token, run id and the like stay out of the line.
      const { activityType, workflowId, workflowType } = rest as { activityType?: unknown; workflowId?: unknown; workflowType?: unknown };
      logger.info({ code, reason: (error as Error).message, activityType, workflowType, workflowId }, 'activity refused');
      return;
    }
    logger[pinoLevel[level]]({ ...rest, ...(error === undefined ? {} : { err: error }) }, message);
  };
  return {
    log,
    trace: (message, meta) => log('TRACE', message, meta),
    debug: (message, meta) => log('DEBUG', message, meta),
    info: (message, meta) => log('INFO', message, meta),
    warn: (message, meta) => log('WARN', message, meta),
    error: (message, meta) => log('ERROR', message, meta),
  };
}
