/**
 * Facts the database layer reports once they are committed, for the Prometheus counters
 * (infra/metrics.ts; docs/operations.md, "Counted where committed"). A write reports its fact with
 * `reportCommitted(db, fact)`:
 *
 * - on a pool (an autocommit statement, already committed when it returns), listeners hear it at once;
 * - on a client inside `withTransaction` (db/pool.ts), the fact waits for that transaction's COMMIT
 *   and is dropped on ROLLBACK, so a refused or failed transaction never counts.
 *
 * Writes report only what they changed: a retried activity whose first attempt committed finds its
 * row (`created: false`, `finished: false`) and reports nothing, so a retry never counts twice.
 * The database layer knows nothing of Prometheus: the metrics module listens here.
 */
export type CommittedFact =
  | { kind: 'ledger_posting'; txType: string }
  | { kind: 'plc'; event: 'created' | 'transferred' | 'cancelled' | 'expired' | 'redeemed'; count: number }
  | { kind: 'redemption'; outcome: 'opened' | 'SETTLED' | 'FAILED'; seconds?: number }
  | { kind: 'charge'; outcome: 'opened' | 'SETTLED' | 'FAILED'; seconds?: number }
  | { kind: 'webhook_event'; provider: string; outcome: 'received' | 'duplicate' | 'PROCESSED' | 'IGNORED' | 'CONTRADICTED' | 'DEAD' }
  | { kind: 'fork_detected'; route: string }
  | { kind: 'pin_lockout' };

export type CommittedListener = (fact: CommittedFact) => void;

const listeners = new Set<CommittedListener>();
const pending = new WeakMap<object, CommittedFact[]>();

/** Listens to every committed fact; returns the function that stops listening. */
export function onCommitted(listener: CommittedListener): () => void {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

function deliver(fact: CommittedFact): void {
  for (const listener of listeners) {
    try {
      listener(fact);
    } catch {
      // A metric must never fail the write that reported it.
    }
  }
}

/**
 * Reports a fact written through `db` (the pool or the client the write ran on; only its identity
 * is read): now on a pool, at COMMIT inside `withTransaction`.
 */
export function reportCommitted(db: object, fact: CommittedFact): void {
  if (listeners.size === 0) return;
  const queued = pending.get(db);
  if (queued === undefined) deliver(fact);
  else queued.push(fact);
}

/** withTransaction's side: facts reported on `client` from now on wait for its end. */
export function holdCommitted(client: object): void {
  pending.set(client, []);
}

/** withTransaction's side: the transaction committed (deliver) or did not (drop). */
export function releaseCommitted(client: object, committed: boolean): void {
  const queued = pending.get(client);
  pending.delete(client);
  if (committed && queued !== undefined) for (const fact of queued) deliver(fact);
}
