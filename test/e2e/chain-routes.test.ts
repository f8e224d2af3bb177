/**
 * Every route that receives a chain (transfer, redeem, settlements) runs the same fork check
 * first (docs/protocol.md section 8), and every signed authorisation is accepted once (9.4):
 *
 * - a fork shown at each route, with the PLC TRANSFERRED, with its redemption in flight, REDEEMED
 *   and EXPIRED, and the first-come case (the other branch redeemed first through unregistered
 *   hops): 409 DOUBLE_SPEND_DETECTED with both records in full (checked offline with
 *   verifyForkEvidence), one DOUBLE_SPEND_FORK flag per culprit and fork, its occurrences counted;
 * - the redeem authorisation of a failed redemption is refused when sent again under a new
 *   Idempotency-Key (a new authorisation redeems), its Idempotency-Key replay answers the stored
 *   response, and two identical authorisations through two app instances at once: exactly one.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../api/app.ts';
import { listRiskFlags } from '../../db/risk-flags.ts';
import { createTestApp, type TestApp } from '../support/app.ts';
import { redeemBody, settlementBody, startSettlementHarness, type SettlementHarness } from '../support/settlement.ts';
import { cancelBody, hop, issue, newWallet, plcToJson, type TestWallet } from '../support/wallet.ts';
import { parsePlcJson, transferRecordJsonSchema, verifyForkEvidence, hexToBytes, type Plc } from '../../src/protocol/index.ts';

let h: SettlementHarness;
const device = { 'x-device-id': 'device-chain-routes' };
const pixKey = '123e4567-e89b-42d3-a456-556642440000';
const routes = ['transfer', 'redeem', 'settlements'] as const;
type Route = (typeof routes)[number];

beforeAll(async () => {
  // Payouts wait for the test to complete or fail them: a redemption stays in flight meanwhile.
  h = await startSettlementHarness({}, { autoSettle: false });
});
afterAll(async () => {
  await h?.close();
});

type Inject = (options: { method: 'GET' | 'POST'; url: string; headers?: Record<string, string>; payload?: object }) => Promise<{ statusCode: number; json: () => any; headers: Record<string, unknown> }>; // eslint-disable-line @typescript-eslint/no-explicit-any

function show(inject: Inject, route: Route, chain: Plc, bearer: TestWallet, headers: Record<string, string> = device) {
  switch (route) {
    case 'transfer':
      return inject({ method: 'POST', url: '/api/v1/transfer/', headers, payload: { plc: plcToJson(chain) } });
    case 'redeem':
      return inject({ method: 'POST', url: '/api/v1/redeem/', headers, payload: redeemBody(chain, bearer, pixKey) });
    case 'settlements':
      return inject({ method: 'POST', url: '/api/v1/settlements', headers, payload: settlementBody(chain, bearer, pixKey) });
  }
}

const injectOf = (t: TestApp): Inject => (options) => t.app.inject(options) as ReturnType<Inject>;

async function fund(t: TestApp, wallet: TestWallet, amount: string) {
  await t.deposit(wallet.pubkey, amount);
}

async function created(t: TestApp, issuer: TestWallet, amountMinor = 500n): Promise<Plc> {
  await fund(t, issuer, '20.00');
  const plc = issue(issuer, { amountMinor });
  const response = await t.app.inject({ method: 'POST', url: '/api/v1/plc/create', headers: device, payload: { plc: plcToJson(plc) } });
  expect(response.statusCode, response.body).toBe(200);
  return plc;
}

/** A PLC issued by A, A -> B, then B signs two branches: B -> C and B -> D. */
async function forked(t: TestApp, registerFirstHop: boolean) {
  const [a, b, c, d] = [newWallet(), newWallet(), newWallet(), newWallet()];
  const plc = await created(t, a);
  const toB = hop(plc, a, b);
  if (registerFirstHop) expect((await t.app.inject({ method: 'POST', url: '/api/v1/transfer/', headers: device, payload: { plc: plcToJson(toB) } })).statusCode).toBe(200);
  return { a, b, c, d, plc, branch1: hop(toB, b, c), branch2: hop(toB, b, d) };
}

