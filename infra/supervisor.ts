import { spawn } from 'node:child_process';

/**
 * The supervisor behind `npm start` (scripts/dev.ts): it owns every process of the development
 * stack, restarts one that dies (bounded, with a growing delay) instead of letting it take the
 * others down, and stops them in a fixed order on request: the API drains first, then the worker
 * finishes its activities, then the gateway simulator, Temporal and PostgreSQL stop, last, since
 * the processes before them use them while they drain. It prints one line per step.
 *
 * Every process runs in a process group of its own (detached), so a terminal's Ctrl-C (SIGINT to
 * the whole foreground group) reaches the supervisor only, never PostgreSQL or Temporal directly.
 */

export interface ServiceExit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface RunningService {
  pid: number | null;
  /** Resolves when the process has ended, however it ended. */
  exited: Promise<ServiceExit>;
  /** Asks for a graceful stop and resolves once the process has ended (forcing it past its grace). */
  stop(): Promise<void>;
}

export interface ServiceDefinition {
  /** Short name used in log lines: "api", "worker", "postgres". */
  name: string;
  /** What stopping it means, for the step line: "the API drained its requests". */
  stopped: string;
  /** Stopped in ascending order: the API first, PostgreSQL last. */
  stopRank: number;
  start(): Promise<RunningService>;
  /** Restart it when it ends on its own once the stack is up. */
  restart: boolean;
}

export interface RestartPolicy {
  /** Delay before the first restart; doubled for each restart within the window. */
  baseDelayMs: number;
  maxDelayMs: number;
  /** More restarts than this within `windowMs` and the supervisor gives up and stops everything. */
  maxRestarts: number;
  windowMs: number;
}

export const defaultRestartPolicy: RestartPolicy = { baseDelayMs: 1_000, maxDelayMs: 30_000, maxRestarts: 5, windowMs: 10 * 60_000 };

/** Thrown by `start` once the supervisor is stopping: nothing new starts then. */
export class StoppingError extends Error {
  constructor() {
    super('the supervisor is stopping');
    this.name = 'StoppingError';
  }
}

interface Slot {
  definition: ServiceDefinition;
  /** The first start, while it runs: a stop waits for it, then stops what it started. */
  starting: Promise<RunningService> | null;
  running: RunningService | null;
  restarts: number[];
  pendingRestart: NodeJS.Timeout | null;
}

export function describeExit(exit: ServiceExit): string {
  return exit.signal !== null ? `signal ${exit.signal}` : `code ${String(exit.code)}`;
}

function seconds(ms: number): string {
  return `${(ms / 1000).toFixed(1)} s`;
}

export class Supervisor {
  readonly #slots = new Map<string, Slot>();
  readonly #say: (line: string) => void;
  readonly #policy: RestartPolicy;
  readonly #now: () => number;
  readonly #onFailure: (reason: string) => void;
  readonly #onRestart: () => void;
  #up = false;
  #stopping: Promise<void> | null = null;

  /**
   * `onFailure` is called once when the stack cannot go on: a process ended before the stack was
   * up, or kept ending past the restart policy. The caller then stops everything.
   */
  constructor(options: {
    say: (line: string) => void;
    onFailure: (reason: string) => void;
    /** Called after a service was restarted (its pid changed). */
    onRestart?: () => void;
    policy?: RestartPolicy;
    now?: () => number;
  }) {
    this.#say = options.say;
    this.#onFailure = options.onFailure;
    this.#onRestart = options.onRestart ?? (() => {});
    this.#policy = options.policy ?? defaultRestartPolicy;
    this.#now = options.now ?? Date.now;
  }

  get stopping(): boolean {
    return this.#stopping !== null;
  }

  /** From now on a process that ends on its own is restarted (before: the start failed). */
  markUp(): void {
    this.#up = true;
  }

