import type { z } from 'zod';
import type { Queryable } from './pool.ts';

/**
 * Query helpers named by the rows they expect (slonik's habit): `one`, `maybeOne`, `many`.
 * Every row is parsed with a zod schema, so a column that changes type fails loudly here and
 * not three layers up.
 */

export class RowCountError extends Error {
  constructor(expected: string, actual: number, queryName: string) {
    super(`query ${queryName}: expected ${expected} row(s), got ${actual}`);
    this.name = 'RowCountError';
  }
}

export interface Query {
  /** A short stable name; also used as the prepared statement name when `prepare` is true. */
  name: string;
  text: string;
  values?: unknown[];
  /** Prepare the statement once per connection: worth it on hot paths. */
  prepare?: boolean;
}

async function run(db: Queryable, query: Query): Promise<unknown[]> {
  const result = await db.query({
    ...(query.prepare === true ? { name: query.name } : {}),
    text: query.text,
    values: query.values ?? [],
  });
  return result.rows;
}

export async function many<S extends z.ZodType>(db: Queryable, schema: S, query: Query): Promise<z.output<S>[]> {
  const rows = await run(db, query);
  return rows.map((row) => schema.parse(row));
}

export async function maybeOne<S extends z.ZodType>(
  db: Queryable,
  schema: S,
  query: Query,
): Promise<z.output<S> | null> {
  const rows = await run(db, query);
  if (rows.length > 1) throw new RowCountError('at most 1', rows.length, query.name);
  return rows.length === 0 ? null : schema.parse(rows[0]);
}

export async function one<S extends z.ZodType>(db: Queryable, schema: S, query: Query): Promise<z.output<S>> {
  const rows = await run(db, query);
  if (rows.length !== 1) throw new RowCountError('exactly 1', rows.length, query.name);
  return schema.parse(rows[0]);
}

/** For statements whose rows are not needed (INSERT/UPDATE without RETURNING). */
export async function exec(db: Queryable, query: Query): Promise<number> {
  const result = await db.query({
    ...(query.prepare === true ? { name: query.name } : {}),
    text: query.text,
    values: query.values ?? [],
  });
  return result.rowCount ?? 0;
}
