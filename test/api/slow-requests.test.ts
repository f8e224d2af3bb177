import net from 'node:net';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../support/app.ts';
import { newWallet } from '../support/wallet.ts';

/**
 * Slow clients (issue 34: request bodies sent slowly were held open for more than 330 seconds;
 * docs/security.md "Slow requests"). The time to receive the headers and the whole request is
 * bounded by configuration (1 s and 1.5 s here, checked every 100 ms; 10 s and 30 s in
 * production): a body sent a byte at a time is cut, and the server answers others meanwhile.
 */
let t: TestApp;
let port: number;
beforeAll(async () => {
  t = await createTestApp({
    HTTP_HEADERS_TIMEOUT_MS: '1000',
    HTTP_REQUEST_TIMEOUT_MS: '1500',
    HTTP_CONNECTIONS_CHECK_INTERVAL_MS: '100',
  });
  port = Number(new URL(await t.app.listen({ host: '127.0.0.1', port: 0 })).port);
});
afterAll(async () => {
  await t?.close();
});

/** Opens a connection, writes `head`, then one byte of `drip` every `everyMs`; resolves with what came back and when the server closed it. */
function slowClient(head: string, drip: string, everyMs: number): Promise<{ answer: string; closedAfterMs: number; bytesSent: number }> {
  return new Promise((resolve, reject) => {
    const started = Date.now();
    let answer = '';
    let sent = 0;
    let timer: NodeJS.Timeout | undefined;
    const socket = net.connect(port, '127.0.0.1', () => {
      socket.write(head);
      timer = setInterval(() => {
        if (sent < drip.length && !socket.destroyed) socket.write(drip[sent++] ?? '');
      }, everyMs);
    });
    socket.on('data', (chunk) => (answer += chunk.toString()));
    socket.on('close', () => {
      clearInterval(timer);
      resolve({ answer, closedAfterMs: Date.now() - started, bytesSent: sent });
    });
    socket.on('error', (error) => {
      // A reset after the answer is still a close.
      if ((error as NodeJS.ErrnoException).code !== 'ECONNRESET') reject(error);
    });
  });
}

describe('slow requests are cut by configuration', () => {
  it('a body sent a byte every 200 ms is cut at the request timeout (408), and the server answers others meanwhile', async () => {
    const body = JSON.stringify({ amount: '100.00', rail: 'PIX', currency: 'BRL', padding: 'x'.repeat(200) });
    const head = `POST /api/v1/fees/estimate HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`;
    const slow = slowClient(head, body, 200);
    // While it drips, other clients are answered at once.
    const others: number[] = [];
    for (let index = 0; index < 5; index += 1) {
      const started = Date.now();
      const response = await fetch(`http://127.0.0.1:${port}/healthz`);
      expect(response.status).toBe(200);
      others.push(Date.now() - started);
      await new Promise((resolve) => setTimeout(resolve, 150));
    }
    const result = await slow;
    expect(result.answer).toMatch(/^HTTP\/1\.1 408/);
    // Cut at 1.5 s (plus the 100 ms check and a loaded machine's slack), long before the body was all sent.
    expect(result.closedAfterMs).toBeGreaterThanOrEqual(1400);
    expect(result.closedAfterMs).toBeLessThan(5000);
    expect(result.bytesSent).toBeLessThan(body.length);
    expect(Math.max(...others)).toBeLessThan(1000);
  });

  it('headers sent slowly are cut at the headers timeout', async () => {
    const result = await slowClient('GET /healthz HTTP/1.1\r\n', 'Host: 127.0.0.1\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n\r\n', 200);
    expect(result.answer).toMatch(/^HTTP\/1\.1 408/);
    expect(result.closedAfterMs).toBeGreaterThanOrEqual(900);
    expect(result.closedAfterMs).toBeLessThan(4000);
  });

  it('a request sent in time is answered', async () => {
    const response = await fetch(`http://127.0.0.1:${port}/api/v1/fees/estimate`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ amount: '100.00', rail: 'PIX' }),
    });
    expect(response.status).toBe(200);
  });
});

describe('a request that takes too long', () => {
  it('is answered 503 SERVICE_UNAVAILABLE with Retry-After at HTTP_HANDLER_TIMEOUT_MS (here: a deposit whose workflow has no worker)', async () => {
    const slowApp = await createTestApp({ HTTP_HANDLER_TIMEOUT_MS: '500' });
    try {
      const started = Date.now();
      // A deposit is booked by its workflow (a PLC create no longer waits on one since issue 38);
      // the test app runs no worker, so the update waits until the handler's deadline.
      const response = await slowApp.app.inject({
        method: 'POST',
        url: '/api/v1/balance/deposit',
        headers: { ...(await slowApp.adminHeaders()), 'idempotency-key': randomUUID() },
        payload: { owner_id: newWallet().pubkey, amount: '1.00', currency: 'BRL' },
      });
      expect(response.statusCode).toBe(503);
      expect(response.json()).toMatchObject({ code: 'SERVICE_UNAVAILABLE', details: { retry_after_s: 1 } });
      expect(response.headers['retry-after']).toBe('1');
      expect(Date.now() - started).toBeLessThan(10_000);
      // The server still answers.
      expect((await slowApp.app.inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(200);
    } finally {
      await slowApp.close();
    }
  });
});
