import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { recordAuthorization } from '../../db/used-authorizations.ts';
import { bytesToHex, cancelAuthorizationHash, chainHeadHash, currentBearer, hexToBytes, plcFromJson, plcToJson, redeemAuthorizationFromJson, signRedeem, type Plc } from '../../src/protocol/index.ts';
import { derivedUuid, idempotencyRequestHash } from '../../api/plugins/idempotency.ts';
import { loadDocument, operationsOf } from '../support/openapi.ts';
import { waitFor } from '../support/wait.ts';
import { redeemBody, startSettlementHarness, type SettlementHarness } from '../support/settlement.ts';
import { cancelBody, hop, issue, limitIncreaseBody, newWallet, type TestWallet } from '../support/wallet.ts';

/**
 * The Idempotency-Key, one table over every operation that takes it (read from the served
 * OpenAPI, so a new one must join the table): the same key and body answers the stored response
 * marked `X-Idempotency-Replayed: true`; the same key with another body is refused; a request
 * while the first with its key is still running is answered 409. One implementation serves them
 * all (api/plugins/idempotency.ts).
 */

let h: SettlementHarness;
const device = { 'x-device-id': 'device-idempotency' };
const pixKey = '123e4567-e89b-42d3-a456-556642440000';
const payer = { name: 'Maria Silva', cpf_cnpj: '52998224725', email: 'maria@example.com' };

beforeAll(async () => {
  h = await startSettlementHarness();
});
afterAll(async () => {
  await h?.close();
});

async function fund(owner: string, amount: string): Promise<void> {
  await h.t.deposit(owner, amount);
}

/** A PLC issued (through the API) by a funded issuer, and the wallets around it. */
async function issuedPlc(): Promise<{ plc: Plc; issuer: TestWallet; bearer: TestWallet }> {
  const issuer = newWallet();
  await fund(issuer.pubkey, '10.00');
  const plc = issue(issuer, { amountMinor: 300n });
  const response = await h.t.app.inject({ method: 'POST', url: '/api/v1/plc/create', headers: device, payload: { plc: plcToJson(plc) } });
  expect(response.statusCode, response.body).toBe(200);
  return { plc, issuer, bearer: newWallet() };
}

function settlementBody(plc: Plc, bearer: TestWallet, destination: string) {
  const timestampMs = Date.now();
  const authorization = signRedeem(
    { tokenId: plc.commitment.tokenId, headHash: chainHeadHash(plc), settlementRail: 'pix', destination, timestampMs },
    bearer.keys.secretKey,
  );
  if (bytesToHex(currentBearer(plc)) !== bearer.pubkey) throw new Error('not the bearer');
  return {
    plc_id: plc.commitment.tokenId,
    plc_payload: Buffer.from(JSON.stringify(plcToJson(plc))).toString('base64'),
    settlement_rail: 'pix',
    destination: { pix_key: destination },
    bearer_signature: bytesToHex(authorization.signature),
    timestamp_ms: timestampMs,
  };
}

interface Case {
  /** A request that succeeds, and another body for the same operation. */
  body: unknown;
  other: unknown;
  headers: Record<string, string>;
  /** The operation's URL when its path has parameters. */
  url?: string;
}

