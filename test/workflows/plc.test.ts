import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findViolations } from '../../db/ledger.ts';
import { createTestApp, type TestApp } from '../support/app.ts';
import { eventually, temporalCliJson } from '../support/temporal-cli.ts';
import { hop, issue, newWallet, plcToJson } from '../support/wallet.ts';
import { businessStatusKey } from '../../workflows/search-attributes.ts';
import { replayAndRecord } from '../support/histories.ts';

/**
 * The PLC workflow against the real dev server: the durable expiry timer (shortened with
 * PLC_EXPIRY_OVERRIDE_MS; the signed TTL stays at least one hour), its search attributes, and the
 * expire-tokens sweep.
 */
let t: TestApp;
const device = { 'x-device-id': 'device-wf' };

beforeAll(async () => {
  t = await createTestApp({ PLC_EXPIRY_OVERRIDE_MS: '2000' });
  await t.startWorker();
});
afterAll(async () => {
  await t?.close();
});

describe('plc workflow', () => {
  it('expires a transferred PLC when its timer fires, releasing PROMISED, and shows it in the UI search', async () => {
    const [issuer, bearer] = [newWallet(), newWallet()];
    await t.deposit(issuer.pubkey, '10.00');
    const plc = issue(issuer, { amountMinor: 600n });
    const tokenId = plc.commitment.tokenId;
    expect((await t.app.inject({ method: 'POST', url: '/api/v1/plc/create', headers: device, payload: { plc: plcToJson(plc) } })).statusCode).toBe(200);
    const moved = await t.app.inject({ method: 'POST', url: '/api/v1/transfer/', headers: device, payload: { plc: plcToJson(hop(plc, issuer, bearer)) } });
    expect(moved.statusCode).toBe(200);
    const result = await t.temporal.workflow.getHandle(`plc-${tokenId}`).result();
    expect(result).toMatchObject({ status: 'EXPIRED', state: { status: 'EXPIRED' } });
    const status = await t.app.inject({ method: 'GET', url: `/api/v1/plc/${tokenId}/status` });
    expect(status.json()).toMatchObject({ status: 'EXPIRED', chain_length: 1 });
    const balance = await t.app.inject({ method: 'GET', url: `/api/v1/balance/${issuer.pubkey}` });
    expect(balance.json()).toMatchObject({ available: '10.00', promised: '0.00' });
    // A hop after expiry is refused.
    const late = await t.app.inject({
      method: 'POST',
      url: '/api/v1/transfer/',
      headers: device,
      payload: { plc: plcToJson(hop(hop(plc, issuer, bearer), bearer, newWallet())) },
    });
    expect(late.statusCode).toBe(409);
    const listed = await eventually(async () => {
      const list = (await temporalCliJson(['workflow', 'list', '--query', `TokenId = '${tokenId}' AND BusinessStatus = 'EXPIRED'`])) as unknown[];
      return list.length === 1 ? list : undefined;
    });
    expect(listed).toHaveLength(1);
    expect(await findViolations(t.db.pool)).toEqual([]);
    await replayAndRecord(t.temporal, `plc-${tokenId}`, 'plc-expired-after-transfer');
  });

  it('ends at once when cancelled, and a late expiry finds nothing to do', async () => {
    const issuer = newWallet();
    await t.deposit(issuer.pubkey, '10.00');
    const plc = issue(issuer, { amountMinor: 100n });
    const tokenId = plc.commitment.tokenId;
    await t.app.inject({ method: 'POST', url: '/api/v1/plc/create', headers: device, payload: { plc: plcToJson(plc) } });
    const { cancelBody } = await import('../support/wallet.ts');
    const cancelled = await t.app.inject({ method: 'POST', url: `/api/v1/plc/${tokenId}/cancel`, headers: device, payload: cancelBody(plc, issuer) });
    expect(cancelled.statusCode).toBe(200);
    expect(await t.temporal.workflow.getHandle(`plc-${tokenId}`).result()).toMatchObject({ status: 'CANCELLED' });
    await replayAndRecord(t.temporal, `plc-${tokenId}`, 'plc-cancelled');
  });

  it('ends REFUSED, marked REFUSED, when the issue is refused', async () => {
    const issuer = newWallet();
    await t.deposit(issuer.pubkey, '1.00');
    const plc = issue(issuer, { amountMinor: 500n });
    const tokenId = plc.commitment.tokenId;
    const refused = await t.app.inject({ method: 'POST', url: '/api/v1/plc/create', headers: device, payload: { plc: plcToJson(plc) } });
    expect(refused.statusCode).toBe(409);
    const handle = t.temporal.workflow.getHandle(`plc-${tokenId}`);
    expect(await handle.result()).toEqual({ status: 'REFUSED', code: 'INSUFFICIENT_FUNDS' });
    expect((await handle.describe()).typedSearchAttributes.get(businessStatusKey)).toBe('REFUSED');
    await replayAndRecord(t.temporal, `plc-${tokenId}`, 'plc-refused');
  });

  it('the expire-tokens sweep expires overdue PLCs once, with a risk flag each', async () => {
    const slow = await createTestApp({ PLC_EXPIRY_OVERRIDE_MS: String(3600_000) });
    try {
      await slow.startWorker();
      const headers = await slow.adminHeaders();
      const issuer = newWallet();
      await slow.deposit(issuer.pubkey, '10.00');
      const plcs = [issue(issuer, { amountMinor: 100n }), issue(issuer, { amountMinor: 200n }), issue(issuer, { amountMinor: 300n })];
      for (const plc of plcs) {
        await slow.app.inject({ method: 'POST', url: '/api/v1/plc/create', headers: device, payload: { plc: plcToJson(plc) } });
      }
      // Two of them are long overdue (their workflows' timers are an hour away).
      const overdue = plcs.slice(0, 2).map((plc) => plc.commitment.tokenId);
      await slow.db.pool.query(
        `UPDATE plcs SET created_at = created_at - interval '2 days', expires_at = expires_at - interval '2 days',
                         created_at_ms = created_at_ms - 172800000, expires_at_ms = expires_at_ms - 172800000
          WHERE token_id = ANY($1::uuid[])`,
        [overdue],
      );
      const sweep = await slow.app.inject({ method: 'POST', url: '/api/v1/admin/expire-tokens', headers });
      expect(sweep.statusCode).toBe(200);
      expect(sweep.json()).toMatchObject({ status: 'COMPLETED', expired: 2 });
      expect([...sweep.json().token_ids].sort()).toEqual([...overdue].sort());
      const again = await slow.app.inject({ method: 'POST', url: '/api/v1/admin/expire-tokens', headers });
      expect(again.json()).toMatchObject({ expired: 0 });
      const balance = await slow.app.inject({ method: 'GET', url: `/api/v1/balance/${issuer.pubkey}` });
      expect(balance.json()).toMatchObject({ available: '7.00', promised: '3.00' });
      const flags = await slow.app.inject({ method: 'GET', url: '/api/v1/admin/risk-flags?severity=low', headers });
      expect(flags.json().filter((flag: { flag_type: string }) => flag.flag_type === 'OVERDUE_EXPIRY')).toHaveLength(2);
      expect(await findViolations(slow.db.pool)).toEqual([]);
    } finally {
      await slow.close();
    }
  });
});
