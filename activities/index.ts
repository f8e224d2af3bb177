import type { Pool } from '../db/pool.ts';
import { createLedgerActivities } from './ledger.ts';
import { createExpireSweepActivities, createPlcActivities } from './plc.ts';

/** Every activity the worker registers, built from the dependencies handed in. */
export function createActivities(deps: { pool: Pool }) {
  return {
    ...createLedgerActivities(deps),
    ...createPlcActivities(deps),
    ...createExpireSweepActivities(deps),
  };
}

export type Activities = ReturnType<typeof createActivities>;
