import pg from 'pg';
import { z } from 'zod';
import type { Pool } from './pool.ts';
import { exec, one } from './sql.ts';

const lockedRow = z.object({ locked: z.boolean() });

/**
 * One leader among the processes sharing a database, elected by a session-level PostgreSQL
 * advisory lock (`pg_try_advisory_lock`) held on a connection of its own, outside the pool (it
 * takes no pool slot and never goes back to the pool still holding the lock).
 *
 * The lock lives as long as that connection: when the holder's process dies or its connection is
 * cut, PostgreSQL ends the session and frees the lock, and the next process to ask takes it
 * (failover within one `retryMs`). The holder checks its connection every `checkMs` with a bounded
 * `SELECT 1`; a connection that fails the check or errors is dropped and leadership with it, so a
 * holder cut off from the database stops acting as leader. A holder whose process hangs with its
 * connection open keeps the lock until the connection is closed (TCP keepalive, or an operator's
 * `pg_terminate_backend`): nothing runs meanwhile, which for what it guards (a rate) is the safe
 * side.
 */
export interface AdvisoryLeadership {
  /** Whether this process leads now, asking for the lock (at most once per `retryMs`) when it does not. */
  ensure(): Promise<boolean>;
  /** Gives up the lock and closes the connection. */
  release(): Promise<void>;
}

export interface AdvisoryLeadershipOptions {
  /** The advisory lock's key (a signed 64-bit integer, as a decimal string or bigint). */
  key: bigint;
  /** A process that does not lead asks again at most this often. */
  retryMs: number;
  /** The leader checks its connection at most this often. */
  checkMs?: number;
  /** Bound on each statement of the election's connection. */
  timeoutMs?: number;
  applicationName: string;
}

export function advisoryLeadership(pool: Pool, options: AdvisoryLeadershipOptions): AdvisoryLeadership {
  const checkMs = options.checkMs ?? options.retryMs;
  const timeoutMs = options.timeoutMs ?? 2000;
  let client: pg.Client | undefined;
  let leading = false;
  let lastAskAt = Number.NEGATIVE_INFINITY;
  let lastCheckAt = Number.NEGATIVE_INFINITY;
  let released = false;

  const drop = (): void => {
    const gone = client;
    client = undefined;
    leading = false;
    // Ending the session frees the lock on the server.
    void gone?.end().catch(() => {});
  };

  const connect = async (): Promise<pg.Client> => {
    const fresh = new pg.Client({
      ...connectionOptionsOf(pool),
      application_name: options.applicationName,
      connectionTimeoutMillis: timeoutMs,
      query_timeout: timeoutMs,
    });
    fresh.on('error', () => {
      if (client === fresh) drop();
    });
    fresh.on('end', () => {
      if (client === fresh) {
        client = undefined;
        leading = false;
      }
    });
    await fresh.connect();
    return fresh;
  };

  return {
    async ensure() {
      if (released) return false;
      const now = Date.now();
      if (leading) {
        if (now - lastCheckAt < checkMs) return true;
        lastCheckAt = now;
        try {
          if (client !== undefined) await exec(client, { name: 'leader-check', text: 'SELECT 1' });
          return leading;
        } catch {
          drop();
          return false;
        }
      }
      if (now - lastAskAt < options.retryMs) return false;
      lastAskAt = now;
      try {
        client ??= await connect();
        const { locked } = await one(client, lockedRow, {
          name: 'leader-try-lock',
          text: 'SELECT pg_try_advisory_lock($1::int8) AS locked',
          values: [options.key.toString()],
        });
        leading = locked;
        lastCheckAt = Date.now();
        if (released) {
          drop();
          return false;
        }
        return leading;
      } catch {
        drop();
        return false;
      }
    },
    async release() {
      released = true;
      const gone = client;
      client = undefined;
      leading = false;
      if (gone === undefined) return;
      await exec(gone, { name: 'leader-unlock', text: 'SELECT pg_advisory_unlock_all()' }).catch(() => {});
      await gone.end().catch(() => {});
    },
  };
}

/** The pool's own connection settings (host, credentials, TLS), for a connection outside it. */
function connectionOptionsOf(pool: Pool): pg.ClientConfig {
  const { connectionString, host, port, user, password, database, ssl } = pool.options;
  return { connectionString, host, port, user, password, database, ssl };
}
