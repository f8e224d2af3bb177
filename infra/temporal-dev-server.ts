import { spawn, type ChildProcess } from 'node:child_process';
import { mkdir } from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import { Connection } from '@temporalio/client';
import { searchAttributeFlags } from './search-attributes.ts';

/**
 * Runs the Temporal CLI dev server as a child process: SQLite state under the data directory
 * (so workflows survive a restart), Web UI on its own port, the project's search attributes
 * registered at start.
 */

export interface DevServerOptions {
  cliPath: string;
  ip: string;
  port: number;
  uiPort: number | null;
  /** SQLite file; `null` keeps everything in memory (tests). */
  dbFilename: string | null;
  namespace: string;
  startTimeoutMs: number;
  log: (line: string) => void;
  /**
   * Run in a process group of its own, so a terminal's Ctrl-C reaches only the supervisor, which
   * stops the server after the processes that use it (infra/supervisor.ts).
   */
  detached?: boolean;
}

export interface DevServer {
  address: string;
  uiUrl: string | null;
  process: ChildProcess;
  /** Resolves when the server process has ended. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  stop(): Promise<void>;
}

export function waitForPort(host: string, port: number, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  return new Promise((resolve, reject) => {
    const attempt = (): void => {
      const socket = net.connect({ host, port });
      socket.once('connect', () => {
        socket.destroy();
        resolve();
      });
      socket.once('error', () => {
        socket.destroy();
        if (Date.now() > deadline) reject(new Error(`nothing listens on ${host}:${port} after ${timeoutMs} ms`));
        else setTimeout(attempt, 100);
      });
    };
    attempt();
  });
}

/**
 * Waits until the frontend on `address` answers GetSystemInfo. The port opens before the
 * frontend is healthy: a worker connecting in between fails with "Frontend is not healthy yet"
 * (seen when a benchmark started its worker right after the port opened).
 */
export async function waitForFrontend(address: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      const connection = await Connection.connect({ address, connectTimeout: 2000 });
      try {
        await connection.workflowService.getSystemInfo({});
        return;
      } finally {
        await connection.close();
      }
    } catch (error) {
      if (Date.now() > deadline) {
        throw new Error(`the Temporal frontend on ${address} was not healthy within ${timeoutMs} ms: ${error instanceof Error ? error.message : String(error)}`);
      }
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => {
        if (address !== null && typeof address === 'object') resolve(address.port);
        else reject(new Error('no port'));
      });
    });
  });
}

export async function startTemporalDevServer(options: DevServerOptions): Promise<DevServer> {
  const args = [
    'server',
    'start-dev',
    '--ip',
    options.ip,
    '--port',
    String(options.port),
    '--namespace',
    options.namespace,
    '--log-level',
    'warn',
    ...searchAttributeFlags(),
  ];
  if (options.uiPort === null) args.push('--headless');
  else args.push('--ui-port', String(options.uiPort));
  if (options.dbFilename !== null) {
    await mkdir(path.dirname(options.dbFilename), { recursive: true });
    args.push('--db-filename', options.dbFilename);
  }
  const child = spawn(options.cliPath, args, { stdio: ['ignore', 'pipe', 'pipe'], detached: options.detached === true });
  // Never leave a dev server behind when this process ends, however it ends.
  const killOnExit = (): void => {
    child.kill('SIGKILL');
  };
  process.once('exit', killOnExit);
  child.once('exit', () => process.removeListener('exit', killOnExit));
  let output = '';
  const collect = (chunk: Buffer): void => {
    output = (output + chunk.toString('utf8')).slice(-8000);
  };
  child.stdout?.on('data', collect);
  child.stderr?.on('data', collect);
  const exited = new Promise<never>((_, reject) => {
    child.once('exit', (code) => reject(new Error(`temporal dev server exited with code ${String(code)}:\n${output}`)));
    child.once('error', reject);
  });
  exited.catch(() => {});
  try {
    const started = Date.now();
    await Promise.race([waitForPort(options.ip, options.port, options.startTimeoutMs), exited]);
    await Promise.race([waitForFrontend(`${options.ip}:${options.port}`, Math.max(1000, options.startTimeoutMs - (Date.now() - started))), exited]);
  } catch (error) {
    child.kill('SIGKILL');
    throw error;
  }
  const address = `${options.ip}:${options.port}`;
  options.log(`temporal dev server listening on ${address}`);
  const ended = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve({ code: child.exitCode, signal: child.signalCode });
    else child.once('exit', (code, signal) => resolve({ code, signal }));
  });
  return {
    address,
    exited: ended,
    uiUrl: options.uiPort === null ? null : `http://${options.ip}:${options.uiPort}`,
    process: child,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) {
          resolve();
          return;
        }
        const killTimer = setTimeout(() => child.kill('SIGKILL'), 10_000);
        child.once('exit', () => {
          clearTimeout(killTimer);
          resolve();
        });
        child.kill('SIGTERM');
      }),
  };
}
