/**
 * The wallet command-line program: plays one device of the offline protocol, keeping its state in
 * a wallet directory. Two directories on one machine can pass PLCs back and forth with files and
 * no network; `--server` adds the online steps (create, publish, register, cancel, redeem).
 *
 *   node bin/wallet.ts help
 *
 * Exit status: 0 on success, 1 when the wallet refuses or fails (stderr: `error [code]: ...`),
 * 2 on a usage error.
 *
 * This entry only turns on Node's module compile cache, then loads the program (bin/wallet/main.ts):
 * every command is a fresh process, and reusing the compiled (type-stripped) modules makes each
 * start about three times faster. The cache is per user, in a directory only its owner can open
 * ($XDG_CACHE_HOME or ~/.cache, then plc-wallet/compile-cache), never a shared temporary
 * directory: this program holds secret keys, so nobody else may plant code for it to load.
 * NODE_COMPILE_CACHE=dir overrides the place and NODE_DISABLE_COMPILE_CACHE=1 turns it off.
 */
import { mkdirSync, statSync } from 'node:fs';
import { enableCompileCache } from 'node:module';
import { homedir } from 'node:os';
import { join } from 'node:path';

function privateCacheDir(): string | undefined {
  try {
    const base = process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache');
    const dir = join(base, 'plc-wallet', 'compile-cache');
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const stat = statSync(dir);
    // Ours and closed to others, or no cache at all (it is only an optimisation).
    if (process.getuid !== undefined && (stat.uid !== process.getuid() || (stat.mode & 0o077) !== 0)) return undefined;
    return dir;
  } catch {
    return undefined;
  }
}

if (process.env.NODE_COMPILE_CACHE === undefined) {
  const dir = privateCacheDir();
  if (dir !== undefined) enableCompileCache(dir);
}

await import('./wallet/main.ts');
