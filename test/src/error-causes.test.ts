import { describe, expect, it } from 'vitest';
import { causesOf } from '../../src/errors.ts';

describe('causesOf', () => {
  it('walks an error and what it wraps, outermost first', () => {
    const inner = new Error('inner');
    const middle = new Error('middle', { cause: inner });
    const outer = new Error('outer', { cause: middle });
    expect([...causesOf(outer)]).toEqual([outer, middle, inner]);
  });

  it('stops at the depth it is given, and at a cause that is not an object', () => {
    const chain = new Error('0', { cause: new Error('1', { cause: new Error('2', { cause: 'a string' }) }) });
    expect([...causesOf(chain, 2)].map((error) => (error as Error).message)).toEqual(['0', '1']);
    expect([...causesOf(chain)].map((error) => (error as Error).message)).toEqual(['0', '1', '2']);
    expect([...causesOf(undefined)]).toEqual([]);
    expect([...causesOf('text')]).toEqual([]);
  });

  it('ends on a cycle after the depth, never loops', () => {
    const a = new Error('a') as Error & { cause?: unknown };
    const b = new Error('b', { cause: a });
    a.cause = b;
    expect([...causesOf(a, 5)]).toHaveLength(5);
  });
});
