import { writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { commandArbitraries, Real, runtime, setupRun, SimCommand, type Op } from './commands.ts';
import { Model } from './model.ts';
import { World, type SimStats } from './world.ts';

/**
 * The simulation's runner (issue 35; docs/reliability.md, "The simulation"): one stack for the
 * whole simulation, and fast-check's model-based testing over it. A run is one generated sequence
 * of commands (fc.commands) with a fresh model and fresh keys, set up, stepped (each step checked
 * against the model), checkpointed every `checkEvery` steps and at its end (drain, payouts one to
 * one, invariants 1 to 5, workflows). Runs follow one another until `steps` steps are done.
 *
 * The seed fixes every run's sequence of operations and faults. When a step fails, fast-check's
 * path names the run; the runner shrinks it (bounded by `shrinkMs`) to the shortest sequence that
 * still fails, then replays that sequence `replays` times: a real stack's timing is not replayable,
 * so a failure that does not come back every time is reported as flaky.
 */

export interface SimOptions {
  seed: number;
  steps: number;
  /** The most commands one run generates. */
  runLength: number;
  checkEvery: number;
  faults: boolean;
  /** Replay this fast-check path (printed with a failure) instead of running from the start. */
  path?: string | undefined;
  /** Run exactly these operations, once, as one run (a failure's sequence, printed and written to a file with it). */
  replay?: readonly Op[] | undefined;
  shrink: boolean;
  shrinkMs: number;
  replays: number;
  ports: number | 'free';
  log: (line: string) => void;
  /** A progress line every this many steps (0: none). */
  progressEvery: number;
}

export interface SimFailure {
  message: string;
  path: string;
  commands: string;
  /** The shortest failing sequence's operations, and the file they were written to (`--replay FILE`). */
  ops: Op[];
  file: string;
  replay: string;
  /** How many of the replays of the shortest sequence failed. */
  replayed: { failed: number; of: number };
  flaky: boolean;
}

export interface SimResult {
  seed: number;
  stats: SimStats;
  seconds: number;
  failure: SimFailure | null;
}

/** A failure's shape without its ids and numbers: the command's kind and what went wrong. */
export function signature(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  return message
    .replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g, '<id>')
    .replace(/[0-9a-f]{16,}/g, '<key>')
    .replace(/\d+(\.\d+)?/g, 'N')
    .replace(/"request_id":"[^"]*"/g, '')
    .slice(0, 200);
}

/** The operations of a counterexample's commands that ran, in order. */
function opsOf(counterexample: unknown): Op[] {
  const [commands] = (counterexample ?? [[]]) as [Iterable<{ hasRan?: boolean; cmd?: unknown }>];
  return [...commands].filter((wrapper) => wrapper.hasRan === true && wrapper.cmd instanceof SimCommand).map((wrapper) => (wrapper.cmd as SimCommand).op);
}

function commandsText(counterexample: unknown): string {
  const [commands] = (counterexample ?? []) as [Iterable<unknown>];
  try {
    return [...commands].map((command) => String(command)).join('\n');
  } catch {
    return String(commands);
  }
}