/** One row per operation that takes an Idempotency-Key: how to make a fresh request for it. */
const table: Record<string, () => Promise<Case>> = {
  'POST /api/v1/plc/create': async () => {
    const issuer = newWallet();
    await fund(issuer.pubkey, '10.00');
    return { body: { plc: plcToJson(issue(issuer, { amountMinor: 100n })) }, other: { plc: plcToJson(issue(issuer, { amountMinor: 200n })) }, headers: device };
  },
  'POST /api/v1/plcs': async () => {
    const issuer = newWallet();
    await fund(issuer.pubkey, '10.00');
    return { body: plcToJson(issue(issuer, { amountMinor: 100n })), other: plcToJson(issue(issuer, { amountMinor: 200n })), headers: device };
  },
  'POST /api/v1/transfer/': async () => {
    const { plc, issuer, bearer } = await issuedPlc();
    return { body: { plc: plcToJson(hop(plc, issuer, bearer)) }, other: { plc: plcToJson(hop(plc, issuer, newWallet())) }, headers: device };
  },
  'POST /api/v1/plc/{token_id}/cancel': async () => {
    const { plc, issuer } = await issuedPlc();
    const signedAtMs = Date.now();
    // Two authorisations of the same cancel, signed a second apart: each a valid request on its own.
    return {
      body: cancelBody(plc, issuer, signedAtMs),
      other: cancelBody(plc, issuer, signedAtMs - 1000),
      headers: device,
      url: `/api/v1/plc/${plc.commitment.tokenId}/cancel`,
    };
  },
  'POST /api/v1/redeem/': async () => {
    const { plc, issuer, bearer } = await issuedPlc();
    const held = hop(plc, issuer, bearer);
    return { body: redeemBody(held, bearer, pixKey), other: redeemBody(held, bearer, 'maria@example.com'), headers: device };
  },
  'POST /api/v1/settlements': async () => {
    const { plc, issuer, bearer } = await issuedPlc();
    const held = hop(plc, issuer, bearer);
    return { body: settlementBody(held, bearer, pixKey), other: settlementBody(held, bearer, 'maria@example.com'), headers: device };
  },
  'POST /api/v1/redemption/pix': async () => {
    const owner = `owner-${randomUUID().slice(0, 8)}`;
    return { body: { owner_id: owner, amount: '10.00', customer: payer }, other: { owner_id: owner, amount: '11.00', customer: payer }, headers: device };
  },
  'POST /api/v1/redemption/boleto': async () => {
    const owner = `owner-${randomUUID().slice(0, 8)}`;
    return { body: { owner_id: owner, amount: '10.00', customer: payer }, other: { owner_id: owner, amount: '11.00', customer: payer }, headers: device };
  },
  'POST /api/v1/dev/owners/{owner_id}/fund': async () => {
    const owner = `owner-${randomUUID().slice(0, 8)}`;
    return { body: { amount: '5.00', currency: 'BRL' }, other: { amount: '6.00', currency: 'BRL' }, headers: device, url: `/api/v1/dev/owners/${owner}/fund` };
  },
  'POST /api/v1/balance/deposit': async () => {
    const owner = `owner-${randomUUID().slice(0, 8)}`;
    return { body: { owner_id: owner, amount: '5.00', currency: 'BRL' }, other: { owner_id: owner, amount: '6.00', currency: 'BRL' }, headers: h.admin };
  },
  'POST /api/v1/plc/limits/increase-request': async () => {
    // A device of its own: one open request per device and owner.
    const issuer = newWallet();
    const deviceId = `device-limits-${randomUUID().slice(0, 8)}`;
    await fund(issuer.pubkey, '10.00');
    const created = await h.t.app.inject({
      method: 'POST',
      url: '/api/v1/plc/create',
      headers: { 'x-device-id': deviceId },
      payload: { plc: plcToJson(issue(issuer, { amountMinor: 100n })) },
    });
    expect(created.statusCode).toBe(200);
    // Up to the configured ceiling: above the device's automatic limits, so there is something to review.
    const { ceiling } = (await h.t.app.inject({ method: 'GET', url: `/api/v1/plc/limits/${deviceId}` })).json();
    // Signed by the device's owner (docs/limits-and-fees.md, "Increase requests").
    const request = (reason: string) => limitIncreaseBody(issuer, { device_id: deviceId, requested_max_amount: ceiling.max_amount, requested_daily_limit: ceiling.daily_limit, reason });
    return { body: request('growing shop'), other: request('monthly supplier payments'), headers: device };
  },
  'POST /api/v1/admin/blocklist/{pubkey}/lift': async () => {
    // A key blocked by a fork it signed (docs/protocol.md section 18).
    const { plc, issuer, bearer: culprit } = await issuedPlc();
    const held = hop(plc, issuer, culprit);
    const transfer = (chain: Plc) => h.t.app.inject({ method: 'POST', url: '/api/v1/transfer/', headers: device, payload: { plc: plcToJson(chain) } });
    expect((await transfer(held)).statusCode).toBe(200);
    expect((await transfer(hop(held, culprit, newWallet()))).statusCode).toBe(200);
    expect((await transfer(hop(held, culprit, newWallet()))).json()).toMatchObject({ code: 'DOUBLE_SPEND_DETECTED' });
    return {
      body: { reason: 'reviewed: refunded out of band' },
      other: { reason: 'reviewed: another reason' },
      headers: h.admin,
      url: `/api/v1/admin/blocklist/${culprit.pubkey}/lift`,
    };
  },
};

