import type { Pool } from '../../db/pool.ts';

/**
 * Bench-only activities of the bare settlement (bench/settlement/bare-workflow.ts): each does one
 * INSERT into a scratch table of the benchmark's own database and nothing else. The benchmark
 * creates the table; `step` names which of the redemption's steps the row stands for.
 */

export const bareTable = 'bench_settlement_bare';

export const bareTableDdl = `CREATE TABLE ${bareTable} (
  id text NOT NULL,
  step text NOT NULL,
  at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (id, step)
)`;

export interface BareInput {
  id: string;
}

export interface BareEventInput {
  id: string;
  eventId: string;
}

export interface BareActivityDeps {
  pool: Pool;
  /** Called once the payout row is in: the bench's emulated gateway schedules its webhook. */
  onPayout: (id: string) => void;
}

export async function insertBareRow(pool: Pool, id: string, step: string): Promise<void> {
  await pool.query({ name: 'bench-settlement-bare-insert', text: `INSERT INTO ${bareTable} (id, step) VALUES ($1, $2)`, values: [id, step] });
}

export function createBareActivities(deps: BareActivityDeps) {
  const { pool } = deps;
  return {
    /** Stands for openRedemption (the local activity of the opening update). */
    async bareOpen(input: BareInput): Promise<{ id: string }> {
      await insertBareRow(pool, input.id, 'open');
      return { id: input.id };
    },
    /** Stands for createPayout: the row, then the emulated gateway is told to send the webhook. */
    async barePayout(input: BareInput): Promise<{ id: string }> {
      await insertBareRow(pool, input.id, 'payout');
      deps.onPayout(input.id);
      return { id: input.id };
    },
    /** Stands for finishRedemption: its row's `at` is the bare "SETTLED" time. */
    async bareFinish(input: BareInput): Promise<{ id: string }> {
      await insertBareRow(pool, input.id, 'finish');
      return { id: input.id };
    },
    /** Stands for routeInboxEvent of the webhook workflow. */
    async bareRouteEvent(input: BareEventInput): Promise<{ workflowId: string }> {
      await insertBareRow(pool, input.id, 'route');
      return { workflowId: `bare-${input.id}` };
    },
    /** Stands for finishInboxEvent of the webhook workflow. */
    async bareFinishEvent(input: BareEventInput): Promise<void> {
      await insertBareRow(pool, input.id, 'event-done');
    },
  };
}

export type BareActivities = ReturnType<typeof createBareActivities>;
