import { randomUUID } from 'node:crypto';
import { connect } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../api/app.ts';
import { createRealtimeBus, type Subscriber } from '../../api/realtime.ts';
import { upsertFlag } from '../../db/feature-flags.ts';
import { createPool, type Pool } from '../../db/pool.ts';
import { insertTestEvents, parsePosition, pruneEvents, readHorizon, type EventPosition } from '../../db/realtime-events.ts';
import { createTestApp, type TestApp } from '../support/app.ts';
import { openSse, type SseEvent } from '../support/sse.ts';
import { waitFor } from '../support/wait.ts';
import { hop, issue, newWallet, plcToJson } from '../support/wallet.ts';

/**
 * Realtime events across replicas: changes made through one app instance are streamed by
 * another (PostgreSQL LISTEN/NOTIFY and the event table), heartbeats, resuming with
 * Last-Event-ID without a gap or a duplicate (also across transactions that commit out of
 * order), pruning, and a client that does not read being dropped.
 */
let t: TestApp;
let replicaPool: Pool;
let replica: FastifyInstance;
let urlA: string;
let urlB: string;
let admin: Record<string, string>;
const device = { 'x-device-id': `rt-device-${randomUUID().slice(0, 8)}` };

beforeAll(async () => {
  t = await createTestApp({ REALTIME_HEARTBEAT_MS: '300', REALTIME_CLIENT_BUFFER_BYTES: '32768', REALTIME_POLL_MS: '5000' });
  await t.startWorker();
  urlA = await t.app.listen({ host: '127.0.0.1', port: 0 });
  // A second replica: its own process state and connections, the same database.
  replicaPool = createPool({ connectionString: t.db.url, max: 5, applicationName: 'replica' });
  replica = await buildApp({ deps: { ...t.app.deps, pool: replicaPool }, logger: false });
  urlB = await replica.listen({ host: '127.0.0.1', port: 0 });
  admin = await t.adminHeaders();
});
afterAll(async () => {
  await replica?.close();
  await replicaPool?.end();
  await t?.close();
});

async function fund(owner: string, amount: string) {
  await t.deposit(owner, amount);
}

/** Commits one test event of its own (subject `subject`) and its NOTIFY. */
async function commitEvent(subject: string): Promise<void> {
  await t.db.pool.query(
    `WITH x AS (SELECT pg_current_xact_id() AS xid)
     INSERT INTO realtime_events (xact_id, kind, subject_id, status, payload) SELECT x.xid, 'charge', $1, 'PENDING', '{}' FROM x`,
    [subject],
  );
  await t.db.pool.query(`SELECT pg_notify('realtime_events', '')`);
}

const quietLog = { warn: () => {}, info: () => {} };
const subjectOf = (event: SseEvent) => (event.data as { subject_id?: string }).subject_id;

describe('streams across replicas', () => {
  it('a PLC created and transferred through one instance is seen on the other instance\'s admin and wallet streams', async () => {
    const adminStream = await openSse(`${urlB}/api/v1/admin/events`, admin);
    expect(adminStream.status).toBe(200);
    const [a, b] = [newWallet(), newWallet()];
    await fund(a.pubkey, '10.00');
    const plc = issue(a, { amountMinor: 250n });
    const tokenId = plc.commitment.tokenId;
    const created = await fetch(`${urlA}/api/v1/plc/create`, {
      method: 'POST',
      headers: { ...device, 'content-type': 'application/json' },
      body: JSON.stringify({ plc: plcToJson(plc) }),
    });
    expect(created.status).toBe(200);
    const issued = await adminStream.next((event) => event.event === 'plc' && (event.data as { token_id: string }).token_id === tokenId);
    expect(issued.data).toMatchObject({ kind: 'plc', status: 'ISSUED', chain_length: 0, amount: '2.50', currency: 'BRL' });
    expect(issued.id).toMatch(/^\d+-\d+$/);

    const walletStream = await openSse(`${urlB}/api/v1/plc/${tokenId}/events`, device);
    expect(walletStream.status).toBe(200);
    const moved = await fetch(`${urlA}/api/v1/transfer/`, {
      method: 'POST',
      headers: { ...device, 'content-type': 'application/json' },
      body: JSON.stringify({ plc: plcToJson(hop(plc, a, b)) }),
    });
    expect(moved.status).toBe(200);
    const transferred = await walletStream.next((event) => (event.data as { status: string }).status === 'TRANSFERRED');
    expect(transferred.data).toMatchObject({ token_id: tokenId, chain_length: 1 });
    // The wallet's stream carries only its PLC.
    await commitEvent(`other-${randomUUID()}`);
    await adminStream.next((event) => subjectOf(event)?.startsWith('other-') === true);
    expect(walletStream.events.every((event) => (event.data as { token_id: string }).token_id === tokenId)).toBe(true);
    // Heartbeats keep both streams alive.
    await new Promise((resolve) => setTimeout(resolve, 700));
    expect(walletStream.comments).toContain('heartbeat');
    adminStream.close();
    walletStream.close();
  });

  it('a wallet stream needs the canary flag, a device id and a known PLC', async () => {
    const missing = await fetch(`${urlB}/api/v1/plc/${randomUUID()}/events`, { headers: device });
    expect(missing.status).toBe(404);
    const noDevice = await fetch(`${urlB}/api/v1/plc/${randomUUID()}/events`);
    expect(noDevice.status).toBe(422);
    await upsertFlag(t.db.pool, { name: 'plc_live_events', rolloutPercent: '0', updatedBy: 'test' });
    try {
      const off = await fetch(`${urlB}/api/v1/plc/${randomUUID()}/events`, { headers: device });
      expect(off.status).toBe(403);
      expect(await off.json()).toMatchObject({ code: 'FEATURE_NOT_ENABLED' });
    } finally {
      await upsertFlag(t.db.pool, { name: 'plc_live_events', rolloutPercent: '100', updatedBy: 'test' });
    }
    expect((await fetch(`${urlB}/api/v1/admin/events`)).status).toBe(401);
    expect((await fetch(`${urlB}/api/v1/admin/events`, { headers: { ...admin, 'last-event-id': 'nope' } })).status).toBe(422);
  });
});

