import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
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

if (problems.length > 0) {
  process.stderr.write(`${problems.join('\n')}\n`);
  process.exit(1);
}
process.stdout.write('search attributes in docker-compose setup match the code\n');