/** The refusal of a fork: evidence anyone can check offline, naming B; answers the flag id. */
function expectForkRefused(response: Awaited<ReturnType<Inject>>, culprit: TestWallet, route: Route): string {
  expect(response.statusCode, `${route}: ${JSON.stringify(response.json())}`).toBe(409);
  const body = response.json();
  expect(body.code).toBe('DOUBLE_SPEND_DETECTED');
  const details = body.details;
  expect(details.culprit_pubkey).toBe(culprit.pubkey);
  const registered = transferRecordJsonSchema.parse(details.registered_record);
  const presented = transferRecordJsonSchema.parse(details.presented_record);
  // Both records in full: the proof verifies with nothing else.
  const toRecord = (json: typeof registered) => parsePlcJson({ ...plcJsonShell, transfer_chain: [json] }).transferChain[0]!;
  const evidence = { prevHash: hexToBytes(details.prev_hash, 32), culpritPublicKey: hexToBytes(culprit.pubkey, 32), first: toRecord(registered), second: toRecord(presented) };
  expect(verifyForkEvidence(evidence)).toBe(true);
  expect(registered.sender_pubkey).toBe(culprit.pubkey);
  expect(presented.sender_pubkey).toBe(culprit.pubkey);
  expect(registered.hash).not.toBe(presented.hash);
  return details.risk_flag_id as string;
}

/** A syntactically valid PLC JSON around one record, only to convert the record's JSON form. */
let plcJsonShell: Record<string, unknown>;

async function forkFlags(t: TestApp, tokenId: string) {
  const flags = await listRiskFlags(t.db.pool, { subjectPubkey: undefined }, { limit: 200, offset: 0 });
  return flags.filter((flag) => flag.token_id === tokenId && flag.flag_type === 'DOUBLE_SPEND_FORK');
}

async function statusOf(t: TestApp, plc: Plc) {
  return (await t.app.inject({ method: 'GET', url: `/api/v1/plc/${plc.commitment.tokenId}/status` })).json();
}

async function waitFor<T>(read: () => Promise<T>, done: (value: T) => boolean, what: string): Promise<T> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}: ${JSON.stringify(value)}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** Shows the second branch at every route: each refused with evidence, one flag counting them. */
async function expectForkAtEveryRoute(t: TestApp, f: Awaited<ReturnType<typeof forked>>) {
  const before = await forkFlags(t, f.plc.commitment.tokenId);
  const seen = before[0]?.occurrences ?? 0;
  const flagIds = new Set<string>();
  for (const route of routes) flagIds.add(expectForkRefused(await show(injectOf(t), route, f.branch2, f.d), f.b, route));
  const flags = await forkFlags(t, f.plc.commitment.tokenId);
  expect(flags).toHaveLength(1);
  expect(flagIds).toEqual(new Set([flags[0]!.id]));
  // One flag per culprit and fork; each showing counts one occurrence.
  expect(flags[0]).toMatchObject({ severity: 'high', subject_pubkey: f.b.pubkey, occurrences: seen + routes.length });
}

