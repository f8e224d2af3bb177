/**
 * Unit tests of the money model (DESIGN.md section 3): every builder books exactly the legs of the
 * design table, with the signs the posting function relies on (negative = value out of a bucket),
 * balanced per currency; `isBalanced` refuses what the database would refuse as unbalanced; the
 * builders refuse non-positive amounts; `redeemSettled` splits a fee correctly.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  feesOwnerId,
  isBalanced,
  moneyModel,
  worldOwnerId,
  type Bucket,
  type Entry,
  type Posting,
  type TxType,
} from '../../src/ledger/money-model.ts';
import { amountMinorMax, currencies, type Currency } from '../../src/money/currency.ts';

type Leg = readonly [owner: string, bucket: Bucket, currency: Currency, amountMinor: bigint];

/** Entries as comparable tuples, in a canonical order: the order of legs carries no meaning. */
function legs(entries: readonly Entry[]): Leg[] {
  return entries
    .map((entry): Leg => [entry.ownerId, entry.bucket, entry.currency, entry.amountMinor])
    .sort((a, b) => `${a[0]}|${a[1]}|${a[2]}|${a[3]}`.localeCompare(`${b[0]}|${b[1]}|${b[2]}|${b[3]}`));
}

const W = worldOwnerId;
const F = feesOwnerId;

interface Row {
  name: string;
  build: () => Posting;
  txType: TxType;
  expected: Leg[];
}

