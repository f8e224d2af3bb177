import { join } from 'node:path';
import QRCode from 'qrcode';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  blocklistToJson,
  bytesToHex,
  canonicalReceiptKeyOrder,
  developmentBlocklistPublicKey,
  developmentBlocklistSeed,
  encodeTransportText,
  generateKeyPair,
  hexToBytes,
  plcToJson,
  signBlocklist,
  timestampMsMax,
  verifyBlocklistJson,
  withIssueReceipt,
  type Plc,
} from '../../src/protocol/index.ts';
import { browserUnavailable } from '../support/browser.ts';
import { startSettlementHarness, type SettlementHarness } from '../support/settlement.ts';
import { hopToRawKey, issue, newWallet, type TestWallet } from '../support/wallet.ts';
import { createWallet, ensureWalletBuilt, launchChromium, newPhone, readStored, showToCamera, waitForServiceWorker, walletScreenshotsDir, type Phone } from './wallet-devices.ts';

/**
 * The browser wallet's trust in the service (docs/wallet.md, "Trusted service key"): the key its
 * blocklist must be signed with is shown and can be replaced only after a confirmation (a kept list
 * the new key did not sign is dropped, and the service's list is refused until the right key is
 * back); a receipt key the service has withdrawn stops being trusted at the next refresh, so a PLC
 * backed only by it is refused offline; and Pay will not sign a hop on a PLC that has no receipt
 * yet (every receiver would refuse it). One phone (a browser context of its own) against the service.
 */
if (browserUnavailable !== null) console.warn(`browser tests skipped: ${browserUnavailable}`);