describe('the fork check at every route that receives a chain', () => {
  beforeAll(() => {
    const w = newWallet();
    plcJsonShell = plcToJson(issue(w)) as unknown as Record<string, unknown>;
  });

  it('TRANSFERRED: the registered branch stands; the other is refused with evidence at each route, one flag', async () => {
    const f = await forked(h.t, true);
    expect((await show(injectOf(h.t), 'transfer', f.branch1, f.c)).statusCode).toBe(200);
    await expectForkAtEveryRoute(h.t, f);
    expect(await statusOf(h.t, f.plc)).toMatchObject({ status: 'TRANSFERRED', chain_length: 2, bearer_pubkey: f.c.pubkey, redemption_in_flight: false });
  });

  it('redemption in flight, then REDEEMED: the other branch is still refused with evidence, not PLC_ALREADY_REDEEMED', async () => {
    const f = await forked(h.t, true);
    const opened = await show(injectOf(h.t), 'redeem', f.branch1, f.c);
    expect(opened.statusCode).toBe(200);
    expect(await statusOf(h.t, f.plc)).toMatchObject({ redemption_in_flight: true });
    await expectForkAtEveryRoute(h.t, f);

    // The payout completes: REDEEMED, and the fork is refused alike (the same flag, counted again).
    const redemption = await waitFor(
      async () => (await h.t.app.inject({ method: 'GET', url: opened.json().status_url })).json(),
      (r) => r.gateway_transfer_id !== null,
      'the payout at the gateway',
    );
    h.simulator.state.completeTransfer(redemption.gateway_transfer_id);
    await waitFor(() => statusOf(h.t, f.plc), (s) => s.status === 'REDEEMED', 'REDEEMED');
    await expectForkAtEveryRoute(h.t, f);
    const [flag] = await forkFlags(h.t, f.plc.commitment.tokenId);
    expect(flag!.occurrences).toBe(2 * routes.length);
  });

  it('first come: a branch redeemed through hops never registered; the other branch shown afterwards at each route', async () => {
    const f = await forked(h.t, false);
    expect(await statusOf(h.t, f.plc)).toMatchObject({ status: 'ISSUED', chain_length: 0 });
    expect((await show(injectOf(h.t), 'redeem', f.branch1, f.c)).statusCode).toBe(200);
    expect(await statusOf(h.t, f.plc)).toMatchObject({ chain_length: 2, bearer_pubkey: f.c.pubkey, redemption_in_flight: true });
    await expectForkAtEveryRoute(h.t, f);
  });

  it('EXPIRED: the fork is refused with evidence before the expiry is', async () => {
    const expiring = await createTestApp({ PLC_EXPIRY_OVERRIDE_MS: '1000', PLC_EXPIRY_BUCKET_MS: '1000', RATE_LIMIT_REDEEM_PER_MINUTE: '100000', RATE_LIMIT_TRANSFER_PER_MINUTE: '100000' });
    try {
      await expiring.startWorker();
      const f = await forked(expiring, true);
      expect((await show(injectOf(expiring), 'transfer', f.branch1, f.c)).statusCode).toBe(200);
      await waitFor(() => statusOf(expiring, f.plc), (s) => s.status === 'EXPIRED', 'EXPIRED');
      await expectForkAtEveryRoute(expiring, f);
      // The honest branch is answered as before: nothing to redeem, the PLC expired.
      const late = await show(injectOf(expiring), 'redeem', f.branch1, f.c);
      expect(late.statusCode).toBe(409);
      expect(late.json().code).not.toBe('DOUBLE_SPEND_DETECTED');
    } finally {
      await expiring.close();
    }
  });
});