describe('resuming', () => {
  it('Last-Event-ID resumes after the last event seen: the missed ones in order, none twice', async () => {
    const run = randomUUID().slice(0, 8);
    const first = await openSse(`${urlB}/api/v1/admin/events`, admin);
    for (let i = 1; i <= 3; i += 1) await commitEvent(`resume-${run}-${i}`);
    const third = await first.next((event) => subjectOf(event) === `resume-${run}-3`);
    first.close();
    for (let i = 4; i <= 6; i += 1) await commitEvent(`resume-${run}-${i}`);
    // Resume on the other replica: positions are the database's, not a process's.
    const resumed = await openSse(`${urlA}/api/v1/admin/events`, { ...admin, 'last-event-id': third.id as string });
    await resumed.next((event) => subjectOf(event) === `resume-${run}-6`);
    await commitEvent(`resume-${run}-7`);
    await resumed.next((event) => subjectOf(event) === `resume-${run}-7`);
    const mine = resumed.events.map(subjectOf).filter((subject) => subject?.startsWith(`resume-${run}-`));
    expect(mine).toEqual([4, 5, 6, 7].map((i) => `resume-${run}-${i}`));
    resumed.close();
  });

  it('an event of a transaction that commits later than a newer one is never skipped', async () => {
    const run = randomUUID().slice(0, 8);
    const stream = await openSse(`${urlB}/api/v1/admin/events`, admin);
    const slow = await t.db.pool.connect();
    try {
      await slow.query('BEGIN');
      await slow.query(
        `WITH x AS (SELECT pg_current_xact_id() AS xid)
         INSERT INTO realtime_events (xact_id, kind, subject_id, status, payload) SELECT x.xid, 'charge', $1, 'PENDING', '{}' FROM x`,
        [`order-${run}-early`],
      );
      await commitEvent(`order-${run}-late`);
      // The later transaction has committed, but an older one writing events is still open: its
      // event would land behind the stream's position, so nothing after it is sent yet.
      await new Promise((resolve) => setTimeout(resolve, 1500));
      expect(stream.events.map(subjectOf)).not.toContain(`order-${run}-late`);
      await slow.query('COMMIT');
      await slow.query(`SELECT pg_notify('realtime_events', '')`);
    } finally {
      slow.release();
    }
    await stream.next((event) => subjectOf(event) === `order-${run}-late`);
    const order = stream.events.map(subjectOf).filter((subject) => subject?.startsWith(`order-${run}-`));
    expect(order).toEqual([`order-${run}-early`, `order-${run}-late`]);
    stream.close();
  });

  it('a position older than the pruned horizon gets a reset, then every event kept', async () => {
    const run = randomUUID().slice(0, 8);
    const stream = await openSse(`${urlB}/api/v1/admin/events`, admin);
    await commitEvent(`prune-${run}-old`);
    const old = await stream.next((event) => subjectOf(event) === `prune-${run}-old`);
    stream.close();
    await insertTestEvents(t.db.pool, 300, 10);
    const deleted = await pruneEvents(t.db.pool, { keep: 100, maxAgeMs: 86_400_000, batch: 10_000 });
    expect(deleted).toBeGreaterThan(0);
    expect(Number((await t.db.pool.query('SELECT count(*) AS n FROM realtime_events')).rows[0].n)).toBe(100);
    const horizon = await readHorizon(t.db.pool);
    const resumed = await openSse(`${urlA}/api/v1/admin/events`, { ...admin, 'last-event-id': old.id as string });
    const reset = await resumed.next((event) => event.event === 'reset');
    expect(reset.data).toMatchObject({ horizon: `${horizon.xact}-${horizon.id}` });
    await commitEvent(`prune-${run}-new`);
    await resumed.next((event) => subjectOf(event) === `prune-${run}-new`);
    expect(resumed.events.filter((event) => event.event === 'charge')).toHaveLength(101);
    resumed.close();
  });
});

