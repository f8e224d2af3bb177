import { assert } from '../errors.ts';
import type { Currency } from '../money/currency.ts';

/**
 * The money model (DESIGN.md section 3) as data: each business event becomes a list of entries
 * that sums to zero per currency. Debits are negative (value out of a bucket), credits positive.
 * Nothing else decides which buckets an event touches; the posting primitive in `db/ledger.ts`
 * books exactly these entries.
 */

export const buckets = ['AVAILABLE', 'HELD', 'PENDING', 'PROMISED'] as const;
export type Bucket = (typeof buckets)[number];

export const txTypes = [
  'DEPOSIT',
  'CHARGE_CREATED',
  'CHARGE_SETTLED',
  'CHARGE_FAILED',
  'PLC_ISSUED',
  'PLC_CANCELLED',
  'PLC_EXPIRED',
  'REDEEM_REQUESTED',
  'REDEEM_SETTLED',
  'REDEEM_FAILED',
  'RISK_HOLD',
  'RISK_RELEASE',
  'RECONCILIATION',
] as const;
export type TxType = (typeof txTypes)[number];

/** System accounts; user owner ids cannot contain ':' so they can never collide with these. */
export const worldOwnerId = 'system:world';
export const feesOwnerId = 'system:fees';
export const systemOwnerIds = [worldOwnerId, feesOwnerId] as const;
export const ownerIdPattern = /^[A-Za-z0-9._-]{1,128}$/;

export function isSystemOwner(ownerId: string): boolean {
  return (systemOwnerIds as readonly string[]).includes(ownerId);
}

export interface Entry {
  ownerId: string;
  bucket: Bucket;
  currency: Currency;
  /** Signed: negative takes value out of the bucket, positive puts it in. */
  amountMinor: bigint;
}

export interface Posting {
  txType: TxType;
  entries: Entry[];
}

/** Moves `amountMinor` from one bucket to another. */
function move(
  txType: TxType,
  currency: Currency,
  amountMinor: bigint,
  from: { ownerId: string; bucket: Bucket },
  to: { ownerId: string; bucket: Bucket },
): Posting {
  assert(amountMinor > 0n, 'a move carries a positive amount');
  return {
    txType,
    entries: [
      { ownerId: from.ownerId, bucket: from.bucket, currency, amountMinor: -amountMinor },
      { ownerId: to.ownerId, bucket: to.bucket, currency, amountMinor },
    ],
  };
}

interface Amount {
  currency: Currency;
  amountMinor: bigint;
}

