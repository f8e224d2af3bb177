import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { helmValuesFile, kubernetesManifests, resolveKubernetesValidator, shardsFromScalingDoc } from '../../infra/kubernetes-validator.ts';
import { onPath } from '../../infra/tools-cache.ts';

/**
 * deploy/kubernetes checked offline, as .ci/run's `npm run check:kubernetes` does: the Go
 * validator (deploy/kubernetes/validate) accepts the manifests and the Temporal Helm values, and
 * refuses each kind of mistake it exists to catch. It needs Go once, to build the validator.
 */
const root = fileURLToPath(new URL('../../', import.meta.url));
const goAbsent = onPath('go') === null;

function run(file: string, args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(file, args, { timeout: 240_000 }, (error, stdout, stderr) => {
      resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : -1, stdout, stderr });
    });
  });
}

const title = goAbsent ? 'deploy/kubernetes: SKIPPED, Go is not installed (the manifest validator is built with it)' : 'deploy/kubernetes, checked offline';

describe.skipIf(goAbsent)(title, () => {
  let validator = '';
  let scratch = '';
  const manifests = kubernetesManifests(root);
  const values = path.join(root, 'deploy/kubernetes', helmValuesFile);
  const helmArgs = (file: string, shards = shardsFromScalingDoc(root)) => ['-helm-values', file, '-temporal-version', '1.29.2', '-ui-version', '2.42.1', '-shards', String(shards)];

  beforeAll(async () => {
    validator = (await resolveKubernetesValidator(root, () => {})) ?? '';
    scratch = await mkdtemp(path.join(tmpdir(), 'k8s-check-'));
  }, 300_000);
  afterAll(async () => {
    await rm(scratch, { recursive: true, force: true });
  });

  /** The manifests with `file`'s text passed through `edit`, validated together. */
  async function validateEdited(file: string, edit: (text: string) => string): Promise<{ code: number; stderr: string }> {
    const edited = path.join(scratch, path.basename(file));
    const text = await readFile(path.join(root, 'deploy/kubernetes', file), 'utf8');
    const changed = edit(text);
    expect(changed).not.toBe(text);
    await writeFile(edited, changed);
    return run(validator, manifests.map((name) => (path.basename(name) === file ? edited : name)));
  }

  it('npm run check:kubernetes passes: the manifests, the Helm values, the one Temporal version', async () => {
    const result = await run(process.execPath, [path.join(root, 'scripts/check-kubernetes.ts')]);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/ok .*api\.yaml: apps\/v1\/Deployment plc-settlement-api/);
    expect(result.stdout).toMatch(/ok .*worker\.yaml: apps\/v1\/Deployment plc-settlement-worker/);
    expect(result.stdout).toMatch(/Temporal 1\.29\.2, 1024 history shards/);
  });

  it('refuses a field the k8s.io/api types do not have (strict decoding)', async () => {
    const result = await validateEdited('api.yaml', (text) => text.replace('readinessProbe:', 'readynessProbe:'));
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/unknown field "readynessProbe"/);
  });

  it('refuses a key given twice', async () => {
    const result = await validateEdited('worker.yaml', (text) => text.replace('  replicas: 2\n', '  replicas: 2\n  replicas: 3\n'));
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/plc-settlement-worker does not decode strictly/);
  });

  it('refuses a liveness probe elsewhere than /livez, a missing readiness probe, a container without requests', async () => {
    const probe = await validateEdited('api.yaml', (text) => text.replace('httpGet: { path: /livez, port: http }\n            periodSeconds: 10', 'httpGet: { path: /healthz, port: http }\n            periodSeconds: 10'));
    expect(probe.stderr).toMatch(/container api: its liveness probe must be an HTTP GET of \/livez/);
    const missing = await validateEdited('worker.yaml', (text) => text.replace(/ {10}readinessProbe:\n(?: {12}.*\n)+/, ''));
    expect(missing.stderr).toMatch(/container worker has no readiness probe/);
    const resources = await validateEdited('worker.yaml', (text) => text.replace('requests: { cpu: "1", memory: 1Gi }', 'requests: { memory: 1Gi }'));
    expect(resources.stderr).toMatch(/container worker must request CPU and memory/);
  });

  it('refuses an autoscaler of no Deployment, a disruption budget that selects nothing, a secret nobody provides', async () => {
    const hpa = await validateEdited('api.yaml', (text) => text.replace('    kind: Deployment\n    name: plc-settlement-api', '    kind: Deployment\n    name: plc-settlement-apl'));
    expect(hpa.stderr).toMatch(/HorizontalPodAutoscaler plc-settlement-api scales Deployment plc-settlement-apl/);
    const pdb = await validateEdited('worker.yaml', (text) => text.replace(/(kind: PodDisruptionBudget[\s\S]*app\.kubernetes\.io\/name: )plc-settlement-worker/, '$1plc-settlement-workers'));
    expect(pdb.stderr).toMatch(/PodDisruptionBudget plc-settlement-worker selects no Deployment's pods/);
    expect(pdb.stderr).toMatch(/Deployment plc-settlement-worker has no PodDisruptionBudget/);
    const secret = await validateEdited('api.yaml', (text) => text.replace('secretRef: { name: plc-settlement-secrets }', 'secretRef: { name: other-secrets }'));
    expect(secret.stderr).toMatch(/reads secret other-secrets, which is neither in the manifests nor in its/);
  });

  it('holds the Helm values to the pinned version, the derived shard count and SQL on PostgreSQL', async () => {
    expect((await run(validator, [...helmArgs(values), ...manifests])).code).toBe(0);
    expect((await run(validator, [...helmArgs(values, 512), ...manifests])).stderr).toMatch(/server\.config\.numHistoryShards must be 512 \(is 1024\)/);
    const text = await readFile(values, 'utf8');
    const edited = path.join(scratch, helmValuesFile);
    await writeFile(edited, text.replace('driver: "postgres12"', 'driver: "mysql8"').replace('tag: 1.29.2', 'tag: 1.30.0'));
    const result = await run(validator, [...helmArgs(edited), ...manifests]);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/server\.image\.tag must be 1\.29\.2 \(is 1\.30\.0\)/);
    expect(result.stderr).toMatch(/server\.config\.persistence\.default\.sql\.driver must be postgres12 \(is mysql8\)/);
  });
});
