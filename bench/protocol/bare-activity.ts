import type { Pool } from '../../db/pool.ts';

/**
 * The bench-only activity of the bare workflow (bench/protocol/bare-workflow.ts): one INSERT into
 * a scratch table of the benchmark's own database, nothing else. The benchmark creates the table.
 */

export const bareTable = 'bench_bare_rows';

export interface BareInsertInput {
  id: string;
}

export function createBareActivities(deps: { pool: Pool }) {
  return {
    async insertBareRow(input: BareInsertInput): Promise<{ id: string }> {
      await deps.pool.query({ name: 'bench-bare-insert', text: `INSERT INTO ${bareTable} (id) VALUES ($1)`, values: [input.id] });
      return { id: input.id };
    },
  };
}

export type BareActivities = ReturnType<typeof createBareActivities>;
