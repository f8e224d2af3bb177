/**
 * The gateway audit's rules (docs/reconciliation.md, "The gateway audit"), as pure code: which
 * mismatches between the gateway's lists and our books it reports, how grave each is, and when
 * the one repair it makes is safe. What a gateway status means (paid, failed, open) is the
 * gateway adapter's word (gateway/status.ts `payoutOutcome`, `paymentOutcome`); the rules here
 * take that outcome, never a raw status.
 */

/** What the gateway adapter says a status means. */
export type Outcome = 'paid' | 'failed' | 'open';

export const auditFindings = {
  FAILED_REDEMPTION_PAID: {
    severity: 'high',
    text: 'a FAILED redemption whose transfer the gateway paid out: the bearer was paid, the PLC reverted and redeemable again',
  },
  SETTLED_REDEMPTION_UNPAID: {
    severity: 'high',
    text: 'a SETTLED redemption whose transfer the gateway did not pay out (or does not know): the bearer was not paid',
  },
  PLC_PAID_TWICE: { severity: 'critical', text: 'two or more paid transfers for one PLC: it was paid out more than once' },
  UNKNOWN_PAYOUT: { severity: 'critical', text: 'a paid transfer no redemption of ours accounts for: money left the account unbooked' },
  PAYOUT_AMOUNT_DIFFERS: { severity: 'high', text: "a transfer whose amount differs from its redemption's payout (amount less fee)" },
  FAILED_CHARGE_PAID: { severity: 'high', text: 'a FAILED charge whose payment the gateway received: the payer paid, the owner was not credited' },
  SETTLED_CHARGE_UNPAID: { severity: 'high', text: 'a SETTLED charge whose payment the gateway does not hold as paid: the owner was credited for nothing' },
  SETTLED_CHARGE_REFUNDED: {
    severity: 'medium',
    text: 'a SETTLED charge refunded at the gateway afterwards: the owner keeps a credit the payer got back (clawback is a person\'s decision)',
  },
  CHARGE_PAID_TWICE: { severity: 'high', text: 'two or more paid payments for one charge: the payer paid twice' },
  UNKNOWN_PAYMENT: { severity: 'medium', text: 'a paid payment no charge of ours accounts for: money arrived unbooked' },
  CHARGE_AMOUNT_DIFFERS: { severity: 'high', text: "a payment whose amount differs from its charge's" },
} as const satisfies Record<string, { severity: 'low' | 'medium' | 'high' | 'critical'; text: string }>;

export type AuditFinding = keyof typeof auditFindings;

/** An item's key: the finding and what it is about, stable across the run's retries. */
export function findingKey(finding: AuditFinding, subject: string): string {
  return `${finding}/${subject}`;
}

/** The risk flag's dedupe key: the same mismatch seen by every run is one flag seen many times. */
export function findingFlagKey(finding: AuditFinding, subject: string): string {
  return `gateway-audit:${finding}:${subject}`;
}

/** A redemption's state against the transfer attributed to it, as the audit reads both again. */
export function redemptionFinding(redemptionStatus: string, transferOutcome: Outcome | null): AuditFinding | null {
  if (redemptionStatus === 'FAILED' && transferOutcome === 'paid') return 'FAILED_REDEMPTION_PAID';
  if (redemptionStatus === 'SETTLED' && transferOutcome !== 'paid') return 'SETTLED_REDEMPTION_UNPAID';
  return null;
}

/**
 * A charge's state against its payment. A refund or a chargeback after settlement moves the
 * payment out of `paid` without the charge ever having been wrong when it settled: reported apart.
 */
export function chargeFinding(chargeStatus: string, paymentOutcome: Outcome | null, paymentStatus: string | null): AuditFinding | null {
  if (chargeStatus === 'FAILED' && paymentOutcome === 'paid') return 'FAILED_CHARGE_PAID';
  if (chargeStatus === 'SETTLED' && paymentOutcome !== 'paid') {
    return paymentStatus !== null && afterPaymentStatuses.includes(paymentStatus) ? 'SETTLED_CHARGE_REFUNDED' : 'SETTLED_CHARGE_UNPAID';
  }
  return null;
}

/** Statuses a payment reaches only after it was paid: a refund, a chargeback. */
const afterPaymentStatuses: readonly string[] = [
  'REFUND_REQUESTED',
  'REFUND_IN_PROGRESS',
  'REFUNDED',
  'CHARGEBACK_REQUESTED',
  'CHARGEBACK_DISPUTE',
  'AWAITING_CHARGEBACK_REVERSAL',
];

/** What the repair of a FAILED redemption the gateway paid out needs to be true, read under the rows' locks. */
export interface PaidFailedRedemptionFacts {
  redemptionStatus: string;
  /** The transfer is the one the redemption recorded, or it recorded none and the transfer names it. */
  transferIsItsOwn: boolean;
  transferAmountMinor: bigint;
  expectedAmountMinor: bigint;
  plcStatus: string;
  /** The PLC's redemption mark (another redemption in flight or settled holds it). */
  plcRedemptionId: string | null;
  /** Another redemption of the PLC is in flight or settled. */
  otherLiveRedemption: boolean;
}

/**
 * Whether booking the settlement is safe: the redemption failed and its own transfer went out
 * for exactly its payout, and the PLC is as the failure left it (TRANSFERRED, its PROMISED
 * restored to the issuer, no other redemption in flight or settled). Then the money the failure
 * returned to the issuer's PROMISED is the money the gateway paid out: the repair books the
 * failure's reversal and the settlement, and closes the PLC as REDEEMED. Anything else (the PLC
 * expired, was cancelled or redeemed again; the amounts differ) is a person's to judge.
 */
export function paidFailedRepair(facts: PaidFailedRedemptionFacts): { safe: true } | { safe: false; why: string } {
  if (facts.redemptionStatus !== 'FAILED') return { safe: false, why: `the redemption is ${facts.redemptionStatus} now` };
  if (!facts.transferIsItsOwn) return { safe: false, why: 'the transfer is not the one the redemption recorded' };
  if (facts.transferAmountMinor !== facts.expectedAmountMinor) {
    return { safe: false, why: `the transfer paid ${facts.transferAmountMinor.toString()}, the payout was ${facts.expectedAmountMinor.toString()} (minor units)` };
  }
  if (facts.plcStatus !== 'TRANSFERRED') return { safe: false, why: `the PLC is ${facts.plcStatus}: its promise was released or paid otherwise` };
  if (facts.plcRedemptionId !== null || facts.otherLiveRedemption) {
    return { safe: false, why: 'another redemption of the PLC is in flight or settled: it may have been paid out twice' };
  }
  return { safe: true };
}

/** The audit's window when a run was started without one (from the Temporal CLI): two days. */
export const auditLookbackDaysDefault = 2;

/**
 * The first day of the audit's window: the gateway's calendar date (America/Sao_Paulo) `days`
 * days before `at`, YYYY-MM-DD.
 */
export function auditWindowStart(at: Date, days: number): string {
  const today = new Intl.DateTimeFormat('en-CA', { timeZone: 'America/Sao_Paulo', year: 'numeric', month: '2-digit', day: '2-digit' }).format(at);
  return new Date(Date.parse(`${today}T00:00:00Z`) - days * 86_400_000).toISOString().slice(0, 10);
}
