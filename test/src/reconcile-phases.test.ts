/** A reconcile run's cursor over its tool's phases (src/reconciliation/phases.ts). */
import { describe, expect, it } from 'vitest';
import { cursorAfter, phaseAt } from '../../src/reconciliation/phases.ts';
import type { ReconcileTool } from '../../src/reconciliation/tools.ts';

const phases = [{ name: 'first' }, { name: 'second' }];
const tool = 'pending-transfers' as ReconcileTool;

describe('reconcile phases', () => {
  it('start at the first phase; a cursor names its phase and the key to go on after', () => {
    expect(phaseAt(phases, tool, null)).toEqual({ index: 0, phase: phases[0], after: null });
    expect(phaseAt(phases, tool, 'second:k-7')).toEqual({ index: 1, phase: phases[1], after: 'k-7' });
    expect(phaseAt(phases, tool, 'second:')).toEqual({ index: 1, phase: phases[1], after: null });
    expect(() => phaseAt(phases, tool, 'third:k')).toThrow(/names no phase/);
  });

  it('go on in the phase while it has more, then to the next phase, then end', () => {
    expect(cursorAfter(phases, 0, 'k-9')).toBe('first:k-9');
    expect(cursorAfter(phases, 0, null)).toBe('second:');
    expect(cursorAfter(phases, 1, null)).toBeNull();
  });
});
