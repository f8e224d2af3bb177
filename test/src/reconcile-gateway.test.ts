import { describe, expect, it } from 'vitest';
import { isFailedPaymentStatus, isPaidPaymentStatus, paymentStatuses, transferStatuses } from '../../gateway/index.ts';
import { DomainError } from '../../src/errors.ts';
import {
  bookedNote,
  cancellable,
  chargeHandover,
  chargeStep,
  isFinalStatus,
  notCreatedStatus,
  ownerPosting,
  paymentVerdict,
  plannedItem,
  problemItem,
  redemptionHandover,
  refusalText,
  refusedBookingItem,
  settledItem,
  settleStep,
  transferNotCreated,
  transferVerdict,
  undecidedItem,
  type Dispatch,
  type Handover,
  type PaymentRead,
  type PendingCharge,
  type PendingRedemption,
} from '../../src/reconciliation/gateway.ts';

/** The gateway reconcile tools' rules (src/reconciliation/gateway.ts): verdicts, handovers and what each item records. */

const pending = { snapshot_minor: 700n, computed_minor: 700n };
const redemption: PendingRedemption = {
  id: 'r1',
  token_id: 't1',
  bearer_pubkey: 'bea-key',
  bearer_owner_id: 'bea',
  issuer_owner_id: 'iris',
  currency: 'BRL',
  amount_minor: 700n,
  fee_minor: 0n,
  gateway_transfer_id: 'tr1',
  reference_tx_id: 'req-tx',
};
const charge: PendingCharge = {
  id: 'c1',
  owner_id: 'olga',
  currency: 'BRL',
  amount_minor: 500n,
  gateway_payment_id: 'pay1',
  stale: false,
  setup_over: true,
  reference_tx_id: 'created-tx',
};
const read = (status: string, more: Partial<PaymentRead> = {}): PaymentRead => ({ paymentId: 'pay1', status, note: null, problem: null, ...more });
const doneTransfer = { status: 'DONE', failReason: null, problem: null };

describe('gateway verdicts', () => {
  it('agree with the gateway adapter on every payment and transfer status', () => {
    for (const status of paymentStatuses) {
      const expected = isPaidPaymentStatus(status) ? 'SETTLE' : isFailedPaymentStatus(status) ? 'FAIL' : 'OPEN';
      expect([status, paymentVerdict(status)]).toEqual([status, expected]);
    }
    expect(transferStatuses.map((status) => [status, transferVerdict(status)])).toEqual([
      ['PENDING', 'OPEN'],
      ['BANK_PROCESSING', 'OPEN'],
      ['BLOCKED', 'OPEN'],
      ['DONE', 'SETTLE'],
      ['FAILED', 'FAIL'],
      ['CANCELLED', 'FAIL'],
    ]);
    expect(transferVerdict('UNKNOWN')).toBe('OPEN');
  });

  it('say a refusal with its code, bounded', () => {
    expect(refusalText(Object.assign(new Error('unknown id'), { code: 'NOT_FOUND' }))).toBe('NOT_FOUND: unknown id');
    expect(refusalText(new Error('no code'))).toBe('no code');
    expect(refusalText('x'.repeat(400))).toHaveLength(300);
  });
});

describe('redemption handovers', () => {
  it("carry the transfer's status to the owner and are never booked by the run", () => {
    expect(redemptionHandover(redemption, 'redemption-r1', doneTransfer, pending)).toEqual({
      key: 'redemption/r1',
      subject: 'redemption',
      subjectId: 'r1',
      workflowId: 'redemption-r1',
      tokenId: 't1',
      bearerPubkey: 'bea-key',
      gatewayId: 'tr1',
      gatewayStatus: 'DONE',
      failReason: null,
      ownerVerdict: 'SETTLE',
      signalStatus: 'DONE',
      bookVerdict: 'OPEN',
      cancelled: false,
      ownerId: 'bea',
      issuerOwnerId: 'iris',
      currency: 'BRL',
      amountMinor: '700',
      feeMinor: '0',
      snapshotMinor: '700',
      computedMinor: '700',
      referenceTransactionId: 'req-tx',
      problem: null,
      note: null,
    });
    expect(redemptionHandover({ ...redemption, gateway_transfer_id: null }, 'redemption-r1', transferNotCreated, pending)).toMatchObject({
      gatewayId: null,
      gatewayStatus: notCreatedStatus,
      ownerVerdict: 'OPEN',
    });
  });
});

