import net from 'node:net';

/**
 * A TCP proxy that can be frozen: while paused it forwards nothing in either direction and
 * accepts new connections without forwarding their bytes, as a dependency does when its process
 * is stopped (SIGSTOP) or the network drops packets. Nothing is closed or refused, so the client
 * sees silence, not an error; on resume the held bytes flow again. Tests put one in front of
 * PostgreSQL or Temporal instead of stopping the shared servers themselves.
 */
export interface PausableProxy {
  /** `127.0.0.1:<port>` to connect to instead of the target. */
  address: string;
  port: number;
  pause(): void;
  resume(): void;
  close(): Promise<void>;
}

export async function startPausableProxy(target: { host: string; port: number }): Promise<PausableProxy> {
  let paused = false;
  const pairs = new Set<{ client: net.Socket; upstream: net.Socket }>();

  const server = net.createServer((client) => {
    const upstream = net.connect(target.port, target.host);
    const pair = { client, upstream };
    pairs.add(pair);
    for (const [from, to] of [
      [client, upstream],
      [upstream, client],
    ] as const) {
      from.on('data', (chunk) => to.write(chunk));
      from.on('end', () => to.end());
      from.on('error', () => to.destroy());
      from.on('close', () => {
        to.destroy();
        pairs.delete(pair);
      });
      if (paused) from.pause();
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as net.AddressInfo).port;

  return {
    address: `127.0.0.1:${port}`,
    port,
    pause() {
      paused = true;
      for (const { client, upstream } of pairs) {
        client.pause();
        upstream.pause();
      }
    },
    resume() {
      paused = false;
      for (const { client, upstream } of pairs) {
        client.resume();
        upstream.resume();
      }
    },
    async close() {
      for (const { client, upstream } of pairs) {
        client.destroy();
        upstream.destroy();
      }
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
