/**
 * Waiting in tests: on a condition, with a deadline that names what was awaited, never on a fixed
 * sleep. A fixed sleep is too short on a loaded machine and wastes time on an idle one; a
 * deadline only bounds a wait that normally ends as soon as the condition holds, so deadlines
 * here are generous (a loaded two-CPU machine runs these tests several times slower).
 *
 * Scale every deadline with TEST_TIME_SCALE (default 1) on a machine slower still.
 */

export const timeScale = (() => {
  const raw = Number(process.env.TEST_TIME_SCALE ?? '1');
  return Number.isFinite(raw) && raw >= 1 ? raw : 1;
})();

export class WaitTimeout extends Error {
  constructor(what: string, timeoutMs: number, last: string | null) {
    super(`timed out after ${timeoutMs} ms waiting for ${what}${last === null ? '' : ` (last seen: ${last})`}`);
    this.name = 'WaitTimeout';
  }
}

/** Thrown by a check to end the wait at once: what it waits for can no longer happen (the process died). */
export class GiveUp extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'GiveUp';
  }
}

export interface WaitOptions {
  /** What is awaited, for the error: "the payout", "the worker to start". */
  what: string;
  /** Before TEST_TIME_SCALE. */
  timeoutMs?: number;
  intervalMs?: number;
  /** Describes the last value seen, for the error (a status, a count). */
  describe?: (value: unknown) => string;
}

/**
 * Polls `check` until it returns a value other than undefined, null or false, and returns that
 * value. An error thrown by `check` counts as "not yet" (a server still starting) and is reported
 * if the deadline passes; a GiveUp ends the wait at once.
 */
export async function waitFor<T>(check: () => T | undefined | null | false | Promise<T | undefined | null | false>, options: WaitOptions): Promise<T> {
  const timeoutMs = Math.round((options.timeoutMs ?? 30_000) * timeScale);
  const intervalMs = options.intervalMs ?? 50;
  const deadline = Date.now() + timeoutMs;
  let last: string | null = null;
  for (;;) {
    try {
      const value = await check();
      if (value !== undefined && value !== null && value !== false) return value;
      last = options.describe === undefined ? null : options.describe(value);
    } catch (error) {
      if (error instanceof GiveUp) throw error;
      last = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
    }
    if (Date.now() > deadline) throw new WaitTimeout(options.what, timeoutMs, last);
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}

/** A deadline for one awaited promise, naming it. */
export async function within<T>(promise: Promise<T>, options: { what: string; timeoutMs: number }): Promise<T> {
  const timeoutMs = Math.round(options.timeoutMs * timeScale);
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      promise,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new WaitTimeout(options.what, timeoutMs, null)), timeoutMs);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}
