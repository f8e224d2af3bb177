import { describe, expect, it } from 'vitest';
import { paymentStatuses, transferStatuses, type PaymentStatus, type TransferStatus } from '../../gateway/types.ts';
import { classifyGatewayWebhook, classifyGatewayWebhookText, transferValidationAnswerSchema, type GatewayWebhookClassification } from '../../gateway/webhooks.ts';
import {
  isFailedPaymentStatus,
  isFinalPaymentStatus,
  isFinalTransferStatus,
  isPaidPaymentStatus,
  paymentEventContradicts,
  paymentOutcome,
  paymentStatusByEvent,
  paymentStatusDecides,
  paymentStatusRank,
  payoutEventContradicts,
  payoutOutcome,
  shouldApplyPaymentStatus,
  shouldApplyTransferStatus,
  transferStatusByEvent,
} from '../../gateway/status.ts';
import type { PaymentWire, TransferWire } from '../../gateway/wire.ts';

const payment: PaymentWire = {
  object: 'payment',
  id: 'pay_0123456789abcdef',
  dateCreated: '2026-11-22',
  customer: 'cus_000000000001',
  value: 12.34,
  netValue: 11.35,
  billingType: 'PIX',
  status: 'RECEIVED',
  dueDate: '2026-11-23',
  originalDueDate: '2026-11-23',
  paymentDate: '2026-11-22',
  clientPaymentDate: '2026-11-22',
  confirmedDate: null,
  description: null,
  externalReference: 'redemption-1',
  invoiceUrl: 'https://sandbox.gateway-simulator.invalid/i/pay_0123456789abcdef',
  bankSlipUrl: null,
  nossoNumero: '1234567890',
  deleted: false,
};

const transfer: TransferWire = {
  object: 'transfer',
  id: '5b2f3b40-6f7e-4c55-9a37-2f3c0e3b1c11',
  type: 'PIX',
  dateCreated: '2026-11-22',
  value: 0.3,
  netValue: 0.3,
  transferFee: 0,
  status: 'PENDING',
  effectiveDate: null,
  scheduleDate: null,
  endToEndIdentifier: null,
  authorized: null,
  failReason: null,
  transactionReceiptUrl: null,
  operationType: 'PIX',
  description: null,
  externalReference: 'payout-1',
  bankAccount: { pixAddressKey: 'a@b.co' },
  pixAddressKeyType: 'EMAIL',
};

type Row = [name: string, body: unknown, expected: Partial<GatewayWebhookClassification> & { kind: GatewayWebhookClassification['kind'] }];

