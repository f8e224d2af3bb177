import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findViolations } from '../../db/ledger.ts';
import { openRedemption } from '../../db/redemptions.ts';
import { decideRegistration } from '../../src/plc/register-transfers.ts';
import { createBlocklistPublisher } from '../../services/blocklist.ts';
import { blocklistSigningKey } from '../../services/service-keys.ts';
import { bytesToHex, chainHeadHash, developmentBlocklistPublicKey, generateKeyPair, hexToBytes, isBlocked, verifyBlocklistJson, type Plc } from '../../src/protocol/index.ts';
import { createTestApp, type TestApp } from '../support/app.ts';
import { redeemBody } from '../support/settlement.ts';
import { hop, issue, newWallet, plcToJson, type TestWallet } from '../support/wallet.ts';

/**
 * The blocklist (docs/protocol.md section 18) against real PostgreSQL and Temporal: a proven fork
 * blocks its culprit in the transaction of the evidence; the key is then refused as issuer, as
 * the signer of a new hop and as bearer, each with 409 KEY_BLOCKED and nothing written; the signed
 * list grows a version per change; an admin lifts a block with a reason.
 */
let t: TestApp;
let admin: Record<string, string>;
const device = { 'x-device-id': 'blocklist-device-1' };
const pixKey = '123e4567-e89b-42d3-a456-556642440000';

beforeAll(async () => {
  t = await createTestApp({ RATE_LIMIT_PLC_PER_MINUTE: '100000', RATE_LIMIT_TRANSFER_PER_MINUTE: '100000', RATE_LIMIT_REDEEM_PER_MINUTE: '100000' });
  await t.startWorker();
  admin = await t.adminHeaders();
});
afterAll(async () => {
  await t?.close();
});

const create = (plc: Plc) => t.app.inject({ method: 'POST', url: '/api/v1/plc/create', headers: device, payload: { plc: plcToJson(plc) } });
const transfer = (plc: Plc) => t.app.inject({ method: 'POST', url: '/api/v1/transfer/', headers: device, payload: { plc: plcToJson(plc) } });
const redeem = (plc: Plc, bearer: TestWallet) => t.app.inject({ method: 'POST', url: '/api/v1/redeem/', headers: device, payload: redeemBody(plc, bearer, pixKey) });
const lift = (pubkey: string, reason: string, headers: Record<string, string> = admin) =>
  t.app.inject({ method: 'POST', url: `/api/v1/admin/blocklist/${pubkey}/lift`, headers, payload: { reason } });

async function signedList() {
  const response = await t.app.inject({ method: 'GET', url: '/api/v1/blocklist' });
  expect(response.statusCode).toBe(200);
  const verified = verifyBlocklistJson(response.json(), developmentBlocklistPublicKey);
  if (!verified.ok) throw new Error(`the served list does not verify: ${verified.message}`);
  return verified.list;
}

async function balance(wallet: TestWallet) {
  return (await t.app.inject({ method: 'GET', url: `/api/v1/balance/${wallet.pubkey}` })).json();
}

/** A PLC issued by a fresh funded issuer, created, and passed to `to`: registered. */
async function heldBy(to: TestWallet, amountMinor = 300n): Promise<Plc> {
  const issuer = newWallet();
  await t.deposit(issuer.pubkey, '10.00');
  const plc = issue(issuer, { amountMinor });
  expect((await create(plc)).statusCode).toBe(200);
  const moved = hop(plc, issuer, to);
  expect((await transfer(moved)).statusCode).toBe(200);
  return moved;
}

/** `culprit` receives a PLC, passes it on, then signs a second successor of the same state. */
async function proveFork(culprit: TestWallet) {
  const [first, second] = [newWallet(), newWallet()];
  const held = await heldBy(culprit);
  expect((await transfer(hop(held, culprit, first))).statusCode).toBe(200);
  const refused = await transfer(hop(held, culprit, second));
  expect(refused.statusCode).toBe(409);
  expect(refused.json().code).toBe('DOUBLE_SPEND_DETECTED');
  return { held, refused: refused.json() as { details: Record<string, unknown> } };
}

