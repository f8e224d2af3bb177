import type { Session } from './api.ts';

/**
 * Follows GET /api/v1/admin/events (Server-Sent Events) with fetch, so that the token travels in
 * the Authorization header and never in a URL. Reconnects with Last-Event-ID after a drop or the
 * server's `closing` event (a token that expired ends the session instead).
 */
export interface LiveEvent {
  id: string;
  event: string;
  data: Record<string, unknown>;
}

export function followEvents(
  session: Session,
  handlers: { onEvent(event: LiveEvent): void; onState(state: 'connecting' | 'live' | 'retrying'): void; onUnauthorized(): void },
): () => void {
  let stopped = false;
  let lastId: string | null = null;
  let controller: AbortController | null = null;

  async function runOnce(): Promise<void> {
    controller = new AbortController();
    handlers.onState('connecting');
    const response = await fetch('/api/v1/admin/events', {
      headers: { authorization: `Bearer ${session.token}`, accept: 'text/event-stream', ...(lastId === null ? {} : { 'last-event-id': lastId }) },
      signal: controller.signal,
    });
    if (response.status === 401) {
      stopped = true;
      handlers.onUnauthorized();
      return;
    }
    if (!response.ok || response.body === null) throw new Error(`events answered ${response.status}`);
    handlers.onState('live');
    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = '';
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buffer += value;
      for (let end = buffer.indexOf('\n\n'); end !== -1; end = buffer.indexOf('\n\n')) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        let id: string | null = null;
        let event = 'message';
        const data: string[] = [];
        for (const line of block.split('\n')) {
          if (line.startsWith('id: ')) id = line.slice(4);
          else if (line.startsWith('event: ')) event = line.slice(7);
          else if (line.startsWith('data: ')) data.push(line.slice(6));
        }
        if (id !== null) lastId = id;
        if (data.length === 0) continue;
        handlers.onEvent({ id: id ?? '', event, data: JSON.parse(data.join('\n')) as Record<string, unknown> });
      }
    }
  }

  void (async () => {
    for (let failures = 0; !stopped; ) {
      try {
        await runOnce();
        failures = 0;
      } catch {
        if (stopped) return;
        failures += 1;
      }
      if (stopped) return;
      handlers.onState('retrying');
      await new Promise((resolve) => setTimeout(resolve, Math.min(10_000, 500 * 2 ** Math.min(failures, 5))));
    }
  })();
  return () => {
    stopped = true;
    controller?.abort();
  };
}