describe('classifyGatewayWebhook', () => {
  const rows: Row[] = [
    ['payment event', { id: 'evt_1', event: 'PAYMENT_RECEIVED', dateCreated: '2026-11-22 10:00:00', payment }, { kind: 'payment_event', eventId: 'evt_1', event: 'PAYMENT_RECEIVED' }],
    ['payment event with extra fields', { id: 'evt_2', event: 'PAYMENT_CONFIRMED', dateCreated: 'x', payment: { ...payment, status: 'CONFIRMED', anticipated: false }, extra: 1 }, { kind: 'payment_event', event: 'PAYMENT_CONFIRMED' }],
    ['transfer event', { id: 'evt_3', event: 'TRANSFER_DONE', dateCreated: 'x', transfer: { ...transfer, status: 'DONE' } }, { kind: 'transfer_event', eventId: 'evt_3', event: 'TRANSFER_DONE' }],
    ['transfer failed with reason', { id: 'evt_4', event: 'TRANSFER_FAILED', dateCreated: 'x', transfer: { ...transfer, status: 'FAILED', failReason: 'invalid key' } }, { kind: 'transfer_event', event: 'TRANSFER_FAILED' }],
    ['transfer validation request', { type: 'TRANSFER', transfer }, { kind: 'transfer_validation' }],
    ['other authorization type', { type: 'BILL', bill: {} }, { kind: 'unknown', type: 'BILL', eventId: null }],
    ['unsupported event keeps the payment id as a hint', { id: 'evt_5', event: 'PAYMENT_TELEPORTED', payment }, { kind: 'unknown', eventId: 'evt_5', event: 'PAYMENT_TELEPORTED', paymentId: payment.id }],
    ['a documented event that announces no status of its own', { id: 'evt_5b', event: 'PAYMENT_BANK_SLIP_VIEWED', payment }, { kind: 'payment_event', event: 'PAYMENT_BANK_SLIP_VIEWED' }],
    ['an event without id and dateCreated (Asaas shows both forms)', { event: 'TRANSFER_DONE', transfer: { ...transfer, status: 'DONE' } }, { kind: 'transfer_event', eventId: null, dateCreated: null, event: 'TRANSFER_DONE' }],
    ['TRANSFER_BLOCKED', { id: 'evt_b', event: 'TRANSFER_BLOCKED', transfer: { ...transfer, status: 'BLOCKED' } }, { kind: 'transfer_event', event: 'TRANSFER_BLOCKED' }],
    ['a transfer status nobody documented is UNKNOWN, not a parse failure', { id: 'evt_u', event: 'TRANSFER_PENDING', transfer: { ...transfer, status: 'AWAITING_SOMETHING' } }, { kind: 'transfer_event', transfer: expect.objectContaining({ status: 'UNKNOWN', gatewayStatus: 'AWAITING_SOMETHING' }) as never }],
    ['payment event without payment', { id: 'evt_6', event: 'PAYMENT_RECEIVED', dateCreated: 'x' }, { kind: 'unknown', eventId: 'evt_6', paymentId: null }],
    ['payment event with a float-polluted amount', { id: 'evt_7', event: 'PAYMENT_RECEIVED', dateCreated: 'x', payment: { ...payment, value: 0.1 + 0.2 } }, { kind: 'unknown', paymentId: payment.id }],
    ['payment event with NaN amount (inexact JSON number)', { id: 'evt_8', event: 'PAYMENT_RECEIVED', dateCreated: 'x', payment: { ...payment, value: Number.NaN } }, { kind: 'unknown' }],
    ['payment event with an unknown status: UNKNOWN (open), not a parse failure', { id: 'evt_9', event: 'PAYMENT_RECEIVED', dateCreated: 'x', payment: { ...payment, status: 'TELEPORTED' } }, { kind: 'payment_event', payment: expect.objectContaining({ status: 'UNKNOWN', gatewayStatus: 'TELEPORTED' }) as never }],
    ['transfer event under a payment name', { id: 'evt_10', event: 'PAYMENT_RECEIVED', dateCreated: 'x', transfer }, { kind: 'unknown', transferId: transfer.id }],
    ['event is not a string', { id: 'evt_11', event: 42 }, { kind: 'unknown', event: null }],
    ['neither event nor type', { id: 'evt_12' }, { kind: 'unknown', eventId: 'evt_12' }],
    ['an array', [1, 2], { kind: 'unknown' }],
    ['null', null, { kind: 'unknown' }],
    ['a string', 'PAYMENT_RECEIVED', { kind: 'unknown' }],
  ];

  it.each(rows)('%s', (_name, body, expected) => {
    expect(classifyGatewayWebhook(body)).toMatchObject(expected);
  });

  it('converts money to centavos', () => {
    const result = classifyGatewayWebhook({ id: 'evt_1', event: 'PAYMENT_RECEIVED', dateCreated: 'x', payment });
    expect(result.kind === 'payment_event' && [result.payment.amountMinor, result.payment.netAmountMinor]).toEqual([1234n, 1135n]);
    const validation = classifyGatewayWebhook({ type: 'TRANSFER', transfer });
    expect(validation.kind === 'transfer_validation' && validation.transfer.amountMinor).toBe(30n);
  });

  it('classifies raw text strictly: a number with more precision than a double holds is refused', () => {
    const text = JSON.stringify({ id: 'evt_1', event: 'PAYMENT_RECEIVED', dateCreated: 'x', payment }).replace('"value":12.34', '"value":12.340000000000000001');
    expect(classifyGatewayWebhookText(text)).toMatchObject({ kind: 'unknown', paymentId: payment.id });
    expect(classifyGatewayWebhookText(JSON.stringify({ id: 'e', event: 'PAYMENT_RECEIVED', dateCreated: 'x', payment }))).toMatchObject({ kind: 'payment_event' });
    expect(classifyGatewayWebhookText('{not json')).toMatchObject({ kind: 'unknown', reason: 'the body is not valid JSON' });
    expect(classifyGatewayWebhookText('{"__proto__":{"x":1}}')).toMatchObject({ kind: 'unknown' });
  });

  it('parses validation answers', () => {
    expect(transferValidationAnswerSchema.safeParse({ status: 'APPROVED' }).success).toBe(true);
    expect(transferValidationAnswerSchema.safeParse({ status: 'REFUSED', refuseReason: 'no' }).success).toBe(true);
    expect(transferValidationAnswerSchema.safeParse({ status: 'REFUSED' }).success).toBe(false);
    expect(transferValidationAnswerSchema.safeParse({ status: 'MAYBE' }).success).toBe(false);
  });
});