describe('a client that does not read', () => {
  it('is dropped once its unsent data passes the limit, and the bus goes on', { timeout: 240_000 }, async () => {
    const before = replica.services.realtime.stats().dropped;
    const socket = connect(Number(new URL(urlB).port), '127.0.0.1');
    await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
    socket.write(`GET /api/v1/admin/events HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: ${admin.authorization}\r\n\r\n`);
    let received = 0;
    socket.on('data', (chunk) => {
      received += chunk.length;
      // Read the response head, then stop reading: the kernel's buffers fill, then the server's.
      if (received > 0) socket.pause();
    });
    // Wait for the bus to hold the stream (not a fixed sleep: on a loaded machine the request may
    // take longer than any guess to reach the route).
    const subscribedBefore = replica.services.realtime.stats().subscribers;
    for (const deadline = Date.now() + 30_000; replica.services.realtime.stats().subscribers <= subscribedBefore; ) {
      if (Date.now() > deadline) throw new Error('the non-reading client was not subscribed within 30 s');
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    // Events of about 1 MB a batch until the bus drops the client: first the kernel's socket
    // buffers fill (on loopback, with autotuning, they can hold several MB), then the server's
    // 32 KiB. Bounded: 64 batches, far beyond any socket buffer.
    const deadline = Date.now() + 120_000;
    for (let batch = 0; replica.services.realtime.stats().dropped === before; batch += 1) {
      if (batch >= 64 || Date.now() > deadline) throw new Error(`the non-reading client was not dropped after ${batch} batches of events`);
      await insertTestEvents(t.db.pool, 1000, 1000);
      for (const settle = Date.now() + 1_000; replica.services.realtime.stats().dropped === before && Date.now() < settle; ) {
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    }
    expect(replica.services.realtime.stats().dropped).toBe(before + 1);
    socket.destroy();
    // Others still get events.
    const stream = await openSse(`${urlB}/api/v1/admin/events`, admin);
    const subject = `after-drop-${randomUUID()}`;
    await commitEvent(subject);
    await stream.next((event) => subjectOf(event) === subject);
    expect(replica.services.realtime.stats().dropped).toBe(before + 1);
    stream.close();
  });
});

describe('a replica nobody follows', () => {
  it('reads no events while no stream is open, and its next streams start from the present or resume from the table', async () => {
    const run = randomUUID().slice(0, 8);
    const bus = createRealtimeBus({ pool: t.db.pool, databaseUrl: t.db.url, pollMs: 60_000, keepEvents: 100_000, retentionMs: 86_400_000, log: quietLog });
    try {
      const seen: string[] = [];
      const subscriber = (into: string[]): Subscriber => ({
        tokenId: null,
        write: (events) => {
          for (const event of events) into.push(event.subject_id);
          return true;
        },
        waitForRoom: async () => true,
        reset: () => true,
        drop: () => {},
      });
      const unsubscribe = await bus.subscribe(subscriber(seen), null);
      await commitEvent(`idle-${run}-1`);
      await waitFor(() => seen.includes(`idle-${run}-1`), { what: 'the first event reaches the live subscriber', timeoutMs: 10_000 });
      const lastSeen = bus.stats().cursor;
      unsubscribe();

      // Nobody subscribed: notifications come, nothing is read.
      for (let i = 2; i <= 4; i += 1) await commitEvent(`idle-${run}-${i}`);
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(bus.stats().cursor).toBe(lastSeen);

      // A new live subscriber starts from the present: no idle-period event, then what comes next.
      const fresh: string[] = [];
      const stop = await bus.subscribe(subscriber(fresh), null);
      await commitEvent(`idle-${run}-5`);
      await waitFor(() => fresh.includes(`idle-${run}-5`), { what: 'the new subscriber gets the next event', timeoutMs: 10_000 });
      expect(fresh.filter((subject) => subject.startsWith(`idle-${run}-`))).toEqual([`idle-${run}-5`]);

      // A resuming one catches up from the table over the idle period, in order, none twice.
      const resumed: string[] = [];
      const stopResumed = await bus.subscribe(subscriber(resumed), parsePosition(lastSeen) as EventPosition);
      await commitEvent(`idle-${run}-6`);
      await waitFor(() => resumed.includes(`idle-${run}-6`), { what: 'the resumed subscriber gets the next event', timeoutMs: 10_000 });
      expect(resumed.filter((subject) => subject.startsWith(`idle-${run}-`))).toEqual([2, 3, 4, 5, 6].map((i) => `idle-${run}-${i}`));
      stop();
      stopResumed();
    } finally {
      await bus.close();
    }
  });
});
