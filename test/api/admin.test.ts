import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../support/app.ts';
import { hop, issue, newWallet, plcToJson, type TestWallet } from '../support/wallet.ts';
import type { Plc } from '../../src/protocol/index.ts';

let t: TestApp;
let admin: Record<string, string>;
const device = { 'x-device-id': 'device-admin-test' };

beforeAll(async () => {
  t = await createTestApp();
  await t.startWorker();
  admin = await t.adminHeaders();
});
afterAll(async () => {
  await t?.close();
});

async function fund(wallet: TestWallet | string, amount: string, currency = 'BRL') {
  const ownerId = typeof wallet === 'string' ? wallet : wallet.pubkey;
  const response = await t.app.inject({
    method: 'POST',
    url: '/api/v1/balance/deposit',
    headers: { ...admin, 'idempotency-key': randomUUID() },
    payload: { owner_id: ownerId, amount, currency },
  });
  expect(response.statusCode).toBe(200);
}

const create = (plc: Plc) => t.app.inject({ method: 'POST', url: '/api/v1/plc/create', headers: device, payload: { plc: plcToJson(plc) } });
const get = (url: string, headers: Record<string, string> = admin) => t.app.inject({ method: 'GET', url, headers });

describe('freeze and unfreeze', () => {
  it('a frozen account can receive but not spend, in every path, until unfrozen', async () => {
    const owner = newWallet();
    await fund(owner, '20.00');
    const detail = (await get(`/api/v1/admin/accounts/${owner.pubkey}/detail`)).json();
    const accountId = detail.account_id as string;
    const frozen = await t.app.inject({ method: 'POST', url: `/api/v1/admin/accounts/${accountId}/freeze`, headers: admin });
    expect(frozen.json()).toEqual({ account_id: accountId, owner_id: owner.pubkey, status: 'FROZEN' });
    const refused = await create(issue(owner, { amountMinor: 100n }));
    expect(refused.statusCode).toBe(409);
    expect(refused.json()).toMatchObject({ code: 'ACCOUNT_FROZEN' });
    await fund(owner, '1.00');
    expect((await get(`/api/v1/balance/${owner.pubkey}`, {})).json()).toMatchObject({ available: '21.00', status: 'FROZEN' });
    await t.app.inject({ method: 'POST', url: `/api/v1/admin/accounts/${accountId}/unfreeze`, headers: admin });
    expect((await create(issue(owner, { amountMinor: 100n }))).statusCode).toBe(200);
  });

  it('answers 404 for an unknown or system account and 422 for a malformed id', async () => {
    expect((await t.app.inject({ method: 'POST', url: `/api/v1/admin/accounts/${randomUUID()}/freeze`, headers: admin })).statusCode).toBe(404);
    const world = await t.db.pool.query(`SELECT id FROM ledger_accounts WHERE owner_id = 'system:world'`);
    expect((await t.app.inject({ method: 'POST', url: `/api/v1/admin/accounts/${world.rows[0].id}/freeze`, headers: admin })).statusCode).toBe(404);
    expect((await t.app.inject({ method: 'POST', url: '/api/v1/admin/accounts/nope/freeze', headers: admin })).statusCode).toBe(422);
  });
});

describe('ledger administration', () => {
  it('stats show totals per bucket and currency, counts, and the invariant check', async () => {
    await fund('stats-owner', '3.00', 'EUR');
    const stats = (await get('/api/v1/admin/ledger/stats')).json();
    expect(stats.invariants).toEqual({ ok: true, violations: [] });
    expect(stats.transactions.by_type.DEPOSIT).toBeGreaterThan(0);
    const eurAvailable = stats.totals.find((row: { currency: string; bucket: string }) => row.currency === 'EUR' && row.bucket === 'AVAILABLE');
    expect(eurAvailable.users).toBe('3.00');
    expect(eurAvailable.system).toBe('-3.00');
  });

  it('lists transactions by type, accounts with balances, and an owner detail', async () => {
    await fund('list-owner', '2.50');
    const deposits = (await get('/api/v1/admin/ledger/transactions?tx_type=DEPOSIT&limit=5')).json();
    expect(deposits.length).toBeGreaterThan(0);
    expect(deposits.every((tx: { tx_type: string }) => tx.tx_type === 'DEPOSIT')).toBe(true);
    expect((await get('/api/v1/admin/ledger/transactions?tx_type=NOPE')).statusCode).toBe(422);
    const accounts = (await get('/api/v1/admin/ledger/accounts?limit=200')).json();
    expect(accounts.some((account: { owner_id: string; kind: string }) => account.owner_id === 'system:world' && account.kind === 'system')).toBe(true);
    const users = (await get('/api/v1/admin/accounts/public?limit=200')).json();
    expect(users.every((account: { kind: string }) => account.kind === 'user')).toBe(true);
    const detail = (await get('/api/v1/admin/accounts/list-owner/detail')).json();
    expect(detail.balances.find((b: { currency: string }) => b.currency === 'BRL')).toMatchObject({ available: '2.50' });
    expect(detail.transactions[0]).toMatchObject({ tx_type: 'DEPOSIT' });
    expect((await get('/api/v1/admin/accounts/never-seen/detail')).statusCode).toBe(404);
  });
});