// One row per builder (and per fee case of redeemSettled): the design table, leg by leg.
const rows: Row[] = [
  {
    name: 'chargeCreated: world PENDING -> owner PENDING',
    build: () => moneyModel.chargeCreated({ ownerId: 'alice', currency: 'BRL', amountMinor: 1500n }),
    txType: 'CHARGE_CREATED',
    expected: [
      [W, 'PENDING', 'BRL', -1500n],
      ['alice', 'PENDING', 'BRL', 1500n],
    ],
  },
  {
    name: 'chargeSettled: owner PENDING and world AVAILABLE -> world PENDING and owner AVAILABLE',
    build: () => moneyModel.chargeSettled({ ownerId: 'alice', currency: 'USD', amountMinor: 1500n }),
    txType: 'CHARGE_SETTLED',
    expected: [
      [W, 'AVAILABLE', 'USD', -1500n],
      [W, 'PENDING', 'USD', 1500n],
      ['alice', 'AVAILABLE', 'USD', 1500n],
      ['alice', 'PENDING', 'USD', -1500n],
    ],
  },
  {
    name: 'chargeFailed: owner PENDING -> world PENDING',
    build: () => moneyModel.chargeFailed({ ownerId: 'alice', currency: 'EUR', amountMinor: 1n }),
    txType: 'CHARGE_FAILED',
    expected: [
      [W, 'PENDING', 'EUR', 1n],
      ['alice', 'PENDING', 'EUR', -1n],
    ],
  },
  {
    name: 'deposit: world AVAILABLE -> owner AVAILABLE',
    build: () => moneyModel.deposit({ ownerId: 'bob', currency: 'BRL', amountMinor: 1000n }),
    txType: 'DEPOSIT',
    expected: [
      [W, 'AVAILABLE', 'BRL', -1000n],
      ['bob', 'AVAILABLE', 'BRL', 1000n],
    ],
  },
  {
    name: 'plcIssued: issuer AVAILABLE -> issuer PROMISED',
    build: () => moneyModel.plcIssued({ issuerId: 'bob', currency: 'BRL', amountMinor: 250n }),
    txType: 'PLC_ISSUED',
    expected: [
      ['bob', 'AVAILABLE', 'BRL', -250n],
      ['bob', 'PROMISED', 'BRL', 250n],
    ],
  },
  {
    name: 'plcCancelled: issuer PROMISED -> issuer AVAILABLE',
    build: () => moneyModel.plcCancelled({ issuerId: 'bob', currency: 'BRL', amountMinor: 250n }),
    txType: 'PLC_CANCELLED',
    expected: [
      ['bob', 'AVAILABLE', 'BRL', 250n],
      ['bob', 'PROMISED', 'BRL', -250n],
    ],
  },
  {
    name: 'plcExpired: issuer PROMISED -> issuer AVAILABLE',
    build: () => moneyModel.plcExpired({ issuerId: 'bob', currency: 'BRL', amountMinor: 250n }),
    txType: 'PLC_EXPIRED',
    expected: [
      ['bob', 'AVAILABLE', 'BRL', 250n],
      ['bob', 'PROMISED', 'BRL', -250n],
    ],
  },
  {
    name: 'redeemRequested: issuer PROMISED -> bearer PENDING',
    build: () => moneyModel.redeemRequested({ issuerId: 'bob', bearerId: 'carol', currency: 'BRL', amountMinor: 250n }),
    txType: 'REDEEM_REQUESTED',
    expected: [
      ['bob', 'PROMISED', 'BRL', -250n],
      ['carol', 'PENDING', 'BRL', 250n],
    ],
  },
  {
    name: 'redeemSettled with fee 0: bearer PENDING -> world AVAILABLE, no fees leg',
    build: () => moneyModel.redeemSettled({ bearerId: 'carol', currency: 'BRL', amountMinor: 250n, feeMinor: 0n }),
    txType: 'REDEEM_SETTLED',
    expected: [
      [W, 'AVAILABLE', 'BRL', 250n],
      ['carol', 'PENDING', 'BRL', -250n],
    ],
  },
  {
    name: 'redeemSettled with 0 < fee < amount: the world gets amount - fee, fees gets the fee',
    build: () => moneyModel.redeemSettled({ bearerId: 'carol', currency: 'BRL', amountMinor: 250n, feeMinor: 7n }),
    txType: 'REDEEM_SETTLED',
    expected: [
      [W, 'AVAILABLE', 'BRL', 243n],
      ['carol', 'PENDING', 'BRL', -250n],
      [F, 'AVAILABLE', 'BRL', 7n],
    ],
  },
  {
    name: 'redeemSettled with fee = amount: the whole amount goes to fees, no zero world leg',
    build: () => moneyModel.redeemSettled({ bearerId: 'carol', currency: 'BRL', amountMinor: 250n, feeMinor: 250n }),
    txType: 'REDEEM_SETTLED',
    expected: [
      ['carol', 'PENDING', 'BRL', -250n],
      [F, 'AVAILABLE', 'BRL', 250n],
    ],
  },
  {
    name: 'redeemFailed: bearer PENDING -> issuer PROMISED',
    build: () => moneyModel.redeemFailed({ issuerId: 'bob', bearerId: 'carol', currency: 'BRL', amountMinor: 250n }),
    txType: 'REDEEM_FAILED',
    expected: [
      ['bob', 'PROMISED', 'BRL', 250n],
      ['carol', 'PENDING', 'BRL', -250n],
    ],
  },
  {
    name: 'riskHold: owner AVAILABLE -> owner HELD',
    build: () => moneyModel.riskHold({ ownerId: 'dave', currency: 'BRL', amountMinor: 99n }),
    txType: 'RISK_HOLD',
    expected: [
      ['dave', 'AVAILABLE', 'BRL', -99n],
      ['dave', 'HELD', 'BRL', 99n],
    ],
  },
  {
    name: 'riskRelease: owner HELD -> owner AVAILABLE',
    build: () => moneyModel.riskRelease({ ownerId: 'dave', currency: 'BRL', amountMinor: 99n }),
    txType: 'RISK_RELEASE',
    expected: [
      ['dave', 'AVAILABLE', 'BRL', 99n],
      ['dave', 'HELD', 'BRL', -99n],
    ],
  },
  {
    name: 'bearerCompensated: issuer AVAILABLE -> bearer AVAILABLE',
    build: () => moneyModel.bearerCompensated({ issuerId: 'alice', bearerId: 'bob', currency: 'BRL', amountMinor: 700n }),
    txType: 'RECONCILIATION',
    expected: [
      ['alice', 'AVAILABLE', 'BRL', -700n],
      ['bob', 'AVAILABLE', 'BRL', 700n],
    ],
  },
];

