import { describe, expect, it } from 'vitest';
import { formatSummary } from '../../scripts/sim/report.ts';
import { runSim } from '../../scripts/sim/runner.ts';

/**
 * The simulation's short form (`npm run sim`, docs/reliability.md, "The simulation") inside
 * `npm test`: a stack of its own on free ports (embedded PostgreSQL, a Temporal dev server, the
 * gateway simulator, the API and the worker as processes), a fixed seed and a fixed budget of
 * steps, every step checked against the model, checkpoints every 20 steps and at each run's end.
 * A failure names the command that replays it (seed and fast-check path); it does not shrink here
 * (shrinking reruns the stack's sequences for minutes): run the printed command to shrink it.
 */
describe('the simulation, short', () => {
  it('runs 150 seeded steps with faults against the real stack, and the service agrees with the model', { timeout: 300_000 }, async () => {
    const lines: string[] = [];
    const result = await runSim({
      seed: 20261207,
      steps: 150,
      runLength: 50,
      checkEvery: 20,
      faults: true,
      shrink: false,
      shrinkMs: 0,
      replays: 0,
      ports: 'free',
      progressEvery: 0,
      log: (line) => lines.push(line),
    });
    const report = `${lines.join('\n')}\n${formatSummary(result)}\n${result.failure === null ? '' : `${result.failure.message}\n${result.failure.commands}\nreplay: ${result.failure.replay}`}`;
    expect(result.failure, report).toBeNull();
    expect(result.stats.steps, report).toBe(150);
    // The sequence reaches the places that matter: payouts made, refused at the bank or not,
    // faults injected, hostile actors refused.
    expect(result.stats.payouts, report).toBeGreaterThan(0);
    expect(Object.values(result.stats.faults).reduce((a, b) => a + b, 0), report).toBeGreaterThan(0);
    expect(result.stats.statuses['409'] ?? 0, report).toBeGreaterThan(0);
    expect(result.stats.checkpoints, report).toBeGreaterThanOrEqual(7);
  });
});