describe('charge handovers', () => {
  it('leave a charge still being set up, and a cancel-stale-charges charge not yet stale', () => {
    expect(chargeStep('check', { stale: false, setup_over: false }, read(notCreatedStatus))).toBe('leave');
    expect(chargeStep('check', { stale: false, setup_over: true }, read(notCreatedStatus))).toBe('hand-over');
    expect(chargeStep('cancel-stale', { stale: false, setup_over: true }, read('PENDING'))).toBe('leave');
  });

  it('cancel first only in the cancel tools, only what can still be paid and cancelled', () => {
    expect(chargeStep('check', charge, read('PENDING'))).toBe('hand-over');
    expect(chargeStep('cancel-all', charge, read('PENDING'))).toBe('cancel');
    expect(chargeStep('cancel-stale', { stale: true, setup_over: true }, read('PENDING'))).toBe('cancel');
    expect(chargeStep('cancel-stale', charge, read('OVERDUE'))).toBe('cancel');
    expect(chargeStep('cancel-all', charge, read('CONFIRMED'))).toBe('hand-over');
    expect(chargeStep('cancel-all', charge, read('DELETED'))).toBe('hand-over');
    expect(chargeStep('cancel-all', charge, read(notCreatedStatus))).toBe('hand-over');
    expect(chargeStep('cancel-all', charge, read('UNKNOWN', { problem: 'refused' }))).toBe('hand-over');
    expect([cancellable('PENDING'), cancellable('DELETED'), cancellable('REFUNDED'), cancellable(notCreatedStatus)]).toEqual([true, false, false, false]);
  });

  it('hand over the verdict of the status after any cancel; a charge never created fails when its owner has ended', () => {
    expect(chargeHandover(charge, 'charge-c1', read('CONFIRMED'), null, pending)).toMatchObject({
      key: 'charge/c1',
      workflowId: 'charge-c1',
      gatewayId: 'pay1',
      ownerVerdict: 'SETTLE',
      bookVerdict: 'SETTLE',
      signalStatus: 'CONFIRMED',
      cancelled: false,
      feeMinor: '0',
      note: null,
    });
    expect(chargeHandover(charge, 'charge-c1', read(notCreatedStatus, { paymentId: null }), null, pending)).toMatchObject({ ownerVerdict: 'OPEN', bookVerdict: 'FAIL' });
    expect(chargeHandover(charge, 'charge-c1', read('PENDING', { note: 'found by reference' }), { kind: 'would' }, pending)).toMatchObject({
      gatewayStatus: 'PENDING',
      ownerVerdict: 'FAIL',
      bookVerdict: 'FAIL',
      signalStatus: 'DELETED',
      cancelled: false,
      note: 'found by reference; would be cancelled at the gateway',
    });
    expect(chargeHandover(charge, 'charge-c1', read('PENDING'), { kind: 'done', status: 'DELETED', cancelled: true, note: null }, pending)).toMatchObject({
      gatewayStatus: 'DELETED',
      ownerVerdict: 'FAIL',
      signalStatus: 'DELETED',
      cancelled: true,
    });
    expect(
      chargeHandover(charge, 'charge-c1', read('PENDING'), { kind: 'done', status: 'RECEIVED', cancelled: false, note: 'the gateway refused to cancel it' }, pending),
    ).toMatchObject({ ownerVerdict: 'SETTLE', bookVerdict: 'SETTLE', cancelled: false, note: 'the gateway refused to cancel it' });
  });
});

