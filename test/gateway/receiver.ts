import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { parseWireJson } from '../../gateway/json.ts';
import { waitFor } from '../support/wait.ts';

/**
 * A local HTTP server standing in for the service: it records every request the simulator sends
 * (webhooks to /webhook..., validation requests to /validate) and answers them as a test says.
 * By default webhooks get 200 and a validation request is answered from the transfer's
 * externalReference: "refuse-..." REFUSED, "fail-..." HTTP 500, anything else APPROVED.
 */

export interface ReceivedRequest {
  path: string;
  headers: IncomingHttpHeaders;
  text: string;
  body: Record<string, unknown>;
  atMs: number;
}

/** An answer, or `hang` to leave the request unanswered (until the receiver closes). */
export type Answer = { status: number; body?: unknown } | 'hang';

export interface Receiver {
  url: string;
  requests: ReceivedRequest[];
  /** Overrides the answer to webhooks (not validation requests); null restores 200. */
  webhookAnswer: ((request: ReceivedRequest) => Answer) | null;
  /** Webhook bodies received at `path` (default /webhook), in arrival order. */
  events(path?: string): { id: string; event: string; payment?: { id: string; status: string }; transfer?: { id: string; status: string }; bill?: { id: string; status: string }; headers: IncomingHttpHeaders }[];
  validations(): ReceivedRequest[];
  waitFor(predicate: () => boolean | Promise<boolean>, timeoutMs?: number, what?: string): Promise<void>;
  close(): Promise<void>;
}

export async function startReceiver(): Promise<Receiver> {
  const requests: ReceivedRequest[] = [];
  const receiver: Receiver = {
    url: '',
    requests,
    webhookAnswer: null,
    events(path = '/webhook') {
      return requests
        .filter((r) => r.path === path)
        .map((r) => ({ ...(r.body as { id: string; event: string }), headers: r.headers }));
    },
    validations() {
      return requests.filter((r) => r.path === '/validate');
    },
    async waitFor(predicate, timeoutMs = 15_000, what = 'condition') {
      await waitFor(predicate, { what, timeoutMs, intervalMs: 10, describe: () => `${requests.length} requests received` });
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };

  const send = (res: ServerResponse, answer: Answer): void => {
    if (answer === 'hang') return;
    res.writeHead(answer.status, { 'content-type': 'application/json' });
    res.end(answer.body === undefined ? '' : JSON.stringify(answer.body));
  };

  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      let body: Record<string, unknown> = {};
      try {
        body = parseWireJson(text) as Record<string, unknown>;
      } catch {
        // Recorded with an empty body; the test looking for it will fail on its own terms.
      }
      const request: ReceivedRequest = { path: (req.url ?? '/').split('?')[0] ?? '/', headers: req.headers, text, body, atMs: Date.now() };
      requests.push(request);
      if (request.path === '/validate') {
        const reference = String((body.transfer as { externalReference?: unknown } | undefined)?.externalReference ?? '');
        if (reference.startsWith('refuse-')) send(res, { status: 200, body: { status: 'REFUSED', refuseReason: 'limit exceeded for this key' } });
        else if (reference.startsWith('fail-')) send(res, { status: 500, body: { error: 'down' } });
        else send(res, { status: 200, body: { status: 'APPROVED' } });
        return;
      }
      send(res, receiver.webhookAnswer === null ? { status: 200, body: { received: true } } : receiver.webhookAnswer(request));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  receiver.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return receiver;
}

/** POSTs to a simulator control and returns the JSON answer; throws on a non-2xx. */
export async function control(baseUrl: string, method: 'GET' | 'POST' | 'DELETE', path: string, body?: unknown): Promise<Record<string, unknown>> {
  const response = await fetch(`${baseUrl}${path}`, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? null : JSON.stringify(body),
  });
  const json = (await response.json()) as Record<string, unknown>;
  if (!response.ok) throw new Error(`${method} ${path} answered ${response.status}: ${JSON.stringify(json)}`);
  return json;
}

/** A due date `days` from today (UTC), YYYY-MM-DD. */
export function dueInDays(days: number): string {
  return new Date(Date.now() + days * 86_400_000).toISOString().slice(0, 10);
}
