import { randomInt } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { formatSummary } from './sim/report.ts';
import type { Op } from './sim/commands.ts';
import { runSim } from './sim/runner.ts';

/**
 * `npm run sim -- [--seed N] [--steps M] [--run-length L] [--check-every K] [--no-faults]
 * [--path P] [--replay FILE] [--no-shrink] [--shrink-seconds S] [--replays R] [--ports BASE|free]`: the seeded
 * model-based simulation (issue 35; docs/reliability.md, "The simulation") against a stack it
 * starts (scripts/chaos/stack.ts; ports from 18300 by default). Prints its seed first, a progress
 * line every 50 steps, and a summary table at the end; on a violation, the shortest failing
 * sequence found, written to a file, and the command that replays it (`--replay FILE`: exactly
 * those operations, as one run). Exits 1 on a violation, 2 when it could not run.
 */
const { values } = parseArgs({
  options: {
    seed: { type: 'string' },
    steps: { type: 'string', default: '500' },
    'run-length': { type: 'string', default: '60' },
    'check-every': { type: 'string', default: '25' },
    'no-faults': { type: 'boolean', default: false },
    path: { type: 'string' },
    replay: { type: 'string' },
    'no-shrink': { type: 'boolean', default: false },
    'shrink-seconds': { type: 'string', default: '300' },
    replays: { type: 'string', default: '3' },
    ports: { type: 'string', default: '18300' },
  },
});

const int = (text: string | undefined, min: number, max: number): number | null => {
  const n = Number(text);
  return Number.isInteger(n) && n >= min && n <= max ? n : null;
};
const seed = values.seed === undefined ? randomInt(0, 2 ** 31 - 1) : int(values.seed, 0, 2 ** 31 - 1);
const steps = int(values.steps, 1, 10_000_000);
const runLength = int(values['run-length'], 1, 10_000);
const checkEvery = int(values['check-every'], 1, 1_000_000);
const shrinkSeconds = int(values['shrink-seconds'], 0, 86_400);
const replays = int(values.replays, 0, 100);
const ports = values.ports === 'free' ? 'free' : int(values.ports, 1024, 65_000);
if (seed === null || steps === null || runLength === null || checkEvery === null || shrinkSeconds === null || replays === null || ports === null) {
  process.stderr.write(
    'usage: npm run sim -- [--seed 0..2147483647] [--steps M] [--run-length L] [--check-every K] [--no-faults] [--path P] [--replay FILE] [--no-shrink] [--shrink-seconds S] [--replays R] [--ports BASE|free]\n',
  );
  process.exit(2);
}

let replay: Op[] | undefined;
if (values.replay !== undefined) {
  try {
    const parsed = JSON.parse(readFileSync(values.replay, 'utf8')) as unknown;
    if (!Array.isArray(parsed) || !parsed.every((op) => typeof op === 'object' && op !== null && typeof (op as { kind?: unknown }).kind === 'string')) {
      throw new Error('not a JSON array of operations ({"kind": ...})');
    }
    replay = parsed as Op[];
  } catch (error) {
    process.stderr.write(`sim: --replay ${values.replay}: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(2);
  }
}

const started = new Date();
try {
  const result = await runSim({
    seed,
    steps,
    runLength,
    checkEvery,
    faults: !values['no-faults'],
    path: values.path,
    replay,
    shrink: !values['no-shrink'],
    shrinkMs: shrinkSeconds * 1000,
    replays,
    ports,
    progressEvery: 50,
    log: (line) => process.stdout.write(`[sim] ${line}\n`),
  });
  process.stdout.write(`\n${formatSummary(result)}\nstarted ${started.toISOString()}\n`);
  if (result.failure !== null) {
    const f = result.failure;
    process.stdout.write(
      `\nVIOLATION${f.flaky ? ` (flaky: ${f.replayed.failed} of ${f.replayed.of} replays failed)` : ` (failed ${f.replayed.failed} of ${f.replayed.of} replays)`}:\n${f.message}\n\n` +
        `shortest failing sequence${f.file === '' ? '' : ` (in ${f.file})`}:\n${f.commands}\n\n${f.replay === '' ? '' : `replay: ${f.replay}\n`}`,
    );
    process.exit(1);
  }
  process.stdout.write('no violations\n');
  process.exit(0);
} catch (error) {
  process.stderr.write(`sim: the simulation could not run: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(2);
}
