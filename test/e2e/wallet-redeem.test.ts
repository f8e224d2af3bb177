/**
 * The wallet program as a new user runs it, against the real server and the gateway simulator:
 * two wallets that remember the server, a PLC passed through a QR code picture, a redemption the
 * gateway fails, followed with `status`, redeemed again with a newly signed authorisation, and
 * settled; `balance` shows each side. Payouts wait for the test to complete or fail them.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { field, ok, refused } from '../bin/wallet-cli.ts';
import { bankSlipLine, startSettlementHarness, type SettlementHarness } from '../support/settlement.ts';

let h: SettlementHarness;
let root = '';
const dirs = { a: '', b: '' };
const keys = { a: '', b: '' };

beforeAll(async () => {
  h = await startSettlementHarness({}, { autoSettle: false });
  root = mkdtempSync(join(tmpdir(), 'wallet-redeem-'));
  dirs.a = join(root, 'a');
  dirs.b = join(root, 'b');
}, 60_000);

afterAll(async () => {
  await h?.close();
  if (root !== '') rmSync(root, { recursive: true, force: true });
});

async function redemptionOf(redemptionId: string) {
  return (await h.t.app.inject({ method: 'GET', url: `/api/v1/redemptions/${redemptionId}` })).json() as { gateway_transfer_id: string | null; status: string };
}

async function waitFor<T>(read: () => Promise<T>, done: (value: T) => boolean): Promise<T> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`timed out: ${JSON.stringify(value)}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

describe('the wallet program redeems through the real server', () => {
  it('create, hand over by QR code, redeem, a failed payout, status, redeem again, settled', { timeout: 180_000 }, async () => {
    keys.a = field(await ok(dirs.a, 'init', '--server', h.appUrl), 'public_key');
    keys.b = field(await ok(dirs.b, 'init', '--server', h.appUrl), 'public_key');
    await h.t.deposit(keys.a, '30.00');
    expect(await ok(dirs.a, 'balance')).toMatch(/available: 30\.00 BRL/);

    const tokenId = field(await ok(dirs.a, 'create', '--amount', '12.50', '--currency', 'BRL', '--ttl-hours', '2'), 'token_id');
    expect(await ok(dirs.a, 'balance')).toMatch(/promised:\s+12\.50 BRL/);
    const png = join(root, 'hop.png');
    await ok(dirs.a, 'send', '--token', tokenId, '--to', keys.b, '--image', png);
    expect(await ok(dirs.b, 'receive', '--image', png)).toContain(`received ${tokenId}`);

    // A key that is not a Pix key is refused before anything is signed or sent.
    await refused(dirs.b, 'invalid_destination', 'redeem', '--token', tokenId, '--pix-key', '12345');
    const first = await ok(dirs.b, 'redeem', '--token', tokenId, '--pix-key', '123e4567-e89b-42d3-a456-556642440000');
    const firstId = field(first, 'redemption_id');
    expect(field(first, 'status')).toBe('PENDING_PAYMENT');
    await refused(dirs.b, 'redemption_open', 'redeem', '--token', tokenId, '--pix-key', '123e4567-e89b-42d3-a456-556642440000');

    // The gateway fails the payout: status says so, and the bearer redeems again.
    const transferId = (await waitFor(() => redemptionOf(firstId), (r) => r.gateway_transfer_id !== null)).gateway_transfer_id!;
    h.simulator.state.failTransfer(transferId, 'account closed');
    await waitFor(() => redemptionOf(firstId), (r) => r.status === 'FAILED');
    const failed = await ok(dirs.b, 'status', '--token', tokenId);
    expect(failed).toMatch(/plc:\s+TRANSFERRED/);
    expect(failed).toMatch(/status:\s+FAILED \(account closed\)/);
    const second = await ok(dirs.b, 'redeem', '--token', tokenId, '--pix-key', '+5511987654321');
    const secondId = field(second, 'redemption_id');
    expect(secondId).not.toBe(firstId);

    const secondTransfer = (await waitFor(() => redemptionOf(secondId), (r) => r.gateway_transfer_id !== null)).gateway_transfer_id!;
    h.simulator.state.completeTransfer(secondTransfer);
    await waitFor(() => redemptionOf(secondId), (r) => r.status === 'SETTLED');
    const settled = await ok(dirs.b, 'status', '--token', tokenId);
    expect(settled).toMatch(/plc:\s+REDEEMED/);
    expect(settled).toMatch(/status:\s+SETTLED/);
    expect(settled).toContain(`gateway:      ${secondTransfer}`);
    expect(await ok(dirs.b, 'list')).toContain(`redeem: SETTLED (${secondId})`);
    expect(await ok(dirs.a, 'balance')).toMatch(/available: 17\.50 BRL/);
    expect(await ok(dirs.a, 'balance')).toMatch(/promised:\s+0\.00 BRL/);
  });

  it('redeem --boleto: the printed line checked, signed as digits, the amount held to the payout by the server, the bill paid and settled', { timeout: 120_000 }, async () => {
    await h.t.deposit(keys.a, '100.00');
    const tokenId = field(await ok(dirs.a, 'create', '--amount', '100.00', '--currency', 'BRL', '--ttl-hours', '2'), 'token_id');
    const png = join(root, 'hop-boleto.png');
    await ok(dirs.a, 'send', '--token', tokenId, '--to', keys.b, '--image', png);
    await ok(dirs.b, 'receive', '--image', png);
    // A boleto redemption costs a fee: the bearer consents to the schedule first.
    await ok(dirs.b, 'fees', '--consent');
    // Refused before anything is signed: a mistyped line, and a line for more than the PLC holds.
    const estimate = await h.t.app.inject({ method: 'POST', url: '/api/v1/fees/estimate', payload: { amount: '100.00', rail: 'BOLETO', owner_id: keys.b } });
    const payout = BigInt((estimate.json() as { net_amount: string }).net_amount.replace('.', ''));
    const line = bankSlipLine(payout);
    await refused(dirs.b, 'invalid_destination', 'redeem', '--token', tokenId, '--boleto', `${line.slice(0, 9)}${(Number(line[9]) + 1) % 10}${line.slice(10)}`);
    await refused(dirs.b, 'invalid_destination', 'redeem', '--token', tokenId, '--boleto', bankSlipLine(10_001n));
    // A line for the PLC's whole amount is the server's refusal: the payout is the amount less the fee.
    await refused(dirs.b, 'server_refused', 'redeem', '--token', tokenId, '--boleto', bankSlipLine(10_000n));
    const printed = `${line.slice(0, 5)}.${line.slice(5, 10)} ${line.slice(10, 15)}.${line.slice(15, 21)} ${line.slice(21, 26)}.${line.slice(26, 32)} ${line[32]} ${line.slice(33)}`;
    const answer = await ok(dirs.b, 'redeem', '--token', tokenId, '--boleto', printed);
    const redemptionId = field(answer, 'redemption_id');
    const bill = (await waitFor(() => redemptionOf(redemptionId), (r) => r.gateway_transfer_id !== null)).gateway_transfer_id!;
    // Validated (type BILL), then at the bank; Asaas writes the line with dots and spaces, as printed.
    await waitFor(async () => h.simulator.state.getBillPayment(bill), (current) => current.status === 'BANK_PROCESSING');
    expect(h.simulator.state.getBillPayment(bill)).toMatchObject({ identificationField: printed, status: 'BANK_PROCESSING', value: Number(payout) / 100 });
    h.simulator.state.completeBillPayment(bill);
    await waitFor(() => redemptionOf(redemptionId), (r) => r.status === 'SETTLED');
    const settled = await ok(dirs.b, 'status', '--token', tokenId);
    expect(settled).toMatch(/plc:\s+REDEEMED/);
    expect(await ok(dirs.b, 'show', '--token', tokenId)).toContain(`to boleto ${line}`);
  });
});
