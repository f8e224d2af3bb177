import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { goBuildIntoCache, isExecutable, onPath, toolsCacheDir } from './tools-cache.ts';

/**
 * The offline validator of deploy/kubernetes (deploy/kubernetes/validate, a small Go program that
 * decodes each manifest strictly into the k8s.io/api types; nothing here can download
 * Kubernetes' JSON schemas). Built once into the tools cache, in a folder named by a hash of its
 * sources, so a change to it builds anew. Used by `npm run check:kubernetes` and its test.
 */

const sources = ['go.mod', 'go.sum', 'main.go'];

export function validatorSourceDir(root: string): string {
  return path.join(root, 'deploy', 'kubernetes', 'validate');
}

/** The validator's path, built first when missing; null when Go is absent and none is cached. */
export async function resolveKubernetesValidator(root: string, progress: (line: string) => void): Promise<string | null> {
  const dir = validatorSourceDir(root);
  const hash = createHash('sha256');
  for (const file of sources) hash.update(readFileSync(path.join(dir, file)));
  const target = path.join(toolsCacheDir(), `k8s-validate-${hash.digest('hex').slice(0, 12)}`);
  const binary = path.join(target, 'validate');
  if (await isExecutable(binary)) return binary;
  if (onPath('go') === null) return null;
  await goBuildIntoCache({
    label: 'the Kubernetes manifest validator (k8s.io/api)',
    args: (gobin) => ['build', '-o', path.join(gobin, 'validate'), '.'],
    binaries: { validate: 'validate' },
    targetDir: target,
    cwd: dir,
    expected: 'about a minute with an empty Go module cache',
    progress,
  });
  return binary;
}

/** The manifests: every .yaml of deploy/kubernetes except the Helm chart's values. */
export function kubernetesManifests(root: string): string[] {
  const dir = path.join(root, 'deploy', 'kubernetes');
  return readdirSync(dir)
    .filter((name) => name.endsWith('.yaml') && name !== helmValuesFile)
    .sort()
    .map((name) => path.join(dir, name));
}

export const helmValuesFile = 'temporal-values.yaml';

/** The history shard count docs/scaling.md derives for production (its "Shards" paragraph names the values file's count). */
export function shardsFromScalingDoc(root: string): number {
  const text = readFileSync(path.join(root, 'docs', 'scaling.md'), 'utf8');
  const match = /deploy\/kubernetes\/temporal-values\.yaml` sets \*\*([\d,]+) history shards\*\*/.exec(text);
  if (match === null) throw new Error('docs/scaling.md does not say how many history shards deploy/kubernetes/temporal-values.yaml sets ("... sets **N history shards**")');
  return Number((match[1] ?? '').replace(/,/g, ''));
}
