import net from 'node:net';
import { describe, expect, it, inject } from 'vitest';
import { waitForFrontend } from '../../infra/temporal-dev-server.ts';

describe('waitForFrontend (a dev server counts as up once its frontend answers, not once its port opens)', () => {
  it('resolves against the running dev server', async () => {
    await expect(waitForFrontend(inject('temporalAddress'), 10_000)).resolves.toBeUndefined();
  });

  it('keeps waiting while the port accepts but no healthy frontend answers, then fails naming the address', async () => {
    const silent = net.createServer((socket) => socket.destroy());
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const { port } = silent.address() as net.AddressInfo;
    try {
      const started = Date.now();
      await expect(waitForFrontend(`127.0.0.1:${port}`, 1500)).rejects.toThrow(`127.0.0.1:${port} was not healthy within 1500 ms`);
      expect(Date.now() - started).toBeGreaterThanOrEqual(1500);
    } finally {
      await new Promise((resolve) => silent.close(resolve));
    }
  });
});
