import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

/**
 * The README's flow diagram (Mermaid, rendered by GitHub from the text) stays true to the code:
 * every line is a statement of a sequence diagram, every arrow joins declared participants, and
 * every route it names is one an API route file declares (all are registered under /api/v1).
 */
const root = new URL('../../', import.meta.url);
const readme = readFileSync(new URL('README.md', root), 'utf8');
const routeSources = readdirSync(new URL('api/routes/', root))
  .filter((name) => name.endsWith('.ts'))
  .map((name) => readFileSync(new URL(`api/routes/${name}`, root), 'utf8'))
  .join('\n');

function diagram(): string[] {
  const section = readme.slice(readme.indexOf('## The flow at a glance'));
  const match = /```mermaid\n([\s\S]*?)```/.exec(section);
  if (match === null) throw new Error('README.md has no mermaid block under "## The flow at a glance"');
  return match[1]!.split('\n').map((line) => line.trim()).filter((line) => line !== '');
}

describe('README.md flow diagram', () => {
  it('is a sequence diagram whose arrows join declared participants', () => {
    const lines = diagram();
    expect(lines[0]).toBe('sequenceDiagram');
    const declared = new Set<string>();
    for (const line of lines.slice(1)) {
      const participant = /^(?:participant|actor) (\w+)(?: as .+)?$/.exec(line);
      if (participant !== null) {
        declared.add(participant[1]!);
        continue;
      }
      const arrow = /^(\w+)-{1,2}>>(\w+): \S.*$/.exec(line);
      const note = /^Note over (\w+)(?:,(\w+))?: \S.*$/.exec(line);
      expect(arrow !== null || note !== null || line === 'autonumber', `not a statement of this diagram: ${line}`).toBe(true);
      for (const name of [arrow?.[1], arrow?.[2], note?.[1], note?.[2]]) if (name !== undefined) expect(declared, `${name} in: ${line}`).toContain(name);
    }
    for (const step of ['create', 'hop', 'redeem', 'webhook and settle']) expect(lines).toContainEqual(expect.stringMatching(new RegExp(`^Note over .*: ${step}\\b`)));
  });

  it('names only routes the API declares', () => {
    const routes = diagram().flatMap((line) => [...line.matchAll(/\b(?:GET|POST) \/api\/v1(\/[^\s)]*)/g)].map((match) => match[1]!));
    expect(routes.length).toBeGreaterThanOrEqual(5);
    for (const route of routes) {
      // {id} in the diagram is a :param in the route file.
      const pattern = route.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{[^}]+\}/g, ':[a-z_]+');
      expect(routeSources, route).toMatch(new RegExp(`'${pattern}'`));
    }
  });
});
