/**
 * The service's issue receipt on the API (docs/protocol.md section 19): the create answers it once
 * the amount is reserved, signed by the key the signed blocklist lists for receipts; a retry
 * answers the same bytes; the PLC's JSON view carries it; a refused create gets none; the intake
 * routes take a PLC carrying it, in JSON and in the QR text form, and read the commitment exactly
 * as without it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../support/app.ts';
import { createBlocklistPublisher } from '../../services/blocklist.ts';
import { blocklistSigningKey } from '../../services/service-keys.ts';
import { createIssueReceipts, publishedReceiptKeys, receiptSigningKey } from '../../services/issue-receipt.ts';
import { hop, issue, newWallet, plcToJson } from '../support/wallet.ts';
import {
  bytesToHex,
  developmentBlocklistPublicKey,
  encodeTransportText,
  hexToBytes,
  parsePlcJson,
  receiptTrustOf,
  verifyBlocklistJson,
  verifyIssueReceipt,
  verifyPlc,
  verifyPlcReceipt,
  withIssueReceipt,
  signIssueReceipt,
  decodeIssueReceipt,
  generateKeyPair,
  timestampMsMax,
  type Plc,
  type ReceiptKey,
} from '../../src/protocol/index.ts';

let t: TestApp;
const device = { 'x-device-id': 'device-receipt-1' };

beforeAll(async () => {
  t = await createTestApp({ RATE_LIMIT_PLC_PER_MINUTE: '100000', RATE_LIMIT_TRANSFER_PER_MINUTE: '100000' });
  await t.startWorker();
});
afterAll(async () => {
  await t?.close();
});

function create(plc: Plc) {
  return t.app.inject({ method: 'POST', url: '/api/v1/plc/create', headers: device, payload: { plc: plcToJson(plc) } });
}

/** What an offline wallet trusts: the receipt keys of the list it downloaded and verified. */
async function walletTrust(): Promise<readonly ReceiptKey[]> {
  const response = await t.app.inject({ method: 'GET', url: '/api/v1/blocklist', headers: device });
  expect(response.statusCode).toBe(200);
  expect(response.json()).toMatchObject({ format: 'svc:blocklist:v2' });
  const verified = verifyBlocklistJson(response.json(), developmentBlocklistPublicKey);
  if (!verified.ok) throw new Error(verified.message);
  return receiptTrustOf(verified.list, developmentBlocklistPublicKey);
}

async function receiptRows(tokenId: string): Promise<number> {
  const { rows } = await t.db.pool.query<{ n: string }>('SELECT count(*) AS n FROM plc_issue_receipts WHERE token_id = $1', [tokenId]);
  return Number(rows[0]?.n);
}

