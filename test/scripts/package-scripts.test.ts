import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/** Every npm script and bin that runs a file of the repository names a file that exists. */
const root = fileURLToPath(new URL('../../', import.meta.url));
const manifest = JSON.parse(readFileSync(`${root}package.json`, 'utf8')) as { scripts: Record<string, string>; bin: Record<string, string> };

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
