import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { configSchema, secretConfigKeys } from '../infra/config.ts';
import { helmValuesFile, kubernetesManifests, resolveKubernetesValidator, shardsFromScalingDoc } from '../infra/kubernetes-validator.ts';
import { temporalServerVersion, temporalUiVersion } from '../infra/temporal-cluster.ts';

/**
 * `npm run check:kubernetes`: static checks of deploy/kubernetes (no cluster, no network), as
 * check:compose checks docker-compose.yml. The Go validator (deploy/kubernetes/validate, built
 * once into the tools cache) decodes every manifest strictly into the k8s.io/api types and
 * checks probes, resources, autoscalers, disruption budgets and the secrets they read, and the
 * Temporal Helm values (the pinned version, the shard count docs/scaling.md derives, SQL on
 * PostgreSQL). Then every ConfigMap key must be a setting infra/config.ts knows and none a
 * secret. Exits 1 on any problem, and when Go is absent (nothing could be checked).
 */
const root = fileURLToPath(new URL('..', import.meta.url));
const problems: string[] = [];

const validator = await resolveKubernetesValidator(root, (line) => process.stdout.write(`${line}\n`));
if (validator === null) {
  process.stderr.write('check:kubernetes needs Go to build its validator once (deploy/kubernetes/validate; https://go.dev/doc/install)\n');
  process.exit(1);
}
const scratch = mkdtempSync(path.join(tmpdir(), 'check-kubernetes-'));
try {
  const summary = path.join(scratch, 'summary.json');
  const result = spawnSync(
    validator,
    [
      '-helm-values', path.join(root, 'deploy', 'kubernetes', helmValuesFile),
      '-temporal-version', temporalServerVersion.replace(/^v/, ''),
      '-ui-version', temporalUiVersion.replace(/^v/, ''),
      '-shards', String(shardsFromScalingDoc(root)),
      '-summary', summary,
      ...kubernetesManifests(root),
    ],
    { encoding: 'utf8' },
  );
  process.stdout.write(result.stdout);
  if (result.status !== 0) problems.push(result.stderr.trim() || `the validator ended with ${String(result.status ?? result.signal)}`);
  else {
    const parsed = JSON.parse(readFileSync(summary, 'utf8')) as { configMaps: Record<string, Record<string, string> | null> };
    const known = new Set(Object.keys(configSchema.shape));
    for (const [name, data] of Object.entries(parsed.configMaps)) {
      for (const key of Object.keys(data ?? {})) {
        if (!known.has(key)) problems.push(`ConfigMap ${name}: ${key} is not a setting of infra/config.ts`);
        if ((secretConfigKeys as readonly string[]).includes(key)) problems.push(`ConfigMap ${name}: ${key} is a secret: it belongs in the Secret plc-settlement-secrets`);
      }
    }
  }
} finally {
  rmSync(scratch, { recursive: true, force: true });
}

// The same Temporal version everywhere: docker-compose.yml's server and admin-tools images.
const compose = readFileSync(path.join(root, 'docker-compose.yml'), 'utf8');
const version = temporalServerVersion.replace(/^v/, '');
for (const [, image, tag] of compose.matchAll(/image: temporalio\/(server|admin-tools|ui):(\S+)/g)) {
  const want = image === 'ui' ? temporalUiVersion.replace(/^v/, '') : version;
  if (tag !== want) problems.push(`docker-compose.yml runs temporalio/${image ?? ''}:${tag ?? ''}; the pinned version is ${want} (infra/temporal-cluster.ts)`);
}

if (problems.length > 0) {
  process.stderr.write(`${problems.join('\n')}\n`);
  process.exit(1);
}
process.stdout.write(`deploy/kubernetes is valid; Temporal ${version} in docker-compose.yml, the Helm values and start:cluster\n`);
