import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Plc } from '../../src/protocol/index.ts';
import { replayAndRecord } from '../support/histories.ts';
import { balanceOf, expectLedgerConsistent, reconcileReport, transactionsUnder, transferablePlc } from '../support/reconcile.ts';
import { redeemBody, startSettlementHarness, type SettlementHarness } from '../support/settlement.ts';
import { eventually } from '../support/temporal-cli.ts';
import type { TestWallet } from '../support/wallet.ts';

/**
 * The gateway reconcile tools end to end: API -> reconciliation workflow -> the redemption and
 * charge workflows -> the gateway simulator, with real Temporal and PostgreSQL. Webhooks are
 * dropped (simulator fault) or their workflows ended on purpose, so that only a tool can bring
 * the rows in line with the gateway. Redemptions wait 10 minutes for a webhook before asking the
 * gateway themselves, and charges until their due date: within a test, nothing but the tool acts.
 * The tools look at every pending row, so each test finishes what it starts (or hands it to the next).
 */
let h: SettlementHarness;
const device = { 'x-device-id': 'device-reconcile' };
const pixKey = '123e4567-e89b-42d3-a456-556642440000';

beforeAll(async () => {
  // Payouts wait in BANK_PROCESSING until a test completes or fails them on the simulator.
  h = await startSettlementHarness({ REDEMPTION_WEBHOOK_WAIT_MS: '600000' }, { autoSettle: false });
});
afterEach(async () => {
  await fetch(`${h.simulator.url}/sim/faults`, { method: 'DELETE' });
});
afterAll(async () => {
  await h?.close();
});

const reconcile = (tool: string, query = '') => reconcileReport(h.t, h.admin, tool, query);

