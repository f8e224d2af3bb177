import { describe, expect, it } from 'vitest';
import { DomainError } from '../../src/errors.ts';
import { errorDetail } from '../../src/reconciliation/items.ts';
import {
  chargeRepairPlan,
  deltaOf,
  groupByAccount,
  negativeBucketItem,
  negativeBucketPosting,
  overduePlcPlan,
  planReversal,
  plcIssuePlan,
  redemptionFailPlan,
  releasedPlcPlan,
  reversalItem,
  reversalLeg,
  rowRepairItem,
  snapshotItem,
  snapshotWritable,
  type FailureFacts,
} from '../../src/reconciliation/ledger-repairs.ts';

/** The ledger reconcile tools' rules (src/reconciliation/ledger-repairs.ts): what each kind of damage calls for. */

const state = { snapshot_minor: 200n, computed_minor: 250n };

describe('snapshot corrections', () => {
  it('write a system bucket whatever its sum, and a user bucket only at zero or above', () => {
    expect(snapshotWritable('system', -5n)).toBe(true);
    expect(snapshotWritable('user', 0n)).toBe(true);
    expect(snapshotWritable('user', -1n)).toBe(false);
  });

  it('plan the sum of the entries, or skip a negative user bucket for fix-negative-balances', () => {
    const diff = { bucket: 'AVAILABLE' as const, currency: 'BRL' as const, snapshot_minor: 700n, computed_minor: 1000n };
    expect(snapshotItem('alice', 'user', diff, 'PLANNED')).toMatchObject({
      key: 'alice/AVAILABLE/BRL',
      action: 'SNAPSHOT_CORRECTION',
      status: 'PLANNED',
      snapshotMinor: 700n,
      computedMinor: 1000n,
      snapshotAfterMinor: 1000n,
      detail: null,
    });
    const negative = snapshotItem('alice', 'user', { ...diff, computed_minor: -300n }, 'FIXED');
    expect(negative).toMatchObject({ status: 'SKIPPED', snapshotAfterMinor: 700n });
    expect(negative.detail).toContain('fix-negative-balances');
    expect(snapshotItem('system:world', 'system', { ...diff, computed_minor: -300n }, 'FIXED')).toMatchObject({ status: 'FIXED', snapshotAfterMinor: -300n });
  });

  it('group rows by account in the order met', () => {
    const groups = groupByAccount([
      { account_id: 'a', n: 1 },
      { account_id: 'b', n: 2 },
      { account_id: 'a', n: 3 },
    ]);
    expect([...groups.entries()]).toEqual([
      ['a', [{ account_id: 'a', n: 1 }, { account_id: 'a', n: 3 }]],
      ['b', [{ account_id: 'b', n: 2 }]],
    ]);
  });
});

describe('negative user buckets', () => {
  const row = { owner_id: 'erin', bucket: 'AVAILABLE' as const, currency: 'BRL' as const, snapshot_minor: 200n, computed_minor: -300n };

  it('are brought to zero from system:world AVAILABLE', () => {
    expect(negativeBucketPosting(row)).toEqual([
      { ownerId: 'system:world', bucket: 'AVAILABLE', currency: 'BRL', amountMinor: -300n },
      { ownerId: 'erin', bucket: 'AVAILABLE', currency: 'BRL', amountMinor: 300n },
    ]);
    expect(() => negativeBucketPosting({ ...row, computed_minor: 0n })).toThrow(/positive amount/);
  });

  it('are planned, fixed (once, or by an earlier attempt) or failed with the same posting', () => {
    const entries = negativeBucketPosting(row);
    expect(negativeBucketItem(row, { status: 'PLANNED' })).toEqual({
      key: 'erin/AVAILABLE/BRL',
      action: 'COMPENSATING_POSTING',
      status: 'PLANNED',
      ownerId: 'erin',
      bucket: 'AVAILABLE',
      currency: 'BRL',
      snapshotMinor: 200n,
      computedMinor: -300n,
      amountMinor: 300n,
      snapshotAfterMinor: 0n,
      transactionId: null,
      referenceTransactionId: null,
      entries,
      detail: null,
    });
    expect(negativeBucketItem(row, { status: 'FIXED', transactionId: 'tx', created: true })).toMatchObject({ transactionId: 'tx', detail: null, entries });
    expect(negativeBucketItem(row, { status: 'FIXED', transactionId: 'tx', created: false }).detail).toBe('booked by an earlier attempt of this batch');
    expect(negativeBucketItem(row, { status: 'FAILED', detail: 'INSUFFICIENT_FUNDS: no' })).toMatchObject({
      snapshotAfterMinor: null,
      transactionId: null,
      detail: 'INSUFFICIENT_FUNDS: no',
      entries,
    });
  });
});