describe('a proven fork blocks its culprit', () => {
  it('in the same transaction as the evidence: the flag, the block and a new list version together', async () => {
    const culprit = newWallet();
    const before = await signedList();
    const { held, refused } = await proveFork(culprit);
    expect(refused.details).toMatchObject({ culprit_pubkey: culprit.pubkey, key_blocked: true });
    const blocks = await t.app.inject({ method: 'GET', url: `/api/v1/admin/blocklist?pubkey=${culprit.pubkey}`, headers: admin });
    expect(blocks.statusCode).toBe(200);
    const [entry, ...others] = blocks.json().items;
    expect(others).toEqual([]);
    expect(entry).toMatchObject({
      id: refused.details.key_block_id,
      pubkey: culprit.pubkey,
      owner_id: culprit.pubkey,
      reason: 'DOUBLE_SPEND_FORK',
      risk_flag_id: refused.details.risk_flag_id,
      token_id: held.commitment.tokenId,
      route: 'transfer',
      in_force: true,
      lifted_at: null,
    });
    const after = await signedList();
    expect(after.version).toBe(before.version + 1);
    expect(entry.blocked_in_version).toBe(after.version);
    expect(isBlocked(after, culprit.keys.publicKey)).toBe(true);
    expect(isBlocked(before, culprit.keys.publicKey)).toBe(false);
    expect(blocks.json().version).toBe(after.version);
    // In the same transaction, the owner's reputation: the fork proven and the key blocked, each
    // recorded once, the owner sanctioned in the lowest tier.
    const reputation = (await t.app.inject({ method: 'GET', url: `/api/v1/admin/reputation/${culprit.pubkey}`, headers: admin })).json();
    expect(reputation).toMatchObject({ tier: 'RESTRICTED', sanctioned: true, score: 0 });
    const history = (await t.app.inject({ method: 'GET', url: `/api/v1/admin/reputation/${culprit.pubkey}/history?limit=200`, headers: admin })).json();
    const kinds = (Array.isArray(history) ? history : history.items ?? history.events).map((event: { kind: string }) => event.kind);
    expect(kinds.filter((kind: string) => kind === 'FORK_PROVEN')).toHaveLength(1);
    expect(kinds.filter((kind: string) => kind === 'KEY_BLOCKED')).toHaveLength(1);

    // The same fork shown again: one more occurrence of the flag, no second block, no new version.
    const again = await transfer(hop(held, culprit, newWallet()));
    expect(again.json()).toMatchObject({ code: 'DOUBLE_SPEND_DETECTED', details: { risk_flag_id: refused.details.risk_flag_id, key_block_id: entry.id } });
    expect((await signedList()).version).toBe(after.version);
  });

  it('every block has its fork\'s flag against the same key (written together: services/blocklist.ts recordForkAndBlock)', async () => {
    const { rows } = await t.db.pool.query<{ orphans: string }>(
      `SELECT count(*)::text AS orphans FROM key_blocks b LEFT JOIN risk_flags f ON f.id = b.risk_flag_id
        WHERE f.id IS NULL OR f.flag_type <> 'DOUBLE_SPEND_FORK' OR f.subject_pubkey <> b.pubkey`,
    );
    expect(rows[0]?.orphans).toBe('0');
  });

  it('two different forks by one key at once: one block in force, both refused with their evidence', async () => {
    const culprit = newWallet();
    const [x, y] = [await heldBy(culprit), await heldBy(culprit)];
    await transfer(hop(x, culprit, newWallet()));
    await transfer(hop(y, culprit, newWallet()));
    const answers = await Promise.all([transfer(hop(x, culprit, newWallet())), transfer(hop(y, culprit, newWallet()))]);
    expect(answers.map((answer) => answer.json().code)).toEqual(['DOUBLE_SPEND_DETECTED', 'DOUBLE_SPEND_DETECTED']);
    const blocks = (await t.app.inject({ method: 'GET', url: `/api/v1/admin/blocklist?status=all&pubkey=${culprit.pubkey}`, headers: admin })).json();
    expect(blocks.items).toHaveLength(1);
  });
});