describe('gateway items', () => {
  const settled = redemptionHandover(redemption, 'redemption-r1', doneTransfer, pending);
  const pendingTransfer = redemptionHandover(redemption, 'redemption-r1', { status: 'BANK_PROCESSING', failReason: null, problem: null }, pending);
  const endedCharge = chargeHandover(charge, 'charge-c1', read('CONFIRMED'), null, pending);
  const undecided = chargeHandover(charge, 'charge-c1', read('PENDING'), null, pending);
  const dispatched = (handover: Handover, dispatch: Dispatch) => ({ handover, dispatch });

  it("book what the owner's own code books", () => {
    expect(ownerPosting(settled, 'SETTLE')).toEqual([
      { ownerId: 'bea', bucket: 'PENDING', currency: 'BRL', amountMinor: -700n },
      { ownerId: 'system:world', bucket: 'AVAILABLE', currency: 'BRL', amountMinor: 700n },
    ]);
    expect(ownerPosting(settled, 'FAIL')).toEqual([
      { ownerId: 'bea', bucket: 'PENDING', currency: 'BRL', amountMinor: -700n },
      { ownerId: 'iris', bucket: 'PROMISED', currency: 'BRL', amountMinor: 700n },
    ]);
    expect(ownerPosting(endedCharge, 'FAIL')).toHaveLength(2);
  });

  it('plan, in a dry run, what a real run would do', () => {
    expect(plannedItem(settled, true)).toEqual({
      key: 'redemption/r1',
      action: 'COMPENSATING_POSTING',
      status: 'PLANNED',
      ownerId: 'bea',
      bucket: 'PENDING',
      currency: 'BRL',
      snapshotMinor: 700n,
      computedMinor: 700n,
      amountMinor: 700n,
      snapshotAfterMinor: 0n,
      transactionId: null,
      referenceTransactionId: 'req-tx',
      entries: ownerPosting(settled, 'SETTLE'),
      detail: 'gateway transfer tr1 DONE; redemption-r1 runs: would signal transferEvent DONE; it would book the settlement',
    });
    // A running owner told a status it cannot act on yet: no item.
    expect(plannedItem(pendingTransfer, true)).toBeNull();
    expect(plannedItem(pendingTransfer, false)).toMatchObject({
      status: 'PLANNED',
      entries: null,
      snapshotAfterMinor: null,
      detail: expect.stringContaining('would restart it with resume'),
    });
    expect(plannedItem(endedCharge, false)?.detail).toContain('would book charge:c1:settle');
    expect(plannedItem(undecided, false)).toMatchObject({ status: 'SKIPPED', entries: null, detail: expect.stringContaining('nothing to book yet') });
  });

  it('say what the recording step does with each handed-over row', () => {
    const problem = { ...settled, problem: 'the gateway refuses to answer' };
    expect(settleStep(dispatched(problem, 'NONE'))).toBe('problem');
    expect(settleStep(dispatched(settled, 'NONE'))).toBe('problem');
    expect(settleStep(dispatched(pendingTransfer, 'SIGNALLED'))).toBe('nothing');
    expect(settleStep(dispatched(settled, 'SIGNALLED'))).toBe('wait');
    expect(settleStep(dispatched(pendingTransfer, 'RESTARTED'))).toBe('wait');
    expect(settleStep(dispatched(undecided, 'OWNER_ENDED'))).toBe('open');
    expect(settleStep(dispatched(endedCharge, 'OWNER_ENDED'))).toBe('book');
    expect(problemItem(problem)).toMatchObject({ status: 'FAILED', snapshotAfterMinor: 700n, detail: 'gateway transfer tr1 DONE; the gateway refuses to answer' });
    expect(undecidedItem(dispatched(undecided, 'OWNER_ENDED'))).toMatchObject({ status: 'SKIPPED', snapshotAfterMinor: 700n });
    expect(refusedBookingItem(dispatched(endedCharge, 'OWNER_ENDED'), new DomainError('INSUFFICIENT_FUNDS', 'no'))).toMatchObject({
      status: 'FAILED',
      entries: ownerPosting(endedCharge, 'SETTLE'),
      detail: 'gateway payment pay1 CONFIRMED; charge-c1 had ended without a final status; booking refused: INSUFFICIENT_FUNDS: no',
    });
    expect(bookedNote(endedCharge, { verdict: 'FAIL', note: null })).toBe("booked charge:c1:fail through the charge's own finishCharge");
    expect(bookedNote(endedCharge, { verdict: 'SETTLE', note: 'paid meanwhile' })).toBe("booked charge:c1:settle through the charge's own finishCharge (paid meanwhile)");
  });

  it("record the owner's booking once its row is final, else what it waits for", () => {
    const entry = dispatched(settled, 'SIGNALLED');
    expect(['SETTLED', 'FAILED', 'PENDING_PAYMENT'].map(isFinalStatus)).toEqual([true, true, false]);
    expect(settledItem(entry, null, { status: 'SETTLED', txId: 'settle-tx' }, 0n, 30_000)).toMatchObject({
      status: 'FIXED',
      transactionId: 'settle-tx',
      snapshotAfterMinor: 0n,
      entries: ownerPosting(settled, 'SETTLE'),
      detail: 'gateway transfer tr1 DONE; redemption-r1 was running: signalled transferEvent DONE; SETTLED',
    });
    expect(settledItem(entry, 'a note', { status: 'FAILED', txId: null }, 0n, 30_000)).toMatchObject({
      status: 'SKIPPED',
      entries: ownerPosting(settled, 'FAIL'),
      detail: expect.stringContaining('; a note; FAILED but its booking is not in the ledger'),
    });
    expect(settledItem(entry, null, { status: 'PENDING_PAYMENT', txId: null }, 700n, 30_000).detail).toContain(
      'still PENDING_PAYMENT after 30 s: its workflow books when the gateway answers',
    );
    expect(settledItem(entry, null, null, 700n, 30_000)).toMatchObject({ status: 'SKIPPED', entries: null, detail: expect.stringContaining('still missing') });
  });
});
