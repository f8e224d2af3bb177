import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { xchacha20poly1305 } from '@noble/ciphers/chacha.js';
import { scrypt } from '@noble/hashes/scrypt.js';
import Fastify, { type FastifyInstance } from 'fastify';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { walletRoutes } from '../../api/routes/wallet.ts';
import { bytesToHex, hexToBytes, publicKeyOf } from '../../src/protocol/index.ts';
import { browserUnavailable } from '../support/browser.ts';
import { createWallet, ensureWalletBuilt, launchChromium, newPhone, readStored, unlock, waitForServiceWorker, walletScreenshotsDir, type Phone } from './wallet-devices.ts';

/**
 * The browser wallet as an installable app (docs/wallet.md): served at /wallet/ with a manifest
 * and a service worker; after one online visit it opens with no network at all (the server is
 * shut down, not only the page's network); the key is made on the device, kept in IndexedDB only
 * sealed under the passphrase (checked here by opening the stored vault outside the browser), a
 * lock screen refuses a wrong passphrase, and a reload with no network keeps the wallet.
 * `UPDATE_SCREENSHOTS=1` writes the screenshots to docs/wallet/.
 */
if (browserUnavailable !== null) console.warn(`browser tests skipped: ${browserUnavailable}`);

describe.skipIf(browserUnavailable !== null)('browser wallet: install, offline, keys', () => {
  let server: FastifyInstance;
  let browser: Browser;
  let phone: Phone;
  let base: string;
  const passphrase = 'correct horse battery staple';

  beforeAll(async () => {
    ensureWalletBuilt();
    mkdirSync(walletScreenshotsDir, { recursive: true });
    server = Fastify();
    await server.register(walletRoutes, {});
    base = await server.listen({ host: '127.0.0.1', port: 0 });
    browser = await launchChromium();
    phone = await newPhone(browser);
  }, 120_000);
  afterAll(async () => {
    await browser?.close();
    await server?.close();
  });

  it('serves the wallet, its manifest and its service worker with a strict policy', async () => {
    const index = await server.inject({ url: '/wallet/' });
    expect(index.statusCode).toBe(200);
    expect(index.headers['content-security-policy']).toContain("script-src 'self' 'wasm-unsafe-eval'");
    expect(index.body).toContain('manifest.webmanifest');
    const manifest = await server.inject({ url: '/wallet/manifest.webmanifest' });
    expect(manifest.headers['content-type']).toContain('application/manifest+json');
    expect(manifest.json()).toMatchObject({ start_url: '/wallet/', scope: '/wallet/', display: 'standalone' });
    const worker = await server.inject({ url: '/wallet/sw.js' });
    expect(worker.statusCode).toBe(200);
    expect(worker.headers['cache-control']).toBe('no-cache');
    // Every built file is precached, the decoder's WebAssembly included.
    expect(worker.body).toMatch(/zxing_reader-[\w-]+\.wasm/);
    const wasm = worker.body.match(/assets\/zxing_reader-[\w-]+\.wasm/)![0];
    expect((await server.inject({ url: `/wallet/${wasm}` })).headers['content-type']).toBe('application/wasm');
    expect((await server.inject({ url: '/wallet/assets/missing.js' })).statusCode).toBe(404);
    expect((await server.inject({ url: '/wallet' })).statusCode).toBe(302);
  });

  it('opens with no network after one online visit, creates a sealed key, locks, refuses a wrong passphrase, keeps it across an offline reload', async () => {
    const { page, context } = phone;
    await page.goto(`${base}/wallet/`);
    await page.getByRole('heading', { name: 'New wallet' }).waitFor();
    await waitForServiceWorker(page);
    await page.screenshot({ path: join(walletScreenshotsDir, 'new-wallet.png') });

    // No network at all: the page is offline and the server is gone.
    await context.setOffline(true);
    await server.close();
    await page.reload();
    await page.getByRole('heading', { name: 'New wallet' }).waitFor();
    expect(await page.getByTestId('network').textContent()).toBe('offline');

    // A too-short passphrase is refused with a reason.
    await page.getByLabel('Passphrase', { exact: true }).fill('short');
    await page.getByLabel('Passphrase again').fill('short');
    await page.getByRole('button', { name: 'Create wallet' }).click();
    await expect.poll(() => page.getByRole('alert').textContent()).toContain('at least 8 characters');

    const publicKey = await createWallet(page, passphrase);
    expect(publicKey).toMatch(/^[0-9a-f]{64}$/);

    // At rest: only the sealed vault. Opened here, outside the browser, with the documented KDF.
    const vault = (await readStored(page, 'meta', 'vault')) as Record<string, unknown>;
    const kdf = vault.kdf as { N: number; r: number; p: number; salt: string };
    expect(kdf).toMatchObject({ N: 65536, r: 8, p: 1 });
    expect(Object.keys(vault).sort()).toEqual(['ciphertext', 'created_at', 'device_id', 'format', 'kdf', 'nonce', 'public_key']);
    const open = (pass: string) => {
      const key = scrypt(new TextEncoder().encode(pass), hexToBytes(kdf.salt), { N: kdf.N, r: kdf.r, p: kdf.p, dkLen: 32 });
      const aad = new TextEncoder().encode(`plc-wallet-vault-v1:${publicKey}`);
      return xchacha20poly1305(key, hexToBytes(vault.nonce as string), aad).decrypt(hexToBytes(vault.ciphertext as string));
    };
    expect(bytesToHex(publicKeyOf(open(passphrase)))).toBe(publicKey);
    expect(() => open('not the passphrase')).toThrow();

    await page.getByRole('button', { name: 'Lock' }).click();
    await page.getByRole('heading', { name: 'Wallet locked' }).waitFor();
    await unlock(page, 'not the passphrase');
    await expect.poll(() => page.getByRole('alert').textContent(), { timeout: 30_000 }).toContain('Wrong passphrase');
    await page.screenshot({ path: join(walletScreenshotsDir, 'locked.png') });

    await page.reload();
    await page.getByRole('heading', { name: 'Wallet locked' }).waitFor();
    await unlock(page, passphrase);
    await page.getByRole('heading', { name: 'Balance' }).waitFor({ timeout: 30_000 });
    await page.getByRole('button', { name: 'Receive' }).click();
    expect((await page.getByTestId('own-key').textContent())!.trim()).toBe(publicKey);
  }, 120_000);
});
