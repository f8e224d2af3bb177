import { describe, expect, it } from 'vitest';
import { formatTable, runChaos } from '../../scripts/chaos/campaign.ts';

/**
 * The short chaos campaign (`npm run chaos -- --short`, docs/reliability.md) inside `npm test`:
 * a stack of its own (embedded PostgreSQL, a Temporal dev server, the simulator, the API and the
 * worker as processes) on free ports, every part of the campaign, the invariants checked after
 * each. A fixed seed, so a failure here replays with `npm run chaos -- --short --seed 20261124`.
 * Bounded: every wait in the campaign polls a condition with a deadline.
 */
describe('the chaos campaign, short', () => {
  it('runs every part and ends with no violation', { timeout: 600_000 }, async () => {
    const lines: string[] = [];
    const result = await runChaos({ seed: 20261124, short: true, ports: 'free', log: (line) => lines.push(line) });
    const report = `${lines.join('\n')}\n${formatTable(result)}`;
    expect(result.violations, report).toEqual([]);
    expect(result.parts.map((part) => part.name)).toEqual([
      'concurrent redemptions',
      'worker SIGKILL',
      'stack SIGKILL',
      'hostile webhooks',
      'dependency freezes',
      'bad headers',
      'cheating issuers',
      'rogue gateway',
    ]);
    for (const part of result.parts) {
      expect(part.requests, `${part.name}\n${report}`).toBeGreaterThan(0);
      expect(part.payouts, `${part.name}\n${report}`).toBeGreaterThan(0);
    }
    // Every part but the first injects faults; the first is concurrency alone.
    expect(result.parts.slice(1).every((part) => part.faults > 0), report).toBe(true);
    // Bad headers are refused with a 4xx naming them, never a 5xx, and spoil no good request.
    const bad = result.parts.find((part) => part.name === 'bad headers');
    expect(Object.keys(bad?.statuses ?? {}).filter((status) => Number(status) >= 500 || status === '0'), report).toEqual([]);
  });
});