describe('payment status ordering', () => {
  const rows: [current: PaymentStatus, next: PaymentStatus, apply: boolean][] = [
    ['PENDING', 'RECEIVED', true],
    ['PENDING', 'OVERDUE', true],
    ['OVERDUE', 'RECEIVED', true],
    ['RECEIVED', 'CONFIRMED', true],
    ['CONFIRMED', 'RECEIVED', false],
    ['RECEIVED', 'PENDING', false],
    ['RECEIVED', 'OVERDUE', false],
    ['CONFIRMED', 'REFUNDED', true],
    ['REFUNDED', 'CONFIRMED', false],
    ['REFUNDED', 'DELETED', false],
    ['DELETED', 'RECEIVED', false],
    ['PENDING', 'DELETED', true],
    ['PENDING', 'PENDING', false],
    ['REFUND_REQUESTED', 'REFUNDED', true],
    ['REFUNDED', 'REFUNDED', false],
  ];
  it.each(rows)('%s -> %s applies: %s', (current, next, apply) => {
    expect(shouldApplyPaymentStatus(current, next)).toBe(apply);
  });

  it('never leaves a final status, for every pair', () => {
    for (const current of paymentStatuses) {
      for (const next of paymentStatuses) {
        if (isFinalPaymentStatus(current)) expect(shouldApplyPaymentStatus(current, next)).toBe(false);
        if (shouldApplyPaymentStatus(current, next)) expect(paymentStatusRank(next)).toBeGreaterThan(paymentStatusRank(current));
      }
    }
  });

  it('classifies statuses', () => {
    expect(paymentStatuses.filter(isFinalPaymentStatus)).toEqual(['REFUNDED', 'DELETED']);
    expect(paymentStatuses.filter(isPaidPaymentStatus)).toEqual(['RECEIVED', 'RECEIVED_IN_CASH', 'DUNNING_RECEIVED', 'CONFIRMED']);
    expect(paymentStatuses.filter(isFailedPaymentStatus)).toEqual(['OVERDUE', 'REFUNDED', 'DELETED']);
  });

  it('maps each event a Pix or Boleto charge takes to the status it announces; the others announce none', () => {
    expect(paymentStatusByEvent).toMatchObject({
      PAYMENT_CREATED: 'PENDING',
      PAYMENT_RECEIVED: 'RECEIVED',
      PAYMENT_CONFIRMED: 'CONFIRMED',
      PAYMENT_OVERDUE: 'OVERDUE',
      PAYMENT_REFUNDED: 'REFUNDED',
      PAYMENT_DELETED: 'DELETED',
      PAYMENT_UPDATED: null,
      PAYMENT_BANK_SLIP_VIEWED: null,
    });
    // Every documented event is mapped (a missing key would be undefined, not null).
    expect(Object.values(paymentStatusByEvent).every((status) => status === null || (paymentStatuses as readonly string[]).includes(status))).toBe(true);
  });
});

describe('transfer status ordering', () => {
  const rows: [current: TransferStatus, next: TransferStatus, apply: boolean][] = [
    ['PENDING', 'BANK_PROCESSING', true],
    ['PENDING', 'DONE', true],
    ['PENDING', 'CANCELLED', true],
    ['BANK_PROCESSING', 'DONE', true],
    ['BANK_PROCESSING', 'FAILED', true],
    ['BANK_PROCESSING', 'PENDING', false],
    ['DONE', 'FAILED', false],
    ['DONE', 'PENDING', false],
    ['FAILED', 'DONE', false],
    ['CANCELLED', 'DONE', false],
    ['PENDING', 'PENDING', false],
  ];
  it.each(rows)('%s -> %s applies: %s', (current, next, apply) => {
    expect(shouldApplyTransferStatus(current, next)).toBe(apply);
  });

  it('has exactly three final statuses, and events map onto statuses', () => {
    expect(transferStatuses.filter(isFinalTransferStatus)).toEqual(['DONE', 'FAILED', 'CANCELLED']);
    expect(transferStatusByEvent.TRANSFER_IN_BANK_PROCESSING).toBe('BANK_PROCESSING');
    expect(transferStatusByEvent.TRANSFER_CREATED).toBe('PENDING');
  });
});

