/**
 * The registered commitment binds every path (issue 32, docs/plc.md "The registered commitment
 * binds every path"), tried as the attack campaign tried it, at every route that takes a chain:
 *
 * - a stranger who read a PLC's token id from the public promises list signs a commitment of
 *   their own under it and redeems or registers it: 409 PLC_MISMATCH (foreign_commitment), nothing
 *   booked, nothing recorded against the issuer; the issuer's real payee then redeems;
 * - an issuer who signs a second commitment under one token id (two payees offline, the second
 *   one for a different amount, above and below the registered one): 409 PLC_MISMATCH
 *   (issuer_double_issue) with a proof anyone can check offline, kept as evidence, one high
 *   ISSUER_DOUBLE_ISSUE flag naming the issuer whose occurrences count each showing, the issuer's
 *   key on the signed blocklist; never a 500;
 * - an issuer who pays offline and then cancels online: the bearer's chain answers 409
 *   PLC_CANCELLED_AFTER_TRANSFER, recorded as evidence (the later bearer replaces the earlier one),
 *   a high CANCEL_AFTER_TRANSFER flag, the issuer's key blocked;
 * - an earlier holder who signs a redeem over an older head while the PLC is being redeemed: 409
 *   NOT_CURRENT_BEARER and a DOUBLE_REDEMPTION_ATTEMPT flag (docs/protocol.md section 8).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findViolations } from '../../db/ledger.ts';
import { evidenceOfPlc } from '../../db/plc-evidence.ts';
import { listRiskFlags } from '../../db/risk-flags.ts';
import { ed25519 } from '@noble/curves/ed25519.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex, hexToBytes, type Plc } from '../../src/protocol/index.ts';
import { finishedReport, reconcileReport } from '../support/reconcile.ts';
import { redeemBody, settlementBody, startSettlementHarness, type SettlementHarness } from '../support/settlement.ts';
import { cancelBody, hop, issue, newWallet, plcToJson, type TestWallet } from '../support/wallet.ts';

let h: SettlementHarness;
const device = { 'x-device-id': 'device-registered-commitment' };
const pixKey = '123e4567-e89b-42d3-a456-556642440000';
const routes = ['transfer', 'redeem', 'settlements'] as const;
type Route = (typeof routes)[number];

beforeAll(async () => {
  // Payouts wait for the test: a redemption stays in flight meanwhile.
  h = await startSettlementHarness({}, { autoSettle: false });
});
afterAll(async () => {
  await h?.close();
});

function show(route: Route, chain: Plc, bearer: TestWallet) {
  const inject = h.t.app.inject.bind(h.t.app);
  switch (route) {
    case 'transfer':
      return inject({ method: 'POST', url: '/api/v1/transfer/', headers: device, payload: { plc: plcToJson(chain) } });
    case 'redeem':
      return inject({ method: 'POST', url: '/api/v1/redeem/', headers: device, payload: redeemBody(chain, bearer, pixKey) });
    case 'settlements':
      return inject({ method: 'POST', url: '/api/v1/settlements', headers: device, payload: settlementBody(chain, bearer, pixKey) });
  }
}

async function created(issuer: TestWallet, amountMinor: bigint): Promise<Plc> {
  await h.t.deposit(issuer.pubkey, '50.00');
  return h.t.issuePlc(issuer, amountMinor, device);
}

async function balanceOf(wallet: TestWallet) {
  return (await h.t.app.inject({ method: 'GET', url: `/api/v1/balance/${wallet.pubkey}` })).json();
}

async function flagsOf(tokenId: string, type: string) {
  const flags = await listRiskFlags(h.t.db.pool, { tokenId }, { limit: 100, offset: 0 });
  return flags.filter((flag) => flag.flag_type === type);
}

async function redemptionsOf(tokenId: string) {
  const rows = await h.t.db.pool.query('SELECT id, bearer_pubkey, amount_minor, fee_minor FROM redemptions WHERE token_id = $1', [tokenId]);
  return rows.rows;
}

async function blockedKeys(): Promise<string[]> {
  return (await h.t.app.inject({ method: 'GET', url: '/api/v1/blocklist' })).json().keys;
}

describe('a stranger presents a commitment of their own under a registered token id', () => {
  it('is refused at every route with PLC_MISMATCH, nothing booked or flagged; the real payee redeems afterwards', async () => {
    const [issuer, payee, stranger, accomplice] = [newWallet(), newWallet(), newWallet(), newWallet()];
    const plc = await created(issuer, 500n);
    // The token id is public (GET /api/v1/balance/{owner}/promises lists it).
    const listed = await h.t.app.inject({ method: 'GET', url: `/api/v1/balance/${issuer.pubkey}/promises` });
    expect(JSON.stringify(listed.json())).toContain(plc.commitment.tokenId);
    const forged = hop(issue(stranger, { tokenId: plc.commitment.tokenId, amountMinor: 500n }), stranger, accomplice);
    for (const route of routes) {
      const response = await show(route, forged, accomplice);
      expect(response.statusCode, `${route}: ${response.body}`).toBe(409);
      expect(response.json()).toMatchObject({ code: 'PLC_MISMATCH', details: { reason: 'foreign_commitment', token_id: plc.commitment.tokenId } });
    }
    expect(await redemptionsOf(plc.commitment.tokenId)).toHaveLength(0);
    expect(await balanceOf(issuer)).toMatchObject({ promised: '5.00' });
    expect(await flagsOf(plc.commitment.tokenId, 'ISSUER_DOUBLE_ISSUE')).toHaveLength(0);
    expect(await blockedKeys()).not.toContain(issuer.pubkey);
    const status = (await h.t.app.inject({ method: 'GET', url: `/api/v1/plc/${plc.commitment.tokenId}/status` })).json();
    expect(status).toMatchObject({ status: 'ISSUED' });

    const toPayee = hop(plc, issuer, payee);
    const paid = await show('redeem', toPayee, payee);
    expect(paid.statusCode, paid.body).toBe(200);
    expect(paid.json()).toMatchObject({ status: 'PENDING_PAYMENT', bearer_pubkey: payee.pubkey, amount: '5.00' });
  });
});

describe('an issuer signs a second commitment under one token id', () => {
  /** The proof in a refusal's details, checked as an outsider would: both canonical forms and signatures. */
  function expectProof(details: Record<string, string>, issuer: TestWallet, registered: Plc, second: Plc) {
    expect(details.issuer_pubkey).toBe(issuer.pubkey);
    expect(details.registered_commitment_hash).toBe(bytesToHex(registered.commitmentHash));
    expect(details.presented_commitment_hash).toBe(bytesToHex(second.commitmentHash));
    for (const side of ['registered', 'presented'] as const) {
      const bytes = hexToBytes(details[`${side}_commitment`]!, 118);
      const hash = sha256(bytes);
      expect(bytesToHex(hash)).toBe(details[`${side}_commitment_hash`]);
      // Token id (offset 26) and issuer key (offset 42) are the same in both, and the issuer signed each.
      expect(bytesToHex(bytes.slice(42, 74))).toBe(issuer.pubkey);
      expect(ed25519.verify(hexToBytes(details[`${side}_signature`]!, 64), hash, hexToBytes(issuer.pubkey, 32))).toBe(true);
    }
    expect(details.registered_commitment!.slice(52, 84)).toBe(details.presented_commitment!.slice(52, 84));
  }

  it('is refused at every route with its proof, kept as evidence, one high flag counting the showings, the issuer blocked; never a 500', async () => {
    const [issuer, first, second, third] = [newWallet(), newWallet(), newWallet(), newWallet()];
    const plc = await created(issuer, 2000n);
    const tokenId = plc.commitment.tokenId;
    // The second commitment: a smaller amount (the fee would have been priced on it) and a larger one (it reached a CHECK: 500).
    const cheaper = hop(issue(issuer, { tokenId, amountMinor: 302n }), issuer, second);
    const dearer = hop(issue(issuer, { tokenId, amountMinor: 4000n }), issuer, third);
    let flagId: string | undefined;
    for (const route of routes) {
      const response = await show(route, cheaper, second);
      expect(response.statusCode, `${route}: ${response.body}`).toBe(409);
      const body = response.json();
      expect(body).toMatchObject({ code: 'PLC_MISMATCH', details: { reason: 'issuer_double_issue', token_id: tokenId, key_blocked: true } });
      expectProof(body.details, issuer, plc, cheaper);
      flagId ??= body.details.risk_flag_id;
      expect(body.details.risk_flag_id).toBe(flagId);
    }
    const refusedDearer = await show('redeem', dearer, third);
    expect(refusedDearer.statusCode, refusedDearer.body).toBe(409);
    expect(refusedDearer.json()).toMatchObject({ code: 'PLC_MISMATCH', details: { reason: 'issuer_double_issue' } });

    const flags = await flagsOf(tokenId, 'ISSUER_DOUBLE_ISSUE');
    expect(flags).toHaveLength(2);
    const cheaperFlag = flags.find((flag) => flag.id === flagId)!;
    expect(cheaperFlag).toMatchObject({ severity: 'high', subject_pubkey: issuer.pubkey, occurrences: 3 });
    const evidence = await evidenceOfPlc(h.t.db.pool, tokenId);
    expect(evidence.map((row) => row.kind)).toEqual(['ISSUER_DOUBLE_ISSUE', 'ISSUER_DOUBLE_ISSUE']);
    expect(evidence.every((row) => row.culprit_pubkey === issuer.pubkey)).toBe(true);
    expect(await blockedKeys()).toContain(issuer.pubkey);
    expect(await redemptionsOf(tokenId)).toHaveLength(0);
    expect(await balanceOf(issuer)).toMatchObject({ promised: '20.00' });

    // The registered commitment's first hop was signed before the block: its payee is still paid.
    const honest = await show('redeem', hop(plc, issuer, first), first);
    expect(honest.statusCode, honest.body).toBe(409);
    expect(honest.json()).toMatchObject({ code: 'KEY_BLOCKED' });
  });
});

