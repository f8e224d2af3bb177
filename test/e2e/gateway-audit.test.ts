import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ScheduleNotFoundError } from '@temporalio/client';
import { finishCharge } from '../../db/charges.ts';
import { ensureSchedule, type ScheduleDefinition } from '../../infra/schedules.ts';
import { gatewayAuditSchedule } from '../../worker/schedules.ts';
import { finishRedemption } from '../../db/redemptions.ts';
import type { TransferWire } from '../../gateway/wire.ts';
import type { Plc } from '../../src/protocol/index.ts';
import { replayAndRecord } from '../support/histories.ts';
import { expectLedgerConsistent, finishedReport, transferablePlc, type Report } from '../support/reconcile.ts';
import { bankSlipLine, redeemBody, startSettlementHarness, type SettlementHarness } from '../support/settlement.ts';
import { eventually } from '../support/temporal-cli.ts';
import type { TestWallet } from '../support/wallet.ts';

/**
 * The gateway audit (issue 17, item 2): every kind of mismatch between the gateway and our books
 * is planted through the simulator (and, where our side must be wrong, through the same database
 * functions the workflows use, with the workflow terminated first), then found by the audit, with
 * its evidence: reported by a dry run, repaired (the safe one) or raised for a person by a real run,
 * and a second real run repairs nothing more. Rows that agree with the gateway are never reported.
 *
 * The simulator does not settle payouts by itself here (`autoSettle: false`), so the tests decide
 * what the gateway holds.
 */
let h: SettlementHarness;
const device = { 'x-device-id': 'device-gateway-audit' };
const pixKey = 'payee@example.com';

beforeAll(async () => {
  h = await startSettlementHarness({ REDEMPTION_WEBHOOK_WAIT_MS: '3600000', CHARGE_WAIT_OVERRIDE_MS: '3600000' }, { autoSettle: false });
});
afterAll(async () => {
  await h?.close();
});

const record = (workflowId: string, name: string) => replayAndRecord(h.t.temporal, workflowId, name);

/** The audit's report; a real run that outlasts the request is awaited and read as it stored it. */
const audit = (dryRun: boolean): Promise<Report> => finishedReport(h.t, h.admin, 'gateway-audit', dryRun ? '' : '?dry_run=false');

const transferable = (amountMinor: bigint) => transferablePlc(h.t, amountMinor, { deposit: '50.00', device });

function payoutsOf(tokenId: string): TransferWire[] {
  return h.simulator.state.snapshot(1000).transfers.filter((transfer) => transfer.description === `PLC ${tokenId}`);
}

async function redeemToBank(plc: Plc, bearer: TestWallet) {
  const before = new Set(payoutsOf(plc.commitment.tokenId).map((t) => t.id));
  const response = await h.t.app.inject({ method: 'POST', url: '/api/v1/redeem/', headers: device, payload: redeemBody(plc, bearer, pixKey) });
  expect(response.statusCode, response.body).toBe(200);
  const opened = response.json() as { redemption_id: string; workflow_id: string };
  const transfer = await eventually(
    async () => payoutsOf(plc.commitment.tokenId).find((t) => !before.has(t.id) && t.status === 'BANK_PROCESSING'),
    15_000,
  );
  return { opened, transfer };
}

async function terminate(workflowId: string): Promise<void> {
  await h.t.temporal.workflow.getHandle(workflowId).terminate('the test plants a mismatch');
}

async function newCharge(amount: string): Promise<{ charge_id: string; payment_id: string; workflow_id: string }> {
  const response = await h.t.app.inject({
    method: 'POST',
    url: '/api/v1/redemption/pix',
    headers: { 'idempotency-key': randomUUID(), 'x-device-id': 'device-gateway-audit' },
    payload: { owner_id: `owner-${randomUUID().slice(0, 8)}`, amount, customer: { name: 'Maria Silva' } },
  });
  expect(response.statusCode, response.body).toBe(200);
  return response.json();
}

