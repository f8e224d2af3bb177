import { assert } from '../errors.ts';
import type { ReconcileTool } from './tools.ts';

/**
 * A reconcile run goes through its tool's phases in order, a batch at a time; its cursor
 * (`<phase>:<last key>`) says where the next batch starts. Pure, shared by the ledger tools
 * (db/reconciliation.ts), the gateway tools (db/reconciliation-gateway.ts) and the gateway audit.
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
