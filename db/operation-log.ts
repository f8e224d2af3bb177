import { z } from 'zod';
import type { Queryable } from './pool.ts';
import { DomainError } from '../src/errors.ts';
import { exec, many, one } from './sql.ts';

/**
 * The operation log (migration 16_operation_log): one entry per operation that moves money or calls the
 * gateway. Activities are recorded by the worker's interceptor (worker/operation-log.ts), one
 * entry per activity execution updated by each attempt; an operation a route runs itself opens
 * its entry before it starts (`startOperation`) and closes it after (`finishOperation`), so an
 * entry left STARTED is an operation whose process died in the middle.
 */

/** The operation log's types (worker/operation-log.ts says which activity has which). */
export const operationTypes = [
  'DEPOSIT',
  'PLC_CREATE',
  'PLC_CANCEL',
  'PLC_EXPIRE',
  'REDEMPTION',
  'CHARGE',
  'WEBHOOK_ROUTING',
  'WEBHOOK_CHECK',
  'WEBHOOK_CONFIGURE',
  'PENALTY_REMOVAL',
  'RECONCILIATION',
  // An operator's decision, recorded by the route that takes it (with the admin as `actor`).
  'LIMIT_DECISION',
  'BUSINESS_DECISION',
  'KEY_BLOCK_LIFT',
  'ADMIN_USER',
  'UNCLASSIFIED',
] as const;
export type OperationType = (typeof operationTypes)[number];

export const operationStatuses = ['STARTED', 'SUCCEEDED', 'FAILED', 'REFUSED'] as const;
export type OperationStatus = (typeof operationStatuses)[number];

export const operationLogRow = z.object({
  id: z.bigint(),
  operation_type: z.string(),
  step: z.string(),
  status: z.enum(operationStatuses),
  owner_id: z.string().nullable(),
  reference_id: z.string().nullable(),
  workflow_id: z.string().nullable(),
  run_id: z.string().nullable(),
  activity_id: z.string().nullable(),
  attempts: z.number().int(),
  retryable: z.boolean(),
  duration_ms: z.number().int().nullable(),
  error_code: z.string().nullable(),
  error: z.string().nullable(),
  actor: z.string().nullable(),
  started_at: z.date(),
  finished_at: z.date().nullable(),
});
export type OperationLogRow = z.infer<typeof operationLogRow>;
const columns =
  'id, operation_type, step, status, owner_id, reference_id, workflow_id, run_id, activity_id, attempts, retryable, duration_ms, error_code, error, actor, started_at, finished_at';

export interface ActivityAttemptEntry {
  operationType: string;
  step: string;
  status: 'SUCCEEDED' | 'FAILED' | 'REFUSED';
  ownerId: string | null;
  referenceId: string | null;
  workflowId: string;
  runId: string;
  activityId: string;
  attempt: number;
  retryable: boolean;
  durationMs: number;
  errorCode: string | null;
  error: string | null;
  startedAt: Date;
}

function clip(value: string | null, max: number): string | null {
  return value === null ? null : value.slice(0, max);
}

/**
 * Records one attempt of an activity: the entry of its execution is created by the first attempt
 * that finishes and updated by later ones. An attempt older than the one recorded (a timed-out
 * attempt that finished late) changes nothing.
 */
export async function recordActivityAttempt(db: Queryable, entry: ActivityAttemptEntry): Promise<void> {
  await exec(db, {
    name: 'operation-log-activity',
    text: `INSERT INTO operation_log AS o
             (operation_type, step, status, owner_id, reference_id, workflow_id, run_id, activity_id, attempts, retryable,
              duration_ms, error_code, error, started_at, finished_at)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, now())
           ON CONFLICT (workflow_id, run_id, activity_id) WHERE workflow_id IS NOT NULL DO UPDATE
              SET status = EXCLUDED.status, attempts = EXCLUDED.attempts, retryable = EXCLUDED.retryable,
                  duration_ms = EXCLUDED.duration_ms, error_code = EXCLUDED.error_code, error = EXCLUDED.error,
                  owner_id = coalesce(EXCLUDED.owner_id, o.owner_id), reference_id = coalesce(EXCLUDED.reference_id, o.reference_id),
                  finished_at = now()
            WHERE o.attempts <= EXCLUDED.attempts`,
    values: [
      entry.operationType,
      entry.step.slice(0, 100),
      entry.status,
      clip(entry.ownerId, 200),
      clip(entry.referenceId, 300),
      entry.workflowId.slice(0, 300),
      entry.runId.slice(0, 100),
      entry.activityId.slice(0, 100),
      Math.max(1, entry.attempt),
      entry.retryable,
      Math.max(0, Math.round(entry.durationMs)),
      clip(entry.errorCode, 100),
      entry.status === 'SUCCEEDED' ? null : (clip(entry.error, 1000) ?? 'failed'),
      entry.startedAt,
    ],
  });
}

