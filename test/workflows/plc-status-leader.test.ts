import { createLegacyPlc } from '../support/legacy-plc.ts';
import type { FastifyInstance } from 'fastify';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../api/app.ts';
import { plcStatusDispatcherLockKey } from '../../api/plc-status-dispatcher.ts';
import { advisoryLeadership } from '../../db/advisory-leader.ts';
import { createTestApp, type TestApp } from '../support/app.ts';
import { eventually, temporalCliJson } from '../support/temporal-cli.ts';
import { waitFor } from '../support/wait.ts';
import { hop, issue, newWallet, plcToJson } from '../support/wallet.ts';

/**
 * Two API processes on one database: only the dispatcher that holds the advisory lock delivers the
 * PLC status outbox, so the signal rate is the deployment's (PLC_STATUS_MAX_PER_SECOND), not
 * twice it; when the holder's connection dies another takes the lock and delivers the rest.
 */
let t: TestApp;
let replica: FastifyInstance;
const device = { 'x-device-id': 'device-leader' };
const perSecond = 1;

beforeAll(async () => {
  const fast = { PLC_STATUS_POLL_MS: '20', PLC_STATUS_BATCH: '1', PLC_STATUS_MAX_PER_SECOND: String(perSecond), PLC_STATUS_LEADER_RETRY_MS: '200' };
  t = await createTestApp(fast);
  await t.startWorker();
  replica = await buildApp({ deps: t.app.deps, logger: false });
  await replica.ready();
});
afterAll(async () => {
  await replica?.close();
  await t?.close();
});

/** The backend holding the dispatchers' advisory lock in this database, if any. */
async function lockHolder(): Promise<number | undefined> {
  const key = BigInt.asUintN(64, plcStatusDispatcherLockKey);
  const result = await t.db.pool.query<{ pid: number }>(
    `SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
        AND classid = $1::int8::oid AND objid = $2::int8::oid AND objsubid = 1`,
    [(key >> 32n).toString(), (key & 0xffffffffn).toString()],
  );
  return result.rows[0]?.pid;
}

async function outboxTokens(): Promise<Set<string>> {
  const result = await t.db.pool.query<{ token_id: string }>('SELECT token_id FROM plc_status_outbox');
  return new Set(result.rows.map((row) => row.token_id));
}

describe('the PLC status dispatcher across two API processes', () => {
  it('one process delivers at the deployment rate; when the lock holder goes, another takes over and the workflows get the status', async () => {
    // Both apps are up and their dispatchers ask for the lock: one of them holds it.
    await t.app.ready();
    await waitFor(async () => (await lockHolder()) !== undefined, { what: 'a dispatcher to take the lock' });

    // Something else holds the lock (as a replica that leads would): no app delivers meanwhile.
    const outsider = new pg.Client({ connectionString: t.db.url });
    await outsider.connect();
    try {
      // Queued for the lock before its holder's connection is cut, so the test gets it next.
      const taken = outsider.query('SELECT pg_advisory_lock($1::int8)', [plcStatusDispatcherLockKey.toString()]);
      await t.db.pool.query('SELECT pg_terminate_backend($1)', [await lockHolder()]);
      await taken;

      // Six first hops, through both apps, queued while nobody may deliver.
      const issuer = newWallet();
      await t.deposit(issuer.pubkey, '10.00');
      const tokens: string[] = [];
      for (let i = 0; i < 6; i += 1) {
        const app = i % 2 === 0 ? t.app : replica;
        const plc = issue(issuer, { amountMinor: 100n });
        // A PLC issued before expiry buckets: only those have a workflow owed a status.
        await createLegacyPlc(t, plc, device, app);
        const moved = await app.inject({ method: 'POST', url: '/api/v1/transfer/', headers: device, payload: { plc: plcToJson(hop(plc, issuer, newWallet())) } });
        expect(moved.statusCode).toBe(200);
        tokens.push(plc.commitment.tokenId);
      }
      // The apps poll every 20 ms: a dispatcher that delivered without the lock would have emptied some rows by now.
      expect((await outboxTokens()).size).toBe(6);

      // The test lets go: one app takes over. Watch when each row goes.
      await outsider.query('SELECT pg_advisory_unlock_all()');
      const deliveredAt = new Map<string, number>();
      let killed: number | undefined;
      await waitFor(
        async () => {
          const left = await outboxTokens();
          for (const token of tokens) if (!left.has(token) && !deliveredAt.has(token)) deliveredAt.set(token, performance.now());
          // Half way, the leader's connection dies (as when its process dies): the lock is freed.
          if (killed === undefined && deliveredAt.size >= 3) {
            killed = await lockHolder();
            if (killed !== undefined) await t.db.pool.query('SELECT pg_terminate_backend($1)', [killed]);
          }
          return deliveredAt.size === tokens.length;
        },
        { what: 'every status delivered', timeoutMs: 30_000, intervalMs: 25 },
      );
      expect(killed).toBeDefined();
      // A dispatcher took the lock again on a new connection.
      await waitFor(async () => {
        const now = await lockHolder();
        return now !== undefined && now !== killed;
      }, { what: 'a new lock holder' });

      // One dispatcher at 1 signal/s: six rows take five gaps of about a second (two would take half that).
      const times = [...deliveredAt.values()].sort((a, b) => a - b);
      const firstThree = times[2]! - times[0]!;
      expect(firstThree).toBeGreaterThan(1500);
      // The workflows have the status, whichever app queued it and whichever delivered it.
      for (const token of tokens) {
        const listed = await eventually(async () => {
          const list = (await temporalCliJson(['workflow', 'list', '--query', `TokenId = '${token}' AND BusinessStatus = 'TRANSFERRED'`])) as unknown[];
          return list.length === 1 ? 1 : undefined;
        });
        expect(listed).toBe(1);
      }
    } finally {
      await outsider.end();
    }
  });

  it('an advisory leadership: one holder at a time; released, the next to ask takes it', async () => {
    const key = 424242n;
    const a = advisoryLeadership(t.db.pool, { key, retryMs: 100, applicationName: 'test-leader-a' });
    const b = advisoryLeadership(t.db.pool, { key, retryMs: 100, applicationName: 'test-leader-b' });
    try {
      expect(await a.ensure()).toBe(true);
      expect(await b.ensure()).toBe(false);
      // Asked again within retryMs: no query, still not leading.
      expect(await b.ensure()).toBe(false);
      expect(await a.ensure()).toBe(true);
      await a.release();
      expect(await a.ensure()).toBe(false);
      await waitFor(() => b.ensure(), { what: 'b to take the lock after a released it' });
    } finally {
      await a.release();
      await b.release();
    }
  });
});
