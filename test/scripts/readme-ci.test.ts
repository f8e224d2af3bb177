import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/**
 * The README's promise is what CI proves: its two commands (`npm ci && npm start`, `npm test`)
 * are the ones `.ci/run` runs (npm start through test/scripts/dev-start.test.ts, inside npm
 * test), on the fresh-machine path (no system PostgreSQL started, the embedded one forced); and
 * nothing the tests or docs read lies outside the repository.
 */

const root = fileURLToPath(new URL('../../', import.meta.url));
const readme = readFileSync(path.join(root, 'README.md'), 'utf8');
const ci = readFileSync(path.join(root, '.ci/run'), 'utf8');

/** The commands of the README's "Two commands" block, comments dropped, `a && b` split. */
function readmeCommands(): string[] {
  const section = readme.split(/^## /m).find((part) => part.startsWith('Two commands'));
  if (section === undefined) throw new Error('README.md has no "## Two commands" section');
  const block = /```sh\n([\s\S]*?)```/.exec(section)?.[1];
  if (block === undefined) throw new Error('the "Two commands" section has no sh block');
  return block
    .split('\n')
    .map((line) => line.replace(/#.*$/, '').trim())
    .filter((line) => line !== '')
    .flatMap((line) => line.split('&&').map((command) => command.trim()));
}

/** The npm commands `.ci/run` runs, without their flags. */
function ciNpmCommands(): string[] {
  return ci
    .split('\n')
    .map((line) => line.replace(/#.*$/, '').trim())
    .flatMap((line) => [...line.matchAll(/(?:^|[;&|(]\s*|\s)npm (ci|test|start|run [\w:-]+)\b/g)].map((match) => `npm ${match[1] ?? ''}`));
}

describe('README and CI', () => {
  it('has two commands in its "Two commands" block', () => {
    expect(readmeCommands()).toEqual(['npm ci', 'npm start', 'npm test']);
  });

  it('.ci/run runs the README commands: npm ci and npm test, whose dev-start test runs npm start', () => {
    const ran = ciNpmCommands();
    expect(ran).toContain('npm ci');
    expect(ran).toContain('npm test');
    const devStart = readFileSync(path.join(root, 'test/scripts/dev-start.test.ts'), 'utf8');
    expect(devStart).toMatch(/spawn\('npm', \['start'\]/);
    for (const command of readmeCommands()) {
      if (command === 'npm start') continue;
      expect(ran, `.ci/run does not run "${command}"`).toContain(command);
    }
  });

  it('.ci/run proves the fresh-machine path: no system PostgreSQL started, npm test on the embedded one', () => {
    expect(ci).not.toMatch(/pg_ctlcluster|pg_ctl |systemctl|service postgresql/);
    const exported = ci.indexOf('export TEST_DATABASE=embedded');
    const firstTest = ci.search(/^npm test$/m);
    expect(exported).toBeGreaterThan(-1);
    expect(firstTest).toBeGreaterThan(exported);
    // And keeps a step against an external PostgreSQL.
    expect(ci).toMatch(/TEST_DATABASE=external npm test/);
  });

  it('points nowhere outside the repository from its docs and tests', () => {
    const files: string[] = [];
    const walk = (dir: string): void => {
      for (const entry of readdirSync(dir)) {
        if (entry === 'node_modules' || entry.startsWith('.')) continue;
        const full = path.join(dir, entry);
        if (statSync(full).isDirectory()) walk(full);
        else if (/\.(md|ts)$/.test(entry)) files.push(full);
      }
    };
    walk(path.join(root, 'docs'));
    walk(path.join(root, 'test'));
    files.push(path.join(root, 'README.md'));
    const outside = files.flatMap((file) => {
      const text = readFileSync(file, 'utf8');
      return [...text.matchAll(/(?:\.\.\/shared\/|\/work\/(?:main|wt|shared)\b)/g)].map((match) => `${path.relative(root, file)}: ${match[0]}`);
    });
    expect(outside).toEqual([]);
  });
});