describe('an issuer pays offline, then cancels online', () => {
  it("the bearer's chain is refused with PLC_CANCELLED_AFTER_TRANSFER, recorded as evidence, flagged, the issuer blocked", async () => {
    const [issuer, bob, carol] = [newWallet(), newWallet(), newWallet()];
    const plc = await created(issuer, 700n);
    const tokenId = plc.commitment.tokenId;
    const toBob = hop(plc, issuer, bob);
    const cancel = await h.t.app.inject({ method: 'POST', url: `/api/v1/plc/${tokenId}/cancel`, headers: device, payload: cancelBody(plc, issuer) });
    expect(cancel.statusCode, cancel.body).toBe(200);
    expect(await balanceOf(issuer)).toMatchObject({ available: '50.00', promised: '0.00' });

    const atTransfer = await show('transfer', toBob, bob);
    expect(atTransfer.statusCode, atTransfer.body).toBe(409);
    const first = atTransfer.json();
    expect(first).toMatchObject({ code: 'PLC_CANCELLED_AFTER_TRANSFER', details: { recorded: true, token_id: tokenId, issuer_pubkey: issuer.pubkey, bearer_pubkey: bob.pubkey, key_blocked: true } });

    // Bob passed it on to Carol offline: her chain extends his, and she becomes the bearer on record.
    const toCarol = hop(toBob, bob, carol);
    const atRedeem = await show('redeem', toCarol, carol);
    expect(atRedeem.statusCode, atRedeem.body).toBe(409);
    expect(atRedeem.json()).toMatchObject({
      code: 'PLC_CANCELLED_AFTER_TRANSFER',
      details: { bearer_pubkey: carol.pubkey, evidence_id: first.details.evidence_id, risk_flag_id: first.details.risk_flag_id },
    });
    // Bob's older chain again: the evidence keeps Carol.
    const again = await show('settlements', toBob, bob);
    expect(again.json()).toMatchObject({ code: 'PLC_CANCELLED_AFTER_TRANSFER', details: { bearer_pubkey: carol.pubkey } });

    const [evidence] = await evidenceOfPlc(h.t.db.pool, tokenId);
    expect(evidence).toMatchObject({ kind: 'CANCEL_AFTER_TRANSFER', culprit_pubkey: issuer.pubkey, bearer_pubkey: carol.pubkey, amount_minor: 700n, compensation_tx_id: null });
    expect((evidence!.evidence.transfer_chain as unknown[]).length).toBe(2);
    const flags = await flagsOf(tokenId, 'CANCEL_AFTER_TRANSFER');
    expect(flags).toHaveLength(1);
    expect(flags[0]).toMatchObject({ severity: 'high', subject_pubkey: issuer.pubkey, occurrences: 3 });
    expect(await blockedKeys()).toContain(issuer.pubkey);
    expect(await redemptionsOf(tokenId)).toHaveLength(0);

    // The operator compensates Carol from the issuer's AVAILABLE: a dry run first (the default), then the real run, once.
    const dry = await reconcileReport(h.t, h.admin, 'compensate-cancelled-bearers');
    const planned = dry.items.filter((item) => item.key === `plc-evidence/${evidence!.id}`);
    expect(planned).toMatchObject([{ status: 'PLANNED', owner_id: carol.pubkey, amount: '7.00' }]);
    expect(await balanceOf(carol)).toMatchObject({ available: '0.00' });
    const real = await finishedReport(h.t, h.admin, 'compensate-cancelled-bearers', '?dry_run=false');
    expect(real.items.filter((item) => item.key === `plc-evidence/${evidence!.id}`)).toMatchObject([{ status: 'FIXED', owner_id: carol.pubkey }]);
    expect(await balanceOf(carol)).toMatchObject({ available: '7.00' });
    expect(await balanceOf(issuer)).toMatchObject({ available: '43.00' });
    const [compensated] = await evidenceOfPlc(h.t.db.pool, tokenId);
    expect(compensated).toMatchObject({ compensated_minor: 700n });
    const rerun = await finishedReport(h.t, h.admin, 'compensate-cancelled-bearers', '?dry_run=false');
    expect(rerun.items.filter((item) => item.key === `plc-evidence/${evidence!.id}`)).toEqual([]);
    expect(await balanceOf(carol)).toMatchObject({ available: '7.00' });
  });

  it('compensates no more than the issuer has, never below zero', async () => {
    const [issuer, bob] = [newWallet(), newWallet()];
    const plc = await created(issuer, 4000n);
    const tokenId = plc.commitment.tokenId;
    const toBob = hop(plc, issuer, bob);
    expect((await h.t.app.inject({ method: 'POST', url: `/api/v1/plc/${tokenId}/cancel`, headers: device, payload: cancelBody(plc, issuer) })).statusCode).toBe(200);
    // The issuer promises most of it again before Bob is back online: 5.00 left of 50.00.
    await h.t.issuePlc(issuer, 4500n, device);
    expect((await show('transfer', toBob, bob)).json()).toMatchObject({ code: 'PLC_CANCELLED_AFTER_TRANSFER' });
    const [evidence] = await evidenceOfPlc(h.t.db.pool, tokenId);
    const real = await finishedReport(h.t, h.admin, 'compensate-cancelled-bearers', '?dry_run=false');
    expect(real.items.filter((item) => item.key === `plc-evidence/${evidence!.id}`)).toMatchObject([{ status: 'FIXED', amount: '5.00' }]);
    expect(await balanceOf(bob)).toMatchObject({ available: '5.00' });
    expect(await balanceOf(issuer)).toMatchObject({ available: '0.00' });
  });
});

