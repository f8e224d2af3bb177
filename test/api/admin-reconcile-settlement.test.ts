import { randomBytes, randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { openCharge } from '../../db/charges.ts';
import { postTransaction } from '../../db/ledger.ts';
import { moneyModel } from '../../src/ledger/money-model.ts';
import type { TestApp } from '../support/app.ts';
import { balanceOf, expectLedgerConsistent, reconcileRequest, reconcileTestApp, transactionsUnder } from '../support/reconcile.ts';
import { hop, issue, newWallet, plcToJson, type TestWallet } from '../support/wallet.ts';
import { bytesToHex, chainHeadHash } from '../../src/protocol/index.ts';

/**
 * The reconcile tools that repair a settlement row's own booking (release-expired-promises,
 * fix-charge-settlements, fix-failed-pending's redemption and charge phases, and the per-owner
 * POST /api/v1/balance/{owner_id}/reconcile): each test breaks a row on purpose with raw SQL
 * (a status moved without its booking), then checks that a dry run reports exactly that and
 * changes nothing, that a real run books the missing posting under the owning code's own
 * idempotency key and points the row at it, and that a second run finds nothing.
 */
let t: TestApp;
let admin: Record<string, string>;
const device = { 'x-device-id': 'device-reconcile' };
reconcileTestApp((app, headers) => {
  [t, admin] = [app, headers];
});

const reconcile = (path: string, query = '') => reconcileRequest(t, admin, path, query);

async function fund(ownerId: string, amountMinor: bigint): Promise<void> {
  const posting = moneyModel.deposit({ ownerId, currency: 'BRL', amountMinor });
  await postTransaction(t.db.pool, { idempotencyKey: `test-deposit-${randomUUID()}`, txType: posting.txType, entries: posting.entries });
}

async function issued(issuer: TestWallet, amountMinor: bigint): Promise<string> {
  const plc = issue(issuer, { amountMinor });
  const response = await t.app.inject({ method: 'POST', url: '/api/v1/plc/create', headers: device, payload: { plc: plcToJson(plc) } });
  expect(response.statusCode).toBe(200);
  return plc.commitment.tokenId;
}

const balance = (ownerId: string) => balanceOf(t, ownerId);

/** The ledger and the settlement tables, to compare before and after a dry run. */
async function state(): Promise<unknown> {
  const result = await t.db.pool.query<{ state: unknown }>(
    `SELECT json_build_object(
       'balances', (SELECT json_agg(b ORDER BY b.account_id, b.bucket, b.currency) FROM ledger_balances b),
       'credits', (SELECT json_agg(c ORDER BY c.id) FROM ledger_balance_credits c),
       'transactions', (SELECT count(*) FROM ledger_transactions),
       'movements', (SELECT count(*) FROM ledger_movements),
       'plcs', (SELECT json_agg(p ORDER BY p.token_id) FROM plcs p),
       'charges', (SELECT json_agg(c ORDER BY c.id) FROM charges c),
       'redemptions', (SELECT json_agg(r ORDER BY r.id) FROM redemptions r)) AS state`,
  );
  return result.rows[0]?.state;
}

const txByKey = (key: string) => transactionsUnder(t.db.pool, key);

async function newCharge(ownerId: string, amountMinor: bigint): Promise<string> {
  const chargeId = randomUUID();
  await openCharge(t.db.pool, {
    chargeId,
    ownerId,
    amountMinor,
    billingType: 'PIX',
    dueDate: '2030-01-01',
    requestHash: randomBytes(32).toString('hex'),
    payer: { name: 'Payer', cpfCnpj: null, email: null },
    description: null,
    deviceId: null,
  });
  return chargeId;
}

const hex = (bytes: number) => randomBytes(bytes).toString('hex');

describe('release-expired-promises', () => {
  it('releases an EXPIRED PLC whose release was never booked and expires an overdue live one, once', async () => {
    const issuer = newWallet();
    await fund(issuer.pubkey, 1000n);
    const [expiredId, overdueId, liveId] = [await issued(issuer, 100n), await issued(issuer, 200n), await issued(issuer, 50n)];
    // The PLC says EXPIRED but its PROMISED was never released (the release is the booking of that transition).
    await t.db.pool.query(`UPDATE plcs SET status = 'EXPIRED', final_tx_id = gen_random_uuid(), status_changed_at = now() WHERE token_id = $1`, [
      expiredId,
    ]);
    // Past its expiry, and neither its workflow nor the sweep expired it.
    await t.db.pool.query(
      `UPDATE plcs SET created_at = now() - interval '3 days', created_at_ms = (extract(epoch FROM now() - interval '3 days') * 1000)::bigint,
                       expires_at = now() - interval '2 days', expires_at_ms = (extract(epoch FROM now() - interval '2 days') * 1000)::bigint
        WHERE token_id = $1`,
      [overdueId],
    );
    expect(await balance(issuer.pubkey)).toMatchObject({ available: '6.50', promised: '3.50' });

    const before = await state();
    const dry = await reconcile('release-expired-promises', '?dry_run=true');
    expect(dry.statusCode).toBe(200);
    expect(dry.body.counts).toMatchObject({ items: 2, planned: 2, fixed: 0 });
    const planned = [...dry.body.items].sort((a, b) => a.amount?.localeCompare(b.amount ?? '') ?? 0);
    expect(planned).toMatchObject([
      { key: `plc/${expiredId}`, status: 'PLANNED', action: 'COMPENSATING_POSTING', owner_id: issuer.pubkey, bucket: 'AVAILABLE', amount: '1.00', snapshot: '6.50', snapshot_after: '7.50' },
      { key: `plc/${overdueId}`, status: 'PLANNED', bucket: 'AVAILABLE', amount: '2.00', snapshot: '6.50', snapshot_after: '8.50' },
    ]);
    expect(planned[0]?.entries).toEqual([
      { owner_id: issuer.pubkey, bucket: 'PROMISED', currency: 'BRL', amount: '-1.00' },
      { owner_id: issuer.pubkey, bucket: 'AVAILABLE', currency: 'BRL', amount: '1.00' },
    ]);
    expect(await state()).toEqual(before);

    const real = await reconcile('release-expired-promises');
    expect(real.statusCode).toBe(200);
    expect(real.body).toMatchObject({ dry_run: false, status: 'COMPLETED' });
    expect(real.body.counts).toMatchObject({ items: 2, fixed: 2, failed: 0 });
    expect(await balance(issuer.pubkey)).toMatchObject({ available: '9.50', promised: '0.50' });
    for (const tokenId of [expiredId, overdueId]) {
      const booked = await txByKey(`plc:${tokenId}:release`);
      expect(booked).toEqual([{ id: expect.any(String), tx_type: 'PLC_EXPIRED' }]);
      const row = (await t.db.pool.query('SELECT status, final_tx_id FROM plcs WHERE token_id = $1', [tokenId])).rows[0];
      expect(row).toEqual({ status: 'EXPIRED', final_tx_id: booked[0]?.id });
      expect(real.body.items.find((item) => item.key === `plc/${tokenId}`)?.transaction_id).toBe(booked[0]?.id);
    }
    expect((await t.db.pool.query('SELECT status FROM plcs WHERE token_id = $1', [liveId])).rows[0]).toEqual({ status: 'ISSUED' });

    const again = await reconcile('release-expired-promises');
    expect(again.body.counts).toMatchObject({ items: 0 });
    await expectLedgerConsistent(t.db.pool);
  });
});

describe('fix-charge-settlements', () => {
  it('defaults to a dry run, then books the missing CHARGE_SETTLED under the charge key, once', async () => {
    const ownerId = `fcs-${randomUUID().slice(0, 8)}`;
    const chargeId = await newCharge(ownerId, 500n);
    const created = await txByKey(`charge:${chargeId}:created`);
    await t.db.pool.query(
      `UPDATE charges SET status = 'SETTLED', settle_tx_id = gen_random_uuid(), gateway_status = 'CONFIRMED', finished_at = now() WHERE id = $1`,
      [chargeId],
    );
    expect(await balance(ownerId)).toMatchObject({ available: '0.00', pending: '5.00' });

    const before = await state();
    const dry = await reconcile('fix-charge-settlements');
    expect(dry.statusCode).toBe(200);
    expect(dry.body).toMatchObject({ dry_run: true });
    expect(dry.body.items).toEqual([
      {
        key: `charge/${chargeId}`,
        action: 'COMPENSATING_POSTING',
        status: 'PLANNED',
        owner_id: ownerId,
        bucket: 'AVAILABLE',
        currency: 'BRL',
        snapshot: '0.00',
        computed: '0.00',
        amount: '5.00',
        snapshot_after: '5.00',
        transaction_id: null,
        reference_transaction_id: created[0]?.id,
        entries: [
          { owner_id: ownerId, bucket: 'PENDING', currency: 'BRL', amount: '-5.00' },
          { owner_id: 'system:world', bucket: 'AVAILABLE', currency: 'BRL', amount: '-5.00' },
          { owner_id: 'system:world', bucket: 'PENDING', currency: 'BRL', amount: '5.00' },
          { owner_id: ownerId, bucket: 'AVAILABLE', currency: 'BRL', amount: '5.00' },
        ],
        detail: expect.stringContaining('SETTLED without CHARGE_SETTLED'),
        finding: null,
        evidence: null,
      },
    ]);
    expect(await state()).toEqual(before);

    const real = await reconcile('fix-charge-settlements', '?dry_run=false');
    expect(real.statusCode).toBe(200);
    expect(real.body.counts).toMatchObject({ items: 1, fixed: 1 });
    const booked = await txByKey(`charge:${chargeId}:settle`);
    expect(booked).toEqual([{ id: real.body.items[0]?.transaction_id, tx_type: 'CHARGE_SETTLED' }]);
    expect(await balance(ownerId)).toMatchObject({ available: '5.00', pending: '0.00' });
    expect((await t.db.pool.query('SELECT settle_tx_id FROM charges WHERE id = $1', [chargeId])).rows[0]).toEqual({ settle_tx_id: booked[0]?.id });

    expect((await reconcile('fix-charge-settlements', '?dry_run=false')).body.counts).toMatchObject({ items: 0 });
    await expectLedgerConsistent(t.db.pool);
  });
});

describe('fix-failed-pending: redemption and charge tables', () => {
  it('books the REDEEM_FAILED (PLC reverted) and CHARGE_FAILED that FAILED rows lack, once', async () => {
    const [issuer, bearer] = [newWallet(), newWallet()];
    await fund(issuer.pubkey, 1000n);
    const plc = issue(issuer, { amountMinor: 300n });
    expect((await t.app.inject({ method: 'POST', url: '/api/v1/plc/create', headers: device, payload: { plc: plcToJson(plc) } })).statusCode).toBe(200);
    const tokenId = plc.commitment.tokenId;
    // The hop to the bearer registered: the redemption below redeems its head (ledger verify checks it).
    const toBearer = hop(plc, issuer, bearer);
    expect((await t.app.inject({ method: 'POST', url: '/api/v1/transfer/', headers: device, payload: { plc: plcToJson(toBearer) } })).statusCode).toBe(200);
    const headHash = bytesToHex(chainHeadHash(toBearer));
    // A redemption opened (REDEEM_REQUESTED booked) and marked FAILED without its booking.
    const redemptionId = randomUUID();
    const requested = moneyModel.redeemRequested({ issuerId: issuer.pubkey, bearerId: bearer.pubkey, currency: 'BRL', amountMinor: 300n });
    const request = await postTransaction(t.db.pool, {
      idempotencyKey: `redemption:${redemptionId}:request`,
      txType: requested.txType,
      referenceType: 'redemption',
      referenceId: redemptionId,
      entries: requested.entries,
    });
    await t.db.pool.query(
      `INSERT INTO redemptions (id, token_id, bearer_pubkey, bearer_owner_id, issuer_owner_id, amount_minor, currency, rail, destination,
                                destination_type, head_hash, chain_length, status, request_tx_id, fail_tx_id, device_id, failure_reason, finished_at)
       VALUES ($1, $2, $3, $3, $4, 300, 'BRL', 'pix', 'payee@example.com', 'EMAIL', $5, 1, 'FAILED', $6, gen_random_uuid(), 'd', 'test', now())`,
      [redemptionId, tokenId, bearer.pubkey, issuer.pubkey, headHash, request.transactionId],
    );
    await t.db.pool.query('UPDATE plcs SET redemption_id = $2 WHERE token_id = $1', [tokenId, redemptionId]);
    const chargeOwner = `ffp-${randomUUID().slice(0, 8)}`;
    const chargeId = await newCharge(chargeOwner, 250n);
    await t.db.pool.query(`UPDATE charges SET status = 'FAILED', fail_tx_id = gen_random_uuid(), finished_at = now() WHERE id = $1`, [chargeId]);
    expect(await balance(bearer.pubkey)).toMatchObject({ pending: '3.00' });
    expect(await balance(chargeOwner)).toMatchObject({ pending: '2.50' });

    const before = await state();
    const dry = await reconcile('fix-failed-pending');
    expect(dry.body).toMatchObject({ dry_run: true });
    expect(dry.body.items.map((item) => [item.key, item.status, item.owner_id, item.bucket, item.amount, item.snapshot_after]).sort()).toEqual(
      [
        [`charge/${chargeId}`, 'PLANNED', chargeOwner, 'PENDING', '2.50', '0.00'],
        [`redemption/${redemptionId}`, 'PLANNED', bearer.pubkey, 'PENDING', '3.00', '0.00'],
      ].sort(),
    );
    expect(dry.body.items.find((item) => item.key === `redemption/${redemptionId}`)?.reference_transaction_id).toBe(request.transactionId);
    expect(await state()).toEqual(before);

    const real = await reconcile('fix-failed-pending', '?dry_run=false');
    expect(real.body.counts).toMatchObject({ items: 2, fixed: 2 });
    expect(await txByKey(`redemption:${redemptionId}:fail`)).toMatchObject([{ tx_type: 'REDEEM_FAILED' }]);
    expect(await txByKey(`charge:${chargeId}:fail`)).toMatchObject([{ tx_type: 'CHARGE_FAILED' }]);
    expect(await balance(bearer.pubkey)).toMatchObject({ pending: '0.00' });
    expect(await balance(issuer.pubkey)).toMatchObject({ available: '7.00', promised: '3.00' });
    expect(await balance(chargeOwner)).toMatchObject({ pending: '0.00' });
    // The PLC is reverted: redeemable again.
    expect((await t.db.pool.query('SELECT redemption_id FROM plcs WHERE token_id = $1', [tokenId])).rows[0]).toEqual({ redemption_id: null });

    expect((await reconcile('fix-failed-pending', '?dry_run=false')).body.counts).toMatchObject({ items: 0 });
    await expectLedgerConsistent(t.db.pool);
  });
});

describe('POST /api/v1/balance/{owner_id}/reconcile', () => {
  const reconcileBalance = (ownerId: string, headers: Record<string, string> = admin) =>
    t.app.inject({ method: 'POST', url: `/api/v1/balance/${ownerId}/reconcile`, headers });

  it('finds nothing for an owner whose PLCs were issued normally, and answers the balance', async () => {
    const issuer = newWallet();
    await fund(issuer.pubkey, 1000n);
    await issued(issuer, 400n);
    const transactions = (await t.db.pool.query('SELECT count(*)::int AS n FROM ledger_transactions')).rows[0];
    const response = await reconcileBalance(issuer.pubkey);
    expect(response.statusCode).toBe(200);
    expect(response.json()).toEqual({
      owner_id: issuer.pubkey,
      currency: 'BRL',
      available: '6.00',
      held: '0.00',
      pending: '0.00',
      promised: '4.00',
      status: 'ACTIVE',
    });
    expect((await t.db.pool.query('SELECT count(*)::int AS n FROM ledger_transactions')).rows[0]).toEqual(transactions);
    const run = await t.db.pool.query(
      `SELECT status, dry_run, items_found, workflow_id FROM reconciliation_runs WHERE tool = 'plc-issue-bookings' AND params->>'ownerId' = $1`,
      [issuer.pubkey],
    );
    expect(run.rows).toEqual([{ status: 'COMPLETED', dry_run: false, items_found: 0, workflow_id: expect.stringMatching(/^reconcile-plc-issue-bookings-/) }]);
  });

  it('books the PLC_ISSUED of a PLC row written without it, under plc:<token_id>:issue, once', async () => {
    const issuer = newWallet();
    await fund(issuer.pubkey, 1000n);
    const tokenId = randomUUID();
    const commitment = hex(32);
    await t.db.pool.query(
      `INSERT INTO plcs (token_id, version, issuer_pubkey, issuer_owner_id, amount_minor, currency, created_at, created_at_ms, expires_at,
                         expires_at_ms, nonce, commitment_hash, signature, status, chain_length, head_hash, bearer_pubkey, device_id, issue_tx_id)
       VALUES ($1, '2.0', $2, $2, 300, 'BRL', now(), (extract(epoch FROM now()) * 1000)::bigint, now() + interval '1 day',
               (extract(epoch FROM now() + interval '1 day') * 1000)::bigint, $3, $4, $5, 'ISSUED', 0, $4, $2, 'd', gen_random_uuid())`,
      [tokenId, issuer.pubkey, hex(16), commitment, hex(64)],
    );
    expect(await balance(issuer.pubkey)).toMatchObject({ available: '10.00', promised: '0.00' });

    const response = await reconcileBalance(issuer.pubkey);
    expect(response.statusCode).toBe(200);
    expect(response.json()).toMatchObject({ owner_id: issuer.pubkey, available: '7.00', promised: '3.00' });
    const booked = await txByKey(`plc:${tokenId}:issue`);
    expect(booked).toMatchObject([{ tx_type: 'PLC_ISSUED' }]);
    expect((await t.db.pool.query('SELECT issue_tx_id FROM plcs WHERE token_id = $1', [tokenId])).rows[0]).toEqual({ issue_tx_id: booked[0]?.id });
    const items = await t.db.pool.query(
      `SELECT i.item_key, i.status, i.bucket, i.amount_minor, i.transaction_id FROM reconciliation_items i
         JOIN reconciliation_runs r ON r.id = i.run_id WHERE r.tool = 'plc-issue-bookings' AND r.params->>'ownerId' = $1`,
      [issuer.pubkey],
    );
    expect(items.rows).toEqual([{ item_key: `plc/${tokenId}`, status: 'FIXED', bucket: 'PROMISED', amount_minor: 300n, transaction_id: booked[0]?.id }]);

    const again = await reconcileBalance(issuer.pubkey);
    expect(again.json()).toMatchObject({ available: '7.00', promised: '3.00' });
    expect(await txByKey(`plc:${tokenId}:issue`)).toHaveLength(1);
    await expectLedgerConsistent(t.db.pool);
  });

  it('needs an admin token, a valid owner id, and an owner the ledger or the PLCs know', async () => {
    expect((await reconcileBalance('someone', {})).statusCode).toBe(401);
    expect((await reconcileBalance('bad%20owner!')).statusCode).toBe(422);
    const missing = await reconcileBalance('nobody-at-all');
    expect(missing.statusCode).toBe(404);
    expect(missing.json()).toMatchObject({ code: 'ACCOUNT_NOT_FOUND' });
    expect((await t.app.inject({ method: 'POST', url: '/api/v1/balance/someone/reconcile?currency=XYZ', headers: admin })).statusCode).toBe(422);
  });

  it('is not offered as an admin reconcile route', async () => {
    const response = await t.app.inject({ method: 'POST', url: '/api/v1/admin/reconcile/plc-issue-bookings/someone', headers: admin });
    expect(response.statusCode).toBe(404);
  });
});

describe('new admin reconcile routes: access and parameters', () => {
  it.each([
    'release-expired-promises',
    'fix-charge-settlements',
    'pending-payments',
    'pending-deposits',
    'pending-transfers',
    'cancel-stale-charges',
    'cancel-all-pending-charges',
  ])('%s answers 401 without a token and 422 for a dry_run that is not a strict boolean', async (path) => {
    expect((await t.app.inject({ method: 'POST', url: `/api/v1/admin/reconcile/${path}?dry_run=true` })).statusCode).toBe(401);
    const bad = await reconcile(path, '?dry_run=maybe');
    expect(bad.statusCode).toBe(422);
    expect((bad.body as unknown as { detail: { loc: string[] }[] }).detail[0]?.loc).toEqual(['query', 'dry_run']);
  });
});