describe('failures without their request', () => {
  const redeemFailed: FailureFacts = {
    id: 'f1',
    reference_id: 'red-1',
    entries: [
      { owner_id: 'gina', kind: 'user', bucket: 'PENDING', currency: 'BRL', amount_minor: '-200' },
      { owner_id: 'frank', kind: 'user', bucket: 'PROMISED', currency: 'BRL', amount_minor: '200' },
    ],
  };

  it('are reversed leg by leg, debits first, crediting back the PENDING they took', () => {
    const plan = planReversal(redeemFailed);
    expect(plan).toEqual({
      key: 'reversal/f1',
      failure: redeemFailed,
      credited: { ownerId: 'gina', bucket: 'PENDING', currency: 'BRL', amountMinor: 200n },
      entries: [
        { ownerId: 'frank', bucket: 'PROMISED', currency: 'BRL', amountMinor: -200n },
        { ownerId: 'gina', bucket: 'PENDING', currency: 'BRL', amountMinor: 200n },
      ],
      skipReason: null,
    });
    expect(reversalLeg(plan)).toEqual(plan.credited);
  });

  it('are left to a person without a reference or in another shape, reported on their first debit', () => {
    expect(planReversal({ ...redeemFailed, reference_id: null }).skipReason).toMatch(/no reference id/);
    const odd = planReversal({
      ...redeemFailed,
      entries: [
        { owner_id: 'gina', kind: 'user', bucket: 'AVAILABLE', currency: 'BRL', amount_minor: '-200' },
        { owner_id: 'frank', kind: 'user', bucket: 'PROMISED', currency: 'BRL', amount_minor: '200' },
      ],
    });
    expect(odd.credited).toBeNull();
    expect(odd.skipReason).toMatch(/money model shape/);
    expect(reversalLeg(odd)).toEqual({ ownerId: 'gina', bucket: 'AVAILABLE', currency: 'BRL', amountMinor: 200n });
  });

  it('are reported about the credited bucket: planned, skipped, failed or booked', () => {
    const plan = planReversal(redeemFailed);
    expect(reversalItem(plan, state, { status: 'PLANNED', detail: null })).toEqual({
      key: 'reversal/f1',
      action: 'COMPENSATING_POSTING',
      status: 'PLANNED',
      ownerId: 'gina',
      bucket: 'PENDING',
      currency: 'BRL',
      snapshotMinor: 200n,
      computedMinor: 250n,
      amountMinor: 200n,
      snapshotAfterMinor: 400n,
      transactionId: null,
      referenceTransactionId: 'f1',
      entries: plan.entries,
      detail: null,
    });
    expect(reversalItem(plan, state, { status: 'SKIPPED', detail: 'why' })).toMatchObject({ snapshotAfterMinor: 200n, detail: 'why' });
    expect(reversalItem(plan, state, { status: 'FAILED', detail: 'refused' })).toMatchObject({ snapshotAfterMinor: 200n, detail: 'refused' });
    expect(reversalItem(plan, state, { status: 'FIXED', transactionId: 'tx', afterMinor: 400n })).toMatchObject({
      status: 'FIXED',
      transactionId: 'tx',
      snapshotAfterMinor: 400n,
      detail: null,
    });
  });
});

