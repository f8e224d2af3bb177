/**
 * What an unauthenticated validation request may cost (docs/settlement.md, "Anonymous validation
 * requests"). The dual-flow route answers the gateway's synchronous authorizations without a
 * token, as the interface requires; whoever sends one must not be able to make the service read
 * the gateway or raise risk flags at will:
 *
 * - gateway reads on behalf of unauthenticated callers: at most `readsPerMinute` per source
 *   address per minute (a fixed one-minute window per source);
 * - risk flags raised for them: one per (source, reason) per window (`flagWindowMs`), and at most
 *   `flagsPerWindow` in a window from all sources together; the rest are counted in memory only.
 *
 * Per process, in memory, bounded (`sourcesMax` sources remembered, the oldest forgotten first).
 * Requests with the gateway's token are never counted here.
 */
export interface AnonymousValidationGuardOptions {
  readsPerMinute: number;
  flagsPerWindow: number;
  flagWindowMs?: number;
  sourcesMax?: number;
  now?: () => number;
}

export interface AnonymousValidationGuard {
  /** Takes one gateway read from the source's budget; false when the budget of this minute is spent. */
  takeRead(source: string): boolean;
  /**
   * Whether a flag for this source and reason may be written: the dedupe key to write it under
   * (one per source, reason and window), or null when it was written already this window or the
   * window's bound is reached.
   */
  admitFlag(source: string, reason: string): string | null;
  /** What the guard refused, for the log and the tests. */
  stats(): { readsRefused: number; flagsSuppressed: number };
}

export const anonymousFlagWindowMsDefault = 10 * 60_000;

export function createAnonymousValidationGuard(options: AnonymousValidationGuardOptions): AnonymousValidationGuard {
  const now = options.now ?? Date.now;
  const flagWindowMs = options.flagWindowMs ?? anonymousFlagWindowMsDefault;
  const sourcesMax = options.sourcesMax ?? 10_000;
  const reads = new Map<string, { minute: number; count: number }>();
  let flagWindow = -1;
  const flagged = new Set<string>();
  let readsRefused = 0;
  let flagsSuppressed = 0;

  function remember<V>(map: Map<string, V>, key: string, value: V): void {
    map.delete(key);
    map.set(key, value);
    if (map.size > sourcesMax) {
      const oldest = map.keys().next().value;
      if (oldest !== undefined) map.delete(oldest);
    }
  }

  return {
    takeRead(source) {
      const minute = Math.floor(now() / 60_000);
      const seen = reads.get(source);
      const count = seen === undefined || seen.minute !== minute ? 0 : seen.count;
      if (count >= options.readsPerMinute) {
        readsRefused += 1;
        return false;
      }
      remember(reads, source, { minute, count: count + 1 });
      return true;
    },
    admitFlag(source, reason) {
      const window = Math.floor(now() / flagWindowMs);
      if (window !== flagWindow) {
        flagWindow = window;
        flagged.clear();
      }
      const key = `anonymous-validation:${source.slice(0, 100)}:${reason.slice(0, 60)}:${window}`;
      if (flagged.has(key) || flagged.size >= options.flagsPerWindow) {
        flagsSuppressed += 1;
        return null;
      }
      flagged.add(key);
      return key;
    },
    stats: () => ({ readsRefused, flagsSuppressed }),
  };
}