describe('PLC administration', () => {
  it('lists PLCs by status, shows one in full, and the owner promises', async () => {
    const [a, b] = [newWallet(), newWallet()];
    await fund(a, '10.00');
    const plc = issue(a, { amountMinor: 250n });
    await create(plc);
    await t.app.inject({ method: 'POST', url: '/api/v1/transfer/', headers: device, payload: { plc: plcToJson(hop(plc, a, b)) } });
    const transferred = (await get('/api/v1/admin/plcs?status=TRANSFERRED')).json();
    expect(transferred.some((p: { token_id: string }) => p.token_id === plc.commitment.tokenId)).toBe(true);
    const detail = (await get(`/api/v1/admin/plcs/${plc.commitment.tokenId}/detail`)).json();
    expect(detail).toMatchObject({ status: { status: 'TRANSFERRED', chain_length: 1 } });
    // The workflow that expires it: its expiry bucket (docs/plc.md, "Expiry by time buckets").
    expect(detail.workflow_id).toMatch(/^plc-expiry-/);
    expect(typeof detail.expiry_due_at).toBe('string');
    expect(detail.plc.transfer_chain).toHaveLength(1);
    expect(detail.transactions.map((tx: { tx_type: string }) => tx.tx_type)).toEqual(['PLC_ISSUED']);
    const promises = (await get(`/api/v1/balance/${a.pubkey}/promises?status=TRANSFERRED`, {})).json();
    expect(promises).toEqual([expect.objectContaining({ token_id: plc.commitment.tokenId, amount: '2.50', status: 'TRANSFERRED' })]);
    expect((await get(`/api/v1/balance/${a.pubkey}/promises?status=BOGUS`, {})).statusCode).toBe(422);
    expect((await get(`/api/v1/admin/plcs/${randomUUID()}/detail`)).statusCode).toBe(404);
  });

  it('resolves a risk flag once, keeping who resolved it', async () => {
    const [a, b, c] = [newWallet(), newWallet(), newWallet()];
    await fund(a, '10.00');
    const plc = issue(a, { amountMinor: 100n });
    await create(plc);
    await t.app.inject({ method: 'POST', url: '/api/v1/transfer/', headers: device, payload: { plc: plcToJson(hop(plc, a, b)) } });
    const fork = await t.app.inject({ method: 'POST', url: '/api/v1/transfer/', headers: device, payload: { plc: plcToJson(hop(plc, a, c)) } });
    const flagId = fork.json().details.risk_flag_id as string;
    const resolved = await t.app.inject({
      method: 'POST',
      url: `/api/v1/admin/risk-flags/${flagId}/resolve`,
      headers: admin,
      payload: { note: 'issuer contacted' },
    });
    expect(resolved.json()).toMatchObject({ id: flagId, resolved: true, resolution_note: 'issuer contacted', severity: 'high' });
    const open = (await get('/api/v1/admin/risk-flags?resolved=false&limit=200')).json();
    expect(open.some((flag: { id: string }) => flag.id === flagId)).toBe(false);
    expect((await t.app.inject({ method: 'POST', url: `/api/v1/admin/risk-flags/${randomUUID()}/resolve`, headers: admin })).statusCode).toBe(404);
    expect((await get('/api/v1/admin/risk-flags?resolved=maybe')).statusCode).toBe(422);
  });

  it('generates a test key pair', async () => {
    const keys = (await get('/api/v1/admin/generate-keypair')).json();
    expect(keys.public_key).toMatch(/^[0-9a-f]{64}$/);
    expect(keys.private_key).toMatch(/^[0-9a-f]{64}$/);
  });
});