async function sim(path: string, body?: object): Promise<void> {
  const response = await fetch(`${h.simulator.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body ?? {}),
  });
  expect(response.status, path).toBe(200);
}

const dropWebhooks = () => sim('/sim/faults', { dropWebhookRate: 1 });

const transferable = (amountMinor: bigint) => transferablePlc(h.t, amountMinor, { deposit: '20.00', device });

async function redeem(plc: Plc, bearer: TestWallet): Promise<{ redemptionId: string; workflowId: string }> {
  const response = await h.t.app.inject({ method: 'POST', url: '/api/v1/redeem/', headers: device, payload: redeemBody(plc, bearer, pixKey) });
  expect(response.statusCode).toBe(200);
  const body = response.json() as { redemption_id: string; workflow_id: string };
  return { redemptionId: body.redemption_id, workflowId: body.workflow_id };
}

const transfersOf = (redemptionId: string) =>
  h.simulator.state.snapshot(1000).transfers.filter((transfer) => transfer.externalReference === redemptionId);
const paymentOf = (chargeId: string) => h.simulator.state.snapshot(1000).payments.find((payment) => payment.externalReference === chargeId);

/** Waits until the redemption's payout is validated and in the bank, and the workflow has recorded it. */
async function payoutInBank(redemptionId: string, recorded = true): Promise<string> {
  await eventually(async () => (transfersOf(redemptionId)[0]?.status === 'BANK_PROCESSING' ? true : undefined));
  if (recorded) await eventually(async () => ((await redemptionRow(redemptionId)).gateway_transfer_id !== null ? true : undefined));
  return transfersOf(redemptionId)[0]?.id as string;
}

async function redemptionRow(redemptionId: string) {
  const result = await h.t.db.pool.query(
    'SELECT status, gateway_transfer_id, settle_tx_id, fail_tx_id, request_tx_id FROM redemptions WHERE id = $1',
    [redemptionId],
  );
  return result.rows[0] as { status: string; gateway_transfer_id: string | null; settle_tx_id: string | null; fail_tx_id: string | null; request_tx_id: string };
}

async function chargeRow(chargeId: string) {
  const result = await h.t.db.pool.query('SELECT status, gateway_status, settle_tx_id, fail_tx_id, created_tx_id FROM charges WHERE id = $1', [chargeId]);
  return result.rows[0] as { status: string; gateway_status: string | null; settle_tx_id: string | null; fail_tx_id: string | null; created_tx_id: string };
}

async function newCharge(ownerId: string, amount: string): Promise<{ chargeId: string; paymentId: string; workflowId: string }> {
  const response = await h.t.app.inject({
    method: 'POST',
    url: '/api/v1/redemption/pix',
    headers: { 'idempotency-key': randomUUID(), ...device },
    payload: { owner_id: ownerId, amount, customer: { name: 'Maria Silva' } },
  });
  expect(response.statusCode, response.body).toBe(200);
  const body = response.json() as { charge_id: string; payment_id: string; workflow_id: string };
  return { chargeId: body.charge_id, paymentId: body.payment_id, workflowId: body.workflow_id };
}

const balance = (ownerId: string) => balanceOf(h.t, ownerId);

const txCount = async (key: string) => (await transactionsUnder(h.t.db.pool, key)).length;

/** The ledger, the settlement tables and the gateway's resources, to compare before and after a dry run. */
async function everything(): Promise<unknown> {
  const result = await h.t.db.pool.query<{ state: unknown }>(
    `SELECT json_build_object(
       'balances', (SELECT json_agg(b ORDER BY b.account_id, b.bucket, b.currency) FROM ledger_balances b),
       'credits', (SELECT json_agg(c ORDER BY c.id) FROM ledger_balance_credits c),
       'transactions', (SELECT count(*) FROM ledger_transactions),
       'plcs', (SELECT json_agg(json_build_object('t', p.token_id, 's', p.status, 'r', p.redemption_id) ORDER BY p.token_id) FROM plcs p),
       'charges', (SELECT json_agg(json_build_object('id', c.id, 's', c.status) ORDER BY c.id) FROM charges c),
       'redemptions', (SELECT json_agg(json_build_object('id', r.id, 's', r.status) ORDER BY r.id) FROM redemptions r)) AS state`,
  );
  const gateway = h.simulator.state.snapshot(1000);
  return {
    db: result.rows[0]?.state,
    payments: gateway.payments.map((payment) => [payment.id, payment.status]).sort(),
    transfers: gateway.transfers.map((transfer) => [transfer.id, transfer.status]).sort(),
  };
}

const record = (workflowId: string, name: string) => replayAndRecord(h.t.temporal, workflowId, name);

describe('pending-transfers', () => {
  it('settles a redemption whose TRANSFER_DONE webhook was dropped, by signalling its workflow (dry run first)', async () => {
    await dropWebhooks();
    const { plc, bearer } = await transferable(700n);
    const { redemptionId, workflowId } = await redeem(plc, bearer);
    const transferId = await payoutInBank(redemptionId);
    await sim(`/sim/transfers/${transferId}/complete`);
    expect(transfersOf(redemptionId)[0]?.status).toBe('DONE');
    expect((await redemptionRow(redemptionId)).status).toBe('PENDING_PAYMENT');

    const before = await everything();
    const dry = await reconcile('pending-transfers', '?dry_run=true');
    expect(dry).toMatchObject({ tool: 'pending-transfers', dry_run: true, workflow_id: null });
    const row = await redemptionRow(redemptionId);
    expect(dry.items).toEqual([
      {
        key: `redemption/${redemptionId}`,
        action: 'COMPENSATING_POSTING',
        status: 'PLANNED',
        owner_id: bearer.pubkey,
        bucket: 'PENDING',
        currency: 'BRL',
        snapshot: '7.00',
        computed: '7.00',
        amount: '7.00',
        snapshot_after: '0.00',
        transaction_id: null,
        reference_transaction_id: row.request_tx_id,
        entries: [
          { owner_id: bearer.pubkey, bucket: 'PENDING', currency: 'BRL', amount: '-7.00' },
          { owner_id: 'system:world', bucket: 'AVAILABLE', currency: 'BRL', amount: '7.00' },
        ],
        detail: `gateway transfer ${transferId} DONE; ${workflowId} runs: would signal transferEvent DONE; it would book the settlement`,
        finding: null,
        evidence: null,
      },
    ]);
    expect(await everything()).toEqual(before);

    // dry_run defaults to false for this tool.
    const real = await reconcile('pending-transfers');
    expect(real).toMatchObject({ dry_run: false, status: 'COMPLETED', workflow_id: `reconcile-pending-transfers-${real.run_id}` });
    const settled = await redemptionRow(redemptionId);
    expect(settled.status).toBe('SETTLED');
    expect(real.items).toMatchObject([
      {
        key: `redemption/${redemptionId}`,
        status: 'FIXED',
        transaction_id: settled.settle_tx_id,
        snapshot: '7.00',
        snapshot_after: '0.00',
        detail: expect.stringContaining(`${workflowId} was running: signalled transferEvent DONE`),
        finding: null,
        evidence: null,
      },
    ]);
    expect(await h.t.temporal.workflow.getHandle(workflowId).result()).toMatchObject({ status: 'SETTLED' });
    expect(transfersOf(redemptionId)).toHaveLength(1);
    expect(await txCount(`redemption:${redemptionId}:settle`)).toBe(1);

    expect((await reconcile('pending-transfers')).counts).toMatchObject({ items: 0 });
    await expectLedgerConsistent(h.t.db.pool);
    await record(real.workflow_id as string, 'reconcile-pending-transfers-signalled');
  });

  it("retries a crashed redemption (its workflow terminated mid-payout) with resume: one payout, SETTLED", async () => {
    // From the payout's creation on, every gateway call does its work and then answers 500: the
    // payout exists, the workflow never hears of it (its lookups by reference are lost too).
    const gateway = h.t.app.deps.gateway;
    const createTransfer = gateway.createTransfer.bind(gateway);
    gateway.createTransfer = async (input, options) => {
      await sim('/sim/faults', { apiLostResponseRate: 1 });
      return createTransfer(input, options);
    };
    const { plc, bearer } = await transferable(450n);
    let redemptionId: string;
    let workflowId: string;
    let transferId: string;
    try {
      ({ redemptionId, workflowId } = await redeem(plc, bearer));
      transferId = await payoutInBank(redemptionId, false);
    } finally {
      gateway.createTransfer = createTransfer;
    }
    await h.t.temporal.workflow.getHandle(workflowId).terminate('test: the redemption crashed mid-payout');
    await fetch(`${h.simulator.url}/sim/faults`, { method: 'DELETE' });
    await sim(`/sim/transfers/${transferId}/complete`);
    // The workflow never heard of its payout; the gateway's validation claimed it for the redemption
    // (docs/settlement.md, "One payout per redemption"), so the row names it all the same.
    expect(await redemptionRow(redemptionId)).toMatchObject({ status: 'PENDING_PAYMENT', gateway_transfer_id: transferId });

    const dry = await reconcile('pending-transfers', '?dry_run=true');
    expect(dry.items).toMatchObject([
      {
        key: `redemption/${redemptionId}`,
        status: 'PLANNED',
        // The payout is known (claimed by the validation) and DONE: the plan books the settlement.
        detail: expect.stringContaining(`gateway transfer ${transferId} DONE; ${workflowId} has ended without a final status`),
        finding: null,
        evidence: null,
      },
    ]);

    const real = await reconcile('pending-transfers');
    const settled = await redemptionRow(redemptionId);
    expect(settled.status).toBe('SETTLED');
    expect(real.items).toMatchObject([
      {
        key: `redemption/${redemptionId}`,
        status: 'FIXED',
        transaction_id: settled.settle_tx_id,
        detail: expect.any(String),
        finding: null,
        evidence: null,
      },
    ]);
    // The resumed run found the payout the crashed one had made: exactly one transfer, paid once.
    expect(transfersOf(redemptionId)).toHaveLength(1);
    expect(settled.gateway_transfer_id).toBe(transfersOf(redemptionId)[0]?.id);
    expect(await txCount(`redemption:${redemptionId}:settle`)).toBe(1);
    expect(await h.t.temporal.workflow.getHandle(workflowId).result()).toMatchObject({ status: 'SETTLED' });
    const status = await h.t.app.inject({ method: 'GET', url: `/api/v1/plc/${plc.commitment.tokenId}/status` });
    expect(status.json()).toMatchObject({ status: 'REDEEMED' });
    expect(await balance(bearer.pubkey)).toMatchObject({ pending: '0.00' });

    expect((await reconcile('pending-transfers')).counts).toMatchObject({ items: 0 });
    await expectLedgerConsistent(h.t.db.pool);
    await record(real.workflow_id as string, 'reconcile-pending-transfers-resumed');
  });
});

describe('pending-payments', () => {
  it("is a dry run by default, then applies the spec's rows: a FAILED transfer fails the redemption (PLC reverted), paid and OVERDUE charges settle and fail", async () => {
    await dropWebhooks();
    const { plc, bearer, issuer } = await transferable(300n);
    const { redemptionId } = await redeem(plc, bearer);
    const transferId = await payoutInBank(redemptionId);
    await sim(`/sim/transfers/${transferId}/fail`, { reason: 'destination account closed' });
    expect(transfersOf(redemptionId)[0]?.status).toBe('FAILED');
    const owner = `pp-${randomUUID().slice(0, 8)}`;
    const paid = await newCharge(owner, '5.00');
    const overdue = await newCharge(owner, '2.00');
    await sim(`/sim/payments/${paid.paymentId}/pay`);
    await sim(`/sim/payments/${overdue.paymentId}/overdue`);
    expect(paymentOf(paid.chargeId)?.status).toBe('CONFIRMED');
    expect(await balance(owner)).toMatchObject({ available: '0.00', pending: '7.00' });

    const before = await everything();
    const dry = await reconcile('pending-payments');
    expect(dry).toMatchObject({ dry_run: true });
    expect(dry.items.map((item) => [item.key, item.status, item.entries?.map((entry) => `${entry.bucket}:${entry.amount}`).join(' ')]).sort()).toEqual(
      [
        [`charge/${paid.chargeId}`, 'PLANNED', 'PENDING:-5.00 AVAILABLE:-5.00 PENDING:5.00 AVAILABLE:5.00'],
        [`charge/${overdue.chargeId}`, 'PLANNED', 'PENDING:-2.00 PENDING:2.00'],
        [`redemption/${redemptionId}`, 'PLANNED', 'PENDING:-3.00 PROMISED:3.00'],
      ].sort(),
    );
    expect(await everything()).toEqual(before);

    const real = await reconcile('pending-payments', '?dry_run=false');
    expect(real.counts).toMatchObject({ items: 3, fixed: 3 });
    const failed = await redemptionRow(redemptionId);
    expect(failed.status).toBe('FAILED');
    expect(real.items.find((item) => item.key === `redemption/${redemptionId}`)).toMatchObject({ transaction_id: failed.fail_tx_id });
    const status = await h.t.app.inject({ method: 'GET', url: `/api/v1/plc/${plc.commitment.tokenId}/status` });
    expect(status.json()).toMatchObject({ status: 'TRANSFERRED', redemption_in_flight: false });
    expect(await balance(issuer.pubkey)).toMatchObject({ promised: '3.00' });
    expect(await chargeRow(paid.chargeId)).toMatchObject({ status: 'SETTLED' });
    expect(await chargeRow(overdue.chargeId)).toMatchObject({ status: 'FAILED' });
    // The overdue charge's workflow cancelled it at the gateway before failing it: nobody can pay it now.
    expect(paymentOf(overdue.chargeId)?.status).toBe('DELETED');
    expect(await balance(owner)).toMatchObject({ available: '5.00', pending: '0.00' });

    expect((await reconcile('pending-payments', '?dry_run=false')).counts).toMatchObject({ items: 0 });
    await expectLedgerConsistent(h.t.db.pool);
  });
});

let stalled: { chargeId: string; owner: string } | undefined;

describe('pending-deposits', () => {
  it("books a paid charge whose workflow has ended through the charge's own keys, and reports an unpaid one as SKIPPED", async () => {
    const owner = `pd-${randomUUID().slice(0, 8)}`;
    const paid = await newCharge(owner, '4.00');
    const unpaid = await newCharge(owner, '1.50');
    await h.t.temporal.workflow.getHandle(paid.workflowId).terminate('test: the charge workflow crashed');
    await h.t.temporal.workflow.getHandle(unpaid.workflowId).terminate('test: the charge workflow crashed');
    await sim(`/sim/payments/${paid.paymentId}/pay`);

    const dry = await reconcile('pending-deposits', '?dry_run=true');
    expect(dry.items.map((item) => [item.key, item.status]).sort()).toEqual(
      [
        [`charge/${paid.chargeId}`, 'PLANNED'],
        [`charge/${unpaid.chargeId}`, 'SKIPPED'],
      ].sort(),
    );
    expect(dry.items.find((item) => item.status === 'PLANNED')?.detail).toContain(`would book charge:${paid.chargeId}:settle`);

    const real = await reconcile('pending-deposits');
    expect(real.counts).toMatchObject({ items: 2, fixed: 1, skipped: 1 });
    const settled = await chargeRow(paid.chargeId);
    expect(settled.status).toBe('SETTLED');
    expect(real.items.find((item) => item.key === `charge/${paid.chargeId}`)).toMatchObject({
      status: 'FIXED',
      transaction_id: settled.settle_tx_id,
      reference_transaction_id: settled.created_tx_id,
      snapshot: '5.50',
      snapshot_after: '1.50',
    });
    expect(await txCount(`charge:${paid.chargeId}:settle`)).toBe(1);
    expect(await balance(owner)).toMatchObject({ available: '4.00', pending: '1.50' });

    // The unpaid one waits for a later run (or cancel-stale-charges); nothing else is found.
    const again = await reconcile('pending-deposits');
    expect(again.items.map((item) => [item.key, item.status])).toEqual([[`charge/${unpaid.chargeId}`, 'SKIPPED']]);
    expect(await txCount(`charge:${paid.chargeId}:settle`)).toBe(1);
    stalled = { chargeId: unpaid.chargeId, owner };
    await expectLedgerConsistent(h.t.db.pool);
  });
});

let fresh: { chargeId: string; owner: string } | undefined;

describe('cancel-stale-charges', () => {
  it('cancels a charge past its due date at the gateway and its workflow fails it; a charge not yet due is left alone', async () => {
    const owner = `cs-${randomUUID().slice(0, 8)}`;
    const stale = await newCharge(owner, '3.00');
    const notDue = await newCharge(owner, '1.00');
    await h.t.db.pool.query(`UPDATE charges SET due_date = current_date - 5 WHERE id = $1`, [stale.chargeId]);

    const before = await everything();
    const dry = await reconcile('cancel-stale-charges', '?dry_run=true');
    expect(dry.items).toMatchObject([
      { key: `charge/${stale.chargeId}`, status: 'PLANNED', detail: expect.stringContaining('would be cancelled at the gateway') },
    ]);
    expect(await everything()).toEqual(before);

    const real = await reconcile('cancel-stale-charges');
    const failed = await chargeRow(stale.chargeId);
    expect(failed.status).toBe('FAILED');
    expect(real.items).toMatchObject([
      {
        key: `charge/${stale.chargeId}`,
        status: 'FIXED',
        transaction_id: failed.fail_tx_id,
        detail: expect.stringContaining('cancelled at the gateway by this run'),
        finding: null,
        evidence: null,
      },
    ]);
    expect(paymentOf(stale.chargeId)?.status).toBe('DELETED');
    expect(paymentOf(notDue.chargeId)?.status).toBe('PENDING');
    expect(await balance(owner)).toMatchObject({ pending: '1.00' });
    expect((await reconcile('cancel-stale-charges')).counts).toMatchObject({ items: 0 });
    fresh = { chargeId: notDue.chargeId, owner };
  });
});

describe('cancel-all-pending-charges', () => {
  it('is a dry run unless ?dry_run=false, then cancels every PENDING charge and fails it, through its workflow or its own keys', async () => {
    expect(stalled).toBeDefined();
    expect(fresh).toBeDefined();
    const [ended, running] = [stalled as { chargeId: string; owner: string }, fresh as { chargeId: string; owner: string }];

    const before = await everything();
    const dry = await reconcile('cancel-all-pending-charges');
    expect(dry).toMatchObject({ dry_run: true });
    expect(dry.items.map((item) => [item.key, item.status]).sort()).toEqual(
      [
        [`charge/${ended.chargeId}`, 'PLANNED'],
        [`charge/${running.chargeId}`, 'PLANNED'],
      ].sort(),
    );
    expect(await everything()).toEqual(before);

    const real = await reconcile('cancel-all-pending-charges', '?dry_run=false');
    expect(real.counts).toMatchObject({ items: 2, fixed: 2 });
    for (const { chargeId } of [ended, running]) {
      expect(await chargeRow(chargeId)).toMatchObject({ status: 'FAILED' });
      expect(paymentOf(chargeId)?.status).toBe('DELETED');
      expect(await txCount(`charge:${chargeId}:fail`)).toBe(1);
    }
    expect(real.items.find((item) => item.key === `charge/${ended.chargeId}`)?.detail).toContain(`booked charge:${ended.chargeId}:fail`);
    expect(real.items.find((item) => item.key === `charge/${running.chargeId}`)?.detail).toContain('signalled paymentEvent DELETED');
    expect(await balance(ended.owner)).toMatchObject({ pending: '0.00' });
    expect(await balance(running.owner)).toMatchObject({ pending: '0.00' });

    expect((await reconcile('cancel-all-pending-charges', '?dry_run=false')).counts).toMatchObject({ items: 0 });
    await expectLedgerConsistent(h.t.db.pool);
  });
});

describe('a gateway that does not know a transfer', () => {
  it('is reported FAILED for a person and nothing is handed over; once the row is corrected, the next run settles it', async () => {
    await dropWebhooks();
    const { plc, bearer } = await transferable(250n);
    const { redemptionId } = await redeem(plc, bearer);
    const transferId = await payoutInBank(redemptionId);
    await sim(`/sim/transfers/${transferId}/complete`);
    const unknown = randomUUID();
    await h.t.db.pool.query('UPDATE redemptions SET gateway_transfer_id = $2 WHERE id = $1', [redemptionId, unknown]);

    const refused = await reconcile('pending-transfers');
    expect(refused.items).toMatchObject([
      {
        key: `redemption/${redemptionId}`,
        status: 'FAILED',
        transaction_id: null,
        detail: expect.stringContaining(`the gateway refuses to answer for transfer ${unknown}`),
        finding: null,
        evidence: null,
      },
    ]);
    expect((await redemptionRow(redemptionId)).status).toBe('PENDING_PAYMENT');

    await h.t.db.pool.query('UPDATE redemptions SET gateway_transfer_id = $2 WHERE id = $1', [redemptionId, transferId]);
    const fixed = await reconcile('pending-transfers');
    expect(fixed.items).toMatchObject([{ key: `redemption/${redemptionId}`, status: 'FIXED' }]);
    expect((await redemptionRow(redemptionId)).status).toBe('SETTLED');
    expect(transfersOf(redemptionId)).toHaveLength(1);
    await expectLedgerConsistent(h.t.db.pool);
  });
});
