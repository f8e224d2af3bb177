/** A reconcile run's cursor over its tool's phases (src/reconciliation/phases.ts). */
import { describe, expect, it } from 'vitest';
import { batchFrom, cursorAfter, nextKey, offsetCursor, phaseAt, seqCursor, uuidCursor } from '../../src/reconciliation/phases.ts';
import { batchSizeMax, type ReconcileTool } from '../../src/reconciliation/tools.ts';

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

describe('reconcile batches', () => {
  it('run the phase the cursor points into, from its key, and say where the next batch starts', async () => {
    const seen: [string, string | null][] = [];
    const run = (cursor: string | null, next: string | null) =>
      batchFrom(phases, tool, cursor, 10, async (phase, after) => {
        seen.push([phase.name, after]);
        return { next, found: 1 };
      });
    expect(await run(null, 'k-1')).toEqual({ phase: 'first', result: { next: 'k-1', found: 1 }, cursor: 'first:k-1' });
    expect(await run('first:k-1', null)).toEqual({ phase: 'first', result: { next: null, found: 1 }, cursor: 'second:' });
    expect(await run('second:', null)).toMatchObject({ phase: 'second', cursor: null });
    expect(seen).toEqual([
      ['first', null],
      ['first', 'k-1'],
      ['second', null],
    ]);
  });

  it('refuse a batch size outside 1..batchSizeMax before running anything', async () => {
    let ran = false;
    const batch = async () => {
      ran = true;
      return { next: null };
    };
    await expect(batchFrom(phases, tool, null, 0, batch)).rejects.toThrow(/batch size/);
    await expect(batchFrom(phases, tool, null, batchSizeMax + 1, batch)).rejects.toThrow(/batch size/);
    await expect(batchFrom(phases, tool, null, 1.5, batch)).rejects.toThrow(/batch size/);
    expect(ran).toBe(false);
  });

  it('go on after the last row of a full page, and end after a short one', () => {
    const key = (row: { id: string }) => row.id;
    expect(nextKey([{ id: 'a' }, { id: 'b' }], 2, key)).toBe('b');
    expect(nextKey([{ id: 'a' }], 2, key)).toBeNull();
    expect(nextKey([], 2, key)).toBeNull();
  });
});

describe('reconcile cursors', () => {
  const uuid = '4c0b2f7e-8d1a-4e3b-9f6c-5a7d8e9f0a1b';

  it('key a uuid phase by a lowercase uuid', () => {
    expect(uuidCursor(null)).toBeNull();
    expect(uuidCursor(uuid)).toBe(uuid);
    expect(() => uuidCursor(uuid.toUpperCase())).toThrow(/is not a uuid/);
    expect(() => uuidCursor("x' OR 1=1")).toThrow(/is not a uuid/);
  });

  it('key a transaction phase by its seq, from 0', () => {
    expect(seqCursor(null)).toBe('0');
    expect(seqCursor('42')).toBe('42');
    expect(() => seqCursor('-1')).toThrow(/is not a seq/);
    expect(() => seqCursor('1'.repeat(20))).toThrow(/is not a seq/);
  });

  it('key a listing phase by its offset, from 0', () => {
    expect(offsetCursor(null)).toBe(0);
    expect(offsetCursor('300')).toBe(300);
    expect(() => offsetCursor('3e2')).toThrow(/is a number/);
    expect(() => offsetCursor('1234567890')).toThrow(/is a number/);
  });
});