export const moneyModel = {
  /** Cash-in expected: the world owes the owner, both sides PENDING. */
  chargeCreated: ({ ownerId, currency, amountMinor }: Amount & { ownerId: string }): Posting =>
    move('CHARGE_CREATED', currency, amountMinor, { ownerId: worldOwnerId, bucket: 'PENDING' }, { ownerId, bucket: 'PENDING' }),

  /** Cash-in received: the owner's PENDING becomes AVAILABLE, the world's AVAILABLE pays for it. */
  chargeSettled: ({ ownerId, currency, amountMinor }: Amount & { ownerId: string }): Posting => {
    assert(amountMinor > 0n, 'a settlement carries a positive amount');
    return {
      txType: 'CHARGE_SETTLED',
      entries: [
        { ownerId, bucket: 'PENDING', currency, amountMinor: -amountMinor },
        { ownerId: worldOwnerId, bucket: 'AVAILABLE', currency, amountMinor: -amountMinor },
        { ownerId: worldOwnerId, bucket: 'PENDING', currency, amountMinor },
        { ownerId, bucket: 'AVAILABLE', currency, amountMinor },
      ],
    };
  },

  /** Cash-in failed (overdue, refunded, cancelled): the expectation is withdrawn. */
  chargeFailed: ({ ownerId, currency, amountMinor }: Amount & { ownerId: string }): Posting =>
    move('CHARGE_FAILED', currency, amountMinor, { ownerId, bucket: 'PENDING' }, { ownerId: worldOwnerId, bucket: 'PENDING' }),

  deposit: ({ ownerId, currency, amountMinor }: Amount & { ownerId: string }): Posting =>
    move('DEPOSIT', currency, amountMinor, { ownerId: worldOwnerId, bucket: 'AVAILABLE' }, { ownerId, bucket: 'AVAILABLE' }),

  plcIssued: ({ issuerId, currency, amountMinor }: Amount & { issuerId: string }): Posting =>
    move('PLC_ISSUED', currency, amountMinor, { ownerId: issuerId, bucket: 'AVAILABLE' }, { ownerId: issuerId, bucket: 'PROMISED' }),

  plcCancelled: ({ issuerId, currency, amountMinor }: Amount & { issuerId: string }): Posting =>
    move('PLC_CANCELLED', currency, amountMinor, { ownerId: issuerId, bucket: 'PROMISED' }, { ownerId: issuerId, bucket: 'AVAILABLE' }),

  plcExpired: ({ issuerId, currency, amountMinor }: Amount & { issuerId: string }): Posting =>
    move('PLC_EXPIRED', currency, amountMinor, { ownerId: issuerId, bucket: 'PROMISED' }, { ownerId: issuerId, bucket: 'AVAILABLE' }),

  redeemRequested: ({ issuerId, bearerId, currency, amountMinor }: Amount & { issuerId: string; bearerId: string }): Posting =>
    move('REDEEM_REQUESTED', currency, amountMinor, { ownerId: issuerId, bucket: 'PROMISED' }, { ownerId: bearerId, bucket: 'PENDING' }),

  /** Payout done: the bearer's PENDING leaves the platform; any fee goes to the fees account. */
  redeemSettled: ({ bearerId, currency, amountMinor, feeMinor }: Amount & { bearerId: string; feeMinor: bigint }): Posting => {
    assert(amountMinor > 0n && feeMinor >= 0n && feeMinor <= amountMinor, 'fee within the amount');
    const entries: Entry[] = [
      { ownerId: bearerId, bucket: 'PENDING', currency, amountMinor: -amountMinor },
      { ownerId: worldOwnerId, bucket: 'AVAILABLE', currency, amountMinor: amountMinor - feeMinor },
    ];
    if (feeMinor > 0n) entries.push({ ownerId: feesOwnerId, bucket: 'AVAILABLE', currency, amountMinor: feeMinor });
    return { txType: 'REDEEM_SETTLED', entries: entries.filter((entry) => entry.amountMinor !== 0n) };
  },

  redeemFailed: ({ issuerId, bearerId, currency, amountMinor }: Amount & { issuerId: string; bearerId: string }): Posting =>
    move('REDEEM_FAILED', currency, amountMinor, { ownerId: bearerId, bucket: 'PENDING' }, { ownerId: issuerId, bucket: 'PROMISED' }),

  /**
   * An operator's compensation of a bearer whose PLC its issuer cancelled after signing it over
   * (issue 32; reconcile tool compensate-cancelled-bearers): from the issuer's AVAILABLE to the
   * bearer's, never more than the issuer has (the caller caps it; the ledger refuses a negative bucket).
   */
  bearerCompensated: ({ issuerId, bearerId, currency, amountMinor }: Amount & { issuerId: string; bearerId: string }): Posting =>
    move('RECONCILIATION', currency, amountMinor, { ownerId: issuerId, bucket: 'AVAILABLE' }, { ownerId: bearerId, bucket: 'AVAILABLE' }),

  riskHold: ({ ownerId, currency, amountMinor }: Amount & { ownerId: string }): Posting =>
    move('RISK_HOLD', currency, amountMinor, { ownerId, bucket: 'AVAILABLE' }, { ownerId, bucket: 'HELD' }),

  riskRelease: ({ ownerId, currency, amountMinor }: Amount & { ownerId: string }): Posting =>
    move('RISK_RELEASE', currency, amountMinor, { ownerId, bucket: 'HELD' }, { ownerId, bucket: 'AVAILABLE' }),
} as const;

/** Sum per currency; a valid posting has every sum zero, at least two entries and no zero entry. */
export function isBalanced(entries: readonly Entry[]): boolean {
  if (entries.length < 2) return false;
  if (entries.some((entry) => entry.amountMinor === 0n)) return false;
  const sums = new Map<string, bigint>();
  for (const entry of entries) sums.set(entry.currency, (sums.get(entry.currency) ?? 0n) + entry.amountMinor);
  return [...sums.values()].every((sum) => sum === 0n);
}
