import { spawn, spawnSync } from 'node:child_process';
import { access, constants, mkdir, mkdtemp, rename, rm } from 'node:fs/promises';
import { homedir } from 'node:os';
import path from 'node:path';

/**
 * The project's tools cache (`~/.cache/plc-settlement/tools`, or PLC_TOOLS_CACHE_DIR): Go programs
 * built once on this machine and kept across runs: the Temporal CLI (infra/temporal-cli.ts), the
 * Temporal server and its SQL schema tool (infra/temporal-cluster.ts), the Kubernetes manifest
 * validator (scripts/check-kubernetes.ts). Each lives in a folder named by what it is built from
 * (a pinned version or a hash of its sources), so a new pin builds beside the old one.
 */

export function toolsCacheDir(env: Record<string, string | undefined> = process.env): string {
  if (env.PLC_TOOLS_CACHE_DIR) return env.PLC_TOOLS_CACHE_DIR;
  const cacheHome = env.XDG_CACHE_HOME ?? path.join(homedir(), '.cache');
  return path.join(cacheHome, 'plc-settlement', 'tools');
}

export async function isExecutable(file: string): Promise<boolean> {
  try {
    await access(file, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

export function onPath(command: string): string | null {
  const result = spawnSync('sh', ['-c', `command -v ${command}`], { encoding: 'utf8' });
  const found = result.stdout.trim();
  return result.status === 0 && found !== '' ? found : null;
}

const buildTimeoutMs = 30 * 60 * 1000;

/**
 * Runs one `go` command that writes binaries into a temporary folder (`go install` with GOBIN
 * set to it, or `go build -o` into it), then renames each binary into `targetDir`, so an
 * interrupted build never leaves a half-written binary in the cache. Prints progress every 15 s.
 * `binaries` maps the name the go command writes to the name kept in the cache.
 */
export async function goBuildIntoCache(options: {
  /** What is built, for the progress lines: "the Temporal CLI v1.5.1". */
  label: string;
  /** The go command's arguments; `gobin` is the temporary folder the binaries must land in. */
  args: (gobin: string) => string[];
  binaries: Readonly<Record<string, string>>;
  targetDir: string;
  /** Folder to run go in (a module of the repository); default the current one. */
  cwd?: string;
  /** "about 90 s": said once before the build. */
  expected: string;
  progress: (line: string) => void;
}): Promise<void> {
  await mkdir(options.targetDir, { recursive: true });
  const gobin = await mkdtemp(path.join(options.targetDir, 'build-'));
  const startedAt = Date.now();
  options.progress(`building ${options.label} with go (first time only; ${options.expected})`);
  try {
    await new Promise<void>((resolve, reject) => {
      const child = spawn('go', options.args(gobin), {
        cwd: options.cwd,
        env: { ...process.env, GOBIN: gobin, GOFLAGS: '-mod=mod' },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let downloaded = 0;
      let tail = '';
      const ticker = setInterval(() => {
        const elapsedS = Math.round((Date.now() - startedAt) / 1000);
        options.progress(`  ... still building ${options.label}: ${elapsedS} s elapsed, ${downloaded} modules downloaded`);
      }, 15_000);
      const timer = setTimeout(() => child.kill('SIGKILL'), buildTimeoutMs);
      const onOutput = (chunk: Buffer): void => {
        const text = chunk.toString('utf8');
        downloaded += (text.match(/go: downloading /g) ?? []).length;
        tail = (tail + text).slice(-4000);
      };
      child.stdout.on('data', onOutput);
      child.stderr.on('data', onOutput);
      child.on('error', (error) => {
        clearInterval(ticker);
        clearTimeout(timer);
        reject(error);
      });
      child.on('close', (code) => {
        clearInterval(ticker);
        clearTimeout(timer);
        if (code === 0) resolve();
        else reject(new Error(`go ${options.args(gobin).join(' ')} failed with exit code ${String(code)}:\n${tail}`));
      });
    });
    for (const [built, kept] of Object.entries(options.binaries)) {
      await rename(path.join(gobin, built), path.join(options.targetDir, kept));
    }
    options.progress(`built ${options.label} in ${Math.round((Date.now() - startedAt) / 1000)} s: ${options.targetDir}`);
  } finally {
    await rm(gobin, { recursive: true, force: true });
  }
}