export async function runSim(options: SimOptions): Promise<SimResult> {
  const started = Date.now();
  options.log(`sim seed ${options.seed}: ${options.steps} steps, runs of at most ${options.runLength}, faults ${options.faults ? 'on' : 'off'}`);
  const world = await World.start({ seed: options.seed, ports: options.ports, log: options.log });
  let budget = options.steps;
  /** The failure being shrunk (its signature), or null. */
  let target: string | null = null;
  let run = 0;
  let lastProgress = 0;
  const progress = (): void => {
    const s = world.stats;
    if (options.progressEvery === 0 || s.steps - lastProgress < options.progressEvery) return;
    lastProgress = s.steps;
    const faults = Object.values(s.faults).reduce((a, b) => a + b, 0);
    options.log(`step ${s.steps}/${options.steps} run ${run}: ${s.requests} requests, ${s.payouts} payouts, ${faults} faults, ${s.checkpoints} checkpoints, ${((Date.now() - started) / 1000).toFixed(0)} s`);
  };

  runtime.more = () => world.stats.steps < budget;
  runtime.checkEvery = options.checkEvery;
  runtime.progress = progress;
  const arbitraries = commandArbitraries({ faults: options.faults });
  const property = fc.asyncProperty(fc.commands(arbitraries, { maxCommands: options.runLength, size: 'max' }), async (commands) => {
    if (world.stats.steps >= budget) return;
    run += 1;
    world.stats.runs += 1;
    const model = new Model();
    const real = new Real(world, run);
    try {
      await setupRun(model, real);
      await fc.asyncModelRun(() => ({ model, real }), commands);
      await real.finish(model);
    } catch (error) {
      // While shrinking, only the failure being shrunk counts: another one (the stack's timing) is not this sequence's.
      if (target !== null && signature(error) !== target) return;
      throw error;
    }
  });

  /** One run of exactly `ops`: null when it passes, the error when it fails. */
  const replayOnce = async (ops: readonly Op[]): Promise<unknown> => {
    run += 1;
    world.stats.runs += 1;
    const model = new Model();
    const real = new Real(world, run);
    try {
      await setupRun(model, real);
      await fc.asyncModelRun(() => ({ model, real }), ops.map((op) => new SimCommand(op)));
      await real.finish(model);
      return null;
    } catch (error) {
      return error;
    }
  };

  if (options.replay !== undefined) {
    budget = Number.POSITIVE_INFINITY;
    let failure: SimFailure | null = null;
    try {
      const error = await replayOnce(options.replay);
      if (error !== null) {
        const message = error instanceof Error ? error.message : String(error);
        world.stats.violations.push(message);
        failure = { message, path: '', commands: options.replay.map((op) => JSON.stringify(op)).join('\n'), ops: [...options.replay], file: '', replay: '', replayed: { failed: 1, of: 1 }, flaky: false };
      }
    } finally {
      await world.stop();
    }
    return { seed: options.seed, stats: world.stats, seconds: (Date.now() - started) / 1000, failure };
  }

  const base = { seed: options.seed, numRuns: Math.max(1, options.steps), endOnFailure: true, ...(options.path === undefined ? {} : { path: options.path }) };
  let failure: SimFailure | null = null;
  try {
    const details = await fc.check(property, base);
    if (details.failed && details.counterexamplePath !== null) {
      const firstError = details.errorInstance;
      let pathText = details.counterexamplePath;
      let counterexample: unknown = details.counterexample;
      let message = firstError instanceof Error ? firstError.message : String(firstError);
      const stepsBefore = world.stats.steps;
      options.log(`VIOLATION at step ${stepsBefore} (path ${pathText}): ${message}`);
      budget = Number.POSITIVE_INFINITY;
      target = signature(firstError);
      if (options.shrink) {
        options.log(`shrinking for at most ${options.shrinkMs / 1000} s`);
        const shrunk = await fc.check(property, { seed: options.seed, path: pathText, endOnFailure: false, numRuns: Math.max(1, options.steps), interruptAfterTimeLimit: options.shrinkMs });
        const shrunkMessage = shrunk.errorInstance instanceof Error ? shrunk.errorInstance.message : '';
        // Kept only when it is the same failure with a sequence to show (an interrupted shrink may report neither).
        if (shrunk.failed && shrunk.counterexamplePath !== null && opsOf(shrunk.counterexample).length > 0 && signature(shrunk.errorInstance) === target) {
          pathText = shrunk.counterexamplePath;
          counterexample = shrunk.counterexample;
          message = shrunkMessage;
        }
      }
      // The shortest sequence, replayed as it is (its operations, not fast-check's path: which commands a path runs
      // depends on the answers, and a real stack's answers are not replayable).
      const ops = opsOf(counterexample);
      const file = path.join(tmpdir(), `sim-failure-${options.seed}-${Date.now()}.json`);
      await writeFile(file, `${JSON.stringify(ops, null, 1)}\n`);
      let failed = 0;
      for (let i = 0; i < options.replays; i += 1) {
        const error = await replayOnce(ops);
        if (error !== null && signature(error) === target) failed += 1;
      }
      failure = {
        message,
        path: pathText,
        commands: commandsText(counterexample),
        ops,
        file,
        replay: `npm run sim -- --seed ${options.seed} --replay ${file}   (or the generated run: --steps ${options.steps} --run-length ${options.runLength}${options.faults ? '' : ' --no-faults'} --path '${pathText}')`,
        replayed: { failed, of: options.replays },
        flaky: failed < options.replays,
      };
      world.stats.violations.push(message);
    } else if (details.failed) {
      throw new Error(`the simulation failed without a path: ${String(details.errorInstance)}`);
    }
  } finally {
    await world.stop();
  }
  return { seed: options.seed, stats: world.stats, seconds: (Date.now() - started) / 1000, failure };
}