describe.skipIf(browserUnavailable !== null)('browser wallet: the trusted service key, a withdrawn receipt key, an unbacked PLC not paid on', () => {
  let h: SettlementHarness;
  let browser: Browser;
  let phone: Phone;
  let me: string;
  const passphrase = 'wallet trust passphrase';

  beforeAll(async () => {
    ensureWalletBuilt();
    h = await startSettlementHarness();
    browser = await launchChromium();
    phone = await newPhone(browser);
    await phone.page.goto(`${h.appUrl}/wallet/`);
    await waitForServiceWorker(phone.page);
    me = await createWallet(phone.page, passphrase);
  }, 240_000);
  afterAll(async () => {
    await browser?.close();
    await h?.close();
  });

  const said = async (page: Page): Promise<string> => {
    const message = page.locator('[role=alert], .notice');
    await message.first().waitFor({ timeout: 20_000 });
    return (await message.first().textContent()) ?? '';
  };

  const refreshBlocklist = async (page: Page): Promise<string> => {
    await page.getByRole('button', { name: 'Refresh blocklist' }).click();
    return said(page);
  };

  /** Registers a PLC of a fresh issuer addressed (one hop) to this wallet, with the receipt the create answered. */
  const backedPlcForMe = async (): Promise<Plc> => {
    const issuer: TestWallet = newWallet();
    await h.t.deposit(issuer.pubkey, '10.00');
    const plc = issue(issuer, { amountMinor: 200n });
    const answer = await h.t.app.inject({ method: 'POST', url: '/api/v1/plc/create', headers: { 'x-device-id': 'device-trust' }, payload: { plc: plcToJson(plc) } });
    expect(answer.statusCode).toBe(200);
    const backed = withIssueReceipt(plc, hexToBytes((answer.json() as { issue_receipt: string }).issue_receipt));
    return hopToRawKey(backed, issuer, hexToBytes(me, 32));
  };

  /** Shows the camera a code the test drew (what another phone would show) and answers what the wallet says. */
  const scan = async (page: Page, plc: Plc): Promise<string> => {
    await page.getByRole('button', { name: 'Receive' }).click();
    const png = await QRCode.toBuffer([{ data: encodeTransportText(plc), mode: 'alphanumeric' }], { errorCorrectionLevel: 'L', margin: 4, scale: 4 });
    await showToCamera(page, png);
    await page.getByRole('button', { name: 'Scan payment' }).click();
    const text = await said(page);
    await page.getByRole('button', { name: 'Back', exact: true }).click();
    return text;
  };

  it('shows the trusted key; a mistyped one is refused, another is trusted only after confirmation, and the service list is refused until the key is back', async () => {
    const page = phone.page;
    await page.getByRole('button', { name: 'Settings' }).click();
    expect(await refreshBlocklist(page)).toMatch(/Blocklist version \d+ kept/);
    expect((await page.getByTestId('service-key').textContent())?.trim()).toBe(bytesToHex(developmentBlocklistPublicKey));
    await expect.poll(() => page.getByText('the published development key: for testing only').count()).toBe(1);

    const field = page.getByLabel('Another service key (64 hex digits)');
    await field.fill('not a key');
    await page.getByRole('button', { name: 'Review key' }).click();
    await expect.poll(() => page.getByRole('alert').textContent()).toContain('64 hexadecimal digits');
    // 64 hex digits that are no point of the curve.
    await field.fill('ff'.repeat(32));
    await page.getByRole('button', { name: 'Review key' }).click();
    await expect.poll(() => page.getByRole('alert').textContent()).toContain('not an Ed25519 public key');

    // Another (valid) key: nothing changes until the person confirms.
    const other = bytesToHex(generateKeyPair().publicKey);
    await field.fill(other.toUpperCase());
    await page.getByRole('button', { name: 'Review key' }).click();
    await page.getByTestId('key-confirm').waitFor();
    expect(await readStored(page, 'meta', 'blocklist_key')).toBeUndefined();
    await page.screenshot({ path: join(walletScreenshotsDir, 'settings-trust.png') });
    await page.getByRole('button', { name: 'Trust this key' }).click();
    await expect.poll(() => page.locator('.notice').textContent()).toContain('was not signed by it and is dropped');
    expect(await readStored(page, 'meta', 'blocklist_key')).toBe(other);
    expect(await readStored(page, 'meta', 'blocklist')).toBeUndefined();
    expect(await page.getByTestId('blocklist').textContent()).toBe('No blocklist kept yet.');
    expect((await page.getByTestId('service-key').textContent())?.trim()).toBe(other);

    // The service's list is signed by the development key, which this phone no longer trusts.
    expect(await refreshBlocklist(page)).toContain('does not verify');
    expect(await readStored(page, 'meta', 'blocklist')).toBeUndefined();

    // Back to the built-in key (confirmed too), and the list is kept again.
    await page.getByRole('button', { name: 'Back to the built-in key' }).click();
    await page.getByRole('button', { name: 'Trust this key' }).click();
    await expect.poll(() => page.locator('.notice').textContent()).toContain('trusted');
    expect(await readStored(page, 'meta', 'blocklist_key')).toBeUndefined();
    expect(await refreshBlocklist(page)).toMatch(/Blocklist version \d+ kept/);
    await page.getByRole('button', { name: 'Back', exact: true }).click();
  }, 120_000);

  it('a receipt key the service withdrew: after the refresh that leaves it out, a PLC backed only by it is refused offline', async () => {
    const page = phone.page;
    // Trusted today: the service's receipt key is in the kept list.
    const accepted = await backedPlcForMe();
    expect(await scan(page, accepted)).toContain('verified offline');

    // The service rotates its receipt key and withdraws the old one: its next list (a later version,
    // signed by the trusted service key) names only the new receipt key.
    const served = (await h.t.app.inject({ method: 'GET', url: '/api/v1/blocklist', headers: { 'x-device-id': 'device-trust' } })).json();
    const current = verifyBlocklistJson(served, developmentBlocklistPublicKey);
    expect(current.ok).toBe(true);
    if (!current.ok) return;
    const rotated = generateKeyPair();
    const next = signBlocklist(
      {
        version: current.list.version + 1,
        publishedAtMs: Date.now(),
        keys: current.list.keys,
        receiptKeys: canonicalReceiptKeyOrder([{ publicKey: rotated.publicKey, validFromMs: 0, validUntilMs: timestampMsMax }]),
      },
      generateKeyPair(developmentBlocklistSeed).secretKey,
    );
    await page.route('**/api/v1/blocklist', (route) => route.fulfill({ status: 200, contentType: 'application/json', body: JSON.stringify(blocklistToJson(next)) }));
    await page.getByRole('button', { name: 'Settings' }).click();
    expect(await refreshBlocklist(page)).toContain(`Blocklist version ${current.list.version + 1} kept`);
    await page.unroute('**/api/v1/blocklist');
    await page.getByRole('button', { name: 'Back', exact: true }).click();

    await phone.context.setOffline(true);
    try {
      const refused = await scan(page, await backedPlcForMe());
      expect(refused).toContain('Refused');
      expect(refused).toMatch(/does not trust/);
    } finally {
      await phone.context.setOffline(false);
    }
  }, 120_000);

  it('Pay will not sign a hop on a PLC issued while the receipt was lost, until the wallet fetches it online', async () => {
    const page = phone.page;
    await h.t.deposit(me, '20.00');
    await page.getByRole('button', { name: 'Issue' }).click();
    await page.getByLabel('Amount (BRL)').fill('4.00');
    await page.getByRole('button', { name: 'Review' }).click();
    // The service registers the PLC; its answer (the receipt in it) is lost on the way back, and
    // the phone then goes offline before it can fetch the receipt.
    await page.route('**/api/v1/plc/create', async (route) => {
      await route.fetch();
      return route.abort('connectionreset');
    });
    await page.getByRole('button', { name: 'Confirm and issue' }).click();
    await expect.poll(() => page.getByRole('alert').textContent(), { timeout: 20_000 }).toContain('No answer from the service');
    await page.unroute('**/api/v1/plc/create');
    await phone.context.setOffline(true);
    try {
      await page.getByRole('button', { name: 'Back', exact: true }).click();
      const row = page.locator('[data-token]').filter({ hasText: '4.00' }).first();
      const tokenId = (await row.getAttribute('data-token'))!;
      expect(((await readStored(page, 'tokens', tokenId)) as { plc: { issue_receipt?: string } }).plc.issue_receipt).toBeUndefined();
      await row.getByRole('button', { name: 'Pay' }).click();
      await page.getByLabel("Or paste the receiver's key").fill(newWallet().pubkey);
      await page.getByRole('button', { name: 'Use this key' }).click();
      await page.getByRole('button', { name: 'Sign and show code' }).click();
      await expect.poll(() => page.getByRole('alert').textContent(), { timeout: 20_000 }).toContain('Not signed: this PLC has no receipt from the service yet');
      // Nothing was signed: the kept PLC has no hop.
      expect(((await readStored(page, 'tokens', tokenId)) as { plc: { transfer_chain: unknown[] } }).plc.transfer_chain).toHaveLength(0);
    } finally {
      await phone.context.setOffline(false);
    }
  }, 120_000);
});
