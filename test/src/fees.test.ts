import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { exampleFeeConsent } from '../../api/schemas/examples.ts';
import { b2bPlans } from '../../src/b2b/plans.ts';
import { feeConsentMessage, signFeeConsent, verifyFeeConsent } from '../../src/fees/consent.ts';
import { checkRules, computeFee, feeRails, feeTiers, proportionalMinor, quotePlan, ruleFor, type FeeRule } from '../../src/fees/schedule.ts';
import { isBalanced, moneyModel } from '../../src/ledger/money-model.ts';
import { bytesToHex, generateKeyPair, hexToBytes } from '../../src/protocol/index.ts';

/** The fee rules of docs/limits-and-fees.md ("Fees") as tables, and the property net + fee = gross. */

// Version 1 as migration 26_fees seeds it.
const version1: FeeRule[] = [
  { rail: 'PIX', tier: null, fixedMinor: 0n, rateBps: 0, minMinor: 0n, maxMinor: null },
  { rail: 'BOLETO', tier: null, fixedMinor: 350n, rateBps: 50, minMinor: 200n, maxMinor: 1500n },
  { rail: 'BOLETO', tier: 'STANDARD', fixedMinor: 300n, rateBps: 25, minMinor: 200n, maxMinor: 1500n },
  { rail: 'BOLETO', tier: 'TRUSTED', fixedMinor: 250n, rateBps: 0, minMinor: 200n, maxMinor: 1500n },
  { rail: 'BOLETO', tier: 'PREMIUM', fixedMinor: 200n, rateBps: 0, minMinor: 200n, maxMinor: 1500n },
];

describe('proportionalMinor: amount x bps / 10,000, half up', () => {
  it.each([
    [0n, 50, 0n],
    [1n, 5000, 1n], // 0.5: an exact half goes up
    [1n, 4999, 0n],
    [500n, 50, 3n], // 2.5 -> 3
    [499n, 50, 2n], // 2.495 -> 2
    [1002n, 25, 3n], // 2.505 -> 3
    [99n, 25, 0n], // 0.2475 -> 0
    [10_000n, 10_000, 10_000n],
    [123_456_789n, 1, 12_346n], // 12,345.6789 -> 12,346
  ])('%s minor at %s bps -> %s', (amount, bps, expected) => {
    expect(proportionalMinor(amount, bps)).toBe(expected);
  });

  it('refuses a rate outside 0..10,000 and a negative amount (programmer errors)', () => {
    expect(() => proportionalMinor(1n, 10_001)).toThrow();
    expect(() => proportionalMinor(-1n, 1)).toThrow();
    expect(() => proportionalMinor(1n, 1.5)).toThrow();
  });
});

describe('the rule a tier pays: its own, else the rail default', () => {
  it.each([
    ['PIX', 'BASIC', null],
    ['PIX', 'PREMIUM', null],
    ['BOLETO', 'BASIC', null],
    ['BOLETO', 'STANDARD', 'STANDARD'],
    ['BOLETO', 'TRUSTED', 'TRUSTED'],
    ['BOLETO', 'PREMIUM', 'PREMIUM'],
  ] as const)('%s %s -> the %s row', (rail, tier, row) => {
    expect(ruleFor(version1, rail, tier)?.tier).toBe(row);
  });

  it('a rail without a rule has none (priced 0 by the service)', () => {
    expect(ruleFor(version1.filter((rule) => rule.rail !== 'BOLETO'), 'BOLETO', 'TRUSTED')).toBeNull();
  });
});

describe('computeFee (the doc table, version 1)', () => {
  it.each([
    ['PIX', 'BASIC', 2500n, 0n, 2500n, null],
    ['BOLETO', 'BASIC', 15_000n, 425n, 14_575n, null],
    ['BOLETO', 'BASIC', 1n, 1n, 0n, 'AMOUNT'],
    ['BOLETO', 'BASIC', 500_000n, 1500n, 498_500n, 'MAX'],
    ['BOLETO', 'STANDARD', 99n, 99n, 0n, 'AMOUNT'],
    ['BOLETO', 'STANDARD', 1002n, 303n, 699n, null],
    ['BOLETO', 'BASIC', 500n, 353n, 147n, null],
    ['BOLETO', 'PREMIUM', 10_000n, 200n, 9800n, null],
  ] as const)('%s %s %s -> fee %s, net %s, bound %s', (rail, tier, amount, fee, net, bound) => {
    const result = computeFee(ruleFor(version1, rail, tier)!, amount);
    expect(result).toMatchObject({ feeMinor: fee, netMinor: net, bound });
  });

  it('raises to the minimum', () => {
    expect(computeFee({ fixedMinor: 0n, rateBps: 10, minMinor: 150n, maxMinor: null }, 10_000n)).toMatchObject({ feeMinor: 150n, bound: 'MIN', proportionalMinor: 10n });
  });
});

describe('checkRules', () => {
  it.each([
    [version1, null],
    [[...version1, version1[0]!], 'two rules for PIX/*'],
    [[{ ...version1[1]!, rateBps: 10_001 }], 'BOLETO/*: rate_bps out of 0..10000'],
    [[{ ...version1[1]!, maxMinor: 100n }], 'BOLETO/*: max below min'],
    [[{ ...version1[1]!, fixedMinor: -1n }], 'BOLETO/*: negative amounts'],
    [[{ ...version1[1]!, rail: 'TED' as 'PIX' }], 'unknown rail TED'],
    [[{ ...version1[1]!, tier: 'DIAMOND' as 'TRUSTED' }], 'unknown tier DIAMOND'],
  ])('%# -> %s', (rules, problem) => {
    expect(checkRules(rules)).toBe(problem);
  });
});

