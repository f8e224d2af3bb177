import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../support/app.ts';
import { issue, newWallet, plcToJson } from '../support/wallet.ts';

/**
 * Rate limits keyed on who asks, not on what the caller claims (issue 34, docs/security.md "Rate
 * limits"): a device route counts every request under its address and device, under its address
 * whatever the device, and under its signing key once the signature verifies. Rotating
 * X-Device-ID no longer lifts the limit; a key spread over many addresses gets no more; naming
 * someone else's key with a bad signature spends nothing of theirs. 5 requests a minute here.
 */
let t: TestApp;
beforeAll(async () => {
  t = await createTestApp({ RATE_LIMIT_PLC_PER_MINUTE: '5' });
  await t.startWorker();
});
afterAll(async () => {
  await t?.close();
});

let addressCounter = 0;
/** A client address of its own, so tests do not share windows. */
const newAddress = () => `10.34.${Math.floor(++addressCounter / 250)}.${(addressCounter % 250) + 1}`;
const device = () => `device-${randomUUID().slice(0, 8)}`;

const limitsOf = (deviceId: string, remoteAddress: string) =>
  t.app.inject({ method: 'GET', url: `/api/v1/plc/limits/${deviceId}`, headers: { 'x-device-id': deviceId }, remoteAddress });

describe('the address dimension', () => {
  it('rotating X-Device-ID no longer lifts the limit: the sixth request from one address is refused, whatever device it names', async () => {
    const address = newAddress();
    const statuses: number[] = [];
    for (let index = 0; index < 8; index += 1) statuses.push((await limitsOf(device(), address)).statusCode);
    // A device that never registered a PLC: its default limits (200), counted all the same.
    expect(statuses).toEqual([200, 200, 200, 200, 200, 429, 429, 429]);
    const refused = await limitsOf(device(), address);
    expect(refused.json()).toMatchObject({ code: 'RATE_LIMITED', details: { dimension: 'address' } });
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
    // Another address is not held back.
    expect((await limitsOf(device(), newAddress())).statusCode).toBe(200);
  });

  it('one device from one address still has its own limit', async () => {
    const address = newAddress();
    const deviceId = device();
    const statuses: number[] = [];
    for (let index = 0; index < 6; index += 1) statuses.push((await limitsOf(deviceId, address)).statusCode);
    expect(statuses).toEqual([200, 200, 200, 200, 200, 429]);
  });
});

describe('the signing-key dimension', () => {
  const create = (json: unknown, remoteAddress: string) =>
    t.app.inject({ method: 'POST', url: '/api/v1/plc/create', headers: { 'x-device-id': device() }, payload: { plc: json }, remoteAddress });

  it('a key spread over many addresses and devices gets no more than its limit; a forged request naming it spends nothing', async () => {
    const issuer = newWallet();
    await t.deposit(issuer.pubkey, '100.00');
    // Someone else names the issuer's key with a broken signature, from many addresses: refused as invalid, not counted for the key.
    for (let index = 0; index < 6; index += 1) {
      const forged = { ...plcToJson(issue(issuer, { amountMinor: 100n })), signature: '00'.repeat(64) };
      expect((await create(forged, newAddress())).statusCode).toBe(422);
    }
    const statuses: number[] = [];
    for (let index = 0; index < 6; index += 1) statuses.push((await create(plcToJson(issue(issuer, { amountMinor: 100n })), newAddress())).statusCode);
    expect(statuses).toEqual([200, 200, 200, 200, 200, 429]);
    const refused = await create(plcToJson(issue(issuer, { amountMinor: 100n })), newAddress());
    expect(refused.json()).toMatchObject({ code: 'RATE_LIMITED', details: { dimension: 'signing_key' } });
    // Another key from the same addresses is not held back.
    const other = newWallet();
    await t.deposit(other.pubkey, '10.00');
    expect((await create(plcToJson(issue(other, { amountMinor: 100n })), newAddress())).statusCode).toBe(200);
  });
});
