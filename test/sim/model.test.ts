import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { commandArbitraries, expectRedeem, expectRegister, leafCopies } from '../../scripts/sim/commands.ts';
import { Model, newWallet, relate, type PlcModel } from '../../scripts/sim/model.ts';
import { appendTransfer, bytesToHex, createPlc } from '../../src/protocol/index.ts';

/**
 * The simulation's reference model on its own (no stack): what it expects of a chain shown to the
 * service, the copies honest holders use, and that a seed fixes the generated sequence (what makes
 * `npm run sim -- --seed N --path P` a replay). The model's own defects found by the simulation's
 * runs are held here (docs/reliability.md, "The simulation", "What it found").
 */

function issued(model: Model): PlcModel {
  const issuer = newWallet();
  model.data.issuers.push(issuer);
  model.deposit(issuer.pubkey, 10_000n);
  const plc = createPlc({ issuerSecretKey: issuer.keys.secretKey, amountMinor: 500n, currency: 'BRL', createdAtMs: Date.now(), ttlHours: 24, tokenId: crypto.randomUUID() });
  const entry: PlcModel = { tokenId: plc.commitment.tokenId, issuer, amountMinor: 500n, plc, commitmentHash: bytesToHex(plc.commitmentHash), registered: plc, state: 'ISSUED', inFlight: null, copies: [{ chain: plc, holder: issuer }] };
  model.issue(entry);
  return entry;
}

