/**
 * The offline journey end to end: the wallet program as child processes (Node running
 * bin/wallet.ts, as a user runs it) against the real API listening on a port, with its worker and
 * the run's Temporal dev server and a database of its own.
 *
 * 1. The issuer cancels through the wallet: a create whose post failed is published, then
 *    cancelled; the balance comes back.
 * 2. A issues 5.00 BRL where no server is reachable (the signed create is kept in the wallet) and
 *    sends it to B, who refuses it offline: it carries no issue receipt, nothing shows it was ever
 *    backed (docs/protocol.md section 19). A publishes the create once online and keeps the
 *    receipt the server answers; the same transfer shown again now carries it, and the PLC moves
 *    A -> B -> C -> D through files with no server; D registers the chain, and the PLC expires by
 *    its expiry bucket's timer (one-second buckets here), releasing A's PROMISED.
 *
 * The expiry timer is shortened with PLC_EXPIRY_OVERRIDE_MS (the signed TTL stays one hour). It
 * runs from the moment the server learns of the PLC (the publish), and the offline hops come after
 * it (a receiver needs the receipt the publish brings): six wallet processes and D's register,
 * each 0.3 s idle and a few seconds on a loaded two-CPU machine, must come before it fires, and
 * 40 s leaves that a margin. The online create itself is covered by test/bin/wallet.test.ts.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findViolations } from '../../db/ledger.ts';
import { closedPortUrl, field, ok, refused, wallet } from '../bin/wallet-cli.ts';
import { createTestApp, type TestApp } from '../support/app.ts';

const expiryOverrideMs = 40_000;
const funded = '20.00';

let t: TestApp;
let serverUrl = '';
let root = '';
const names = ['a', 'b', 'c', 'd'] as const;
const dirs = { a: '', b: '', c: '', d: '' };
const keys = { a: '', b: '', c: '', d: '' };
let journeyToken = '';

beforeAll(async () => {
  t = await createTestApp({
    PLC_EXPIRY_OVERRIDE_MS: String(expiryOverrideMs),
    // One-second expiry buckets: the PLC expires within a second of its due time.
    PLC_EXPIRY_BUCKET_MS: '1000',
    RATE_LIMIT_PLC_PER_MINUTE: '10000',
    RATE_LIMIT_TRANSFER_PER_MINUTE: '10000',
  });
  await t.startWorker();
  serverUrl = await t.app.listen({ host: '127.0.0.1', port: 0 });
  root = mkdtempSync(join(tmpdir(), 'wallet-journey-'));
  for (const name of names) dirs[name] = join(root, name);
});

afterAll(async () => {
  await t?.close();
  if (root !== '') rmSync(root, { recursive: true, force: true });
});

/** A GET against the listening server, as any client would make it. */
async function get(path: string): Promise<{ status: number; body: unknown }> {
  const response = await fetch(new URL(path, serverUrl));
  return { status: response.status, body: (await response.json()) as unknown };
}

async function balanceOf(owner: string): Promise<{ available: string; promised: string }> {
  const { status, body } = await get(`/api/v1/balance/${owner}?currency=BRL`);
  expect(status).toBe(200);
  return body as { available: string; promised: string };
}

async function plcStatus(tokenId: string): Promise<Record<string, unknown>> {
  const { status, body } = await get(`/api/v1/plc/${tokenId}/status`);
  expect(status, JSON.stringify(body)).toBe(200);
  return body as Record<string, unknown>;
}