describe('rate limits', () => {
  it('answer 429 with Retry-After per client address and device id, and per address whatever the device (docs/security.md)', async () => {
    const limited = await createTestApp({ RATE_LIMIT_TRANSFER_PER_MINUTE: '3' });
    try {
      const post = (deviceId: string, remoteAddress = '127.0.0.1') =>
        limited.app.inject({ method: 'POST', url: '/api/v1/transfer/', headers: { 'x-device-id': deviceId }, payload: { transport: 'PLC2:x' }, remoteAddress });
      const first = await Promise.all([post('dev-a'), post('dev-a'), post('dev-a')]);
      expect(first.map((response) => response.statusCode)).not.toContain(429);
      const over = await post('dev-a');
      expect(over.statusCode).toBe(429);
      expect(Number(over.headers['retry-after'])).toBeGreaterThan(0);
      // Another device id from the same address: the address's allowance is spent too.
      const rotated = await post('dev-b');
      expect(rotated.statusCode).toBe(429);
      expect(rotated.json()).toMatchObject({ code: 'RATE_LIMITED', details: { dimension: 'address' } });
      // The same device from another address is not held back.
      expect((await post('dev-a', '10.0.0.2')).statusCode).not.toBe(429);
    } finally {
      await limited.close();
    }
  });
});

describe('queue statistics', () => {
  const stats = async () => {
    const response = await get('/api/v1/admin/queues/stats');
    expect(response.statusCode).toBe(200);
    return response.json();
  };

  it('reports the PLC status outbox and the webhook inbox: what waits, its age, what fails, and lagging past QUEUE_LAG_ALERT_MS', async () => {
    // Earlier tests of this file leave statuses for this app's dispatcher to deliver; wait until
    // it has, so that the outbox's count moves only by the row this test adds.
    let before = await stats();
    for (const deadline = Date.now() + 30_000; before.queues.plc_status_outbox.pending !== 0; before = await stats()) {
      if (Date.now() > deadline) throw new Error(`the PLC status outbox did not drain within 30 s: ${JSON.stringify(before.queues.plc_status_outbox)}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(before.lag_alert_ms).toBe(60_000);

    // A status whose deliveries keep failing, queued two minutes ago and not due for an hour
    // (so this app's dispatcher leaves it alone).
    const issuer = newWallet();
    await fund(issuer, '10.00');
    const plc = issue(issuer, { amountMinor: 100n });
    expect((await create(plc)).statusCode).toBe(200);
    const tokenId = plcToJson(plc).token_id;
    await t.db.pool.query(
      `INSERT INTO plc_status_outbox (token_id, status, chain_length, enqueued_at, attempts, next_attempt_at, last_error)
       VALUES ($1, 'TRANSFERRED', 1, now() - interval '2 minutes', 4, now() + interval '1 hour', 'signal refused: test')`,
      [tokenId],
    );
    // An event stored 3 minutes ago and never routed, and one that gave up.
    const rawEvent = (id: string, status: string, age: string) =>
      t.db.pool.query(
        `INSERT INTO webhook_inbox (provider, endpoint, event_id, raw_body, status, received_at) VALUES ('gateway', 'test', $1, '{}', $2, now() - $3::interval)`,
        [id, status, age],
      );
    await rawEvent(`queue-stats-${randomUUID()}`, 'RECEIVED', '3 minutes');
    await rawEvent(`queue-stats-${randomUUID()}`, 'DEAD', '1 minute');

    const after = await stats();
    expect(after.ok).toBe(false);
    const outbox = after.queues.plc_status_outbox;
    expect(outbox.pending).toBe(before.queues.plc_status_outbox.pending + 1);
    expect(outbox.failing).toBeGreaterThanOrEqual(1);
    expect(outbox.max_attempts).toBeGreaterThanOrEqual(4);
    expect(outbox.oldest_age_ms).toBeGreaterThanOrEqual(120_000);
    expect(outbox.last_error).toBe('signal refused: test');
    expect(outbox.lagging).toBe(true);
    const inbox = after.queues.webhook_inbox;
    expect(inbox.received).toBe(before.queues.webhook_inbox.received + 1);
    expect(inbox.dead).toBe(before.queues.webhook_inbox.dead + 1);
    expect(inbox.oldest_age_ms).toBeGreaterThanOrEqual(180_000);
    expect(inbox.lagging).toBe(true);

    await t.db.pool.query(`DELETE FROM plc_status_outbox WHERE token_id = $1`, [tokenId]);
    await t.db.pool.query(`DELETE FROM webhook_inbox WHERE endpoint = 'test' AND event_id LIKE 'queue-stats-%'`);
    expect((await stats()).queues.plc_status_outbox.pending).toBe(before.queues.plc_status_outbox.pending);
  });

  it('is for admins only', async () => {
    expect((await get('/api/v1/admin/queues/stats', {})).statusCode).toBe(401);
  });
});