describe('each signed authorisation is accepted once', () => {
  it('the redeem authorisation of a failed redemption is refused under a new Idempotency-Key; a new one redeems', async () => {
    const [a, b] = [newWallet(), newWallet()];
    const plc = await created(h.t, a);
    const chain = hop(plc, a, b);
    const body = redeemBody(chain, b, pixKey);
    const key = `redeem-${randomUUID()}`;
    const first = await h.t.app.inject({ method: 'POST', url: '/api/v1/redeem/', headers: { ...device, 'idempotency-key': key }, payload: body });
    expect(first.statusCode).toBe(200);
    // The same request under the same key: the stored answer, not a second acceptance.
    const replay = await h.t.app.inject({ method: 'POST', url: '/api/v1/redeem/', headers: { ...device, 'idempotency-key': key }, payload: body });
    expect(replay.statusCode).toBe(200);
    expect(replay.headers['x-idempotency-replayed']).toBe('true');
    expect(replay.json().redemption_id).toBe(first.json().redemption_id);

    const redemption = await waitFor(
      async () => (await h.t.app.inject({ method: 'GET', url: first.json().status_url })).json(),
      (r) => r.gateway_transfer_id !== null,
      'the payout at the gateway',
    );
    h.simulator.state.failTransfer(redemption.gateway_transfer_id, 'refused by the bank');
    await waitFor(async () => (await h.t.app.inject({ method: 'GET', url: first.json().status_url })).json(), (r) => r.status === 'FAILED', 'FAILED');
    await waitFor(() => statusOf(h.t, plc), (s) => s.redemption_in_flight === false, 'the PLC reverted');

    // The identical authorisation again, under a new key (and under none): refused, nothing opened.
    for (const headers of [{ ...device, 'idempotency-key': `redeem-${randomUUID()}` }, device]) {
      const again = await h.t.app.inject({ method: 'POST', url: '/api/v1/redeem/', headers, payload: body });
      expect(again.statusCode).toBe(409);
      expect(again.json().code).toBe('AUTHORIZATION_REPLAYED');
    }
    const sameAtSettlements = await h.t.app.inject({ method: 'POST', url: '/api/v1/settlements', headers: device, payload: settlementBody(chain, b, pixKey, body.authorization.timestamp_ms) });
    expect(sameAtSettlements.json().code).toBe('AUTHORIZATION_REPLAYED');
    expect(await statusOf(h.t, plc)).toMatchObject({ status: 'TRANSFERRED', redemption_in_flight: false });
    // A freshly signed authorisation redeems.
    const fresh = await h.t.app.inject({ method: 'POST', url: '/api/v1/redeem/', headers: device, payload: redeemBody(chain, b, pixKey, body.authorization.timestamp_ms + 1) });
    expect(fresh.statusCode).toBe(200);
    expect(fresh.json().redemption_id).not.toBe(first.json().redemption_id);
  });

  it('two identical redeem authorisations through two app instances at once: exactly one accepted', async () => {
    const replica = await buildApp({ deps: h.t.app.deps, logger: false });
    try {
      for (let round = 0; round < 3; round++) {
        const [a, b] = [newWallet(), newWallet()];
        const plc = await created(h.t, a);
        const body = redeemBody(hop(plc, a, b), b, pixKey);
        const answers = await Promise.all(
          [h.t.app, replica, h.t.app, replica].map((app) =>
            app.inject({ method: 'POST', url: '/api/v1/redeem/', headers: { ...device, 'idempotency-key': `redeem-${randomUUID()}` }, payload: body }),
          ),
        );
        expect(answers.filter((answer) => answer.statusCode === 200)).toHaveLength(1);
        for (const answer of answers.filter((candidate) => candidate.statusCode !== 200)) {
          expect(answer.statusCode).toBe(409);
          expect(['AUTHORIZATION_REPLAYED', 'PLC_ALREADY_REDEEMED', 'CONFLICT']).toContain(answer.json().code);
        }
        const { rows } = await h.t.db.pool.query('SELECT count(*)::int AS n FROM redemptions WHERE token_id = $1', [plc.commitment.tokenId]);
        expect(rows[0].n).toBe(1);
      }
    } finally {
      await replica.close();
    }
  });

  it('two identical cancels through two app instances at once: one cancels, the other is refused; sent again later under a new key: AUTHORIZATION_REPLAYED', async () => {
    const replica = await buildApp({ deps: h.t.app.deps, logger: false });
    try {
      const a = newWallet();
      const plc = await created(h.t, a, 300n);
      const payload = cancelBody(plc, a);
      const url = `/api/v1/plc/${plc.commitment.tokenId}/cancel`;
      const answers = await Promise.all([h.t.app, replica].map((app) => app.inject({ method: 'POST', url, headers: { ...device, 'idempotency-key': `cancel-${randomUUID()}` }, payload })));
      expect(answers.map((answer) => answer.statusCode).sort()).toEqual([200, 409]);
      expect(['AUTHORIZATION_REPLAYED', 'PLC_NOT_CANCELLABLE']).toContain(answers.find((answer) => answer.statusCode === 409)!.json().code);
      const later = await h.t.app.inject({ method: 'POST', url, headers: { ...device, 'idempotency-key': `cancel-${randomUUID()}` }, payload });
      expect(later.statusCode).toBe(409);
      expect(later.json().code).toBe('AUTHORIZATION_REPLAYED');
      expect((await h.t.app.inject({ method: 'GET', url: `/api/v1/balance/${a.pubkey}` })).json()).toMatchObject({ available: '20.00', promised: '0.00' });
    } finally {
      await replica.close();
    }
  });
});
