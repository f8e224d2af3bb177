import { assert } from '../errors.ts';
import { batchSizeMax, type ReconcileTool } from './tools.ts';

/**
 * A reconcile run goes through its tool's phases in order, a batch at a time; its cursor
 * (`<phase>:<last key>`) says where the next batch starts. Pure, shared by the ledger tools
 * (db/reconciliation/engine.ts), the gateway tools (services/reconcile-gateway.ts) and the
 * gateway audit (services/gateway-audit.ts).
 */

/** The phase a cursor (`<phase>:<last key>`, null: the start) points into, and the key to go on after. */
export function phaseAt<P extends { name: string }>(
  phases: readonly P[],
  tool: ReconcileTool,
  cursor: string | null,
): { index: number; phase: P; after: string | null } {
  let index = 0;
  let after: string | null = null;
  if (cursor !== null) {
    const separator = cursor.indexOf(':');
    const name = separator < 0 ? cursor : cursor.slice(0, separator);
    index = phases.findIndex((phase) => phase.name === name);
    if (index < 0) throw new Error(`cursor ${cursor} names no phase of ${tool}`);
    const key = separator < 0 ? '' : cursor.slice(separator + 1);
    after = key === '' ? null : key;
  }
  const phase = phases[index];
  assert(phase !== undefined, 'every tool has at least one phase');
  return { index, phase, after };
}

/** The cursor after a batch of phase `index` that ended at `next` (null: the phase is done). */
export function cursorAfter(phases: readonly { name: string }[], index: number, next: string | null): string | null {
  const phase = phases[index];
  assert(phase !== undefined, 'the phase exists');
  if (next !== null) return `${phase.name}:${next}`;
  const following = phases[index + 1];
  return following === undefined ? null : `${following.name}:`;
}

/**
 * One batch of a tool from `cursor`: finds the phase the cursor points into, runs `batch` on it
 * from the key after which it goes on, and says where the next batch starts. The same for the
 * ledger tools, the gateway tools and the audit; only what a phase does differs.
 */
export async function batchFrom<P extends { name: string }, R extends { next: string | null }>(
  phases: readonly P[],
  tool: ReconcileTool,
  cursor: string | null,
  limit: number,
  batch: (phase: P, after: string | null) => Promise<R>,
): Promise<{ phase: string; result: R; cursor: string | null }> {
  assert(Number.isInteger(limit) && limit >= 1 && limit <= batchSizeMax, `batch size within 1..${batchSizeMax}`);
  const { index, phase, after } = phaseAt(phases, tool, cursor);
  const result = await batch(phase, after);
  return { phase: phase.name, result, cursor: cursorAfter(phases, index, result.next) };
}

/**
 * The key a phase goes on after, once it has looked at `rows` of at most `limit`: the last row's
 * key, or null when the page was not full (nothing after it).
 */
export function nextKey<R>(rows: readonly R[], limit: number, key: (row: R) => string): string | null {
  const last = rows[rows.length - 1];
  return rows.length < limit || last === undefined ? null : key(last);
}

const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** A phase keyed by uuid (accounts, PLCs, charges, redemptions): the key to go on after, checked. */
export function uuidCursor(after: string | null): string | null {
  if (after !== null && !uuidPattern.test(after)) throw new Error(`cursor ${after} is not a uuid`);
  return after;
}

/** A phase keyed by a ledger transaction's seq: the seq to go on after (0: from the start), checked. */
export function seqCursor(after: string | null): string {
  if (after !== null && !/^\d{1,19}$/.test(after)) throw new Error(`transaction cursor ${after} is not a seq`);
  return after ?? '0';
}

/** A phase that pages through a list by offset (the gateway's lists): the offset to go on from. */
export function offsetCursor(after: string | null): number {
  if (after === null) return 0;
  assert(/^\d{1,9}$/.test(after), `cursor offset ${after} is a number`);
  return Number(after);
}