describe('a blocked key is refused, with 409 KEY_BLOCKED and nothing written', () => {
  let culprit: TestWallet;
  let stillHeld: Plc;

  beforeAll(async () => {
    culprit = newWallet();
    // Received and registered before the fork: the culprit still bears it.
    stillHeld = await heldBy(culprit);
    await t.deposit(culprit.pubkey, '20.00');
    await proveFork(culprit);
  });

  it('as the issuer of a new PLC: nothing booked', async () => {
    const plc = issue(culprit, { amountMinor: 500n });
    const refused = await create(plc);
    expect(refused.statusCode).toBe(409);
    expect(refused.json()).toMatchObject({ code: 'KEY_BLOCKED', details: { pubkey: culprit.pubkey, role: 'issuer' } });
    expect(await balance(culprit)).toMatchObject({ available: '20.00', promised: '0.00' });
    expect((await t.app.inject({ method: 'GET', url: `/api/v1/plc/${plc.commitment.tokenId}/status` })).statusCode).toBe(404);
  });

  it('as the signer of a new hop at registration: the chain stays as it was', async () => {
    const refused = await transfer(hop(stillHeld, culprit, newWallet()));
    expect(refused.statusCode).toBe(409);
    expect(refused.json()).toMatchObject({ code: 'KEY_BLOCKED', details: { pubkey: culprit.pubkey, role: 'signer' } });
    const status = (await t.app.inject({ method: 'GET', url: `/api/v1/plc/${stillHeld.commitment.tokenId}/status` })).json();
    expect(status).toMatchObject({ chain_length: 1, bearer_pubkey: culprit.pubkey });
  });

  it('as the signer of a new hop a redemption brings: no redemption, no hop', async () => {
    const bearer = newWallet();
    const refused = await redeem(hop(stillHeld, culprit, bearer), bearer);
    expect(refused.statusCode).toBe(409);
    expect(refused.json()).toMatchObject({ code: 'KEY_BLOCKED', details: { pubkey: culprit.pubkey, role: 'signer' } });
    const status = (await t.app.inject({ method: 'GET', url: `/api/v1/plc/${stillHeld.commitment.tokenId}/status` })).json();
    expect(status).toMatchObject({ chain_length: 1, bearer_pubkey: culprit.pubkey, redemption_in_flight: false });
  });

  it('as the bearer at redemption: no redemption opened, the authorisation not spent', async () => {
    const body = redeemBody(stillHeld, culprit, pixKey);
    const refused = await t.app.inject({ method: 'POST', url: '/api/v1/redeem/', headers: device, payload: body });
    expect(refused.statusCode).toBe(409);
    expect(refused.json()).toMatchObject({ code: 'KEY_BLOCKED', details: { pubkey: culprit.pubkey, role: 'bearer' } });
    const { rows } = await t.db.pool.query('SELECT id FROM redemptions WHERE token_id = $1', [stillHeld.commitment.tokenId]);
    expect(rows).toEqual([]);
    const used = await t.db.pool.query('SELECT 1 FROM used_authorizations WHERE token_id = $1', [stillHeld.commitment.tokenId]);
    expect(used.rows).toEqual([]);
    expect(await findViolations(t.db.pool)).toEqual([]);
  });

  it('as the bearer in the opening transaction itself (the trigger behind the service\'s early check)', async () => {
    const opening = openRedemption(
      t.db.pool,
      {
        redemptionId: randomUUID(),
        tokenId: stillHeld.commitment.tokenId,
        bearerPubkey: culprit.pubkey,
        headHash: bytesToHex(chainHeadHash(stillHeld)),
        destination: pixKey,
        destinationType: 'EVP',
        deviceId: 'blocklist-device-1',
        feeMinor: 0n,
        nowMs: Date.now(),
        expiryGraceMs: 300_000,
      },
      (plc, known) => decideRegistration({ status: plc.status, redemptionInFlight: plc.redemption_id !== null }, known, stillHeld.transferChain),
    );
    await expect(opening).rejects.toMatchObject({ code: 'KEY_BLOCKED', details: { pubkey: culprit.pubkey, role: 'bearer' } });
    const { rows } = await t.db.pool.query('SELECT id FROM redemptions WHERE token_id = $1', [stillHeld.commitment.tokenId]);
    expect(rows).toEqual([]);
    expect(await balance(culprit)).toMatchObject({ pending: '0.00' });
  });

  it('an innocent holder is not refused for a hop the culprit signed before the fork', async () => {
    const [culprit2, innocent, next] = [newWallet(), newWallet(), newWallet()];
    const held = await heldBy(culprit2);
    const passed = hop(held, culprit2, innocent);
    expect((await transfer(passed)).statusCode).toBe(200);
    // culprit2 forks another PLC afterwards.
    await proveFork(culprit2);
    // The registered hop signed by culprit2 stays; the innocent holder passes the PLC on.
    const onward = await transfer(hop(passed, innocent, next));
    expect(onward.statusCode).toBe(200);
    expect(onward.json()).toMatchObject({ chain_length: 3, bearer_pubkey: next.pubkey });
  });
});

