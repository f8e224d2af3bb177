import { describe, expect, it } from 'vitest';
import { createAnonymousValidationGuard } from '../../services/validation-guard.ts';

/** What a validation request without the gateway's token may cost (services/validation-guard.ts). */
describe('anonymous validation guard', () => {
  it('gives each source its reads per minute, and a new minute a new budget', () => {
    let now = 60_000 * 1000;
    const guard = createAnonymousValidationGuard({ readsPerMinute: 2, flagsPerWindow: 10, now: () => now });
    expect([guard.takeRead('a'), guard.takeRead('a'), guard.takeRead('a')]).toEqual([true, true, false]);
    // Another source has its own budget.
    expect(guard.takeRead('b')).toBe(true);
    now += 60_000;
    expect(guard.takeRead('a')).toBe(true);
    expect(guard.stats().readsRefused).toBe(1);
  });

  it('admits one flag per source and reason per window, at most flagsPerWindow in all, then again in the next window', () => {
    let now = 0;
    const guard = createAnonymousValidationGuard({ readsPerMinute: 0, flagsPerWindow: 2, flagWindowMs: 1000, now: () => now });
    const first = guard.admitFlag('1.2.3.4', 'unknown_reference');
    expect(first).toBe('anonymous-validation:1.2.3.4:unknown_reference:0');
    expect(guard.admitFlag('1.2.3.4', 'unknown_reference')).toBeNull();
    expect(guard.admitFlag('1.2.3.4', 'contradiction')).not.toBeNull();
    // The window's bound is reached: a third source's flag is suppressed.
    expect(guard.admitFlag('5.6.7.8', 'unknown_reference')).toBeNull();
    expect(guard.stats().flagsSuppressed).toBe(2);
    now = 1000;
    expect(guard.admitFlag('1.2.3.4', 'unknown_reference')).toBe('anonymous-validation:1.2.3.4:unknown_reference:1');
  });

  it('a zero budget reads nothing; a bounded memory of sources', () => {
    const guard = createAnonymousValidationGuard({ readsPerMinute: 0, flagsPerWindow: 0, sourcesMax: 2, now: () => 0 });
    expect(guard.takeRead('a')).toBe(false);
    expect(guard.admitFlag('a', 'x')).toBeNull();
    const roomy = createAnonymousValidationGuard({ readsPerMinute: 1, flagsPerWindow: 0, sourcesMax: 2, now: () => 0 });
    expect([roomy.takeRead('a'), roomy.takeRead('b'), roomy.takeRead('c')]).toEqual([true, true, true]);
    // 'a' was forgotten (the oldest of three with room for two): its budget starts again.
    expect(roomy.takeRead('a')).toBe(true);
    expect(roomy.takeRead('c')).toBe(false);
  });
});