describe('settlement rows without their own booking', () => {
  const plc = { tokenId: 't1', issuerId: 'iris', currency: 'BRL' as const, amountMinor: 100n, status: 'EXPIRED', referenceTransactionId: 'issue-tx' };
  const charge = { chargeId: 'c1', ownerId: 'olga', currency: 'BRL' as const, amountMinor: 500n, referenceTransactionId: 'created-tx' };

  it("book the owner's posting under the owner's own key", () => {
    expect(releasedPlcPlan(plc)).toMatchObject({
      itemKey: 'plc/t1',
      idempotencyKey: 'plc:t1:release',
      txType: 'PLC_EXPIRED',
      referenceType: 'plc',
      referenceId: 't1',
      ownerId: 'iris',
      bucket: 'AVAILABLE',
      amountMinor: 100n,
      referenceTransactionId: 'issue-tx',
      description: 'release-expired-promises: the PLC is EXPIRED but its release was never booked; PLC_EXPIRED books PROMISED -> AVAILABLE',
    });
    expect(releasedPlcPlan({ ...plc, status: 'CANCELLED' })).toMatchObject({ idempotencyKey: 'plc:t1:release', txType: 'PLC_CANCELLED' });
    expect(overduePlcPlan({ ...plc, status: 'TRANSFERRED' })).toMatchObject({
      txType: 'PLC_EXPIRED',
      description: expect.stringContaining('the TRANSFERRED PLC is past its expiry'),
    });
    expect(plcIssuePlan({ ...plc, status: 'ISSUED' })).toMatchObject({
      idempotencyKey: 'plc:t1:issue',
      txType: 'PLC_ISSUED',
      bucket: 'PROMISED',
      referenceTransactionId: null,
    });
    expect(chargeRepairPlan(charge, 'SETTLE')).toMatchObject({ itemKey: 'charge/c1', idempotencyKey: 'charge:c1:settle', txType: 'CHARGE_SETTLED', bucket: 'AVAILABLE' });
    expect(chargeRepairPlan(charge, 'FAIL')).toMatchObject({ idempotencyKey: 'charge:c1:fail', txType: 'CHARGE_FAILED', bucket: 'PENDING' });
    expect(
      redemptionFailPlan({ redemptionId: 'r1', bearerId: 'bea', issuerId: 'iris', currency: 'BRL', amountMinor: 300n, referenceTransactionId: 'req' }),
    ).toMatchObject({
      itemKey: 'redemption/r1',
      idempotencyKey: 'redemption:r1:fail',
      txType: 'REDEEM_FAILED',
      referenceType: 'redemption',
      ownerId: 'bea',
      bucket: 'PENDING',
      referenceTransactionId: 'req',
      entries: [
        { ownerId: 'bea', bucket: 'PENDING', currency: 'BRL', amountMinor: -300n },
        { ownerId: 'iris', bucket: 'PROMISED', currency: 'BRL', amountMinor: 300n },
      ],
    });
  });

  it('report the snapshot the posting would leave, the one it left, or the one a refusal kept', () => {
    const plan = chargeRepairPlan(charge, 'SETTLE');
    expect(deltaOf(plan.entries, 'olga', 'AVAILABLE', 'BRL')).toBe(500n);
    expect(deltaOf(plan.entries, 'olga', 'PENDING', 'BRL')).toBe(-500n);
    expect(deltaOf(plan.entries, 'olga', 'HELD', 'BRL')).toBe(0n);
    expect(rowRepairItem(plan, state, { status: 'PLANNED' })).toMatchObject({
      key: 'charge/c1',
      status: 'PLANNED',
      snapshotMinor: 200n,
      computedMinor: 250n,
      amountMinor: 500n,
      snapshotAfterMinor: 700n,
      transactionId: null,
      referenceTransactionId: 'created-tx',
      entries: plan.entries,
      detail: plan.description,
    });
    expect(rowRepairItem(plan, state, { status: 'FIXED', transactionId: 'tx', created: true, afterMinor: 700n })).toMatchObject({
      transactionId: 'tx',
      snapshotAfterMinor: 700n,
      detail: plan.description,
    });
    expect(rowRepairItem(plan, state, { status: 'FIXED', transactionId: 'tx', created: false, afterMinor: 700n }).detail).toBe(
      `${plan.description}; the key had already booked this posting`,
    );
    expect(rowRepairItem(plan, state, { status: 'FAILED', detail: 'would be refused' })).toMatchObject({ snapshotAfterMinor: 200n, detail: 'would be refused' });
  });
});

describe('item details', () => {
  it('name a domain refusal by its code', () => {
    expect(errorDetail(new DomainError('INSUFFICIENT_FUNDS', 'not enough'))).toBe('INSUFFICIENT_FUNDS: not enough');
    expect(errorDetail(new Error('boom'))).toBe('boom');
    expect(errorDetail('text')).toBe('text');
  });
});