describe('the lift', () => {
  it('needs an admin, a known blocked key and a reason; bad input changes nothing', async () => {
    const stranger = newWallet();
    const version = (await signedList()).version;
    expect((await lift(stranger.pubkey, 'no reason', {})).statusCode).toBe(401);
    const unknown = await lift(stranger.pubkey, 'never blocked');
    expect(unknown.statusCode).toBe(404);
    expect(unknown.json().code).toBe('KEY_NOT_BLOCKED');
    const badKey = await lift(stranger.pubkey.toUpperCase(), 'upper case');
    expect(badKey.statusCode).toBe(422);
    const noReason = await lift(stranger.pubkey, '  ');
    expect(noReason.statusCode).toBe(422);
    const tooLong = await lift(stranger.pubkey, 'x'.repeat(1001));
    expect(tooLong.statusCode).toBe(422);
    const extra = await t.app.inject({ method: 'POST', url: `/api/v1/admin/blocklist/${stranger.pubkey}/lift`, headers: admin, payload: { reason: 'ok', extra: 1 } });
    expect(extra.statusCode).toBe(422);
    expect((await signedList()).version).toBe(version);
  });

  it('is recorded with who and why, and the next version leaves the key out; the key may issue again', async () => {
    const culprit = newWallet();
    await t.deposit(culprit.pubkey, '5.00');
    await proveFork(culprit);
    const blocked = await signedList();
    expect(isBlocked(blocked, culprit.keys.publicKey)).toBe(true);
    const key = `lift-${randomUUID()}`;
    const lifted = await t.app.inject({
      method: 'POST',
      url: `/api/v1/admin/blocklist/${culprit.pubkey}/lift`,
      headers: { ...admin, 'idempotency-key': key },
      payload: { reason: 'the second spend was refunded; ticket 4711' },
    });
    expect(lifted.statusCode).toBe(200);
    expect(lifted.json()).toMatchObject({
      pubkey: culprit.pubkey,
      in_force: false,
      lift_reason: 'the second spend was refunded; ticket 4711',
      lifted_in_version: blocked.version + 1,
    });
    expect(lifted.json().lifted_by).toMatch(/^admin-/);
    // A retry under its Idempotency-Key gets the stored answer; without it, there is nothing left to lift.
    const retried = await t.app.inject({
      method: 'POST',
      url: `/api/v1/admin/blocklist/${culprit.pubkey}/lift`,
      headers: { ...admin, 'idempotency-key': key },
      payload: { reason: 'the second spend was refunded; ticket 4711' },
    });
    expect(retried.headers['x-idempotency-replayed']).toBe('true');
    expect(retried.json()).toEqual(lifted.json());
    expect((await lift(culprit.pubkey, 'again')).json().code).toBe('KEY_NOT_BLOCKED');
    // The lift and the refused second one are operation-log entries; the replay under its key is not a second lift.
    const logged = (await t.app.inject({ method: 'GET', url: `/api/v1/admin/monitor/operations?operation_type=KEY_BLOCK_LIFT&reference_id=${culprit.pubkey}`, headers: admin })).json();
    expect(logged.map((entry: { status: string; error_code: string | null; actor: string }) => [entry.status, entry.error_code, entry.actor])).toEqual([
      ['REFUSED', 'KEY_NOT_BLOCKED', lifted.json().lifted_by],
      ['SUCCEEDED', null, lifted.json().lifted_by],
    ]);

    const next = await signedList();
    expect(next.version).toBe(blocked.version + 1);
    expect(isBlocked(next, culprit.keys.publicKey)).toBe(false);
    const history = (await t.app.inject({ method: 'GET', url: `/api/v1/admin/blocklist?status=lifted&pubkey=${culprit.pubkey}`, headers: admin })).json();
    expect(history.items).toHaveLength(1);
    expect((await t.app.inject({ method: 'GET', url: `/api/v1/admin/blocklist?status=active&pubkey=${culprit.pubkey}`, headers: admin })).json().items).toEqual([]);
    expect((await create(issue(culprit, { amountMinor: 100n }))).statusCode).toBe(200);
  });

  it('the same fork shown after a lift does not block again; a new fork does', async () => {
    const culprit = newWallet();
    const { held } = await proveFork(culprit);
    expect((await lift(culprit.pubkey, 'reviewed: cloned device')).statusCode).toBe(200);
    const version = (await signedList()).version;
    const shownAgain = await transfer(hop(held, culprit, newWallet()));
    expect(shownAgain.json()).toMatchObject({ code: 'DOUBLE_SPEND_DETECTED', details: { key_blocked: false } });
    expect((await signedList()).version).toBe(version);
    const fresh = await proveFork(culprit);
    expect(fresh.refused.details).toMatchObject({ key_blocked: true });
    const list = await signedList();
    expect(list.version).toBe(version + 1);
    expect(isBlocked(list, culprit.keys.publicKey)).toBe(true);
    const all = (await t.app.inject({ method: 'GET', url: `/api/v1/admin/blocklist?status=all&pubkey=${culprit.pubkey}`, headers: admin })).json();
    expect(all.items.map((item: { in_force: boolean }) => item.in_force)).toEqual([true, false]);
  });
});

