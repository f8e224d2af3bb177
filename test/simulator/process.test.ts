import { describe, expect, it } from 'vitest';
import { listeningUrl, spawnSimulator } from '../support/simulator-process.ts';

/** The simulator as a process: `node simulator/main.ts` starts from the environment and stops cleanly on SIGTERM. */

describe('simulator process', () => {
  it('listens where configured, serves requests and exits 0 on SIGTERM', async () => {
    const simulator = spawnSimulator({ SIMULATOR_PORT: '0', SIMULATOR_API_KEY: 'proc-key', SIMULATOR_WEBHOOK_URL: 'off', SIMULATOR_LOG_LEVEL: 'info' });
    const { child } = simulator;
    try {
      const url = await listeningUrl(simulator);
      const balance = await fetch(`${url}/v3/finance/balance`, { headers: { access_token: 'proc-key' } });
      expect(balance.status).toBe(200);
      expect(await balance.json()).toEqual({ balance: 1_000_000 });
      child.kill('SIGTERM');
      expect(await simulator.exited).toBe(0);
      expect(simulator.output()).toContain('shutting down');
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
    }
  });

  it('refuses to start with a bad configuration and names the variable', async () => {
    const simulator = spawnSimulator({ SIMULATOR_PORT: 'eighty' });
    expect(await simulator.exited).toBe(1);
    expect(simulator.stderr()).toContain('SIMULATOR_PORT');
  });
});
