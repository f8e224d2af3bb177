import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * `npm run build:console` (and the `prepare` script, which npm runs at `npm ci` and
 * `npm install`): bundles the web console (console/) into console/dist with Vite, which the API
 * serves at /console. Nothing is downloaded at run time. An install without the dev dependencies
 * (`npm ci --omit=dev`, the Dockerfile's last stage) has no Vite: the build is skipped with a
 * message, and the console comes from a stage that built it (the Dockerfile's `console` stage).
 */
const root = fileURLToPath(new URL('../', import.meta.url));
const require = createRequire(import.meta.url);

let viteBin: string;
try {
  const manifestPath = require.resolve('vite/package.json', { paths: [root] });
  const manifest = JSON.parse(readFileSync(manifestPath, 'utf8')) as { bin: { vite: string } };
  viteBin = join(dirname(manifestPath), manifest.bin.vite);
} catch {
  process.stderr.write('build-console: vite is not installed (dev dependencies omitted): the console is not built here; see the Dockerfile\n');
  process.exit(process.argv.includes('--required') ? 1 : 0);
}
const started = Date.now();
const result = spawnSync(process.execPath, [viteBin, 'build', '--config', 'vite.console.config.ts'], { cwd: root, stdio: 'inherit' });
if (result.status !== 0) {
  process.stderr.write(`build-console: vite build failed (exit ${result.status ?? 'signal'})\n`);
  process.exit(result.status ?? 1);
}
process.stderr.write(`build-console: console/dist built in ${Date.now() - started} ms\n`);