function send(operation: string, key: string, body: unknown, headers: Record<string, string>, url?: string) {
  const [method, path] = operation.split(' ') as ['POST', string];
  return h.t.app.inject({ method, url: url ?? path, headers: { ...headers, 'idempotency-key': key }, payload: body as object });
}

/** Holds every table a first request's work writes or reads, so that it stays in progress. */
async function withWorkBlocked<T>(work: () => Promise<T>): Promise<T> {
  const client = await h.t.db.pool.connect();
  try {
    await client.query('BEGIN');
    await client.query('LOCK TABLE ledger_transactions, plcs, redemptions, charges, blocklist_state IN ACCESS EXCLUSIVE MODE');
    return await work();
  } finally {
    await client.query('ROLLBACK');
    client.release();
  }
}

async function untilClaimed(key: string): Promise<void> {
  const deadline = Date.now() + 15_000;
  while (Date.now() < deadline) {
    const { rowCount } = await h.t.db.pool.query(`SELECT 1 FROM idempotency_records WHERE key = $1 AND state = 'IN_PROGRESS'`, [key]);
    if (rowCount === 1) return;
    await sleep(20);
  }
  throw new Error(`the first request with key ${key} never claimed it`);
}

describe('Idempotency-Key', () => {
  it('has a row in this table for every operation that takes the header, and no other', async () => {
    const document = await loadDocument(h.t.app);
    const taking = operationsOf(document)
      .filter(({ operation }) => operation.parameters?.some((parameter) => parameter.in === 'header' && parameter.name === 'idempotency-key'))
      .map(({ name }) => name)
      .sort();
    expect(taking).toEqual(Object.keys(table).sort());
    // Each documents the replay header on its success and the in-progress refusal.
    for (const { name, operation } of operationsOf(document).filter((op) => taking.includes(op.name))) {
      expect(Object.keys(operation.responses['200']?.headers ?? {}), name).toContain('x-idempotency-replayed');
      expect(operation.responses['409'], name).toBeDefined();
    }
  });

  describe.each(Object.keys(table))('%s', (operation) => {
    it('answers the same key and body from the stored answer, marked replayed', async () => {
      const { body, headers, url } = await (table[operation] as () => Promise<Case>)();
      const key = `idem-${randomUUID()}`;
      const first = await send(operation, key, body, headers, url);
      expect(first.statusCode, first.body).toBe(200);
      expect(first.headers['x-idempotency-replayed']).toBeUndefined();
      const again = await send(operation, key, body, headers, url);
      expect(again.statusCode).toBe(200);
      expect(again.headers['x-idempotency-replayed']).toBe('true');
      expect(again.json()).toEqual(first.json());
    });

    it('refuses the same key with another body (422 IDEMPOTENCY_KEY_REUSED, loc the header)', async () => {
      const { body, other, headers, url } = await (table[operation] as () => Promise<Case>)();
      const key = `idem-${randomUUID()}`;
      expect((await send(operation, key, body, headers, url)).statusCode).toBe(200);
      const reused = await send(operation, key, other, headers, url);
      expect(reused.statusCode, reused.body).toBe(422);
      expect(reused.json().detail).toEqual([expect.objectContaining({ loc: ['header', 'idempotency-key'], type: 'IDEMPOTENCY_KEY_REUSED' })]);
    });

    it('answers 409 IDEMPOTENCY_REQUEST_IN_PROGRESS while the first request with the key runs, which then completes', async () => {
      const { body, headers, url } = await (table[operation] as () => Promise<Case>)();
      const key = `idem-${randomUUID()}`;
      let first: ReturnType<typeof send> | undefined;
      const concurrent = await withWorkBlocked(async () => {
        first = send(operation, key, body, headers, url);
        await untilClaimed(key);
        return send(operation, key, body, headers, url);
      });
      expect(concurrent.statusCode, concurrent.body).toBe(409);
      expect(concurrent.json()).toMatchObject({ code: 'IDEMPOTENCY_REQUEST_IN_PROGRESS' });
      const done = await first;
      expect(done?.statusCode, done?.body).toBe(200);
      const replay = await send(operation, key, body, headers, url);
      expect(replay.headers['x-idempotency-replayed']).toBe('true');
      expect(replay.json()).toEqual(done?.json());
    });
  });

  it('stores a refusal as an answer too: the replay gets the same 409, marked replayed', async () => {
    const issuer = newWallet();
    const body = { plc: plcToJson(issue(issuer, { amountMinor: 100n })) };
    const key = `idem-${randomUUID()}`;
    const refused = await send('POST /api/v1/plc/create', key, body, device);
    expect(refused.statusCode).toBe(409);
    expect(refused.json()).toMatchObject({ code: 'INSUFFICIENT_FUNDS' });
    // Funds arriving in between change nothing for this key: the answer is the stored one.
    await fund(issuer.pubkey, '10.00');
    const replay = await send('POST /api/v1/plc/create', key, body, device);
    expect(replay.statusCode).toBe(409);
    expect(replay.headers['x-idempotency-replayed']).toBe('true');
    expect(replay.json()).toEqual(refused.json());
  });

  it('keeps no answer for a 422, so the corrected request with the same key runs', async () => {
    const owner = `owner-${randomUUID().slice(0, 8)}`;
    const key = `idem-${randomUUID()}`;
    const invalid = await send('POST /api/v1/balance/deposit', key, { owner_id: owner, amount: '1.001', currency: 'BRL' }, h.admin);
    expect(invalid.statusCode).toBe(422);
    const corrected = await send('POST /api/v1/balance/deposit', key, { owner_id: owner, amount: '1.00', currency: 'BRL' }, h.admin);
    expect(corrected.statusCode, corrected.body).toBe(200);
    expect(corrected.headers['x-idempotency-replayed']).toBeUndefined();
  });
});

