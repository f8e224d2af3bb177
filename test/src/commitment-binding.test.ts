import { ed25519 } from '@noble/curves/ed25519.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { bindCommitment, doubleIssueEvidence, doubleIssueFlagKey, type RegisteredCommitment } from '../../src/plc/commitment-binding.ts';
import { compensationPlan } from '../../src/reconciliation/ledger-repairs.ts';
import { payoutMinorOf } from '../../src/settlement/payout.ts';
import { bytesToHex, hexToBytes, type Plc } from '../../src/protocol/index.ts';
import { issue, newWallet } from '../support/wallet.ts';

function registeredOf(plc: Plc): RegisteredCommitment {
  const c = plc.commitment;
  return {
    tokenId: c.tokenId,
    version: '2.0',
    issuerPubkey: bytesToHex(c.issuerPublicKey),
    amountMinor: c.amountMinor,
    currency: c.currency,
    createdAtMs: c.createdAtMs,
    expiresAtMs: c.expiresAtMs,
    nonce: bytesToHex(c.nonce),
    commitmentHash: bytesToHex(plc.commitmentHash),
    signature: bytesToHex(plc.issuerSignature),
  };
}

describe('bindCommitment: the registered commitment is the only one', () => {
  const issuer = newWallet();
  const tokenId = randomUUID();
  const registered = issue(issuer, { tokenId, amountMinor: 200_000n });

  it('the registered PLC binds', () => {
    expect(bindCommitment(registeredOf(registered), registered)).toEqual({ kind: 'same' });
  });

  it("another key's commitment under the token id is foreign, whatever its amount", () => {
    const stranger = newWallet();
    for (const amountMinor of [1n, 200_000n, 10n ** 15n]) {
      expect(bindCommitment(registeredOf(registered), issue(stranger, { tokenId, amountMinor }))).toEqual({ kind: 'foreign', presentedIssuerPubkey: stranger.pubkey });
    }
  });

  it("the issuer's second commitment is a double issue, with a proof an outsider can check from the bytes alone", () => {
    const second = issue(issuer, { tokenId, amountMinor: 302n });
    expect(bindCommitment(registeredOf(registered), second)).toEqual({ kind: 'double_issue', issuerPubkey: issuer.pubkey });
    const evidence = doubleIssueEvidence(registeredOf(registered), second);
    for (const side of ['registered', 'presented'] as const) {
      const bytes = hexToBytes(evidence[`${side}_commitment`], 118);
      expect(bytesToHex(sha256(bytes))).toBe(evidence[`${side}_commitment_hash`]);
      expect(ed25519.verify(hexToBytes(evidence[`${side}_signature`], 64), sha256(bytes), hexToBytes(issuer.pubkey, 32))).toBe(true);
    }
    expect(evidence.registered_commitment).not.toBe(evidence.presented_commitment);
    // The registered canonical form is rebuilt from the stored columns exactly.
    expect(evidence.registered_commitment_hash).toBe(bytesToHex(registered.commitmentHash));
    expect(doubleIssueFlagKey(evidence)).toBe(`double-issue:${tokenId}:${evidence.presented_commitment_hash}`);
  });
});

describe('payouts and compensations', () => {
  it('a payout is the registered amount less the fee priced on it, never negative', () => {
    expect(payoutMinorOf(200_000n, 550n)).toBe(199_450n);
    expect(payoutMinorOf(550n, 550n)).toBe(0n);
    expect(() => payoutMinorOf(302n, 550n)).toThrow(/assertion failed/);
    expect(() => payoutMinorOf(302n, -1n)).toThrow(/assertion failed/);
  });

  it("a compensation takes the registered amount, or what the issuer has, and nothing from an empty account", () => {
    const base = { evidenceId: randomUUID(), tokenId: randomUUID(), issuerId: 'alice', bearerId: 'bob', currency: 'BRL' as const, amountMinor: 700n };
    expect(compensationPlan({ ...base, issuerAvailableMinor: 5_000n })).toMatchObject({ amountMinor: 700n, ownerId: 'bob', bucket: 'AVAILABLE', txType: 'RECONCILIATION' });
    expect(compensationPlan({ ...base, issuerAvailableMinor: 300n })).toMatchObject({ amountMinor: 300n });
    expect(compensationPlan({ ...base, issuerAvailableMinor: 0n })).toBeNull();
    expect(compensationPlan({ ...base, issuerAvailableMinor: -5n })).toBeNull();
    expect(compensationPlan({ ...base, issuerAvailableMinor: 5_000n })?.idempotencyKey).toBe(`plc-evidence:${base.evidenceId}:compensate`);
  });
});