describe('property: net + fee = gross, fee within [0, gross], the settlement posting balanced', () => {
  const rule = fc
    .record({
      fixedMinor: fc.bigInt({ min: 0n, max: 1_000_000n }),
      rateBps: fc.integer({ min: 0, max: 10_000 }),
      minMinor: fc.bigInt({ min: 0n, max: 1_000_000n }),
      extra: fc.option(fc.bigInt({ min: 0n, max: 1_000_000n })),
    })
    .map(({ extra, ...rest }) => ({ ...rest, maxMinor: extra === null ? null : rest.minMinor + extra }));
  const amount = fc.bigInt({ min: 1n, max: 10n ** 15n });

  it('for every amount and rule', () => {
    fc.assert(
      fc.property(rule, amount, (r, gross) => {
        const { feeMinor, netMinor, proportionalMinor: proportional } = computeFee(r, gross);
        expect(netMinor + feeMinor).toBe(gross);
        expect(feeMinor >= 0n && feeMinor <= gross).toBe(true);
        if (r.maxMinor !== null) expect(feeMinor <= r.maxMinor).toBe(true);
        if (gross >= r.minMinor) expect(feeMinor >= r.minMinor).toBe(true);
        // half up: |proportional - exact| <= 1/2 minor unit, i.e. |2 x (p x 10,000 - amount x bps)| <= 10,000
        const error = proportional * 10_000n - gross * BigInt(r.rateBps);
        expect(error * 2n <= 10_000n && error * 2n > -10_000n).toBe(true);
        const posting = moneyModel.redeemSettled({ bearerId: 'b', currency: 'BRL', amountMinor: gross, feeMinor });
        expect(isBalanced(posting.entries)).toBe(true);
        expect(posting.entries.find((entry) => entry.ownerId === 'system:fees')?.amountMinor ?? 0n).toBe(feeMinor);
        expect(posting.entries.find((entry) => entry.ownerId === 'system:world')?.amountMinor ?? 0n).toBe(netMinor);
      }),
      { numRuns: 2000 },
    );
  });

  it('for every amount, rail and tier of version 1', () => {
    fc.assert(
      fc.property(amount, fc.constantFrom(...feeRails), fc.constantFrom(...feeTiers), (gross, rail, tier) => {
        const { feeMinor, netMinor } = computeFee(ruleFor(version1, rail, tier)!, gross);
        expect(netMinor + feeMinor).toBe(gross);
        expect(feeMinor <= 1500n).toBe(true);
      }),
    );
  });
});

describe('the signed consent', () => {
  const bob = generateKeyPair(new Uint8Array(32).fill(0x02));

  it('the test vector of docs/limits-and-fees.md (the request example) verifies', () => {
    const signed = signFeeConsent({ deviceId: 'device-7f3a9c', scheduleVersion: 1, operationTimestampMs: 1768479000000 }, bob.secretKey);
    expect(feeConsentMessage(signed)).toBe(`svc:fee-consent:device-7f3a9c:${bytesToHex(bob.publicKey)}:1:1768479000000`);
    expect(exampleFeeConsent.public_key).toBe(bytesToHex(bob.publicKey));
    expect(exampleFeeConsent.device_signature).toBe(bytesToHex(signed.signature));
    expect(verifyFeeConsent(signed)).toBe(true);
  });

  it('does not verify for another version, device, time or key', () => {
    const signed = signFeeConsent({ deviceId: 'd1', scheduleVersion: 2, operationTimestampMs: 1_800_000_000_000 }, bob.secretKey);
    expect(verifyFeeConsent({ ...signed, scheduleVersion: 3 })).toBe(false);
    expect(verifyFeeConsent({ ...signed, deviceId: 'd2' })).toBe(false);
    expect(verifyFeeConsent({ ...signed, operationTimestampMs: 1_800_000_000_001 })).toBe(false);
    expect(verifyFeeConsent({ ...signed, publicKey: generateKeyPair().publicKey })).toBe(false);
    expect(verifyFeeConsent({ ...signed, deviceId: 'a:b' })).toBe(false);
    expect(verifyFeeConsent({ ...signed, signature: hexToBytes('00'.repeat(64), 64) })).toBe(false);
  });
});

describe('B2B quotes from the plans', () => {
  it.each([
    // plan, count, average, per redemption, total
    ['STARTER', 1_000, 4250n, 44n, 44_000n], // 10 + 34 (42.50 x 0.8%)
    ['BUSINESS', 25_000, 4250n, 25n, 19_900n + 625_000n], // 6 + 19.125 -> 19
    ['ENTERPRISE', 25_000, 4250n, 22n, 99_900n + 550_000n], // 5 + 17
    ['ENTERPRISE', 2_000_000, 10_000n, 23n, 99_900n + 46_000_000n], // 3 + 20
  ] as const)('%s at %s a month of %s -> %s each, %s a month', (id, count, average, per, total) => {
    const quote = quotePlan(b2bPlans[id], count, average);
    expect(quote.available).toBe(true);
    if (quote.available) expect([quote.perRedemptionMinor, quote.totalMinor]).toEqual([per, total]);
  });

  it('a plan above its cap says so', () => {
    const quote = quotePlan(b2bPlans.STARTER, 2_001, 100n);
    expect(quote).toMatchObject({ available: false });
  });
});