describe('wallet journey against the real server', () => {
  it('four wallets, and the issuer funded through the deposit route', async () => {
    const outputs = await Promise.all(names.map((name) => ok(dirs[name], 'init')));
    for (const [index, name] of names.entries()) keys[name] = field(outputs[index]!, 'public_key');
    const response = await fetch(new URL('/api/v1/balance/deposit', serverUrl), {
      method: 'POST',
      headers: { ...(await t.adminHeaders()), 'content-type': 'application/json', 'idempotency-key': randomUUID() },
      body: JSON.stringify({ owner_id: keys.a, amount: funded, currency: 'BRL' }),
    });
    expect(response.status, await response.clone().text()).toBe(200);
    expect(await balanceOf(keys.a)).toMatchObject({ available: funded, promised: '0.00' });
  });

  it('the issuer publishes a create that failed, then cancels it through the wallet; the balance comes back', async () => {
    const failed = await refused(dirs.a, 'server_unreachable', 'create', '--amount', '2.00', '--currency', 'BRL', '--ttl-hours', '1', '--server', await closedPortUrl());
    const tokenId = /PLC (\S+) is stored in this wallet/.exec(failed.stderr)?.[1];
    if (tokenId === undefined) throw new Error(`no token id in ${failed.stderr}`);
    expect((await get(`/api/v1/plc/${tokenId}/status`)).status).toBe(404);

    const published = await ok(dirs.a, 'publish', '--token', tokenId, '--server', serverUrl);
    expect(published).toContain(`published ${tokenId}`);
    expect(field(published, 'status')).toBe('ISSUED');
    expect(await balanceOf(keys.a)).toMatchObject({ available: '18.00', promised: '2.00' });
    // Publishing again finds it there and books nothing.
    expect(await ok(dirs.a, 'publish', '--token', tokenId, '--server', serverUrl)).toContain('was already registered');
    expect(await balanceOf(keys.a)).toMatchObject({ available: '18.00', promised: '2.00' });

    const printed = JSON.parse(await ok(dirs.a, 'cancel', '--token', tokenId, '--server', serverUrl)) as { authorization: { token_id: string } };
    expect(printed.authorization.token_id).toBe(tokenId);
    expect(await plcStatus(tokenId)).toMatchObject({ status: 'CANCELLED' });
    expect(await balanceOf(keys.a)).toMatchObject({ available: funded, promised: '0.00' });
    await refused(dirs.a, 'token_closed', 'send', '--token', tokenId, '--to', keys.b);
  });

  it('A issues 5.00 BRL offline, B refuses it until A publishes it; then it moves A -> B -> C -> D offline and D registers the chain', async () => {
    const offline = await refused(dirs.a, 'server_unreachable', 'create', '--amount', '5.00', '--currency', 'BRL', '--ttl-hours', '1', '--server', await closedPortUrl());
    const tokenId = /PLC (\S+) is stored in this wallet/.exec(offline.stderr)?.[1];
    if (tokenId === undefined) throw new Error(`no token id in ${offline.stderr}`);
    journeyToken = tokenId;

    // Never registered: the receiver refuses it offline, for want of the service's issue receipt.
    const unbacked = join(root, 'ab-unbacked.txt');
    await ok(dirs.a, 'send', '--token', journeyToken, '--to', keys.b, '--out', unbacked);
    const refusal = await refused(dirs.b, 'unbacked', 'receive', '--in', unbacked);
    expect(refusal.stderr).toContain('[missing]');

    // Back online: the issuer publishes the create (the expiry timer starts now) and keeps its receipt.
    const published = await ok(dirs.a, 'publish', '--token', journeyToken, '--server', serverUrl);
    const createdAtMs = Date.now();
    expect(field(published, 'status')).toBe('ISSUED');
    expect(published).toContain('issue receipt: kept');

    // Offline: each hop is a file, signed by the holder and verified by the next one, receipt included
    // (A shows its transfer to B again, now with the receipt).
    const hops = [['a', 'b'], ['b', 'c'], ['c', 'd']] as const;
    for (const [from, to] of hops) {
      const file = join(root, `${from}${to}.txt`);
      await ok(dirs[from], 'send', '--token', journeyToken, '--to', keys[to], '--out', file);
      await ok(dirs[to], 'receive', '--in', file);
    }

    const registered = await ok(dirs.d, 'register', '--token', journeyToken, '--server', serverUrl, '--device-id', 'merchant-d.01');
    const registeredAfterMs = Date.now() - createdAtMs;
    expect(registeredAfterMs, `register came ${registeredAfterMs} ms after the publish; the expiry timer fires at ${expiryOverrideMs} ms`).toBeLessThan(expiryOverrideMs);
    expect(field(registered, 'status')).toBe('TRANSFERRED');
    expect(field(registered, 'chain_length')).toBe('3');
    expect(field(registered, 'bearer')).toBe(keys.d);
    expect(field(registered, 'appended')).toBe('3');
    expect(await plcStatus(journeyToken)).toMatchObject({ status: 'TRANSFERRED', chain_length: 3, bearer_pubkey: keys.d, issuer_pubkey: keys.a, amount: '5.00' });
    expect(await balanceOf(keys.a)).toMatchObject({ available: '15.00', promised: '5.00' });
    const chain = await get(`/api/v1/plc/${journeyToken}/chain`);
    expect((chain.body as { recipient_pubkey: string }[]).map((entry) => entry.recipient_pubkey)).toEqual([keys.b, keys.c, keys.d]);

    // A retry of the same chain carries the same Idempotency-Key: the server answers it from its
    // store and registers nothing twice.
    const retried = await wallet(dirs.d, 'register', '--token', journeyToken, '--server', serverUrl, '--device-id', 'merchant-d.01');
    expect(retried.code, retried.stderr).toBe(0);
    expect(retried.stderr).toContain('idempotency store');
    expect(retried.stdout).toBe(registered);
    expect(((await get(`/api/v1/plc/${journeyToken}/chain`)).body as unknown[]).length).toBe(3);
  });

  it('the PLC expires by its expiry bucket\'s timer: EXPIRED, A\'s PROMISED back to AVAILABLE, the ledger consistent', async () => {
    expect(journeyToken).not.toBe('');
    const detail = await t.app.inject({ method: 'GET', url: `/api/v1/admin/plcs/${journeyToken}/detail`, headers: await t.adminHeaders() });
    const result = await t.temporal.workflow.getHandle(detail.json().workflow_id).result();
    expect(result).toMatchObject({ status: 'DONE' });
    expect(await plcStatus(journeyToken)).toMatchObject({ status: 'EXPIRED', chain_length: 3, bearer_pubkey: keys.d });
    expect(await balanceOf(keys.a)).toMatchObject({ available: funded, promised: '0.00' });
    expect(await findViolations(t.db.pool)).toEqual([]);
  });
});
