import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import type { Plc } from '../../src/protocol/index.ts';
import { createLegacyPlc } from '../support/legacy-plc.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pauseAfterPollMs, retryDelayMs, startPlcStatusDispatcher } from '../../api/plc-status-dispatcher.ts';
import { createTestApp, type TestApp } from '../support/app.ts';
import { eventually, temporalCliJson } from '../support/temporal-cli.ts';
import { waitFor } from '../support/wait.ts';
import { redeemBody } from '../support/settlement.ts';
import { hop, issue, newWallet, plcToJson } from '../support/wallet.ts';

/**
 * The PLC status outbox (migration 9), for PLCs issued before expiry buckets (migration 35; a PLC
 * issued since has no workflow to tell and queues nothing, test/workflows/plc.test.ts): a first hop queues TRANSFERRED in the statement that
 * appends it, and the dispatcher of the API process signals the PLC's workflow after the answer,
 * so the workflow's status search attribute follows without Temporal on the transfer route. The
 * app's own dispatcher polls once a minute here, so each test drives delivery with dispatchers
 * of its own: one poll each (a dispatcher's first poll starts at once, and stop() waits for it).
 */
let t: TestApp;
const device = { 'x-device-id': 'device-outbox' };
const quietLog = { warn: () => {} };

beforeAll(async () => {
  t = await createTestApp({ PLC_STATUS_POLL_MS: '60000' });
  await t.startWorker();
});
afterAll(async () => {
  await t?.close();
});

const createLegacy = (plc: Plc) => createLegacyPlc(t, plc, device);

async function issuedAndHopped(): Promise<{ tokenId: string }> {
  const [issuer, bearer] = [newWallet(), newWallet()];
  await t.deposit(issuer.pubkey, '10.00');
  const plc = issue(issuer, { amountMinor: 100n });
  await createLegacy(plc);
  const moved = await t.app.inject({ method: 'POST', url: '/api/v1/transfer/', headers: device, payload: { plc: plcToJson(hop(plc, issuer, bearer)) } });
  expect(moved.statusCode).toBe(200);
  return { tokenId: plc.commitment.tokenId };
}

async function hoppedTokens(count: number): Promise<string[]> {
  const tokens: string[] = [];
  for (let i = 0; i < count; i += 1) tokens.push((await issuedAndHopped()).tokenId);
  return tokens;
}

/** A Temporal client that records the workflow ids it signals. */
function countingTemporal(): { temporal: Client; signalled: string[] } {
  const signalled: string[] = [];
  const temporal = { workflow: { getHandle: (id: string) => ({ signal: async () => void signalled.push(id) }) } } as unknown as Client;
  return { temporal, signalled };
}

/** How many of `tokens` have had their workflow signalled. */
const deliveredTo = (tokens: readonly string[], signalled: readonly string[]) => tokens.filter((token) => signalled.includes(`plc-${token}`)).length;

/** A Temporal client whose signals all fail with `error`. */
function failingTemporal(error: Error): Client {
  return { workflow: { getHandle: () => ({ signal: () => Promise.reject(error) }) } } as unknown as Client;
}

/** One poll of a dispatcher over `temporal`. */
async function pollOnce(temporal: Client): Promise<void> {
  await startPlcStatusDispatcher({ pool: t.db.pool, temporal, log: quietLog, pollMs: 60_000, batchSize: 500 }).stop();
}

async function outboxRow(tokenId: string) {
  const result = await t.db.pool.query<{ status: string; attempts: number; last_error: string | null; due_in_ms: number }>(
    `SELECT status, attempts, last_error, (extract(epoch FROM next_attempt_at - now()) * 1000)::float8 AS due_in_ms
       FROM plc_status_outbox WHERE token_id = $1`,
    [tokenId],
  );
  return result.rows[0];
}

const makeDue = (tokenId: string) => t.db.pool.query(`UPDATE plc_status_outbox SET next_attempt_at = now() WHERE token_id = $1`, [tokenId]);

async function listedAs(tokenId: string, status: string): Promise<number> {
  const list = (await temporalCliJson(['workflow', 'list', '--query', `TokenId = '${tokenId}' AND BusinessStatus = '${status}'`])) as unknown[];
  return list.length;
}

