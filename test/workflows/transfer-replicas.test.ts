import { createLegacyPlc } from '../support/legacy-plc.ts';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../api/app.ts';
import type { Plc } from '../../src/protocol/index.ts';
import { createTestApp, type TestApp } from '../support/app.ts';
import { eventually, temporalCliJson } from '../support/temporal-cli.ts';
import { hop, issue, newWallet, plcToJson } from '../support/wallet.ts';

/**
 * Two API instances on one database, each with its own memory of the chains it registered
 * (services/registered-chains.ts) and its own status dispatcher: a chain registered through one
 * is extended through the other (a stale memory costs a read of what is new, never a wrong
 * answer), a fork shown to one after the other registered the honest chain is refused with its
 * evidence, and the PLC workflow gets the same status whichever instance took the first hop.
 */
let t: TestApp;
let second: FastifyInstance;
const device = { 'x-device-id': 'device-replicas' };

beforeAll(async () => {
  t = await createTestApp({ PLC_STATUS_POLL_MS: '50', PLC_STATUS_LEADER_RETRY_MS: '200' });
  await t.startWorker();
  second = await buildApp({ deps: t.app.deps, logger: false });
  await second.ready();
});
afterAll(async () => {
  await second?.close();
  await t?.close();
});

const transfer = (app: FastifyInstance, plc: Plc) => app.inject({ method: 'POST', url: '/api/v1/transfer/', headers: device, payload: { plc: plcToJson(plc) } });

/** A PLC issued before expiry buckets (its own workflow, owed the first hop's status: docs/plc.md). */
async function created(app: FastifyInstance, amountMinor: bigint) {
  const issuer = newWallet();
  await t.deposit(issuer.pubkey, '10.00');
  const plc = issue(issuer, { amountMinor });
  await createLegacyPlc(t, plc, device, app);
  return { issuer, plc };
}

async function listedAs(tokenId: string, status: string): Promise<boolean | undefined> {
  const list = (await temporalCliJson(['workflow', 'list', '--query', `TokenId = '${tokenId}' AND BusinessStatus = '${status}'`])) as unknown[];
  return list.length === 1 ? true : undefined;
}

describe('transfers through two API instances on one database', () => {
  it('a chain registered through one is extended through the other, hop by hop, whichever remembers what', async () => {
    const [a, b] = [t.app, second];
    const { issuer, plc } = await created(a, 300n);
    const [w1, w2, w3, w4] = [newWallet(), newWallet(), newWallet(), newWallet()];
    const plc1 = hop(plc, issuer, w1);
    const plc2 = hop(plc1, w1, w2);
    const plc3 = hop(plc2, w2, w3);
    const plc4 = hop(plc3, w3, w4);
    // B has never seen it; A remembers it as issued (stale after B's hop); and so on, alternating.
    for (const [index, [app, presented]] of ([[b, plc1], [a, plc2], [b, plc3], [a, plc4]] as const).entries()) {
      const answer = await transfer(app, presented);
      expect(answer.statusCode).toBe(200);
      expect(answer.json()).toMatchObject({ chain_length: index + 1, appended: 1, status: 'TRANSFERRED' });
    }
    // Either, shown an older state, answers with the PLC as it is now.
    expect((await transfer(b, plc2)).json()).toMatchObject({ chain_length: 4, appended: 0, bearer_pubkey: w4.pubkey });
    expect((await transfer(a, plc3)).json()).toMatchObject({ chain_length: 4, appended: 0, bearer_pubkey: w4.pubkey });
    const chain = await b.inject({ method: 'GET', url: `/api/v1/plc/${plc.commitment.tokenId}/chain` });
    expect(chain.json().map((entry: { recipient_pubkey: string }) => entry.recipient_pubkey)).toEqual([w1.pubkey, w2.pubkey, w3.pubkey, w4.pubkey]);
  });

  it('a fork shown to the second instance after the first registered the honest chain is refused with its evidence', async () => {
    const [a, b] = [t.app, second];
    const { issuer, plc } = await created(a, 400n);
    const [w1, w2, honest, thief] = [newWallet(), newWallet(), newWallet(), newWallet()];
    const plc1 = hop(plc, issuer, w1);
    const plc2 = hop(plc1, w1, w2);
    // Both remember the chain at one hop.
    expect((await transfer(a, plc1)).statusCode).toBe(200);
    expect((await transfer(b, plc1)).json()).toMatchObject({ chain_length: 1, appended: 0 });
    expect((await transfer(a, plc2)).statusCode).toBe(200);
    // A sees the honest spend of w2's state; B, whose memory stops before it, is shown the double spend.
    const plc3 = hop(plc2, w2, honest);
    expect((await transfer(a, plc3)).json()).toMatchObject({ chain_length: 3, appended: 1 });
    const fork = await transfer(b, hop(plc2, w2, thief));
    expect(fork.statusCode).toBe(409);
    expect(fork.json()).toMatchObject({
      code: 'DOUBLE_SPEND_DETECTED',
      details: { signer_pubkey: w2.pubkey, position: 2, registered_record: { recipient_pubkey: honest.pubkey }, presented_record: { recipient_pubkey: thief.pubkey } },
    });
    // Nothing of the fork was stored; either instance answers with the honest chain.
    expect((await transfer(b, plc3)).json()).toMatchObject({ chain_length: 3, appended: 0, bearer_pubkey: honest.pubkey });
  });

  it('the PLC workflow gets the same status whichever instance took the first hop', async () => {
    const viaA = await created(t.app, 100n);
    const viaB = await created(second, 100n);
    const answers = [];
    for (const [app, { issuer, plc }] of [
      [t.app, viaA],
      [second, viaB],
    ] as const) {
      const answer = await transfer(app, hop(plc, issuer, newWallet()));
      expect(answer.statusCode).toBe(200);
      const { status, chain_length, appended } = answer.json() as { status: string; chain_length: number; appended: number };
      answers.push({ status, chain_length, appended });
    }
    expect(answers[0]).toEqual(answers[1]);
    for (const { plc } of [viaA, viaB]) {
      expect(await eventually(() => listedAs(plc.commitment.tokenId, 'TRANSFERRED'))).toBe(true);
    }
  });
});