/** The entry of an operation a route ran itself in one step (a PLC cancel), finished. */
export async function recordOperation(
  db: Queryable,
  entry: { operationType: string; step: string; ownerId: string | null; referenceId: string | null; startedAt: Date },
): Promise<void> {
  await exec(db, {
    name: 'operation-log-record',
    text: `INSERT INTO operation_log (operation_type, step, status, owner_id, reference_id, started_at, finished_at, duration_ms)
           VALUES ($1, $2, 'SUCCEEDED', $3, $4, $5, now(), greatest(0, (extract(epoch FROM now() - $5::timestamptz) * 1000)::int))`,
    values: [entry.operationType, entry.step.slice(0, 100), clip(entry.ownerId, 200), clip(entry.referenceId, 300), entry.startedAt],
  });
}

/** Opens the entry of an operation a route runs itself; close it with `finishOperation`. */
export async function startOperation(
  db: Queryable,
  entry: { operationType: string; step: string; ownerId: string | null; referenceId: string | null; actor?: string | null },
): Promise<bigint> {
  const row = await one(db, z.object({ id: z.bigint() }), {
    name: 'operation-log-start',
    text: `INSERT INTO operation_log (operation_type, step, status, owner_id, reference_id, actor) VALUES ($1, $2, 'STARTED', $3, $4, $5) RETURNING id`,
    values: [entry.operationType, entry.step.slice(0, 100), clip(entry.ownerId, 200), clip(entry.referenceId, 300), clip(entry.actor ?? null, 100)],
  });
  return row.id;
}

export async function finishOperation(
  db: Queryable,
  id: bigint,
  outcome: { status: 'SUCCEEDED' | 'FAILED' | 'REFUSED'; errorCode?: string | null; error?: string | null },
): Promise<void> {
  await exec(db, {
    name: 'operation-log-finish',
    text: `UPDATE operation_log
              SET status = $2, error_code = $3, error = $4, finished_at = now(),
                  duration_ms = (extract(epoch FROM now() - started_at) * 1000)::int
            WHERE id = $1 AND status = 'STARTED'`,
    values: [id, outcome.status, clip(outcome.errorCode ?? null, 100), outcome.status === 'SUCCEEDED' ? null : (clip(outcome.error ?? null, 1000) ?? 'failed')],
  });
}

export function listOperations(
  db: Queryable,
  filter: { operationType?: string | undefined; status?: OperationStatus | undefined; ownerId?: string | undefined; referenceId?: string | undefined },
  page: { limit: number; offset: number },
): Promise<OperationLogRow[]> {
  return many(db, operationLogRow, {
    name: 'operation-log-list',
    text: `SELECT ${columns} FROM operation_log
            WHERE ($1::text IS NULL OR operation_type = $1) AND ($2::text IS NULL OR status = $2) AND ($3::text IS NULL OR owner_id = $3)
              AND ($6::text IS NULL OR reference_id = $6)
            ORDER BY started_at DESC, id DESC LIMIT $4 OFFSET $5`,
    values: [filter.operationType ?? null, filter.status ?? null, filter.ownerId ?? null, page.limit, page.offset, filter.referenceId ?? null],
  });
}

/**
 * Runs an operator's action as one operation-log entry (opened before, closed after): SUCCEEDED
 * when it returns, REFUSED with the code when it throws a domain refusal, FAILED otherwise (the
 * error is thrown on). A crash in between leaves the entry STARTED, never missing.
 */
export async function loggedOperation<T>(
  db: Queryable,
  entry: { operationType: OperationType; step: string; ownerId: string | null; referenceId: string; actor: string },
  action: () => Promise<T>,
): Promise<T> {
  const id = await startOperation(db, entry);
  let result: T;
  try {
    result = await action();
  } catch (error) {
    const refused = error instanceof DomainError;
    await finishOperation(db, id, {
      status: refused ? 'REFUSED' : 'FAILED',
      errorCode: refused ? error.code : null,
      error: error instanceof Error ? error.message : String(error),
    });
    throw error;
  }
  await finishOperation(db, id, { status: 'SUCCEEDED' });
  return result;
}

/** Entries since `since` by type and status, with their mean duration, for the dashboard. */
export function operationCountsSince(
  db: Queryable,
  since: Date,
): Promise<{ operation_type: string; status: OperationStatus; n: number; mean_duration_ms: number | null }[]> {
  return many(
    db,
    z.object({ operation_type: z.string(), status: z.enum(operationStatuses), n: z.number().int(), mean_duration_ms: z.number().nullable() }),
    {
      name: 'operation-log-counts',
      text: `SELECT operation_type, status, count(*)::int AS n, avg(duration_ms)::float8 AS mean_duration_ms
               FROM operation_log WHERE started_at >= $1 GROUP BY operation_type, status ORDER BY operation_type, status`,
      values: [since],
    },
  );
}
