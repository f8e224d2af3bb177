import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { chromiumPath } from '../support/browser.ts';

/**
 * Phones for the browser wallet's tests (test/browser/wallet*.test.ts): one headless Chromium,
 * one browser context per wallet (storage, IndexedDB and service worker of its own), phone-sized.
 * Each page's camera is a canvas: `getUserMedia` answers the canvas's `captureStream()`, and the
 * test paints on it the pixels it captured from another page's screen (`showToCamera`). What a
 * wallet reads reaches it only as those pixels, through the wallet's own scanner.
 */
const root = fileURLToPath(new URL('../../', import.meta.url));

/** Where the tests save a screenshot of each screen: docs/wallet/ with `UPDATE_SCREENSHOTS=1` (the README shows them), else a temporary folder. */
export const walletScreenshotsDir =
  process.env.UPDATE_SCREENSHOTS === '1' ? fileURLToPath(new URL('../../docs/wallet/', import.meta.url)) : mkdtempSync(join(tmpdir(), 'wallet-shots-'));

/** Builds wallet/dist when it is missing (a checkout that skipped `npm ci`'s prepare step). */
export function ensureWalletBuilt(): void {
  if (existsSync(join(root, 'wallet/dist/index.html'))) return;
  const result = spawnSync(process.execPath, [join(root, 'scripts/build-wallet.ts'), '--required'], { cwd: root, stdio: 'inherit' });
  if (result.status !== 0) throw new Error('building the wallet failed');
}

export async function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: chromiumPath,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
}

/**
 * The fake camera, installed before the wallet's own scripts run (browser code, as text: this
 * file is type-checked for Node).
 */
const cameraScript = `(() => {
  const canvas = document.createElement('canvas');
  canvas.width = 720;
  canvas.height = 720;
  const context = canvas.getContext('2d');
  let current = null;
  const paint = () => {
    context.fillStyle = '#777';
    context.fillRect(0, 0, canvas.width, canvas.height);
    if (current !== null) {
      const scale = Math.min((canvas.width - 40) / current.width, (canvas.height - 40) / current.height);
      const w = current.width * scale;
      const h = current.height * scale;
      context.imageSmoothingEnabled = false;
      context.drawImage(current, (canvas.width - w) / 2, (canvas.height - h) / 2, w, h);
    }
  };
  paint();
  // A camera sends frames all the time: repaint so the stream keeps flowing.
  setInterval(paint, 50);
  window.__cameraOpened = 0;
  window.__showToCamera = async (base64) => {
    const bytes = Uint8Array.from(atob(base64), (c) => c.charCodeAt(0));
    current = await createImageBitmap(new Blob([bytes], { type: 'image/png' }));
    paint();
  };
  Object.defineProperty(navigator, 'mediaDevices', {
    configurable: true,
    value: {
      getUserMedia: async () => {
        window.__cameraOpened += 1;
        return canvas.captureStream(20);
      },
    },
  });
})();`;

export interface Phone {
  context: BrowserContext;
  page: Page;
}

export async function newPhone(browser: Browser): Promise<Phone> {
  const context = await browser.newContext({ viewport: { width: 390, height: 844 }, deviceScaleFactor: 1, hasTouch: true, isMobile: false });
  await context.addInitScript({ content: cameraScript });
  const page = await context.newPage();
  return { context, page };
}

/** Puts a PNG (pixels captured from a screen, or rendered by the test) in front of the phone's camera. */
export async function showToCamera(page: Page, png: Buffer): Promise<void> {
  await page.evaluate(`window.__showToCamera(${JSON.stringify(png.toString('base64'))})`);
}

/** Waits until the page's service worker controls it (its files are cached: the wallet opens offline). */
export async function waitForServiceWorker(page: Page): Promise<void> {
  // A function, not a string: the wallet's Content-Security-Policy forbids evaluating strings.
  await page.waitForFunction(
    () => {
      const worker = (globalThis as unknown as { navigator: { serviceWorker?: { controller: unknown } } }).navigator.serviceWorker;
      return worker !== undefined && worker.controller !== null;
    },
    undefined,
    { timeout: 30_000 },
  );
}

/** A value of the wallet's IndexedDB store (`meta` or `tokens`), read in the page as it is stored. */
export async function readStored(page: Page, store: 'meta' | 'tokens', key: string): Promise<unknown> {
  return page.evaluate(`new Promise((resolve, reject) => {
    const request = indexedDB.open('plc-wallet');
    request.onerror = () => reject(request.error);
    request.onsuccess = () => {
      const get = request.result.transaction(${JSON.stringify(store)}).objectStore(${JSON.stringify(store)}).get(${JSON.stringify(key)});
      get.onsuccess = () => resolve(get.result);
      get.onerror = () => reject(get.error);
    };
  })`);
}

export async function createWallet(page: Page, passphrase: string): Promise<string> {
  await page.getByLabel('Passphrase', { exact: true }).fill(passphrase);
  await page.getByLabel('Passphrase again').fill(passphrase);
  await page.getByRole('button', { name: 'Create wallet' }).click();
  await page.getByRole('heading', { name: 'Balance' }).waitFor({ timeout: 60_000 });
  return publicKeyOf(page);
}

export async function unlock(page: Page, passphrase: string): Promise<void> {
  await page.getByLabel('Passphrase', { exact: true }).fill(passphrase);
  await page.getByRole('button', { name: 'Unlock' }).click();
}

export async function publicKeyOf(page: Page): Promise<string> {
  await page.getByRole('button', { name: 'Receive' }).click();
  const key = (await page.getByTestId('own-key').textContent())!.trim();
  await page.getByRole('button', { name: 'Back', exact: true }).click();
  return key;
}
