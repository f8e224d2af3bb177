import { describe, expect, it } from 'vitest';
import {
  bytesToHex,
  canonicalReceiptKeyOrder,
  generateKeyPair,
  plcToJson,
  signBlocklist,
  signIssueReceipt,
  withIssueReceipt,
  type Plc,
  type ReceiptKey,
} from '../../src/protocol/index.ts';
import { attachIssueReceipt, verifyReceived, type Refusal } from '../../wallet/src/wallet-ops.ts';
import { hop, issue, newWallet } from '../support/wallet.ts';

/**
 * The browser wallet's offline receive check (wallet/src/wallet-ops.ts) and the service's issue
 * receipt (docs/protocol.md section 19): what the browser test cannot reach without a second
 * service configuration (a rotated and a revoked receipt key), and the order of the refusals.
 */
const service = generateKeyPair();
const rotatedOut = generateKeyPair();
const now = Date.UTC(2026, 11, 7, 12);
const receiver = newWallet();
const ownKeyHex = receiver.pubkey;

const backed = (issuer = newWallet(), signer = service.secretKey, issuedAtMs = now - 60_000): { plc: Plc; issuer: ReturnType<typeof newWallet> } => {
  const plc = issue(issuer, { amountMinor: 1234n, createdAtMs: now - 120_000 });
  return { plc: withIssueReceipt(plc, signIssueReceipt({ commitment: plc.commitment, serviceSecretKey: signer, issuedAtMs })), issuer };
};
const toReceiver = (plc: Plc, from: ReturnType<typeof newWallet>) => hop(plc, from, receiver, now - 30_000);
const listWith = (receiptKeys: ReceiptKey[] | undefined, blocked: Uint8Array[] = []) =>
  signBlocklist({ version: 2, publishedAtMs: now - 10_000, keys: blocked, receiptKeys: receiptKeys === undefined ? undefined : canonicalReceiptKeyOrder(receiptKeys) }, service.secretKey);
const check = (plc: Plc, blocklist = listWith([{ publicKey: service.publicKey, validFromMs: 0, validUntilMs: now + 1e9 }])) =>
  verifyReceived(plc, { ownKeyHex, nowMs: now, blocklist, trustedServiceKey: service.publicKey, known: undefined });
const reasonOf = (verdict: ReturnType<typeof check>) => (verdict.ok ? 'accepted' : `${verdict.code}/${(verdict as Refusal).reason ?? ''}`);

describe('browser wallet: the issue receipt offline', () => {
  it('accepts a PLC whose receipt a trusted key signed, with or without a kept blocklist', () => {
    const { plc, issuer } = backed();
    expect(reasonOf(check(toReceiver(plc, issuer)))).toBe('accepted');
    // No list kept yet: the trusted service key is the one receipt key.
    expect(verifyReceived(toReceiver(plc, issuer), { ownKeyHex, nowMs: now, blocklist: undefined, trustedServiceKey: service.publicKey, known: undefined }).ok).toBe(true);
  });

  it('refuses, in words, a PLC never created online, a second commitment, a stranger key, a forged receipt', () => {
    const issuer = newWallet();
    const unbacked = check(toReceiver(issue(issuer, { amountMinor: 500n, createdAtMs: now - 120_000 }), issuer));
    expect(reasonOf(unbacked)).toBe('unbacked/missing');
    expect((unbacked as Refusal).message).toContain('carries no receipt from the service');

    const { plc: first } = backed(issuer);
    const second = issue(issuer, { amountMinor: 9999n, tokenId: first.commitment.tokenId, createdAtMs: now - 120_000 });
    const copied = check(toReceiver(withIssueReceipt(second, first.issueReceipt!), issuer));
    expect(reasonOf(copied)).toBe('unbacked/wrong_commitment');
    expect((copied as Refusal).message).toContain('two PLCs under one number');

    const { plc: selfSigned } = backed(issuer, generateKeyPair().secretKey);
    expect(reasonOf(check(toReceiver(selfSigned, issuer)))).toBe('unbacked/untrusted_key');

    const { plc } = backed(issuer);
    const receipt = plc.issueReceipt!.slice();
    receipt[100] = receipt[100]! ^ 0x01;
    expect(reasonOf(check(toReceiver(withIssueReceipt(plc, receipt), issuer)))).toBe('unbacked/wrong_key');
    expect(reasonOf(check(toReceiver(withIssueReceipt(plc, receipt.slice(0, 100)), issuer)))).toBe('unbacked/truncated');
  });

  it('follows the kept list: a rotated-out key within its period is trusted, a revoked one (left out) is not', () => {
    const { plc, issuer } = backed(undefined, rotatedOut.secretKey, now - 5 * 86_400_000);
    const rotation = listWith([
      { publicKey: service.publicKey, validFromMs: now - 3 * 86_400_000, validUntilMs: now + 1e9 },
      { publicKey: rotatedOut.publicKey, validFromMs: 0, validUntilMs: now - 3 * 86_400_000 },
    ]);
    expect(reasonOf(check(toReceiver(plc, issuer), rotation))).toBe('accepted');
    const { plc: late } = backed(issuer, rotatedOut.secretKey, now - 86_400_000);
    expect(reasonOf(check(toReceiver(late, issuer), rotation))).toBe('unbacked/key_not_valid_at_time');
    const revoked = listWith([{ publicKey: service.publicKey, validFromMs: 0, validUntilMs: now + 1e9 }]);
    const refused = check(toReceiver(plc, issuer), revoked);
    expect(reasonOf(refused)).toBe('unbacked/untrusted_key');
    expect((refused as Refusal).message).toContain('withdrawn by the service');
  });

  it('says the more specific reason first: forged, expired, not for this wallet, blocked signer', () => {
    const issuer = newWallet();
    const bare = issue(issuer, { amountMinor: 500n, createdAtMs: now - 3 * 3_600_000, ttlHours: 1 });
    expect(reasonOf(check(hop(bare, issuer, receiver, now - 2.5 * 3_600_000)))).toBe('expired/');
    const fresh = issue(issuer, { amountMinor: 500n, createdAtMs: now - 120_000 });
    expect(reasonOf(check(hop(fresh, issuer, newWallet(), now - 30_000)))).toBe('not_addressed_to_this_wallet/');
    const blocked = listWith([{ publicKey: service.publicKey, validFromMs: 0, validUntilMs: now + 1e9 }], [issuer.keys.publicKey]);
    expect(reasonOf(check(toReceiver(fresh, issuer), blocked))).toBe('blocked_signer/');
  });

  it('keeps an issued PLC\'s receipt only when it verifies', () => {
    const issuer = newWallet();
    const plc = issue(issuer, { amountMinor: 700n, createdAtMs: now - 120_000 });
    const receipt = signIssueReceipt({ commitment: plc.commitment, serviceSecretKey: service.secretKey, issuedAtMs: now });
    const kept = attachIssueReceipt(plcToJson(plc), bytesToHex(receipt), undefined, service.publicKey);
    expect(kept.ok && kept.json.issue_receipt).toBe(bytesToHex(receipt));
    expect(attachIssueReceipt(plcToJson(plc), undefined, undefined, service.publicKey)).toMatchObject({ ok: false, code: 'unbacked', reason: 'missing' });
    const other = signIssueReceipt({ commitment: issue(issuer).commitment, serviceSecretKey: service.secretKey, issuedAtMs: now });
    expect(attachIssueReceipt(plcToJson(plc), bytesToHex(other), undefined, service.publicKey)).toMatchObject({ ok: false, reason: 'wrong_commitment' });
  });
});
