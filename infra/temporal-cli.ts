import path from 'node:path';
import { goBuildIntoCache, isExecutable, onPath, toolsCacheDir } from './tools-cache.ts';

/**
 * Finds the Temporal CLI binary that serves the embedded dev server, in this order:
 * `TEMPORAL_CLI`, `temporal` on PATH, the project's tools cache, a one-time `go install` into that
 * cache when Go is present. `null` means none could be had; the caller may then fall back to the
 * SDK's own download.
 */

/** v1.5.1 is the last tag that `go install` can build (later tags carry replace directives). */
export const temporalCliVersion = 'v1.5.1';
const goModule = 'github.com/temporalio/cli/cmd/temporal';
export { toolsCacheDir };

export function cachedCliPath(env: Record<string, string | undefined> = process.env): string {
  return path.join(toolsCacheDir(env), `temporal-cli-${temporalCliVersion}`, 'temporal');
}

/** Builds the CLI with `go install` into the tools cache (infra/tools-cache.ts). */
export async function buildTemporalCli(progress: (line: string) => void): Promise<string> {
  const target = cachedCliPath();
  await goBuildIntoCache({
    label: `the Temporal CLI ${temporalCliVersion}`,
    args: () => ['install', `${goModule}@${temporalCliVersion}`],
    binaries: { temporal: 'temporal' },
    targetDir: path.dirname(target),
    expected: 'about 3-4 minutes with an empty Go module cache',
    progress,
  });
  return target;
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
