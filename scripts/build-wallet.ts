import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * `npm run build:wallet` (and the `prepare` script): bundles the browser wallet (wallet/) into
 * wallet/dist with Vite, which the API serves at /wallet/ (docs/wallet.md); the same files work on
 * any static host. Like the console, skipped with a message where Vite is not installed.
 */
const root = fileURLToPath(new URL('../', import.meta.url));
const require = createRequire(import.meta.url);

let viteBin: string;
try {
  const manifestPath = require.resolve('vite/package.json', { paths: [root] });
  const manifest = JSON.parse(readFileSync(manifestPath, 'utf8')) as { bin: { vite: string } };
  viteBin = join(dirname(manifestPath), manifest.bin.vite);
} catch {
  process.stderr.write('build-wallet: vite is not installed (dev dependencies omitted): the wallet is not built here\n');
  process.exit(process.argv.includes('--required') ? 1 : 0);
}
const started = Date.now();
const result = spawnSync(process.execPath, [viteBin, 'build', '--config', 'vite.wallet.config.ts'], { cwd: root, stdio: 'inherit' });
if (result.status !== 0) {
  process.stderr.write(`build-wallet: vite build failed (exit ${result.status ?? 'signal'})\n`);
  process.exit(result.status ?? 1);
}
process.stderr.write(`build-wallet: wallet/dist built in ${Date.now() - started} ms\n`);
