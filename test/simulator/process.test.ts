import { spawn } from 'node:child_process';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

/** The simulator as a process: `node simulator/main.ts` starts from the environment and stops cleanly on SIGTERM. */

const root = path.resolve(import.meta.dirname, '../..');

describe('simulator process', () => {
  it('listens where configured, serves requests and exits 0 on SIGTERM', async () => {
    const child = spawn(process.execPath, ['simulator/main.ts'], {
      cwd: root,
      env: { ...process.env, SIMULATOR_PORT: '0', SIMULATOR_API_KEY: 'proc-key', SIMULATOR_WEBHOOK_URL: 'off', SIMULATOR_LOG_LEVEL: 'info' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString('utf8');
    });
    child.stderr.on('data', (chunk: Buffer) => {
      output += chunk.toString('utf8');
    });
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    try {
      const deadline = Date.now() + 10_000;
      let url: string | undefined;
      while (url === undefined) {
        if (Date.now() > deadline) throw new Error(`the simulator did not start:\n${output}`);
        url = /"url":"(http:\/\/[^"]+)".*gateway simulator listening/.exec(output)?.[1];
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      const balance = await fetch(`${url}/v3/finance/balance`, { headers: { access_token: 'proc-key' } });
      expect(balance.status).toBe(200);
      expect(await balance.json()).toEqual({ balance: 1_000_000 });
      child.kill('SIGTERM');
      expect(await exited).toBe(0);
      expect(output).toContain('shutting down');
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
    }
  });

  it('refuses to start with a bad configuration and names the variable', async () => {
    const child = spawn(process.execPath, ['simulator/main.ts'], {
      cwd: root,
      env: { ...process.env, SIMULATOR_PORT: 'eighty' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString('utf8');
    });
    const code = await new Promise<number | null>((resolve) => child.on('exit', (c) => resolve(c)));
    expect(code).toBe(1);
    expect(stderr).toContain('SIMULATOR_PORT');
  });
});