/** A charge made at the gateway by someone else (or by a second request with our reference). */
function foreignPayment(valueMinor: bigint, externalReference: string | null) {
  const state = h.simulator.state;
  const customer = state.createCustomer({ name: 'Someone Else', cpfCnpj: null, email: null, externalReference: null }, null, randomUUID()).resource;
  return state.createPayment(
    { customerId: customer.id, billingType: 'PIX', valueMinor, dueDate: new Date().toISOString().slice(0, 10), description: null, externalReference },
    null,
    randomUUID(),
  ).resource;
}

/** A payout made at the gateway outside the service, paid before the gateway's validation asks us. */
function foreignTransfer(valueMinor: bigint, externalReference: string | null): TransferWire {
  const state = h.simulator.state;
  const made = state.createTransfer({ valueMinor, pixAddressKey: pixKey, pixAddressKeyType: 'EMAIL', description: 'made outside the service', externalReference }, null, randomUUID()).resource;
  return state.completeTransfer(made.id);
}

/** A bill payment made at the gateway outside the service (a boleto payout), paid. */
function foreignBillPayment(valueMinor: bigint, externalReference: string | null) {
  const state = h.simulator.state;
  const line = bankSlipLine(0n, '7777766666555554444433333');
  const made = state.createBillPayment({ valueMinor, identificationField: line, description: 'made outside the service', externalReference }, null, randomUUID()).resource;
  return state.completeBillPayment(made.id);
}

