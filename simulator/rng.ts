/**
 * A small seeded random number generator (mulberry32) for the fault injector, so that a test or
 * a chaos run given a seed makes the same decisions for the same sequence of requests. Not for
 * anything secret; resource ids use `node:crypto` so that they never repeat across restarts.
 */
export interface Rng {
  readonly seed: number;
  /** A number in [0, 1). */
  next(): number;
  /** True with probability `rate` (0 never draws, 1 always true without changing the outcome). */
  chance(rate: number): boolean;
}

export function createRng(seed: number): Rng {
  let state = seed >>> 0;
  const next = (): number => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
  return {
    seed: seed >>> 0,
    next,
    chance(rate: number): boolean {
      if (rate <= 0) return false;
      // Always draw for a positive rate, so that the sequence does not depend on whether a rate is exactly 1.
      const draw = next();
      return rate >= 1 || draw < rate;
    },
  };
}