describe('moneyModel builders', () => {
  it('has a table row for every builder', () => {
    const covered = new Set(rows.map((row) => row.name.split(/[ :]/)[0]));
    expect([...covered].sort()).toEqual(Object.keys(moneyModel).sort());
  });

  it.each(rows)('$name', ({ build, txType, expected }) => {
    const posting = build();
    expect(posting.txType).toBe(txType);
    expect(legs(posting.entries)).toEqual(legs(expected.map(([ownerId, bucket, currency, amountMinor]) => ({ ownerId, bucket, currency, amountMinor }))));
    expect(posting.entries.every((entry) => entry.amountMinor !== 0n)).toBe(true);
    expect(isBalanced(posting.entries)).toBe(true);
  });

  // Every builder with a generic (owner, issuer, bearer, amount) input, to run the same checks
  // over all of them.
  const anyAmount: Record<keyof typeof moneyModel, (currency: Currency, amountMinor: bigint) => Posting> = {
    chargeCreated: (currency, amountMinor) => moneyModel.chargeCreated({ ownerId: 'u1', currency, amountMinor }),
    chargeSettled: (currency, amountMinor) => moneyModel.chargeSettled({ ownerId: 'u1', currency, amountMinor }),
    chargeFailed: (currency, amountMinor) => moneyModel.chargeFailed({ ownerId: 'u1', currency, amountMinor }),
    deposit: (currency, amountMinor) => moneyModel.deposit({ ownerId: 'u1', currency, amountMinor }),
    plcIssued: (currency, amountMinor) => moneyModel.plcIssued({ issuerId: 'u1', currency, amountMinor }),
    plcCancelled: (currency, amountMinor) => moneyModel.plcCancelled({ issuerId: 'u1', currency, amountMinor }),
    plcExpired: (currency, amountMinor) => moneyModel.plcExpired({ issuerId: 'u1', currency, amountMinor }),
    redeemRequested: (currency, amountMinor) => moneyModel.redeemRequested({ issuerId: 'u1', bearerId: 'u2', currency, amountMinor }),
    redeemSettled: (currency, amountMinor) => moneyModel.redeemSettled({ bearerId: 'u2', currency, amountMinor, feeMinor: 0n }),
    redeemFailed: (currency, amountMinor) => moneyModel.redeemFailed({ issuerId: 'u1', bearerId: 'u2', currency, amountMinor }),
    riskHold: (currency, amountMinor) => moneyModel.riskHold({ ownerId: 'u1', currency, amountMinor }),
    riskRelease: (currency, amountMinor) => moneyModel.riskRelease({ ownerId: 'u1', currency, amountMinor }),
    bearerCompensated: (currency, amountMinor) => moneyModel.bearerCompensated({ issuerId: 'u1', bearerId: 'u2', currency, amountMinor }),
  };
  const builderNames = Object.keys(anyAmount) as (keyof typeof moneyModel)[];

  it.each(builderNames.flatMap((name) => [0n, -1n, -(10n ** 15n)].map((amountMinor) => ({ name, amountMinor }))))(
    '$name refuses the non-positive amount $amountMinor with an assertion error',
    ({ name, amountMinor }) => {
      expect(() => anyAmount[name]('BRL', amountMinor)).toThrow(/^assertion failed/);
    },
  );

  it('every builder, for any currency and any positive amount up to the maximum, books a balanced posting in that currency only, and moves exactly the amount out of and into buckets', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...builderNames),
        fc.constantFrom(...currencies),
        fc.bigInt({ min: 1n, max: amountMinorMax }),
        (name, currency, amountMinorValue) => {
          const posting = anyAmount[name](currency, amountMinorValue);
          expect(isBalanced(posting.entries)).toBe(true);
          expect(posting.entries.every((entry) => entry.currency === currency)).toBe(true);
          const debits = posting.entries.filter((entry) => entry.amountMinor < 0n).reduce((sum, entry) => sum - entry.amountMinor, 0n);
          // chargeSettled moves the amount twice (owner and world each swap PENDING for AVAILABLE).
          expect(debits).toBe(name === 'chargeSettled' ? 2n * amountMinorValue : amountMinorValue);
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe('moneyModel.redeemSettled fee handling', () => {
  it.each([
    { amountMinor: 250n, feeMinor: -1n, why: 'a negative fee' },
    { amountMinor: 250n, feeMinor: 251n, why: 'a fee above the amount' },
    { amountMinor: 0n, feeMinor: 0n, why: 'a zero amount' },
    { amountMinor: -5n, feeMinor: 0n, why: 'a negative amount' },
  ])('refuses $why (amount $amountMinor, fee $feeMinor) with an assertion error', ({ amountMinor, feeMinor }) => {
    expect(() => moneyModel.redeemSettled({ bearerId: 'carol', currency: 'BRL', amountMinor, feeMinor })).toThrow(/^assertion failed/);
  });

  it('for any fee within the amount, debits the bearer the full amount and splits it exactly between world and fees, with no zero leg', () => {
    fc.assert(
      fc.property(
        fc.bigInt({ min: 1n, max: amountMinorMax }).chain((amount) => fc.tuple(fc.constant(amount), fc.bigInt({ min: 0n, max: amount }))),
        ([amountMinorValue, feeMinor]) => {
          const { entries } = moneyModel.redeemSettled({ bearerId: 'carol', currency: 'EUR', amountMinor: amountMinorValue, feeMinor });
          const sumFor = (owner: string) => entries.filter((entry) => entry.ownerId === owner).reduce((sum, entry) => sum + entry.amountMinor, 0n);
          expect(sumFor('carol')).toBe(-amountMinorValue);
          expect(sumFor(F)).toBe(feeMinor);
          expect(sumFor(W)).toBe(amountMinorValue - feeMinor);
          expect(entries.some((entry) => entry.amountMinor === 0n)).toBe(false);
          expect(isBalanced(entries)).toBe(true);
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe('isBalanced', () => {
  const e = (ownerId: string, currency: Currency, amountMinor: bigint): Entry => ({ ownerId, bucket: 'AVAILABLE', currency, amountMinor });

  it.each([
    { why: 'no entries', entries: [] as Entry[] },
    { why: 'a single entry, even of zero', entries: [e('a', 'BRL', 0n)] },
    { why: 'a single non-zero entry', entries: [e('a', 'BRL', 100n)] },
    { why: 'two entries that do not cancel', entries: [e('a', 'BRL', 100n), e('b', 'BRL', -99n)] },
    { why: 'two credits', entries: [e('a', 'BRL', 100n), e('b', 'BRL', 100n)] },
    { why: 'a sum of zero across currencies but not per currency', entries: [e('a', 'BRL', 100n), e('b', 'USD', -100n)] },
    {
      why: 'one currency balanced and another not',
      entries: [e('a', 'BRL', 100n), e('b', 'BRL', -100n), e('a', 'EUR', 5n), e('b', 'EUR', -4n)],
    },
  ])('refuses $why', ({ entries }) => {
    expect(isBalanced(entries)).toBe(false);
  });

  it.each([
    { why: 'a plain pair', entries: [e('a', 'BRL', 100n), e('b', 'BRL', -100n)] },
    { why: 'several legs in one currency', entries: [e('a', 'BRL', -100n), e('b', 'BRL', 60n), e('c', 'BRL', 40n)] },
    {
      why: 'two currencies each balanced',
      entries: [e('a', 'BRL', 100n), e('b', 'BRL', -100n), e('a', 'USD', -3n), e('b', 'USD', 3n)],
    },
    { why: 'amounts beyond 2^53 (no float arithmetic)', entries: [e('a', 'BRL', 2n ** 62n + 1n), e('b', 'BRL', -(2n ** 62n + 1n))] },
  ])('accepts $why', ({ entries }) => {
    expect(isBalanced(entries)).toBe(true);
  });
});