describe('the simulation model', () => {
  it('books an issue as AVAILABLE -> PROMISED, a redemption as PROMISED -> PENDING, and a failure back', () => {
    const model = new Model();
    const plc = issued(model);
    expect(model.buckets(plc.issuer.pubkey)).toEqual({ available: 9_500n, pending: 0n, promised: 500n });
    const bearer = newWallet();
    const chain = appendTransfer(plc.plc, { senderSecretKey: plc.issuer.keys.secretKey, recipientPublicKey: bearer.keys.publicKey, timestampMs: Date.now() });
    model.openRedemption(plc, chain, { id: 'r1', tokenId: plc.tokenId, bearer: bearer.pubkey, issuer: plc.issuer.pubkey, amountMinor: 500n, feeMinor: 0n, pixKey: bearer.pixKey, state: 'PENDING_PAYMENT', bank: null });
    expect(plc.state).toBe('TRANSFERRED');
    expect(model.buckets(bearer.pubkey).pending).toBe(500n);
    expect(model.buckets(plc.issuer.pubkey).promised).toBe(0n);
    model.fail(model.redemption('r1')!);
    expect(model.buckets(plc.issuer.pubkey).promised).toBe(500n);
    expect(plc.inFlight).toBeNull();
  });

  it('expects a fork to be refused as a double spend that blocks the signer of the second successor', () => {
    const model = new Model();
    const plc = issued(model);
    const [a, b] = [newWallet(), newWallet()];
    const toA = appendTransfer(plc.plc, { senderSecretKey: plc.issuer.keys.secretKey, recipientPublicKey: a.keys.publicKey, timestampMs: Date.now() });
    const toB = appendTransfer(plc.plc, { senderSecretKey: plc.issuer.keys.secretKey, recipientPublicKey: b.keys.publicKey, timestampMs: Date.now() + 1 });
    model.register(plc, toA);
    expect(relate(plc, toB)).toEqual({ kind: 'fork', at: 0, culprit: plc.issuer.pubkey });
    const expected = expectRedeem(model, plc, toB, b.pubkey);
    expect(expected).toMatchObject({ ok: false, codes: ['DOUBLE_SPEND_DETECTED'] });
    expected.effects?.DOUBLE_SPEND_DETECTED?.(model);
    expect(model.isBlocked(plc.issuer.pubkey)).toBe(true);
    expect(model.data.flags).toEqual([`DOUBLE_SPEND_FORK ${plc.tokenId}`]);
    // A's own hop on, signed by A (not blocked), is still fine; a hop the blocked issuer signs is not.
    const onward = appendTransfer(toA, { senderSecretKey: a.keys.secretKey, recipientPublicKey: newWallet().keys.publicKey, timestampMs: Date.now() + 2 });
    expect(expectRegister(model, plc, onward)).toEqual({ ok: true, codes: [] });
  });

  it("expects a stranger's commitment refused, the issuer's second one refused and blocked, a cancel after a hop refused and blocked", () => {
    const model = new Model();
    const plc = issued(model);
    const stranger = newWallet();
    const own = createPlc({ issuerSecretKey: stranger.keys.secretKey, amountMinor: 5_000n, currency: 'BRL', createdAtMs: Date.now(), ttlHours: 24, tokenId: plc.tokenId });
    expect(expectRedeem(model, plc, own, stranger.pubkey)).toMatchObject({ ok: false, codes: ['PLC_MISMATCH'] });
    expect(model.isBlocked(stranger.pubkey)).toBe(false);
    const second = createPlc({ issuerSecretKey: plc.issuer.keys.secretKey, amountMinor: 600n, currency: 'BRL', createdAtMs: Date.now(), ttlHours: 24, tokenId: plc.tokenId });
    const doubled = expectRedeem(model, plc, second, plc.issuer.pubkey);
    doubled.effects?.PLC_MISMATCH?.(model);
    expect(model.isBlocked(plc.issuer.pubkey)).toBe(true);

    const other = new Model();
    const cancelled = issued(other);
    const holder = newWallet();
    const paid = appendTransfer(cancelled.plc, { senderSecretKey: cancelled.issuer.keys.secretKey, recipientPublicKey: holder.keys.publicKey, timestampMs: Date.now() });
    other.cancel(cancelled);
    expect(other.buckets(cancelled.issuer.pubkey)).toEqual({ available: 10_000n, pending: 0n, promised: 0n });
    expect(expectRedeem(other, cancelled, paid, holder.pubkey)).toMatchObject({ ok: false, codes: ['PLC_CANCELLED_AFTER_TRANSFER'] });
  });

  it('lets a stale bearer be refused as not current or as already redeemed, and an issuer not redeem its own unhopped PLC', () => {
    const model = new Model();
    const plc = issued(model);
    expect(expectRedeem(model, plc, plc.plc, plc.issuer.pubkey)).toMatchObject({ ok: false, codes: ['PLC_NOT_REDEEMABLE'] });
    const a = newWallet();
    const toA = appendTransfer(plc.plc, { senderSecretKey: plc.issuer.keys.secretKey, recipientPublicKey: a.keys.publicKey, timestampMs: Date.now() });
    const toB = appendTransfer(toA, { senderSecretKey: a.keys.secretKey, recipientPublicKey: newWallet().keys.publicKey, timestampMs: Date.now() + 1 });
    model.register(plc, toB);
    plc.copies.push({ chain: toA, holder: a }, { chain: toB, holder: model.data.issuers[0]! });
    expect(expectRedeem(model, plc, toA, a.pubkey).codes).toEqual(['NOT_CURRENT_BEARER']);
    // Honest holders use only the copies nobody continued: toA was spent by A.
    expect(leafCopies(plc).map((copy) => copy.chain.transferChain.length)).toEqual([2]);
  });

  it('generates the same sequence of operations and faults from the same seed', () => {
    const arbitrary = fc.commands(commandArbitraries({ faults: true }), { maxCommands: 60, size: 'max' });
    const sample = (seed: number) => fc.sample(arbitrary, { seed, numRuns: 5 }).map((commands) => [...commands].map(String).join('\n'));
    expect(sample(7)).toEqual(sample(7));
    expect(sample(7)).not.toEqual(sample(8));
    expect(sample(7).join('\n')).toMatch(/"kind":"fault"/);
  });
});