describe('what a gateway status means (gateway/status.ts), asked by every path that moves money', () => {
  it('payoutOutcome: DONE paid, FAILED and CANCELLED failed, the rest (and anything unknown) open', () => {
    expect(transferStatuses.map((status) => [status, payoutOutcome(status)])).toEqual([
      ['PENDING', 'open'],
      ['BANK_PROCESSING', 'open'],
      ['BLOCKED', 'open'],
      ['DONE', 'paid'],
      ['FAILED', 'failed'],
      ['CANCELLED', 'failed'],
    ]);
    expect(payoutOutcome('SOMETHING_NEW')).toBe('open');
    expect(payoutOutcome('UNKNOWN')).toBe('open');
  });

  it('paymentOutcome agrees with isPaidPaymentStatus and isFailedPaymentStatus, and an unknown status is open', () => {
    for (const status of paymentStatuses) {
      expect([status, paymentOutcome(status)]).toEqual([status, isPaidPaymentStatus(status) ? 'paid' : isFailedPaymentStatus(status) ? 'failed' : 'open']);
    }
    expect(paymentOutcome('SOMETHING_NEW')).toBe('open');
    expect(paymentStatuses.filter((status) => !paymentStatusDecides(status))).toEqual(['PENDING', 'AWAITING_RISK_ANALYSIS']);
  });

  const transferRows: [event: string, gateway: string, contradicts: boolean][] = [
    ['DONE', 'DONE', false],
    ['FAILED', 'FAILED', false],
    ['FAILED', 'CANCELLED', false],
    ['CANCELLED', 'FAILED', false],
    // The case: a TRANSFER_FAILED about a transfer the gateway paid out.
    ['FAILED', 'DONE', true],
    ['DONE', 'FAILED', true],
    ['DONE', 'CANCELLED', true],
    // A final event about a transfer the gateway still holds open is premature or false.
    ['DONE', 'BANK_PROCESSING', true],
    ['FAILED', 'PENDING', true],
  ];
  it.each(transferRows)('a transfer event %s read back as %s contradicts: %s', (event, gateway, contradicts) => {
    expect(payoutEventContradicts(event, gateway)).toBe(contradicts);
  });

  const paymentRows: [event: PaymentStatus, gateway: PaymentStatus, contradicts: boolean][] = [
    ['RECEIVED', 'RECEIVED', false],
    // The gateway moved on since the event: no contradiction.
    ['RECEIVED', 'CONFIRMED', false],
    ['CONFIRMED', 'RECEIVED', false],
    ['RECEIVED', 'REFUNDED', false],
    ['OVERDUE', 'RECEIVED', false],
    ['OVERDUE', 'DELETED', false],
    ['PENDING', 'DELETED', false],
    ['DELETED', 'DELETED', false],
    // A payment the gateway never took, a cancellation it never made, a refund of nothing.
    ['RECEIVED', 'PENDING', true],
    ['CONFIRMED', 'OVERDUE', true],
    ['RECEIVED', 'DELETED', true],
    ['DELETED', 'PENDING', true],
    ['DELETED', 'RECEIVED', true],
    ['REFUNDED', 'CONFIRMED', true],
    ['OVERDUE', 'PENDING', true],
  ];
  it.each(paymentRows)('a payment event %s read back as %s contradicts: %s', (event, gateway, contradicts) => {
    expect(paymentEventContradicts(event, gateway)).toBe(contradicts);
  });

  it('a status read back as itself never contradicts the event that announced it', () => {
    for (const status of paymentStatuses) expect(paymentEventContradicts(status, status)).toBe(false);
    for (const status of transferStatuses) expect(payoutEventContradicts(status, status)).toBe(false);
  });
});
