import { spawnSync } from 'node:child_process';
import { accessSync, constants, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type BrowserContext } from 'playwright-core';

/**
 * Headless Chromium for the console's browser tests: Debian's `chromium` package (CHROMIUM_PATH,
 * default /usr/bin/chromium), driven with playwright-core. Nothing is downloaded: without the
 * binary the tests are skipped and `browserUnavailable` says why.
 */
export const chromiumPath = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

function unavailableReason(): string | null {
  try {
    accessSync(chromiumPath, constants.X_OK);
    return null;
  } catch {
    return `no Chromium at ${chromiumPath} (install Debian's chromium package, as .ci/run does, or set CHROMIUM_PATH)`;
  }
}

export const browserUnavailable = unavailableReason();

const root = fileURLToPath(new URL('../../', import.meta.url));

/** Builds console/dist when it is missing (a checkout that skipped `npm ci`'s prepare step). */
export function ensureConsoleBuilt(): void {
  if (existsSync(join(root, 'console/dist/index.html'))) return;
  const result = spawnSync(process.execPath, [join(root, 'scripts/build-console.ts'), '--required'], { cwd: root, stdio: 'inherit' });
  if (result.status !== 0) throw new Error('building the console failed');
}

export interface Browser {
  context: BrowserContext;
  close(): Promise<void>;
}

/** A fresh headless Chromium with a profile of its own, removed on close. */
export async function launchBrowser(): Promise<Browser> {
  const profile = mkdtempSync(join(tmpdir(), 'console-test-profile-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: chromiumPath,
    headless: true,
    viewport: { width: 1280, height: 900 },
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  return {
    context,
    async close() {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}