describe('GET /api/v1/admin/blocklist', () => {
  it('refuses bad parameters with 422 and callers without a token with 401', async () => {
    for (const query of ['status=bogus', 'limit=0', 'limit=201', 'offset=-1', `pubkey=${'A'.repeat(64)}`, 'pubkey=abc', 'sort=pubkey']) {
      const response = await t.app.inject({ method: 'GET', url: `/api/v1/admin/blocklist?${query}`, headers: admin });
      expect(response.statusCode, query).toBe(query.startsWith('sort') ? 200 : 422);
    }
    expect((await t.app.inject({ method: 'GET', url: '/api/v1/admin/blocklist' })).statusCode).toBe(401);
  });

  it('pages newest first', async () => {
    const page1 = (await t.app.inject({ method: 'GET', url: '/api/v1/admin/blocklist?status=all&limit=2', headers: admin })).json();
    const page2 = (await t.app.inject({ method: 'GET', url: '/api/v1/admin/blocklist?status=all&limit=2&offset=2', headers: admin })).json();
    expect(page1.items).toHaveLength(2);
    const times = [...page1.items, ...page2.items].map((item: { blocked_at: string }) => item.blocked_at);
    expect([...times].sort().reverse()).toEqual(times);
    expect(new Set([...page1.items, ...page2.items].map((item: { id: string }) => item.id)).size).toBe(page1.items.length + page2.items.length);
  });
});

describe('the signed list', () => {
  it('is signed by the configured key, and the same version always has the same bytes', async () => {
    const seed = generateKeyPair().secretKey;
    const publisher = createBlocklistPublisher({ pool: t.db.pool, signingKey: blocklistSigningKey({ BLOCKLIST_SIGNING_SEED: bytesToHex(seed) }) });
    const first = await publisher.signedList();
    const verified = verifyBlocklistJson(first, generateKeyPair(seed).publicKey);
    expect(verified.ok).toBe(true);
    expect(verifyBlocklistJson(first, developmentBlocklistPublicKey)).toMatchObject({ ok: false, reason: 'untrusted_key' });
    // Another publisher (another replica) signs the same version to the same bytes.
    const other = createBlocklistPublisher({ pool: t.db.pool, signingKey: blocklistSigningKey({ BLOCKLIST_SIGNING_SEED: bytesToHex(seed) }) });
    expect(await other.signedList()).toEqual(first);
    const served = (await t.app.inject({ method: 'GET', url: '/api/v1/blocklist' })).json();
    expect(served.version).toBe(first.version);
    expect(served.keys).toEqual(first.keys);
    expect(served.service_pubkey).toBe(bytesToHex(developmentBlocklistPublicKey));
    expect(hexToBytes(served.signature, 64)).toHaveLength(64);
  });
});
