import { spawn, spawnSync } from 'node:child_process';
import { access, constants, mkdir, mkdtemp, rename, rm } from 'node:fs/promises';
import { homedir } from 'node:os';
import path from 'node:path';

/**
 * Finds the Temporal CLI binary that serves the embedded dev server, in this order:
 * `TEMPORAL_CLI`, `temporal` on PATH, the project's tools cache, a one-time `go install` into that
 * cache when Go is present. `null` means none could be had; the caller may then fall back to the
 * SDK's own download.
 */

/** v1.5.1 is the last tag that `go install` can build (later tags carry replace directives). */
export const temporalCliVersion = 'v1.5.1';
const goModule = 'github.com/temporalio/cli/cmd/temporal';
const buildTimeoutMs = 30 * 60 * 1000;

export function toolsCacheDir(env: Record<string, string | undefined> = process.env): string {
  if (env.PLC_TOOLS_CACHE_DIR) return env.PLC_TOOLS_CACHE_DIR;
  const cacheHome = env.XDG_CACHE_HOME ?? path.join(homedir(), '.cache');
  return path.join(cacheHome, 'plc-settlement', 'tools');
}

export function cachedCliPath(env: Record<string, string | undefined> = process.env): string {
  return path.join(toolsCacheDir(env), `temporal-cli-${temporalCliVersion}`, 'temporal');
}

async function isExecutable(file: string): Promise<boolean> {
  try {
    await access(file, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

function onPath(command: string): string | null {
  const result = spawnSync('sh', ['-c', `command -v ${command}`], { encoding: 'utf8' });
  const found = result.stdout.trim();
  return result.status === 0 && found !== '' ? found : null;
}

/**
 * Builds the CLI with `go install` into a temporary GOBIN, then renames it into the cache, so an
 * interrupted build never leaves a half-written binary behind. Prints progress while it runs.
 */
export async function buildTemporalCli(progress: (line: string) => void): Promise<string> {
  const target = cachedCliPath();
  await mkdir(path.dirname(target), { recursive: true });
  const gobin = await mkdtemp(path.join(path.dirname(target), 'build-'));
  const startedAt = Date.now();
  progress(`building the Temporal CLI ${temporalCliVersion} with go install (first time only; about 3-4 minutes with an empty Go module cache)`);
  try {
    await new Promise<void>((resolve, reject) => {
      const child = spawn('go', ['install', `${goModule}@${temporalCliVersion}`], {
        env: { ...process.env, GOBIN: gobin, GOFLAGS: '-mod=mod' },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let downloaded = 0;
      let tail = '';
      const ticker = setInterval(() => {
        const elapsedS = Math.round((Date.now() - startedAt) / 1000);
        progress(`  ... still building the Temporal CLI: ${elapsedS} s elapsed, ${downloaded} modules downloaded`);
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
        else reject(new Error(`go install failed with exit code ${String(code)}:\n${tail}`));
      });
    });
    await rename(path.join(gobin, 'temporal'), target);
    progress(`built the Temporal CLI in ${Math.round((Date.now() - startedAt) / 1000)} s: ${target}`);
    return target;
  } finally {
    await rm(gobin, { recursive: true, force: true });
  }
}

export interface ResolvedCli {
  path: string;
  source: 'TEMPORAL_CLI' | 'PATH' | 'cache' | 'built';
}

export async function resolveTemporalCli(
  options: { configured?: string | undefined; allowBuild: boolean; progress: (line: string) => void },
): Promise<ResolvedCli | null> {
  if (options.configured !== undefined) {
    if (!(await isExecutable(options.configured))) {
      throw new Error(`TEMPORAL_CLI=${options.configured} is not an executable file`);
    }
    return { path: options.configured, source: 'TEMPORAL_CLI' };
  }
  const fromPath = onPath('temporal');
  if (fromPath !== null) return { path: fromPath, source: 'PATH' };
  const cached = cachedCliPath();
  if (await isExecutable(cached)) return { path: cached, source: 'cache' };
  if (options.allowBuild && onPath('go') !== null) {
    return { path: await buildTemporalCli(options.progress), source: 'built' };
  }
  return null;
}

export const temporalCliHelp = [
  'No Temporal CLI could be found or built. Any one of these fixes it:',
  '  - set TEMPORAL_ADDRESS to a running Temporal server;',
  '  - set TEMPORAL_CLI to the path of a `temporal` binary, or put `temporal` on PATH',
  '    (https://docs.temporal.io/cli);',
  `  - install Go and run again: the CLI is then built once with \`go install ${goModule}@${temporalCliVersion}\`.`,
].join('\n');
