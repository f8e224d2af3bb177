import { request, type IncomingMessage } from 'node:http';

/** A Server-Sent Events client for tests: reads a stream, parses its events and comments. */
export interface SseEvent {
  id: string | null;
  event: string;
  data: unknown;
}

export interface SseClient {
  status: number;
  events: SseEvent[];
  comments: string[];
  /** Resolves with the first event (already received or to come) that matches; rejects after the timeout. */
  next(match: (event: SseEvent) => boolean, timeoutMs?: number): Promise<SseEvent>;
  /** Resolves when the server closes the stream. */
  closed: Promise<void>;
  close(): void;
}

export function openSse(url: string, headers: Record<string, string> = {}): Promise<SseClient> {
  return new Promise((resolve, reject) => {
    const req = request(url, { headers: { accept: 'text/event-stream', ...headers } }, (response: IncomingMessage) => {
      const events: SseEvent[] = [];
      const comments: string[] = [];
      const waiters: { match: (event: SseEvent) => boolean; resolve: (event: SseEvent) => void }[] = [];
      let buffer = '';
      let body = '';
      response.setEncoding('utf8');
      let closedResolve: () => void = () => {};
      const closed = new Promise<void>((done) => (closedResolve = done));
      response.on('data', (chunk: string) => {
        if (response.statusCode !== 200) {
          body += chunk;
          return;
        }
        buffer += chunk;
        for (let end = buffer.indexOf('\n\n'); end !== -1; end = buffer.indexOf('\n\n')) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          let id: string | null = null;
          let event = 'message';
          const data: string[] = [];
          for (const line of block.split('\n')) {
            if (line.startsWith(':')) comments.push(line.slice(1).trim());
            else if (line.startsWith('id: ')) id = line.slice(4);
            else if (line.startsWith('event: ')) event = line.slice(7);
            else if (line.startsWith('data: ')) data.push(line.slice(6));
          }
          if (data.length === 0) continue;
          const parsed: SseEvent = { id, event, data: JSON.parse(data.join('\n')) };
          events.push(parsed);
          for (const waiter of [...waiters]) {
            if (waiter.match(parsed)) {
              waiters.splice(waiters.indexOf(waiter), 1);
              waiter.resolve(parsed);
            }
          }
        }
      });
      response.on('close', () => closedResolve());
      response.on('error', () => closedResolve());
      const client: SseClient = {
        status: response.statusCode ?? 0,
        events,
        comments,
        closed,
        next(match, timeoutMs = 15_000) {
          const found = events.find(match);
          if (found !== undefined) return Promise.resolve(found);
          return new Promise((resolveEvent, rejectEvent) => {
            const timer = setTimeout(() => rejectEvent(new Error(`no matching event within ${timeoutMs} ms; got ${JSON.stringify(events.slice(-5))}`)), timeoutMs);
            waiters.push({
              match,
              resolve: (event) => {
                clearTimeout(timer);
                resolveEvent(event);
              },
            });
          });
        },
        close() {
          req.destroy();
        },
      };
      if (response.statusCode !== 200) {
        response.on('end', () => {
          (client as { body?: string }).body = body;
          resolve(client);
        });
        return;
      }
      resolve(client);
    });
    req.on('error', reject);
    req.end();
  });
}
