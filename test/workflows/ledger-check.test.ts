import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { latestLedgerCheck } from '../../db/ops-stats.ts';
import { ensureLedgerCheckSchedule } from '../../worker/schedules.ts';
import { ledgerCheckWorkflow } from '../../workflows/ledger-check.ts';
import { createTestApp, type TestApp } from '../support/app.ts';
import { eventually } from '../support/temporal-cli.ts';
import { replayAndRecord } from '../support/histories.ts';

/** The ledger check behind the stats dashboard's ledger section, and the schedule that runs it. */
let t: TestApp;
const scheduleId = `ledger-check-test-${randomUUID().slice(0, 8)}`;
beforeAll(async () => {
  t = await createTestApp();
  await t.startWorker();
});
afterAll(async () => {
  await t.temporal.schedule.getHandle(scheduleId).delete().catch(() => {});
  await t?.close();
});

describe('ledger check', () => {
  it('records a check the stats dashboard shows', async () => {
    await t.deposit('check-owner', '5.00');
    const workflowId = `ledger-check-${randomUUID()}`;
    const result = await t.temporal.workflow.execute(ledgerCheckWorkflow, { workflowId, taskQueue: t.taskQueue });
    expect(result).toMatchObject({ ok: true, violationsCount: 0 });
    const check = await latestLedgerCheck(t.db.pool);
    expect(check).toMatchObject({ id: result.checkId, ok: true, source: `workflow ${workflowId}` });
    expect(check?.totals.some((row) => row.bucket === 'AVAILABLE' && row.user_minor === '500')).toBe(true);
    await replayAndRecord(t.temporal, workflowId, 'ledger-check-ok');
  });

  it('the schedule is created once, updated after, and starts the check on the worker\'s queue', async () => {
    expect(await ensureLedgerCheckSchedule(t.temporal, { taskQueue: t.taskQueue, intervalMs: 3_600_000, scheduleId })).toBe('created');
    expect(await ensureLedgerCheckSchedule(t.temporal, { taskQueue: t.taskQueue, intervalMs: 1_800_000, scheduleId })).toBe('updated');
    const described = await t.temporal.schedule.getHandle(scheduleId).describe();
    expect(described.spec.intervals?.[0]?.every).toBe(1_800_000);
    const before = await latestLedgerCheck(t.db.pool);
    await t.temporal.schedule.getHandle(scheduleId).trigger();
    const after = await eventually(async () => {
      const check = await latestLedgerCheck(t.db.pool);
      return check !== null && check.id !== before?.id && check.source.startsWith(`workflow ${scheduleId}-`) ? check : undefined;
    });
    expect(after.ok).toBe(true);
  });
});
