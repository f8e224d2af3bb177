import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';

/**
 * `npm ci` runs on whatever Node the machine has (it only runs npm); the code runs on the Node 24
 * the `node` dependency installs. npm checks every package's `engines` against the Node running
 * npm, so on a Node 20 it warned EBADENGINE about the project itself and about dependencies that
 * only ever run on Node 24. The project's `devEngines` says what npm needs (npm skips the root's
 * `engines` check when it is there); the dependencies whose `engines` leave out that Node are
 * listed in README.md ("Two commands"), each satisfied by the Node 24 that runs it. A new one
 * fails this test until the README names it.
 */
const require = createRequire(import.meta.url);
const semver = require('semver') as {
  satisfies(version: string, range: string, options?: { includePrerelease?: boolean }): boolean;
  minVersion(range: string): { version: string } | null;
};
const root = new URL('../../', import.meta.url);
const manifest = JSON.parse(readFileSync(new URL('package.json', root), 'utf8')) as {
  engines: { node: string };
  devEngines: { runtime: { name: string; version: string; onFail: string } };
  dependencies: Record<string, string>;
};
const lock = JSON.parse(readFileSync(new URL('package-lock.json', root), 'utf8')) as {
  packages: Record<string, { version?: string; engines?: { node?: string } | string[]; optional?: boolean }>;
};
const readme = readFileSync(new URL('README.md', root), 'utf8');

describe('engines', () => {
  const installingNode = semver.minVersion(manifest.devEngines.runtime.version)!.version;
  const runningNode = semver.minVersion(manifest.dependencies.node!)!.version;

  it('says in devEngines which Node runs npm, and in engines which runs the code (the node dependency)', () => {
    expect(manifest.devEngines.runtime.name).toBe('node');
    expect(semver.satisfies(runningNode, manifest.engines.node)).toBe(true);
    // npm 11 itself needs ^20.17.0 || >=22.9.0: the floor is no lower than that.
    expect(semver.satisfies(installingNode, '^20.17.0 || >=22.9.0')).toBe(true);
  });

  it('names in README.md every dependency whose engines leave out the installing Node, and each runs on the Node that runs it', () => {
    const excluding = Object.entries(lock.packages)
      .filter(([path, entry]) => path !== '' && !entry.optional && typeof entry.engines === 'object' && !Array.isArray(entry.engines) && entry.engines.node !== undefined)
      .filter(([, entry]) => !semver.satisfies(installingNode, (entry.engines as { node: string }).node, { includePrerelease: true }))
      .map(([path, entry]) => ({ name: path.replace(/^.*node_modules\//, ''), version: entry.version ?? '', node: (entry.engines as { node: string }).node }));
    const section = readme.slice(readme.indexOf('## Two commands'), readme.indexOf('## Quick start'));
    for (const { name, version, node } of excluding) {
      expect(section, `${name}@${version} (engines ${node}) warns EBADENGINE under npm on Node ${installingNode}: README.md must name it`).toContain(`\`${name}@${version}\``);
      expect(semver.satisfies(runningNode, node), `${name} needs ${node}`).toBe(true);
    }
    expect(excluding.length).toBeGreaterThan(0);
  });
});