describe('the gateway audit', () => {
  const expected = new Map<string, string>();
  let repaired: { redemptionId: string; tokenId: string; issuer: TestWallet };

  it('plants every kind of mismatch', async () => {
    // A FAILED redemption whose transfer the gateway paid out, nothing else since: repairable.
    {
      const { plc, bearer, issuer } = await transferable(700n);
      const { opened, transfer } = await redeemToBank(plc, bearer);
      await terminate(opened.workflow_id);
      await finishRedemption(h.t.db.pool, opened.redemption_id, { status: 'FAILED', gatewayStatus: 'FAILED', reason: 'a forged TRANSFER_FAILED' });
      h.simulator.state.completeTransfer(transfer.id);
      expected.set(`FAILED_REDEMPTION_PAID/${opened.redemption_id}`, 'FIXED');
      repaired = { redemptionId: opened.redemption_id, tokenId: plc.commitment.tokenId, issuer };
    }
    // The exploit: the failed redemption's PLC was redeemed again and paid a second time.
    {
      const { plc, bearer } = await transferable(650n);
      const first = await redeemToBank(plc, bearer);
      await terminate(first.opened.workflow_id);
      await finishRedemption(h.t.db.pool, first.opened.redemption_id, { status: 'FAILED', gatewayStatus: 'FAILED', reason: 'a forged TRANSFER_FAILED' });
      const second = await redeemToBank(plc, bearer);
      h.simulator.state.completeTransfer(second.transfer.id);
      expect(await h.t.temporal.workflow.getHandle(second.opened.workflow_id).result()).toMatchObject({ status: 'SETTLED' });
      h.simulator.state.completeTransfer(first.transfer.id);
      expected.set(`FAILED_REDEMPTION_PAID/${first.opened.redemption_id}`, 'SKIPPED');
      expected.set(`PLC_PAID_TWICE/${plc.commitment.tokenId}`, 'SKIPPED');
    }
    // A SETTLED redemption whose transfer the bank refused.
    {
      const { plc, bearer } = await transferable(600n);
      const { opened, transfer } = await redeemToBank(plc, bearer);
      await terminate(opened.workflow_id);
      await finishRedemption(h.t.db.pool, opened.redemption_id, { status: 'SETTLED', gatewayStatus: 'DONE' });
      h.simulator.state.failTransfer(transfer.id, 'Pix key not found at the receiving institution');
      expected.set(`SETTLED_REDEMPTION_UNPAID/${opened.redemption_id}`, 'SKIPPED');
    }
    // A paid transfer no redemption accounts for.
    {
      const stray = foreignTransfer(1234n, `someone-else-${randomUUID()}`);
      expected.set(`UNKNOWN_PAYOUT/${stray.id}`, 'SKIPPED');
    }
    // A paid bill payment (a boleto payout) no redemption accounts for: the audit lists bill payments as payouts.
    {
      const stray = foreignBillPayment(4321n, `someone-else-${randomUUID()}`);
      expected.set(`UNKNOWN_PAYOUT/${stray.id}`, 'SKIPPED');
    }
    // A transfer naming a redemption in flight, for another amount.
    {
      const { plc, bearer } = await transferable(550n);
      const { opened } = await redeemToBank(plc, bearer);
      const other = foreignTransfer(99_999n, opened.redemption_id);
      expected.set(`PAYOUT_AMOUNT_DIFFERS/${other.id}`, 'SKIPPED');
    }
    // A FAILED charge the payer paid.
    {
      const charge = await newCharge('12.00');
      await terminate(charge.workflow_id);
      await finishCharge(h.t.db.pool, charge.charge_id, { status: 'FAILED', gatewayStatus: 'OVERDUE', reason: 'a forged PAYMENT_OVERDUE' });
      h.simulator.state.payPayment(charge.payment_id);
      expected.set(`FAILED_CHARGE_PAID/${charge.charge_id}`, 'SKIPPED');
    }
    // A SETTLED charge nobody paid.
    {
      const charge = await newCharge('13.00');
      await terminate(charge.workflow_id);
      await finishCharge(h.t.db.pool, charge.charge_id, { status: 'SETTLED', gatewayStatus: 'RECEIVED' });
      expected.set(`SETTLED_CHARGE_UNPAID/${charge.charge_id}`, 'SKIPPED');
    }
    // A SETTLED charge refunded at the gateway afterwards.
    {
      const charge = await newCharge('14.00');
      h.simulator.state.payPayment(charge.payment_id);
      await eventually(async () => {
        const row = await h.t.db.pool.query<{ status: string }>('SELECT status FROM charges WHERE id = $1', [charge.charge_id]);
        return row.rows[0]?.status === 'SETTLED' ? true : undefined;
      }, 15_000);
      h.simulator.state.refundPayment(charge.payment_id);
      expected.set(`SETTLED_CHARGE_REFUNDED/${charge.charge_id}`, 'SKIPPED');
    }
    // A charge paid twice: its own payment and a second one under its reference.
    {
      const charge = await newCharge('15.00');
      await terminate(charge.workflow_id);
      h.simulator.state.payPayment(charge.payment_id);
      const second = foreignPayment(1500n, charge.charge_id);
      h.simulator.state.payPayment(second.id);
      expected.set(`CHARGE_PAID_TWICE/${charge.charge_id}`, 'SKIPPED');
    }
    // A paid payment no charge accounts for.
    {
      const stray = foreignPayment(777n, null);
      h.simulator.state.payPayment(stray.id);
      expected.set(`UNKNOWN_PAYMENT/${stray.id}`, 'SKIPPED');
    }
    // A payment naming a charge, for another amount.
    {
      const charge = await newCharge('16.00');
      const other = foreignPayment(4200n, charge.charge_id);
      expected.set(`CHARGE_AMOUNT_DIFFERS/${other.id}`, 'SKIPPED');
    }
    // And rows that agree with the gateway: a settled payout and a settled charge.
    {
      const { plc, bearer } = await transferable(500n);
      const { opened, transfer } = await redeemToBank(plc, bearer);
      h.simulator.state.completeTransfer(transfer.id);
      expect(await h.t.temporal.workflow.getHandle(opened.workflow_id).result()).toMatchObject({ status: 'SETTLED' });
      const charge = await newCharge('17.00');
      h.simulator.state.payPayment(charge.payment_id);
      await eventually(async () => {
        const row = await h.t.db.pool.query<{ status: string }>('SELECT status FROM charges WHERE id = $1', [charge.charge_id]);
        return row.rows[0]?.status === 'SETTLED' ? true : undefined;
      }, 15_000);
    }
  });

  it('a dry run (the default) finds each one with its evidence and changes nothing', async () => {
    const report = await audit(true);
    expect(report.dry_run).toBe(true);
    const found = new Map(report.items.map((item) => [item.key, item]));
    expect([...found.keys()].sort()).toEqual([...expected.keys()].sort());
    for (const item of report.items) {
      expect(item).toMatchObject({ action: 'GATEWAY_FINDING', status: 'PLANNED', finding: item.key.split('/')[0] });
      expect(item.evidence).toMatchObject({ run_id: report.run_id });
    }
    expect(found.get(`FAILED_REDEMPTION_PAID/${repaired.redemptionId}`)?.detail).toMatch(/would repair/);
    expect([...found.values()].filter((item) => /would repair/.test(item.detail ?? ''))).toHaveLength(1);
    const redemption = await h.t.db.pool.query('SELECT status FROM redemptions WHERE id = $1', [repaired.redemptionId]);
    expect(redemption.rows[0]).toEqual({ status: 'FAILED' });
    const flags = await h.t.db.pool.query(`SELECT count(*)::int AS n FROM risk_flags WHERE flag_type = 'GATEWAY_AUDIT_MISMATCH'`);
    expect(flags.rows[0]).toEqual({ n: 0 });
    const scratch = await h.t.db.pool.query('SELECT count(*)::int AS n FROM gateway_audit_objects');
    expect(scratch.rows[0]).toEqual({ n: 0 });
  });

  it('a real run repairs the safe one through the ledger and raises the rest for a person', async () => {
    const report = await audit(false);
    const found = new Map(report.items.map((item) => [item.key, item.status]));
    expect(Object.fromEntries(found)).toEqual(Object.fromEntries(expected));
    const fixed = report.items.find((item) => item.status === 'FIXED');
    expect(fixed?.detail).toMatch(/repaired/);

    // The repair: the redemption SETTLED, the PLC REDEEMED, the issuer's PROMISED back to nothing,
    // the payout booked once; the PLC's workflow told, so it ends.
    const redemption = await h.t.db.pool.query('SELECT status, settle_tx_id FROM redemptions WHERE id = $1', [repaired.redemptionId]);
    expect(redemption.rows[0]).toEqual({ status: 'SETTLED', settle_tx_id: fixed?.transaction_id });
    const plc = await h.t.db.pool.query('SELECT status, redemption_id FROM plcs WHERE token_id = $1', [repaired.tokenId]);
    expect(plc.rows[0]).toEqual({ status: 'REDEEMED', redemption_id: repaired.redemptionId });
    const balance = (await h.t.app.inject({ method: 'GET', url: `/api/v1/balance/${repaired.issuer.pubkey}` })).json();
    expect(balance).toMatchObject({ promised: '0.00' });
    const txs = await h.t.db.pool.query<{ tx_type: string }>(
      `SELECT tx_type FROM ledger_transactions WHERE reference_id = $1 ORDER BY created_at, tx_type`,
      [repaired.redemptionId],
    );
    expect(txs.rows.map((row) => row.tx_type).sort()).toEqual(['RECONCILIATION', 'REDEEM_FAILED', 'REDEEM_REQUESTED', 'REDEEM_SETTLED']);
    await expectLedgerConsistent(h.t.db.pool);

    // The rest: one flag each, with the evidence.
    const flags = await h.t.db.pool.query<{ dedupe_key: string; severity: string; details: { finding: string } }>(
      `SELECT dedupe_key, severity, details FROM risk_flags WHERE flag_type = 'GATEWAY_AUDIT_MISMATCH' ORDER BY dedupe_key`,
    );
    expect(flags.rows).toHaveLength(expected.size - 1);
    expect(flags.rows.find((flag) => flag.details.finding === 'PLC_PAID_TWICE')?.severity).toBe('critical');
    for (const item of report.items.filter((i) => i.status === 'SKIPPED')) {
      expect(item.detail).toMatch(/raised for a person: risk flag/);
      expect(item.evidence?.risk_flag_id).toEqual(expect.any(String));
    }
  });

  it('a second real run repairs nothing more and sees the same flags again', async () => {
    const report = await audit(false);
    expect(report.counts.fixed).toBe(0);
    expect(report.items.map((item) => item.key).sort()).toEqual([...expected.keys()].filter((key) => expected.get(key) !== 'FIXED').sort());
    const flags = await h.t.db.pool.query<{ occurrences: number }>(`SELECT occurrences FROM risk_flags WHERE flag_type = 'GATEWAY_AUDIT_MISMATCH'`);
    expect(flags.rows.map((row) => row.occurrences)).toEqual(flags.rows.map(() => 2));
    await expectLedgerConsistent(h.t.db.pool);
  });

  it('runs on a Temporal Schedule: created idempotently, each run a real run of its own, removed when its interval is 0', async () => {
    // The worker's definition, on this test's task queue and under an id of its own (schedules are per namespace).
    const production = gatewayAuditSchedule({ GATEWAY_AUDIT_INTERVAL_MS: 3_600_000, GATEWAY_AUDIT_LOOKBACK_DAYS: 2, TEMPORAL_TASK_QUEUE: h.t.taskQueue });
    expect(production).toMatchObject({ scheduleId: 'gateway-audit', workflowType: 'scheduledReconcileWorkflow', intervalMs: 3_600_000 });
    const scheduleId = `gateway-audit-test-${randomUUID()}`;
    const definition: ScheduleDefinition = { ...production, scheduleId, workflowId: scheduleId };
    expect(await ensureSchedule(h.t.temporal, definition)).toBe('created');
    expect(await ensureSchedule(h.t.temporal, definition)).toBe('unchanged');
    expect(await ensureSchedule(h.t.temporal, { ...definition, intervalMs: 1_800_000 })).toBe('updated');
    const handle = h.t.temporal.schedule.getHandle(scheduleId);
    expect((await handle.describe()).spec.intervals).toMatchObject([{ every: 1_800_000 }]);

    await handle.trigger();
    const run = await eventually(async () => {
      const rows = await h.t.db.pool.query<{ id: string; status: string; requested_by: string; workflow_id: string }>(
        `SELECT id, status, requested_by, workflow_id FROM reconciliation_runs WHERE tool = 'gateway-audit' AND requested_by = 'schedule:gateway-audit' AND status <> 'RUNNING'`,
      );
      return rows.rows[0];
    }, 30_000);
    expect(run).toMatchObject({ status: 'COMPLETED', workflow_id: `reconcile-gateway-audit-${run.id}` });
    const items = await h.t.db.pool.query<{ item_key: string }>('SELECT item_key FROM reconciliation_items WHERE run_id = $1 ORDER BY item_key', [run.id]);
    expect(items.rows.map((row) => row.item_key)).toEqual([...expected.keys()].filter((key) => expected.get(key) !== 'FIXED').sort());

    const [taken] = (await handle.describe()).info.recentActions;
    await record(taken?.action.workflow.workflowId as string, 'scheduled-reconcile-gateway-audit');
    await record(run.workflow_id, 'reconcile-gateway-audit');
    expect(await ensureSchedule(h.t.temporal, { ...definition, intervalMs: 0 })).toBe('removed');
    await expect(handle.describe()).rejects.toBeInstanceOf(ScheduleNotFoundError);
    expect(await ensureSchedule(h.t.temporal, { ...definition, intervalMs: 0 })).toBe('absent');
  });
});