describe('issue receipt', () => {
  it('the create answers a receipt over the registered commitment, by a key the signed blocklist trusts; a retry answers the same bytes', async () => {
    const issuer = newWallet();
    await t.deposit(issuer.pubkey, '20.00');
    const plc = issue(issuer, { amountMinor: 1500n });
    const before = Date.now();
    const first = await create(plc);
    expect(first.statusCode).toBe(200);
    const receiptHex = first.json().issue_receipt as string;
    expect(receiptHex).toMatch(/^01[0-9a-f]{272}$/);
    const trust = await walletTrust();
    expect(trust.map((key) => bytesToHex(key.publicKey))).toEqual([bytesToHex(developmentBlocklistPublicKey)]);
    const verdict = verifyIssueReceipt(plc.commitment, hexToBytes(receiptHex), trust);
    expect(verdict.ok).toBe(true);
    if (verdict.ok) {
      expect(verdict.receipt.issuedAtMs).toBeGreaterThanOrEqual(before);
      expect(verdict.receipt.issuedAtMs).toBeLessThanOrEqual(Date.now());
    }
    // node:crypto's signature is the library's, byte for byte (Ed25519 is deterministic).
    const decoded = decodeIssueReceipt(hexToBytes(receiptHex));
    if (!decoded.ok) throw new Error('not a receipt');
    const receipts = createIssueReceipts({ pool: t.db.pool, signingKey: receiptSigningKey({}) });
    expect(bytesToHex(receipts.sign(plc.commitment, decoded.receipt.issuedAtMs))).toBe(receiptHex);
    expect(bytesToHex(signIssueReceipt({ commitment: plc.commitment, serviceSecretKey: receiptSigningKey({}).secretKey, issuedAtMs: decoded.receipt.issuedAtMs }))).toBe(receiptHex);
    // Over this PLC only: another commitment does not take it.
    const other = issue(issuer, { amountMinor: 1500n });
    expect(verifyIssueReceipt(other.commitment, hexToBytes(receiptHex), trust)).toMatchObject({ ok: false, reason: 'wrong_commitment' });

    const retry = await create(plc);
    expect(retry.json()).toMatchObject({ created: false, issue_receipt: receiptHex });
    expect(await receiptRows(plc.commitment.tokenId)).toBe(1);
  });

  it("the PLC's JSON view carries the receipt; the copy rebuilt from it verifies, chain and receipt", async () => {
    const [issuer, bearer] = [newWallet(), newWallet()];
    await t.deposit(issuer.pubkey, '10.00');
    const plc = issue(issuer, { amountMinor: 700n });
    const receiptHex = (await create(plc)).json().issue_receipt as string;
    const carried = withIssueReceipt(hop(plc, issuer, bearer), hexToBytes(receiptHex));
    // The intake takes the PLC with its receipt, in JSON and in the QR text form.
    const registered = await t.app.inject({ method: 'POST', url: '/api/v1/transfer/', headers: device, payload: { plc: plcToJson(carried) } });
    expect(registered.statusCode).toBe(200);
    expect(registered.json()).toMatchObject({ appended: 1, bearer_pubkey: bearer.pubkey });
    const again = await t.app.inject({ method: 'POST', url: '/api/v1/transfer/', headers: device, payload: { transport: encodeTransportText(carried) } });
    expect(again.statusCode).toBe(200);
    expect(again.json()).toMatchObject({ appended: 0 });

    const view = await t.app.inject({ method: 'GET', url: `/api/v1/plc/${plc.commitment.tokenId}/json` });
    expect(view.statusCode).toBe(200);
    expect(view.json().issue_receipt).toBe(receiptHex);
    const copy = parsePlcJson(view.json());
    expect(verifyPlc(copy).ok).toBe(true);
    expect(verifyPlcReceipt(copy, await walletTrust()).ok).toBe(true);
    expect(plcToJson(copy)).toEqual(plcToJson(carried));
  });

  it('a refused create gets no receipt, and a forged receipt on an unregistered PLC changes nothing at intake', async () => {
    const issuer = newWallet();
    await t.deposit(issuer.pubkey, '1.00');
    const plc = issue(issuer, { amountMinor: 5000n });
    const refused = await create(plc);
    expect(refused.statusCode).toBe(409);
    expect(refused.json()).toMatchObject({ code: 'INSUFFICIENT_FUNDS' });
    expect(refused.json().issue_receipt).toBeUndefined();
    expect(await receiptRows(plc.commitment.tokenId)).toBe(0);
    // A receipt copied from another PLC: the server ignores it and still knows no such PLC.
    const donor = issue(issuer, { amountMinor: 50n });
    const donorReceipt = (await create(donor)).json().issue_receipt as string;
    const forged = withIssueReceipt(hop(plc, issuer, newWallet()), hexToBytes(donorReceipt));
    expect(verifyPlcReceipt(forged, await walletTrust())).toMatchObject({ ok: false, reason: 'wrong_commitment' });
    const presented = await t.app.inject({ method: 'POST', url: '/api/v1/transfer/', headers: device, payload: { plc: plcToJson(forged) } });
    expect(presented.statusCode).toBe(404);
    expect(presented.json()).toMatchObject({ code: 'PLC_NOT_FOUND' });
  });

  it('refuses an issue_receipt that is not lowercase hex at the schema (422), like any malformed field', async () => {
    const issuer = newWallet();
    await t.deposit(issuer.pubkey, '1.00');
    const plc = issue(issuer, { amountMinor: 10n });
    const response = await t.app.inject({
      method: 'POST',
      url: '/api/v1/plc/create',
      headers: device,
      payload: { plc: { ...plcToJson(plc), issue_receipt: 'ZZ' } },
    });
    expect(response.statusCode).toBe(422);
  });

  it('a rotation and a revocation from the configuration: each a new version of the signed list, which wallets follow', async () => {
    const issuer = newWallet();
    await t.deposit(issuer.pubkey, '5.00');
    const plc = issue(issuer, { amountMinor: 100n });
    const oldReceipt = hexToBytes((await create(plc)).json().issue_receipt as string);
    const oldDecoded = decodeIssueReceipt(oldReceipt);
    if (!oldDecoded.ok) throw new Error('the create answered no receipt');
    const rotationAtMs = oldDecoded.receipt.issuedAtMs + 1;
    const newSeed = bytesToHex(generateKeyPair().secretKey);
    const rotated = {
      RECEIPT_SIGNING_SEED: newSeed,
      RECEIPT_KEY_VALID_FROM_MS: rotationAtMs,
      RECEIPT_KEYS_RETIRED: [{ pubkey: bytesToHex(developmentBlocklistPublicKey), validFromMs: 0, validUntilMs: rotationAtMs }],
    };
    const versionBefore = ((await t.app.inject({ method: 'GET', url: '/api/v1/blocklist' })).json() as { version: number }).version;
    const publish = async (config: typeof rotated) => {
      const publisher = createBlocklistPublisher({ pool: t.db.pool, signingKey: blocklistSigningKey({}), receiptKeys: publishedReceiptKeys(config) });
      const verified = verifyBlocklistJson(await publisher.signedList(), developmentBlocklistPublicKey);
      if (!verified.ok) throw new Error(verified.message);
      return verified.list;
    };
    // Rotation: the new key from now on, the development key for what it signed before.
    const duringRotation = await publish(rotated);
    expect(duringRotation.version).toBe(versionBefore + 1);
    const trust = receiptTrustOf(duringRotation, developmentBlocklistPublicKey);
    expect(trust).toHaveLength(2);
    expect(verifyIssueReceipt(plc.commitment, oldReceipt, trust).ok).toBe(true);
    const newKey = receiptSigningKey(rotated);
    expect(trust.find((key) => bytesToHex(key.publicKey) === bytesToHex(newKey.publicKey))).toMatchObject({ validFromMs: rotationAtMs, validUntilMs: timestampMsMax });
    // The same configuration again (another replica, a restart) makes no new version.
    expect((await publish(rotated)).version).toBe(versionBefore + 1);
    // What the service signs with the new key verifies under the new list.
    const later = issue(issuer, { amountMinor: 100n });
    const laterReceipt = (await create(later)).json().issue_receipt as string;
    // This app still signs with the development key, past the end of its period: refused.
    expect(verifyIssueReceipt(later.commitment, hexToBytes(laterReceipt), trust)).toMatchObject({ ok: false, reason: 'key_not_valid_at_time' });
    // The first receipt kept is the one served: another signer does not replace it.
    const receipts = createIssueReceipts({ pool: t.db.pool, signingKey: newKey });
    expect(await receipts.forRegistered(later.commitment)).toBe(laterReceipt);
    const fresh = signIssueReceipt({ commitment: later.commitment, serviceSecretKey: newKey.secretKey, issuedAtMs: rotationAtMs + 1 });
    expect(verifyIssueReceipt(later.commitment, fresh, trust).ok).toBe(true);
    // Revocation: the retired key left out is the next version; its receipts are refused.
    const revoked = await publish({ ...rotated, RECEIPT_KEYS_RETIRED: [] });
    expect(revoked.version).toBe(versionBefore + 2);
    expect(verifyIssueReceipt(plc.commitment, oldReceipt, receiptTrustOf(revoked, developmentBlocklistPublicKey))).toMatchObject({ ok: false, reason: 'untrusted_key' });
    // The API serves what the version recorded.
    const served = verifyBlocklistJson((await t.app.inject({ method: 'GET', url: '/api/v1/blocklist' })).json(), developmentBlocklistPublicKey);
    expect(served.ok && served.list.version === revoked.version && served.list.receiptKeys?.length === 1).toBe(true);
    // A retired key that is the current one is a configuration error.
    expect(() => publishedReceiptKeys({ ...rotated, RECEIPT_KEYS_RETIRED: [{ pubkey: bytesToHex(newKey.publicKey), validFromMs: 0, validUntilMs: 1 }] })).toThrow(/RECEIPT_KEYS_RETIRED/);
  });
});

