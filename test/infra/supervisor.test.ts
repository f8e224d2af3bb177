import { describe, expect, it } from 'vitest';
import { Supervisor, StoppingError, type RunningService, type ServiceDefinition, type ServiceExit } from '../../infra/supervisor.ts';
import { waitFor } from '../support/wait.ts';

/**
 * The supervisor behind npm start, with stand-in services: the stop order and its lines, restarts
 * with a growing delay and their bound, and a stop that arrives while a service is starting.
 */

interface Fake {
  definition: ServiceDefinition;
  starts: number;
  /** Ends the current run as a crash would. */
  crash(exit?: ServiceExit): void;
  events: string[];
}

function fake(name: string, stopRank: number, events: string[], options: { startMs?: number; failStartAfter?: number } = {}): Fake {
  let end: ((exit: ServiceExit) => void) | null = null;
  const self: Fake = {
    starts: 0,
    events,
    crash: (exit = { code: 1, signal: null }) => end?.(exit),
    definition: {
      name,
      stopped: `${name} stopped`,
      stopRank,
      restart: true,
      start: async (): Promise<RunningService> => {
        self.starts += 1;
        if (options.failStartAfter !== undefined && self.starts > options.failStartAfter) throw new Error(`${name} cannot start`);
        if (options.startMs !== undefined) await new Promise((resolve) => setTimeout(resolve, options.startMs));
        events.push(`start ${name}`);
        const exited = new Promise<ServiceExit>((resolve) => {
          end = resolve;
        });
        return {
          pid: 1000 + self.starts,
          exited,
          stop: async () => {
            events.push(`stop ${name}`);
            end?.({ code: 0, signal: null });
          },
        };
      },
    },
  };
  return self;
}

function supervisor(lines: string[], failures: string[], policy = { baseDelayMs: 10, maxDelayMs: 40, maxRestarts: 3, windowMs: 60_000 }): Supervisor {
  return new Supervisor({ say: (line) => lines.push(line), onFailure: (reason) => failures.push(reason), policy });
}

describe('Supervisor', () => {
  it('stops in stop order whatever the start order, a line per step and a last line', async () => {
    const events: string[] = [];
    const lines: string[] = [];
    const s = supervisor(lines, []);
    const services = [fake('postgres', 5, events), fake('temporal', 4, events), fake('worker', 2, events), fake('api', 1, events)];
    for (const service of services) await s.start(service.definition);
    s.markUp();
    await s.stopAll('SIGINT');
    expect(events.filter((event) => event.startsWith('stop'))).toEqual(['stop api', 'stop worker', 'stop temporal', 'stop postgres']);
    expect(lines[0]).toBe('stopping (SIGINT): api, then worker, then temporal, then postgres');
    expect(lines.slice(1, 5).map((line) => line.replace(/ in [\d.]+ s/, ''))).toEqual([
      'stop 1/4: api stopped',
      'stop 2/4: worker stopped',
      'stop 3/4: temporal stopped',
      'stop 4/4: postgres stopped',
    ]);
    expect(lines[5]).toMatch(/^stopped in [\d.]+ s$/);
    // A second request waits for the same stop.
    await s.stopAll('SIGTERM');
    expect(lines).toHaveLength(6);
  });

  it('restarts a service that dies once the stack is up, with a growing delay, and says so', async () => {
    const events: string[] = [];
    const lines: string[] = [];
    const failures: string[] = [];
    const s = supervisor(lines, failures);
    const worker = fake('worker', 2, events);
    const api = fake('api', 1, events);
    await s.start(worker.definition);
    await s.start(api.definition);
    s.markUp();
    worker.crash({ code: null, signal: 'SIGKILL' });
    await waitFor(() => worker.starts === 2, { what: 'the first restart' });
    worker.crash({ code: 70, signal: null });
    await waitFor(() => worker.starts === 3, { what: 'the second restart' });
    expect(api.starts).toBe(1);
    expect(failures).toEqual([]);
    expect(lines.filter((line) => line.startsWith('worker'))).toEqual([
      'worker exited (signal SIGKILL): restarting it in 0.0 s (restart 1 of at most 3 within 60.0 s)',
      'worker restarted (pid 1002)',
      'worker exited (code 70): restarting it in 0.0 s (restart 2 of at most 3 within 60.0 s)',
      'worker restarted (pid 1003)',
    ]);
    expect(s.pids()).toEqual({ worker: 1003, api: 1001 });
    await s.stopAll('test');
  });

  it('gives up past the bound and reports the failure instead of restarting for ever', async () => {
    const lines: string[] = [];
    const failures: string[] = [];
    const s = supervisor(lines, failures, { baseDelayMs: 1, maxDelayMs: 2, maxRestarts: 2, windowMs: 60_000 });
    const worker = fake('worker', 2, []);
    await s.start(worker.definition);
    s.markUp();
    for (let run = 1; run <= 3; run += 1) {
      await waitFor(() => worker.starts === run, { what: `start ${run}` });
      worker.crash();
    }
    await waitFor(() => failures.length === 1, { what: 'the supervisor to give up' });
    expect(failures[0]).toBe('worker exited (code 1) after 2 restarts within 60.0 s: giving up');
    expect(worker.starts).toBe(3);
  });

  it('counts a restart that cannot start as another failure', async () => {
    const failures: string[] = [];
    const s = supervisor([], failures, { baseDelayMs: 1, maxDelayMs: 2, maxRestarts: 2, windowMs: 60_000 });
    const worker = fake('worker', 2, [], { failStartAfter: 1 });
    await s.start(worker.definition);
    s.markUp();
    worker.crash();
    await waitFor(() => failures.length === 1, { what: 'the supervisor to give up' });
    expect(failures[0]).toMatch(/^worker exited .* after 2 restarts/);
  });

  it('does not restart a service that ends while the stack is starting: that is a failed start', async () => {
    const failures: string[] = [];
    const s = supervisor([], failures);
    const worker = fake('worker', 2, []);
    await s.start(worker.definition);
    worker.crash({ code: 1, signal: null });
    await waitFor(() => failures.length === 1, { what: 'the failure' });
    expect(failures[0]).toBe('worker exited (code 1) while starting');
    expect(worker.starts).toBe(1);
  });

  it('stops a service whose start was under way when the stop came, and starts nothing after', async () => {
    const events: string[] = [];
    const s = supervisor([], []);
    const slow = fake('temporal', 4, events, { startMs: 100 });
    const starting = s.start(slow.definition);
    await new Promise((resolve) => setTimeout(resolve, 10));
    await s.stopAll('SIGINT');
    await expect(starting).rejects.toBeInstanceOf(StoppingError);
    expect(events).toEqual(['start temporal', 'stop temporal']);
    await expect(s.start(fake('api', 1, events).definition)).rejects.toBeInstanceOf(StoppingError);
    expect(events).toEqual(['start temporal', 'stop temporal']);
  });

  it('cancels a pending restart when it stops', async () => {
    const events: string[] = [];
    const lines: string[] = [];
    const s = supervisor(lines, [], { baseDelayMs: 200, maxDelayMs: 200, maxRestarts: 3, windowMs: 60_000 });
    const worker = fake('worker', 2, events);
    await s.start(worker.definition);
    s.markUp();
    worker.crash();
    await waitFor(() => lines.some((line) => line.startsWith('worker exited')), { what: 'the restart to be scheduled' });
    await s.stopAll('SIGTERM');
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(worker.starts).toBe(1);
    expect(lines).toContain('stop 1/1: worker was not running');
  });
});