/**
 * A retry always finds its result (docs/protocol.md 9.4, "A retry finds its result"): the first
 * attempt committed but its answer was lost (the process died before the Idempotency-Key's answer
 * was stored, the connection dropped, or a dependency's deadline answered 503 while the work went
 * on, which releases the key): simulated by deleting the key's record after the first attempt.
 * The retry with the same key and body answers what the first attempt created, not a refusal of
 * the work as done, and does nothing twice.
 */
describe('a retry whose first answer was lost after the commit', () => {
  type Body = Record<string, unknown>;
  const sameRedemption = async (first: Body, again: Body) => {
    expect(again).toMatchObject({ redemption_id: first.redemption_id, token_id: first.token_id, amount: first.amount });
    // One redemption, found by the bearer by its token id too.
    const listed = await h.t.app.inject({ method: 'GET', url: `/api/v1/plc/${String(first.token_id)}/redemptions`, headers: device });
    expect(listed.statusCode, listed.body).toBe(200);
    expect(listed.json().map((row: Body) => row.redemption_id)).toEqual([first.redemption_id]);
  };
  const samePlc = async (first: Body, again: Body) => {
    expect(again).toMatchObject({ token_id: first.token_id, issue_transaction_id: first.issue_transaction_id, created: false });
    const promised = (await h.t.app.inject({ method: 'GET', url: `/api/v1/balance/${String(first.issuer_pubkey)}` })).json();
    expect(promised.promised).toBe(first.amount);
  };
  const sameBalance = async (first: Body, again: Body) => {
    expect(again).toEqual(first);
  };
  const outcomes: Record<string, (first: Body, again: Body) => Promise<void>> = {
    'POST /api/v1/plc/create': samePlc,
    'POST /api/v1/plcs': samePlc,
    'POST /api/v1/plc/{token_id}/cancel': async (first, again) => {
      expect(again).toEqual(first);
    },
    'POST /api/v1/redeem/': sameRedemption,
    'POST /api/v1/settlements': sameRedemption,
    'POST /api/v1/balance/deposit': sameBalance,
    'POST /api/v1/dev/owners/{owner_id}/fund': sameBalance,
    'POST /api/v1/redemption/pix': async (first, again) => {
      expect(again).toMatchObject({ charge_id: first.charge_id, payment_id: first.payment_id });
    },
    'POST /api/v1/redemption/boleto': async (first, again) => {
      expect(again).toMatchObject({ charge_id: first.charge_id, payment_id: first.payment_id });
    },
  };

  it.each(Object.keys(outcomes))('%s: the same key and body answers what the first attempt created, nothing twice', async (operation) => {
    const { body, headers, url } = await (table[operation] as () => Promise<Case>)();
    const key = `idem-${randomUUID()}`;
    const first = await send(operation, key, body, headers, url);
    expect(first.statusCode, first.body).toBe(200);
    await h.t.db.pool.query('DELETE FROM idempotency_records WHERE key = $1', [key]);
    const again = await send(operation, key, body, headers, url);
    expect(again.statusCode, again.body).toBe(200);
    expect(again.headers['x-idempotency-replayed']).toBeUndefined();
    await (outcomes[operation] as (first: Body, again: Body) => Promise<void>)(first.json(), again.json());
  });

  it('a redemption the first attempt opened while its answer timed out (the service ran, the route answered 503) is the retry\'s answer, in its current state', async () => {
    const { plc, issuer, bearer } = await issuedPlc();
    const held = hop(plc, issuer, bearer);
    const body = redeemBody(held, bearer, pixKey);
    const key = `idem-${randomUUID()}`;
    // What the first attempt did before its deadline: the service opened the redemption under the
    // id the route derives from the key and body; the route's answer never reached the client.
    const redemptionId = derivedUuid(`idempotency|redeem|${key}|${idempotencyRequestHash(body)}`);
    const opened = await h.t.app.services.redemptions.openRedemption({
      plc: plcFromJson(body.plc),
      authorization: redeemAuthorizationFromJson(body.authorization),
      field: 'plc',
      route: 'redeem',
      deviceId: device['x-device-id'],
      redemptionId,
    });
    const again = await send('POST /api/v1/redeem/', key, body, device);
    expect(again.statusCode, again.body).toBe(200);
    expect(again.json()).toMatchObject({ redemption_id: opened.id, status: opened.status });
    // Before this change the retry was refused with 409 AUTHORIZATION_REPLAYED and the client never learnt the id.
    const otherKey = await send('POST /api/v1/redeem/', `idem-${randomUUID()}`, body, device);
    expect(otherKey.json()).toMatchObject({ code: 'AUTHORIZATION_REPLAYED' });
  });

  it('a cancel whose first attempt stopped between claiming its authorisation and cancelling runs the cancel on its retry', async () => {
    const { plc, issuer } = await issuedPlc();
    const body = cancelBody(plc, issuer, Date.now());
    const url = `/api/v1/plc/${plc.commitment.tokenId}/cancel`;
    const key = `idem-${randomUUID()}`;
    // The first attempt claimed the authorisation (as the route does before the update) and died.
    const authorization = {
      tokenId: plc.commitment.tokenId,
      commitmentHash: plc.commitmentHash,
      timestampMs: body.authorization.timestamp_ms,
      issuerPublicKey: hexToBytes(body.authorization.issuer_pubkey, 32),
      signature: hexToBytes(body.authorization.signature, 64),
    };
    const claimed = await recordAuthorization(h.t.db.pool, {
      authorizationHash: bytesToHex(cancelAuthorizationHash(authorization)),
      kind: 'cancel',
      signerPubkey: body.authorization.issuer_pubkey,
      tokenId: plc.commitment.tokenId,
      // The cancellation's id the route derives from the key and body.
      referenceId: derivedUuid(`idempotency|cancel|${key}|${idempotencyRequestHash(body)}`),
      signedAtMs: body.authorization.timestamp_ms,
    });
    expect(claimed).toBe(true);
    const retried = await send('POST /api/v1/plc/{token_id}/cancel', key, body, device, url);
    expect(retried.statusCode, retried.body).toBe(200);
    expect(retried.json()).toMatchObject({ token_id: plc.commitment.tokenId, status: 'CANCELLED' });
    // Without a key the same authorisation is a replay, as before.
    const { plc: second, issuer: secondIssuer } = await issuedPlc();
    const secondBody = cancelBody(second, secondIssuer, Date.now());
    const secondUrl = `/api/v1/plc/${second.commitment.tokenId}/cancel`;
    expect((await h.t.app.inject({ method: 'POST', url: secondUrl, headers: device, payload: secondBody })).statusCode).toBe(200);
    expect((await h.t.app.inject({ method: 'POST', url: secondUrl, headers: device, payload: secondBody })).json()).toMatchObject({ code: 'AUTHORIZATION_REPLAYED' });
  });

  it('a create retried after the freshness window (its answer lost) answers the PLC it issued, not PLC_NOT_FRESH', async () => {
    const issuer = newWallet();
    await fund(issuer.pubkey, '10.00');
    const toleranceMs = h.t.app.deps.config.CLOCK_TOLERANCE_MS;
    // Made at the edge of the window: fresh for the first attempt, stale a moment later.
    const createdAtMs = Date.now() - toleranceMs + 1_500;
    const body = { plc: plcToJson(issue(issuer, { amountMinor: 100n, createdAtMs })) };
    const key = `idem-${randomUUID()}`;
    const first = await send('POST /api/v1/plc/create', key, body, device);
    expect(first.statusCode, first.body).toBe(200);
    await h.t.db.pool.query('DELETE FROM idempotency_records WHERE key = $1', [key]);
    await waitFor(() => Date.now() > createdAtMs + toleranceMs + 100, { what: 'the PLC to leave the freshness window', timeoutMs: 5_000 });
    const again = await send('POST /api/v1/plc/create', key, body, device);
    expect(again.statusCode, again.body).toBe(200);
    expect(again.json()).toMatchObject({ token_id: first.json().token_id, issue_transaction_id: first.json().issue_transaction_id, created: false });
    // Another PLC as stale is still refused.
    const stale = await send('POST /api/v1/plc/create', `idem-${randomUUID()}`, { plc: plcToJson(issue(issuer, { amountMinor: 100n, createdAtMs })) }, device);
    expect(stale.json().detail[0]).toMatchObject({ type: 'PLC_NOT_FRESH' });
  });

  it('the same signed redeem or cancel under another key, or a cancel without a key, is still AUTHORIZATION_REPLAYED', async () => {
    const { plc, issuer, bearer } = await issuedPlc();
    const held = hop(plc, issuer, bearer);
    const body = redeemBody(held, bearer, pixKey);
    expect((await send('POST /api/v1/redeem/', `idem-${randomUUID()}`, body, device)).statusCode).toBe(200);
    const other = await send('POST /api/v1/redeem/', `idem-${randomUUID()}`, body, device);
    expect(other.statusCode).toBe(409);
    expect(other.json()).toMatchObject({ code: 'AUTHORIZATION_REPLAYED' });
    const noKey = await h.t.app.inject({ method: 'POST', url: '/api/v1/redeem/', headers: device, payload: body });
    expect(noKey.json()).toMatchObject({ code: 'AUTHORIZATION_REPLAYED' });

    const issued = await issuedPlc();
    const cancel = cancelBody(issued.plc, issued.issuer, Date.now());
    const cancelUrl = `/api/v1/plc/${issued.plc.commitment.tokenId}/cancel`;
    expect((await send('POST /api/v1/plc/{token_id}/cancel', `idem-${randomUUID()}`, cancel, device, cancelUrl)).statusCode).toBe(200);
    const replayed = await h.t.app.inject({ method: 'POST', url: cancelUrl, headers: device, payload: cancel });
    expect(replayed.json()).toMatchObject({ code: 'AUTHORIZATION_REPLAYED' });
    const underAnotherKey = await send('POST /api/v1/plc/{token_id}/cancel', `idem-${randomUUID()}`, cancel, device, cancelUrl);
    expect(underAnotherKey.json()).toMatchObject({ code: 'AUTHORIZATION_REPLAYED' });
  });
});
