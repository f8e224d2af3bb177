/**
 * src/protocol must run in a browser or a mobile JS runtime: no Node-only module or global, and
 * no dependency beyond @noble/*, cborg and zod. A static check of the sources keeps it that way.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

const directory = new URL('../../../src/protocol/', import.meta.url);
const files = readdirSync(directory).filter((name) => name.endsWith('.ts'));

describe('src/protocol is isomorphic', () => {
  it('has sources to check', () => {
    expect(files.length).toBeGreaterThan(5);
  });

  it.each(files)('%s imports only relative files, @noble/*, cborg and zod', (name) => {
    const source = readFileSync(new URL(name, directory), 'utf8');
    const specifiers = [...source.matchAll(/(?:^|\s)(?:import|export)\s[^'"]*?from\s+['"]([^'"]+)['"]/gm)].map((match) => match[1]!);
    for (const specifier of specifiers) {
      expect(specifier, `${name} imports ${specifier}`).toMatch(/^(?:\.\/[\w.-]+\.ts|@noble\/(?:ed25519|hashes|ciphers|curves)(?:\/[\w.]+)?|cborg|zod)$/);
    }
  });

  it.each(files)('%s uses no Node-only global', (name) => {
    const source = readFileSync(new URL(name, directory), 'utf8');
    expect(source).not.toMatch(/\bBuffer\b|\bprocess\.|\brequire\(|__dirname|node:/);
  });
});