describe('an earlier holder redeems while the PLC is being redeemed', () => {
  it('answers NOT_CURRENT_BEARER with a DOUBLE_REDEMPTION_ATTEMPT flag, not PLC_ALREADY_REDEEMED', async () => {
    const [issuer, bob, carol] = [newWallet(), newWallet(), newWallet()];
    const plc = await created(issuer, 300n);
    const toBob = hop(plc, issuer, bob);
    const toCarol = hop(toBob, bob, carol);
    const opened = await show('redeem', toCarol, carol);
    expect(opened.statusCode, opened.body).toBe(200);
    const stale = await show('redeem', toBob, bob);
    expect(stale.statusCode, stale.body).toBe(409);
    expect(stale.json()).toMatchObject({ code: 'NOT_CURRENT_BEARER' });
    const flags = await flagsOf(plc.commitment.tokenId, 'DOUBLE_REDEMPTION_ATTEMPT');
    expect(flags.map((flag) => flag.subject_pubkey)).toEqual([bob.pubkey]);
    // The bearer's own second attempt is what PLC_ALREADY_REDEEMED is for.
    const twice = await show('redeem', toCarol, carol);
    expect(twice.json()).toMatchObject({ code: 'PLC_ALREADY_REDEEMED' });
  });
});

describe('ledger verify', () => {
  it('is clean after every attack above, and finds a chain that does not link to its registered commitment, a head that is not its chain, and a redemption of another amount', async () => {
    expect(await findViolations(h.t.db.pool)).toEqual([]);
    const [issuer, bob] = [newWallet(), newWallet()];
    const plc = await created(issuer, 400n);
    const tokenId = plc.commitment.tokenId;
    expect((await show('redeem', hop(plc, issuer, bob), bob)).statusCode).toBe(200);
    const pool = h.t.db.pool;
    const [record] = (await pool.query('SELECT prev_hash FROM plc_transfers WHERE token_id = $1 AND position = 0', [tokenId])).rows;
    const elsewhere = 'ab'.repeat(32);
    // The damage a stolen redemption left before issue 32: a first record linking elsewhere, a redemption of another amount.
    await pool.query('UPDATE plc_transfers SET prev_hash = $2 WHERE token_id = $1 AND position = 0', [tokenId, elsewhere]);
    await pool.query('UPDATE redemptions SET amount_minor = amount_minor + 1 WHERE token_id = $1', [tokenId]);
    await pool.query('UPDATE plcs SET bearer_pubkey = $2 WHERE token_id = $1', [tokenId, issuer.pubkey]);
    try {
      const kinds = (await findViolations(pool)).filter((violation) => violation.subject.startsWith(tokenId) || (violation.detail ?? '').includes(tokenId)).map((v) => v.kind);
      expect(kinds.sort()).toEqual(['chain_head_mismatch', 'chain_unlinked']);
      const redemptionKinds = (await findViolations(pool)).map((v) => v.kind);
      expect(redemptionKinds).toContain('redemption_not_registered');
    } finally {
      await pool.query('UPDATE plc_transfers SET prev_hash = $2 WHERE token_id = $1 AND position = 0', [tokenId, record.prev_hash]);
      await pool.query('UPDATE redemptions SET amount_minor = amount_minor - 1 WHERE token_id = $1', [tokenId]);
      await pool.query('UPDATE plcs SET bearer_pubkey = $2 WHERE token_id = $1', [tokenId, bob.pubkey]);
    }
    expect(await findViolations(pool)).toEqual([]);
  });
});