describe('PLC status outbox', () => {
  it('a first hop queues TRANSFERRED with the append; one poll signals the workflow, whose search attribute follows, and empties the row', async () => {
    const { tokenId } = await issuedAndHopped();
    expect(await outboxRow(tokenId)).toMatchObject({ status: 'TRANSFERRED', attempts: 0 });
    await pollOnce(t.temporal);
    expect(await outboxRow(tokenId)).toBeUndefined();
    expect(await eventually(async () => ((await listedAs(tokenId, 'TRANSFERRED')) === 1 ? 1 : undefined))).toBe(1);
  });

  it('hops first registered by a redemption queue TRANSFERRED too (one writer of hops), and one poll signals the workflow', async () => {
    const [issuer, bearer] = [newWallet(), newWallet()];
    await t.deposit(issuer.pubkey, '10.00');
    const plc = issue(issuer, { amountMinor: 100n });
    const tokenId = plc.commitment.tokenId;
    await createLegacy(plc);
    expect(await outboxRow(tokenId)).toBeUndefined();
    // The first hop reaches the server only with the redemption: the redemption's opening appends it.
    const redeemed = await t.app.inject({ method: 'POST', url: '/api/v1/redeem/', headers: device, payload: redeemBody(hop(plc, issuer, bearer), bearer, 'bearer@example.com') });
    expect(redeemed.statusCode).toBe(200);
    expect(await outboxRow(tokenId)).toMatchObject({ status: 'TRANSFERRED', attempts: 0 });
    const { temporal, signalled } = countingTemporal();
    await pollOnce(temporal);
    expect(signalled).toContain(`plc-${tokenId}`);
    expect(await outboxRow(tokenId)).toBeUndefined();
  });

  it('a failed signal stays queued with its error and a backoff, then is delivered once due again', async () => {
    const { tokenId } = await issuedAndHopped();
    await pollOnce(failingTemporal(new Error('temporal down')));
    const failed = await outboxRow(tokenId);
    expect(failed).toMatchObject({ status: 'TRANSFERRED', attempts: 1, last_error: 'temporal down' });
    expect(failed?.due_in_ms).toBeGreaterThan(0);
    // Not due yet: a poll leaves it alone.
    await pollOnce(t.temporal);
    expect(await outboxRow(tokenId)).toMatchObject({ attempts: 1 });
    await makeDue(tokenId);
    await pollOnce(t.temporal);
    expect(await outboxRow(tokenId)).toBeUndefined();
    expect(await eventually(async () => ((await listedAs(tokenId, 'TRANSFERRED')) === 1 ? 1 : undefined))).toBe(1);
  });

  it('a row whose workflow has ended is done; a row queued again while claimed is kept for the next poll', async () => {
    const { tokenId } = await issuedAndHopped();
    await pollOnce(failingTemporal(new WorkflowNotFoundError('gone', `plc-${tokenId}`, undefined)));
    expect(await outboxRow(tokenId)).toBeUndefined();

    // Queued again (a newer status) between the claim and the delivery: the delivery of the old
    // one does not delete the new one.
    await t.db.pool.query(`INSERT INTO plc_status_outbox (token_id, status, chain_length) VALUES ($1, 'TRANSFERRED', 1)`, [tokenId]);
    const slow: Client = {
      workflow: {
        getHandle: () => ({
          signal: async () => {
            await t.db.pool.query(`UPDATE plc_status_outbox SET chain_length = 2, revision = revision + 1 WHERE token_id = $1`, [tokenId]);
          },
        }),
      },
    } as unknown as Client;
    await pollOnce(slow);
    expect(await outboxRow(tokenId)).toMatchObject({ status: 'TRANSFERRED' });
    await makeDue(tokenId);
    await pollOnce(t.temporal);
    expect(await outboxRow(tokenId)).toBeUndefined();
  });

  /** A fast-polling dispatcher that yields at 70% busy (2 signals/s), with the event loop's use given by `utilization`. */
  const startBusyAwareDispatcher = (temporal: Client, calmMs: number, utilization: () => number) =>
    startPlcStatusDispatcher({
      pool: t.db.pool,
      temporal,
      log: quietLog,
      pollMs: 20,
      batchSize: 16,
      maxPerSecond: 1000,
      whenBusy: { utilization: 0.7, perSecond: 2, calmMs },
      utilizationSinceLastCall: utilization,
    });

  it('while the process is busy, delivers one row per poll at the busy rate; the rest follows once it has been calm for calmMs', async () => {
    const tokens = await hoppedTokens(4);
    const { temporal: counting, signalled } = countingTemporal();
    let utilization = 0.95;
    const startedAt = performance.now();
    const dispatcher = startBusyAwareDispatcher(counting, 300, () => utilization);
    try {
      // Busy at 2/s: the first poll at once, then one row per 500 ms; never the whole batch. On a
      // loaded machine the first poll may come late: wait for it, then give the rate time to show.
      await waitFor(() => deliveredTo(tokens, signalled) >= 1, { what: 'the first busy-mode delivery' });
      await waitFor(() => performance.now() - startedAt >= 700, { what: '700 ms of busy mode' });
      const whileBusy = deliveredTo(tokens, signalled);
      const elapsedMs = performance.now() - startedAt;
      expect(whileBusy).toBeLessThanOrEqual(1 + Math.ceil(elapsedMs / 500));
      expect(whileBusy).toBeLessThan(tokens.length);
      utilization = 0.1;
      expect(await eventually(async () => (deliveredTo(tokens, signalled) === tokens.length ? true : undefined))).toBe(true);
    } finally {
      await dispatcher.stop();
    }
    for (const token of tokens) expect(await outboxRow(token)).toBeUndefined();
  });

  it('a load that flickers around the threshold keeps the dispatcher in its busy mode', async () => {
    const tokens = await hoppedTokens(6);
    const { temporal: counting, signalled } = countingTemporal();
    let calls = 0;
    // Busy every other poll: without the calm period, every second poll would take the whole batch.
    const startedAt = performance.now();
    const dispatcher = startBusyAwareDispatcher(counting, 10_000, () => ((calls += 1) % 2 === 1 ? 0.95 : 0.3));
    let elapsedMs = 0;
    try {
      await waitFor(() => deliveredTo(tokens, signalled) >= 1, { what: 'the first busy-mode delivery' });
      await waitFor(() => performance.now() - startedAt >= 1100, { what: '1.1 s of flickering load' });
    } finally {
      await dispatcher.stop();
      elapsedMs = performance.now() - startedAt;
    }
    // At the busy rate (2/s) all along: never the whole batch, however late the polls came.
    const delivered = deliveredTo(tokens, signalled);
    expect(delivered).toBeLessThanOrEqual(1 + Math.ceil(elapsedMs / 500));
    expect(delivered).toBeLessThan(tokens.length);
    await pollOnce(t.temporal);
  });

  it('backs off exponentially from half a second, capped at five minutes', () => {
    expect(retryDelayMs(1)).toBe(500);
    expect(retryDelayMs(2)).toBe(1000);
    expect(retryDelayMs(5)).toBe(8000);
    expect(retryDelayMs(30)).toBe(5 * 60_000);
  });

  it('paces polls: at once after a full batch unless the rate cap says wait, the poll interval otherwise', () => {
    const base = { batchSize: 16, pollMs: 200, maxPerSecond: 40 };
    // 16 signals at 40/s take 400 ms: a full batch delivered in 100 ms waits 300 ms more.
    expect(pauseAfterPollMs({ ...base, claimed: 16, elapsedMs: 100 })).toBe(300);
    expect(pauseAfterPollMs({ ...base, claimed: 16, elapsedMs: 500 })).toBe(0);
    expect(pauseAfterPollMs({ ...base, claimed: 16, elapsedMs: 100, maxPerSecond: 10_000 })).toBe(0);
    // Not a full batch: the poll interval, or the rate cap if longer.
    expect(pauseAfterPollMs({ ...base, claimed: 0, elapsedMs: 5 })).toBe(200);
    expect(pauseAfterPollMs({ ...base, claimed: 12, elapsedMs: 10 })).toBe(290);
  });
});
