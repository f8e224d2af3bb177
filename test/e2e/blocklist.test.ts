import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findViolations } from '../../db/ledger.ts';
import { encodeTransportText, hexToBytes, withIssueReceipt, type Plc } from '../../src/protocol/index.ts';
import { field, ok, refused } from '../bin/wallet-cli.ts';
import { redeemBody, startSettlementHarness, type SettlementHarness } from '../support/settlement.ts';
import { hop, issue, newWallet, plcToJson } from '../support/wallet.ts';

/**
 * The blocklist end to end (docs/protocol.md section 18): the API listening on a port, its worker,
 * the gateway simulator, and the wallet program as a user runs it. A key spends one PLC state
 * twice; the fork is proven at the redeem route; that key's next create, next hop and next
 * redemption are refused with KEY_BLOCKED, while an honest holder of a hop it signed before is
 * paid out; the wallet program downloads the signed list, verifies it, and refuses a chain the
 * key signed, until an admin lifts the block and the next version leaves the key out.
 */
let h: SettlementHarness;
let root = '';
const device = { 'x-device-id': 'device-e2e-blocklist' };
const pixKey = '123e4567-e89b-42d3-a456-556642440000';

beforeAll(async () => {
  h = await startSettlementHarness();
  root = mkdtempSync(join(tmpdir(), 'blocklist-e2e-'));
});
afterAll(async () => {
  await h?.close();
  if (root !== '') rmSync(root, { recursive: true, force: true });
});

const post = (url: string, payload: object) => h.t.app.inject({ method: 'POST', url, headers: device, payload });

/** Registers `plc` and answers it with the issue receipt the create answered (docs/protocol.md section 19). */
async function created(plc: Plc) {
  const response = await post('/api/v1/plc/create', { plc: plcToJson(plc) });
  expect(response.statusCode).toBe(200);
  return withIssueReceipt(plc, hexToBytes(response.json().issue_receipt as string));
}

describe('a key proven to cheat', () => {
  it('is refused at create, hop and redemption, and the wallet program refuses its chains from the signed list', { timeout: 180_000 }, async () => {
    const [issuer, culprit, honest, accomplice, other] = [newWallet(), newWallet(), newWallet(), newWallet(), newWallet()];
    await h.t.deposit(issuer.pubkey, '50.00');
    await h.t.deposit(culprit.pubkey, '20.00');
    // Two PLCs reach the culprit, registered.
    const first = hop(await created(issue(issuer, { amountMinor: 1500n })), issuer, culprit);
    const second = hop(await created(issue(issuer, { amountMinor: 700n })), issuer, culprit);
    expect((await post('/api/v1/transfer/', { plc: plcToJson(first) })).statusCode).toBe(200);
    expect((await post('/api/v1/transfer/', { plc: plcToJson(second) })).statusCode).toBe(200);
    // The culprit pays the honest holder with the first (registered) and spends the same state again.
    const paid = hop(first, culprit, honest);
    expect((await post('/api/v1/transfer/', { plc: plcToJson(paid) })).statusCode).toBe(200);
    const doubleSpent = hop(first, culprit, accomplice);
    const fork = await post('/api/v1/redeem/', redeemBody(doubleSpent, accomplice, pixKey));
    expect(fork.statusCode).toBe(409);
    expect(fork.json()).toMatchObject({ code: 'DOUBLE_SPEND_DETECTED', details: { culprit_pubkey: culprit.pubkey, key_blocked: true } });

    // Its next create, hop and redemption.
    const create = await post('/api/v1/plc/create', { plc: plcToJson(issue(culprit, { amountMinor: 100n })) });
    expect(create.statusCode).toBe(409);
    expect(create.json()).toMatchObject({ code: 'KEY_BLOCKED', details: { role: 'issuer', pubkey: culprit.pubkey } });
    const onward = await post('/api/v1/transfer/', { plc: plcToJson(hop(second, culprit, other)) });
    expect(onward.statusCode).toBe(409);
    expect(onward.json()).toMatchObject({ code: 'KEY_BLOCKED', details: { role: 'signer' } });
    const redemption = await post('/api/v1/redeem/', redeemBody(second, culprit, pixKey));
    expect(redemption.statusCode).toBe(409);
    expect(redemption.json()).toMatchObject({ code: 'KEY_BLOCKED', details: { role: 'bearer' } });
    expect((await h.t.app.inject({ method: 'GET', url: `/api/v1/balance/${culprit.pubkey}` })).json()).toMatchObject({ available: '20.00', pending: '0.00' });

    // The honest holder of a hop the culprit signed before is paid out through the gateway.
    const payout = await post('/api/v1/redeem/', redeemBody(paid, honest, pixKey));
    expect(payout.statusCode).toBe(200);
    const settled = await h.t.temporal.workflow.getHandle(payout.json().workflow_id).result();
    expect(settled).toMatchObject({ status: 'SETTLED' });
    expect(await findViolations(h.t.db.pool)).toEqual([]);

    // The wallet program: downloads the list, verifies it against the (development) service key,
    // and refuses offline a chain the culprit signed.
    const dir = join(root, 'receiver');
    await ok(dir, 'init', '--server', h.appUrl);
    const me = hexToBytes(field(await ok(dir, 'show-key'), 'public_key'), 32);
    const listed = await ok(dir, 'blocklist');
    expect(listed).toContain(`blocked: ${culprit.pubkey}`);
    const version = Number(/version (\d+)/.exec(listed)?.[1]);
    expect(version).toBeGreaterThanOrEqual(2);
    const toMe = hop(second, culprit, { keys: { publicKey: me, secretKey: new Uint8Array(32) }, pubkey: '' });
    await ok(dir, 'config', '--forget-server');
    const refusal = await refused(dir, 'blocked_signer', 'receive', '--text', encodeTransportText(toMe));
    expect(refusal.stderr).toContain(culprit.pubkey);

    // An admin lifts the block: the next version leaves the key out, the wallet then accepts it,
    // and the server lets the key redeem again.
    const lifted = await h.t.app.inject({
      method: 'POST',
      url: `/api/v1/admin/blocklist/${culprit.pubkey}/lift`,
      headers: h.admin,
      payload: { reason: 'e2e: the double spend was settled out of band' },
    });
    expect(lifted.statusCode).toBe(200);
    expect(lifted.json().lifted_in_version).toBe(version + 1);
    expect(await ok(dir, 'blocklist', '--server', h.appUrl)).toContain(`version ${version + 1}`);
    expect(await ok(dir, 'receive', '--text', encodeTransportText(toMe))).toContain('received');
    const again = await post('/api/v1/redeem/', redeemBody(second, culprit, pixKey));
    expect(again.statusCode).toBe(200);
    expect(await h.t.temporal.workflow.getHandle(again.json().workflow_id).result()).toMatchObject({ status: 'SETTLED' });
    expect(await findViolations(h.t.db.pool)).toEqual([]);
  });
});
