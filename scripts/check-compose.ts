import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { customSearchAttributes } from '../infra/search-attributes.ts';

/**
 * Static checks of docker-compose.yml (no Docker engine runs in CI): `docker-compose config`
 * validates the file against the Compose schema and resolves anchors and variables; then the
 * setup script must create every search attribute the code registers.
 */
const problems: string[] = [];

const validator = ['docker-compose', 'docker compose'].find((command) => {
  const [bin, ...rest] = command.split(' ') as [string, ...string[]];
  return spawnSync(bin, [...rest, 'version'], { stdio: 'ignore' }).status === 0;
});
if (validator === undefined) {
  problems.push('no docker-compose found to validate docker-compose.yml (apt-get install docker-compose)');
} else {
  const [bin, ...rest] = validator.split(' ') as [string, ...string[]];
  const result = spawnSync(bin, [...rest, '-f', 'docker-compose.yml', 'config', '-q'], {
    encoding: 'utf8',
    env: { ...process.env, JWT_SECRET: 'x'.repeat(32), PIN_PEPPER: 'p'.repeat(32), BLOCKLIST_SIGNING_SEED: 'b'.repeat(64), ADMIN_PASSWORD: 'check-only-password' },
  });
  if (result.status !== 0) problems.push(`${validator} config failed:\n${result.stderr}${result.stdout}`);
  else process.stdout.write(`${validator} config: docker-compose.yml is valid\n`);
}

const setupScript = readFileSync('deploy/temporal/setup-namespace.sh', 'utf8');
for (const name of Object.keys(customSearchAttributes)) {
  if (!setupScript.includes(name)) problems.push(`deploy/temporal/setup-namespace.sh does not create search attribute ${name}`);
}

// The observability profile (docs/operations.md): every file it mounts exists, and every metric
// the provisioned dashboard graphs is one the service defines (infra/metrics.ts) or the Temporal SDK's.
const compose = readFileSync('docker-compose.yml', 'utf8');
for (const [, mounted] of compose.matchAll(/- \.\/(deploy\/[^:\s]+):/g)) {
  if (!existsSync(mounted as string)) problems.push(`docker-compose.yml mounts ./${mounted}, which does not exist`);
}
const metricsSource = readFileSync('infra/metrics.ts', 'utf8');
const dashboard = JSON.parse(readFileSync('deploy/grafana/dashboards/settlement.json', 'utf8')) as { panels: { targets?: { expr: string }[] }[] };
for (const panel of dashboard.panels) {
  for (const target of panel.targets ?? []) {
    for (const [name] of target.expr.matchAll(/\bplc_[a-z_]+/g)) {
      const base = name.replace(/_(bucket|count|sum)$/, '');
      if (!metricsSource.includes(`'${base}'`)) problems.push(`deploy/grafana/dashboards/settlement.json graphs ${name}, which infra/metrics.ts does not define`);
    }
  }
}
if (!/profiles: \["observability"\]/.test(compose)) problems.push('docker-compose.yml: the observability services must stay in their optional profile');

// The image (Dockerfile): every web app the API serves from its built files (console/dist at
// /console, wallet/dist at /wallet/) is built in the first stage and copied into the final one,
// whose `npm ci` runs the `prepare` script and so needs each build script present.
const dockerfile = readFileSync('Dockerfile', 'utf8');
const finalStage = dockerfile.slice(dockerfile.lastIndexOf('\nFROM '));
for (const app of ['console', 'wallet']) {
  if (!new RegExp(`node scripts/build-${app}\\.ts --required`).test(dockerfile)) problems.push(`Dockerfile: the build stage does not build ${app}/ (node scripts/build-${app}.ts --required)`);
  if (!finalStage.includes(`COPY --from=console /build/${app}/dist ./${app}/dist`)) problems.push(`Dockerfile: the final stage does not copy ${app}/dist`);
  if (!new RegExp(`COPY [^\\n]*scripts/build-${app}\\.ts[^\\n]* \\./scripts/`).test(finalStage)) problems.push(`Dockerfile: the final stage's npm ci runs prepare, which needs scripts/build-${app}.ts`);
}

if (problems.length > 0) {
  process.stderr.write(`${problems.join('\n')}\n`);
  process.exit(1);
}
process.stdout.write('search attributes in docker-compose setup match the code; the Dockerfile builds and copies console/dist and wallet/dist\n');