  /**
   * Starts a service and watches it. Throws when its start fails, and StoppingError when the
   * supervisor is stopping (a stop that began meanwhile stops what this start started).
   */
  async start(definition: ServiceDefinition): Promise<RunningService> {
    if (this.#stopping !== null) throw new StoppingError();
    if (this.#slots.has(definition.name)) throw new Error(`${definition.name} is already supervised`);
    const slot: Slot = { definition, starting: null, running: null, restarts: [], pendingRestart: null };
    this.#slots.set(definition.name, slot);
    slot.starting = definition.start();
    try {
      const running = await slot.starting;
      this.#attach(slot, running);
      if (this.#stopping !== null) throw new StoppingError();
      return running;
    } catch (error) {
      if (this.#stopping === null) this.#slots.delete(definition.name);
      throw error;
    } finally {
      slot.starting = null;
    }
  }

  pids(): Record<string, number | null> {
    return Object.fromEntries([...this.#slots.values()].map((slot) => [slot.definition.name, slot.running?.pid ?? null]));
  }

  #attach(slot: Slot, running: RunningService): void {
    slot.running = running;
    void running.exited.then((exit) => {
      if (slot.running !== running) return;
      slot.running = null;
      if (this.#stopping !== null) return;
      this.#exitedOnItsOwn(slot, exit);
    });
  }

  #exitedOnItsOwn(slot: Slot, exit: ServiceExit): void {
    const { name } = slot.definition;
    if (!this.#up || !slot.definition.restart) {
      this.#onFailure(`${name} exited (${describeExit(exit)})${this.#up ? '' : ' while starting'}`);
      return;
    }
    const now = this.#now();
    slot.restarts = slot.restarts.filter((at) => now - at < this.#policy.windowMs);
    if (slot.restarts.length >= this.#policy.maxRestarts) {
      this.#onFailure(
        `${name} exited (${describeExit(exit)}) after ${slot.restarts.length} restarts within ${seconds(this.#policy.windowMs)}: giving up`,
      );
      return;
    }
    const delayMs = Math.min(this.#policy.baseDelayMs * 2 ** slot.restarts.length, this.#policy.maxDelayMs);
    slot.restarts.push(now);
    this.#say(
      `${name} exited (${describeExit(exit)}): restarting it in ${seconds(delayMs)} (restart ${slot.restarts.length} of at most ${this.#policy.maxRestarts} within ${seconds(this.#policy.windowMs)})`,
    );
    slot.pendingRestart = setTimeout(() => {
      slot.pendingRestart = null;
      if (this.#stopping !== null) return;
      slot.definition.start().then(
        (running) => {
          if (this.#stopping !== null) {
            void running.stop();
            return;
          }
          this.#attach(slot, running);
          this.#say(`${name} restarted (pid ${String(running.pid)})`);
          this.#onRestart();
        },
        (error: unknown) => {
          this.#say(`${name} did not restart: ${error instanceof Error ? error.message : String(error)}`);
          this.#exitedOnItsOwn(slot, { code: null, signal: null });
        },
      );
    }, delayMs);
  }

  /**
   * Stops every service in stop order, one at a time, each after the one before has ended; prints
   * a line per step and a last line. Idempotent: a second call waits for the first.
   */
  stopAll(reason: string): Promise<void> {
    this.#stopping ??= (async () => {
      const startedAt = this.#now();
      const slots = [...this.#slots.values()].sort((a, b) => a.definition.stopRank - b.definition.stopRank);
      for (const slot of slots) {
        if (slot.pendingRestart !== null) clearTimeout(slot.pendingRestart);
        slot.pendingRestart = null;
      }
      const order = slots.map((slot) => slot.definition.name).join(', then ');
      this.#say(`stopping (${reason}): ${order}`);
      let step = 0;
      for (const slot of slots) {
        step += 1;
        const stepStartedAt = this.#now();
        if (slot.starting !== null) await slot.starting.catch(() => null);
        const running = slot.running;
        if (running === null) {
          this.#say(`stop ${step}/${slots.length}: ${slot.definition.name} was not running`);
          continue;
        }
        try {
          await running.stop();
          const exit = await running.exited;
          const how = exit.code === 0 || exit.signal === 'SIGINT' || exit.signal === 'SIGTERM' ? '' : ` (it ended with ${describeExit(exit)})`;
          this.#say(`stop ${step}/${slots.length}: ${slot.definition.stopped} in ${seconds(this.#now() - stepStartedAt)}${how}`);
        } catch (error) {
          this.#say(`stop ${step}/${slots.length}: ${slot.definition.name} failed to stop: ${error instanceof Error ? error.message : String(error)}`);
        }
        slot.running = null;
      }
      this.#say(`stopped in ${seconds(this.#now() - startedAt)}`);
    })();
    return this.#stopping;
  }
}

/**
 * A service that runs inside the supervisor's own process (the SDK's Temporal server, the mail
 * sink): no pid, and it ends only when stopped, once `stop` has done its work.
 */
export function inProcessService(stop: () => Promise<void>): RunningService {
  let ended: () => void = () => {};
  const exited = new Promise<ServiceExit>((resolve) => {
    ended = () => resolve({ code: 0, signal: null });
  });
  return {
    pid: null,
    exited,
    stop: async () => {
      await stop();
      ended();
    },
  };
}

/**
 * A Node program of the stack (the API, the worker, the simulator) as a supervised process: its
 * own process group, standard output and error shared with the supervisor's, and an IPC channel
 * whose end tells it that its supervisor is gone (infra/bootstrap.ts stops it then, as on
 * SIGTERM). `stop()` sends SIGTERM (the program drains) and SIGKILL after `graceMs`.
 */
export function startNodeProcess(options: {
  file: string;
  nodeOptions: readonly string[];
  env: Record<string, string>;
  graceMs: number;
  say: (line: string) => void;
  name: string;
}): RunningService {
  const child = spawn(process.execPath, [...options.nodeOptions, options.file], {
    env: options.env,
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    detached: true,
  });
  // The channel only carries its own end; it must not keep the supervisor alive.
  child.channel?.unref();
  const exited = new Promise<ServiceExit>((resolve) => {
    child.once('exit', (code, signal) => resolve({ code, signal }));
    child.once('error', (error) => {
      options.say(`${options.name} could not start: ${error.message}`);
      resolve({ code: null, signal: null });
    });
  });
  return {
    pid: child.pid ?? null,
    exited,
    stop: async () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => {
        options.say(`${options.name} did not stop within ${seconds(options.graceMs)}: killing it`);
        child.kill('SIGKILL');
      }, options.graceMs);
      await exited;
      clearTimeout(timer);
    },
  };
}
