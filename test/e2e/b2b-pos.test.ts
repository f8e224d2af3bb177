import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sendSigned } from '../../bin/pos.ts';
import { encodeTransportText, type Plc } from '../../src/protocol/index.ts';
import { newCnpj } from '../support/b2b.ts';
import { redeemBody, startSettlementHarness, type SettlementHarness } from '../support/settlement.ts';
import { waitFor } from '../support/wait.ts';
import { hop, issue, newWallet, plcToJson } from '../support/wallet.ts';

/**
 * A business from sign-up to a settled POS batch, over HTTP as an integrator sees it: sign-up,
 * approval and its credential, a batch signed by the `pos` client with good, forked and
 * malformed items, the payout settled by the gateway simulator, `ledger verify` clean, and the
 * same batch again answered from storage.
 */

let h: SettlementHarness;
const device = { 'x-device-id': 'device-b2b-e2e' };

beforeAll(async () => {
  h = await startSettlementHarness({ RATE_LIMIT_B2B_PER_MINUTE: '100000' });
});
afterAll(async () => {
  await h?.close();
});

function run(script: string, args: string[], env: Record<string, string>): Promise<{ code: number; stdout: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [fileURLToPath(new URL(script, import.meta.url)), ...args], { env: { PATH: process.env.PATH, ...env }, timeout: 60_000 }, (error, stdout) => {
      resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : -1, stdout });
    });
  });
}

async function post(url: string, body: unknown, headers: Record<string, string> = {}) {
  const response = await fetch(`${h.appUrl}${url}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

describe('a business customer and its point of sale', () => {
  it('signs up, is approved, syncs a signed batch item by item, is paid out, and the ledger verifies', async () => {
    const taxId = newCnpj();
    const signup = await post('/api/v1/b2b/signup', { legal_name: 'Feira Livre Ltda', tax_id: taxId, contact_email: 'caixa@feira.example', plan: 'BUSINESS' });
    expect(signup.status).toBe(201);
    const customerId = signup.body.customer_id as string;
    const approval = await post(`/api/v1/admin/b2b/customers/${customerId}/approve`, { reason: 'contract signed' }, h.admin);
    expect(approval.status).toBe(200);
    const issued = approval.body.credential as { key_id: string; secret: string };
    const credential = { keyId: issued.key_id, secret: issued.secret };

    // The `pos` command, as the docs run it: the credential from the environment.
    const me = await run('../../bin/pos.ts', ['me', '--server', h.appUrl], { PLC_KEY_ID: credential.keyId, PLC_SECRET: credential.secret });
    expect(me.code).toBe(0);
    expect(JSON.parse(me.stdout)).toMatchObject({ customer: { customer_id: customerId, status: 'ACTIVE' }, credential: { key_id: credential.keyId } });

    // The day's offline sales: customers hand PLCs to the terminal.
    const terminal = newWallet();
    const buyer = newWallet();
    await h.t.deposit(buyer.pubkey, '50.00');
    const sale = async (amountMinor: bigint): Promise<Plc> => {
      const plc = issue(buyer, { amountMinor });
      expect((await post('/api/v1/plc/create', { plc: plcToJson(plc) }, device)).status).toBe(200);
      return plc;
    };
    const redeemed = hop(await sale(1_250n), buyer, terminal);
    const registered = hop(await sale(700n), buyer, terminal);
    const cheatBase = await sale(900n);
    // The buyer spends the same PLC twice: first to someone else, registered online.
    expect((await post('/api/v1/transfer/', { plc: plcToJson(hop(cheatBase, buyer, newWallet())) }, device)).status).toBe(200);
    const cheat = hop(cheatBase, buyer, terminal);

    const batch = {
      batch_id: `feira-${randomUUID()}`,
      items: [
        { plc: plcToJson(redeemed), redeem: { authorization: redeemBody(redeemed, terminal, taxId).authorization } },
        { transport: encodeTransportText(registered) },
        { plc: plcToJson(cheat) },
        { transport: 'not a PLC' },
      ],
    };
    type SyncAnswer = {
      stored: boolean;
      items: { status: string; error: { code: string; retryable: boolean; details?: Record<string, unknown> } | null; redemption: { status_url: string } | null }[];
    };
    // As the docs tell an integrator: an answer with `stored: false` met a dependency failure
    // (every refusal in it retryable, nothing kept) and the same batch is sent again.
    let answer: SyncAnswer | undefined;
    for (let attempt = 1; attempt <= 3 && answer?.stored !== true; attempt++) {
      const synced = await sendSigned(h.appUrl, credential, 'POST', '/api/v1/pos/sync', JSON.stringify(batch), { 'x-device-id': 'terminal-7' });
      expect(synced.status).toBe(200);
      answer = synced.body as SyncAnswer;
      if (!answer.stored) expect(answer.items.filter((item) => item.error !== null && !item.error.retryable), JSON.stringify(answer.items)).toEqual([]);
    }
    expect(answer, JSON.stringify(answer?.items)).toMatchObject({ stored: true, replayed: false, counts: { redeemed: 1, registered: 1, refused: 2 } });
    if (answer === undefined) return;
    expect(answer.items.map((item: { status: string; error: { code: string } | null }) => [item.status, item.error?.code ?? null])).toEqual([
      ['redeemed', null],
      ['registered', null],
      ['refused', 'DOUBLE_SPEND_DETECTED'],
      ['refused', 'PLC_INVALID'],
    ]);
    expect(answer.items[2]!.error!.details).toMatchObject({ signer_pubkey: buyer.pubkey });

    // The gateway pays the customer's Pix key (its CNPJ): the redemption settles, the PLC is REDEEMED.
    const statusUrl = answer.items[0]!.redemption!.status_url;
    const read = async () => (await (await fetch(`${h.appUrl}${statusUrl}`)).json()) as { gateway_transfer_id: string | null; status: string };
    const opened = await waitFor(async () => {
      const r = await read();
      return r.gateway_transfer_id !== null ? r : null;
    }, { what: 'the payout at the gateway' });
    h.simulator.state.completeTransfer(opened.gateway_transfer_id!);
    await waitFor(async () => (await read()).status === 'SETTLED', { what: 'the redemption settled' });
    expect(((await (await fetch(`${h.appUrl}/api/v1/plc/${redeemed.commitment.tokenId}/status`)).json()) as { status: string }).status).toBe('REDEEMED');

    // The same batch again: the stored answer, nothing done twice.
    const again = await sendSigned(h.appUrl, credential, 'POST', '/api/v1/pos/sync', JSON.stringify(batch));
    expect(again.status).toBe(200);
    expect(again.body).toEqual({ ...answer, replayed: true });
    const count = await h.t.db.pool.query('SELECT count(*)::int AS n FROM redemptions WHERE token_id = $1', [redeemed.commitment.tokenId]);
    expect(count.rows[0].n).toBe(1);

    // `ledger verify`, as an operator runs it.
    const verify = await run('../../scripts/ledger.ts', ['verify'], { DATABASE_URL: h.t.db.url });
    expect(verify.code, verify.stdout).toBe(0);
  });
});
