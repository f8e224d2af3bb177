import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { getPlc } from '../../db/plcs.ts';
import { formatPosition, parsePosition, type EventPosition, type RealtimeEventRow } from '../../db/realtime-events.ts';
import { assert, DomainError } from '../../src/errors.ts';
import { currencies, formatAmount, type Currency } from '../../src/money/currency.ts';
import type { Subscriber } from '../realtime.ts';
import { adminErrors, errorResponse, standardErrors } from '../schemas/common.ts';
import { deviceIdSchema, tokenIdParam } from '../schemas/plc.ts';

/**
 * Realtime events as Server-Sent Events (routes beyond the spec, api/extensions.ts;
 * docs/operations-console.md, "Realtime events"): a wallet follows its PLC, an admin the whole
 * system. Each event is `id: <position>`, `event: plc|redemption|charge`, `data: <json>`; a
 * comment line every REALTIME_HEARTBEAT_MS keeps idle connections open through proxies. A client
 * resumes with the `Last-Event-ID` header (or `last_event_id`, for a first connection that cannot
 * set headers): every event after it, none twice. `event: reset` says the position was pruned and
 * events may have been missed (reload the state). A stream that does not read is closed.
 */

/** The flag that gates a wallet's stream (migration 20_operator_views; `npm run admin -- flag set plc_live_events ...`). */
export const walletEventsFlag = 'plc_live_events';

const lastEventIdSchema = z
  .string()
  .max(64)
  .refine((text) => parsePosition(text) !== null, 'an event id as sent by this stream (<digits>-<digits>)');

const sseDescription =
  'text/event-stream: `id: <position>`, `event: plc|redemption|charge|reset|closing`, `data: <json>`; comment lines as heartbeats';

function eventData(event: RealtimeEventRow): Record<string, unknown> {
  const { amount_minor: amountMinor, currency, ...rest } = event.payload as { amount_minor?: unknown; currency?: unknown };
  const amount =
    typeof amountMinor === 'string' && typeof currency === 'string' && (currencies as readonly string[]).includes(currency)
      ? formatAmount(BigInt(amountMinor), currency as Currency)
      : null;
  return { kind: event.kind, subject_id: event.subject_id, token_id: event.token_id, status: event.status, at: event.created_at.toISOString(), ...rest, amount, currency };
}

function frame(event: RealtimeEventRow): string {
  return `id: ${event.xact}-${event.id}\nevent: ${event.kind}\ndata: ${JSON.stringify(eventData(event))}\n\n`;
}

/** How long a catching-up stream may take to send one page before it is dropped as slow. */
const catchUpWaitMs = 10_000;

/** Streams currently open in this process (all routes). */
let openStreams = 0;

interface StreamOptions {
  tokenId: string | null;
  after: EventPosition | null;
  /** When the stream must end (an admin token's expiry), in ms since the epoch. */
  endAtMs: number | null;
}

async function stream(app: FastifyInstance, request: FastifyRequest, reply: FastifyReply, options: StreamOptions): Promise<void> {
  const { config } = app.deps;
  if (openStreams >= config.REALTIME_MAX_CLIENTS) {
    void reply.header('retry-after', '5');
    throw new DomainError('SERVICE_UNAVAILABLE', `this process serves ${config.REALTIME_MAX_CLIENTS} event streams already; retry shortly`);
  }
  openStreams += 1;
  reply.hijack();
  const raw = reply.raw;
  raw.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-store',
    connection: 'keep-alive',
    'x-accel-buffering': 'no',
  });
  const limit = config.REALTIME_CLIENT_BUFFER_BYTES;
  /**
   * Writes unless the connection still holds more than its limit from earlier writes (the client
   * does not read): then false, and the stream is dropped. What a connection buffers is bounded
   * by the limit plus one write (a page of events).
   */
  const write = (text: string): boolean => {
    if (raw.destroyed || raw.writableEnded || raw.writableLength > limit) return false;
    raw.write(text);
    return true;
  };
  /** Resolves true once the connection has sent enough to hold at most the limit; false after the wait. */
  const waitForRoom = (): Promise<boolean> => {
    if (raw.destroyed || raw.writableEnded) return Promise.resolve(false);
    if (raw.writableLength <= limit) return Promise.resolve(true);
    return new Promise((resolve) => {
      const done = (ok: boolean): void => {
        clearTimeout(timer);
        raw.off('drain', onDrain);
        raw.off('close', onClose);
        resolve(ok);
      };
      const onDrain = (): void => done(true);
      const onClose = (): void => done(false);
      const timer = setTimeout(() => done(false), catchUpWaitMs);
      raw.on('drain', onDrain);
      raw.on('close', onClose);
    });
  };
  let ended = false;
  let unsubscribe: ((reason?: 'slow') => void) | null = null;
  const timers: NodeJS.Timeout[] = [];
  const end = (how: 'end' | 'destroy', last?: string): void => {
    if (ended) return;
    ended = true;
    openStreams -= 1;
    for (const timer of timers) clearTimeout(timer);
    unsubscribe?.();
    if (how === 'destroy') raw.destroy();
    else raw.end(last ?? '');
  };
  raw.on('close', () => end('destroy'));
  write('retry: 2000\n: connected\n\n');

  const subscriber: Subscriber = {
    tokenId: options.tokenId,
    write: (events) => write(events.map(frame).join('')),
    waitForRoom,
    reset: (horizon) => write(`event: reset\ndata: ${JSON.stringify({ reason: 'events before this stream\'s position were pruned; reload the state', horizon: formatPosition(horizon) })}\n\n`),
    drop: (reason) => {
      if (reason === 'slow') {
        request.log.warn({ buffered_bytes: raw.writableLength, limit_bytes: limit }, 'realtime: a stream that does not read was dropped');
        end('destroy');
      } else {
        end('end', `event: closing\ndata: ${JSON.stringify({ reason: 'the server is shutting down; reconnect with Last-Event-ID' })}\n\n`);
      }
    },
  };
  const heartbeat = setInterval(() => {
    if (write(': heartbeat\n\n')) return;
    // Dropped through the bus when subscribed, so it is counted (and logged) like any slow drop.
    if (unsubscribe !== null) return unsubscribe('slow');
    request.log.warn({ buffered_bytes: raw.writableLength, limit_bytes: limit }, 'realtime: a stream that does not read was dropped');
    end('destroy');
  }, config.REALTIME_HEARTBEAT_MS);
  timers.push(heartbeat);
  if (options.endAtMs !== null) {
    timers.push(
      setTimeout(
        () => end('end', `event: closing\ndata: ${JSON.stringify({ reason: 'the bearer token expired; reconnect with a new token and Last-Event-ID' })}\n\n`),
        Math.max(0, options.endAtMs - Date.now()),
      ),
    );
  }
  try {
    const remove = await app.services.realtime.subscribe(subscriber, options.after);
    if (ended) remove();
    else unsubscribe = remove;
  } catch (error) {
    request.log.error({ err: error }, 'realtime: subscribing failed');
    end('destroy');
  }
}

function resumeFrom(request: FastifyRequest, queryValue: string | undefined): EventPosition | null {
  const header = request.headers['last-event-id'];
  const text = typeof header === 'string' && header !== '' ? header : queryValue;
  if (text === undefined) return null;
  const position = parsePosition(text);
  assert(position !== null, 'the schema checked the event id');
  return position;
}

export async function walletEventRoutes(app: FastifyInstance): Promise<void> {
  const routes = app.withTypeProvider<ZodTypeProvider>();
  routes.get(
    '/plc/:token_id/events',
    {
      schema: {
        tags: ['plc'],
        summary: 'Follow a PLC: its changes and its redemption\'s as Server-Sent Events (beyond the spec: the realtime notification of Events 5)',
        description: sseDescription,
        params: tokenIdParam,
        headers: z.object({ 'x-device-id': deviceIdSchema.optional(), 'last-event-id': lastEventIdSchema.optional() }),
        querystring: z.object({ device_id: deviceIdSchema.optional(), last_event_id: lastEventIdSchema.optional() }),
        requestExample: {
          params: { token_id: '5b0e7c8e-3f21-4c4d-9a51-2f1e6d9b7a10' },
          headers: { 'x-device-id': 'device-7f3a9c21', 'last-event-id': '812345-1042' },
          querystring: { device_id: 'device-7f3a9c21', last_event_id: '812345-1042' },
        },
        response: { 200: z.string().describe(sseDescription), 403: errorResponse, 404: errorResponse, 503: errorResponse, ...standardErrors },
      },
    },
    async (request, reply) => {
      const deviceId = request.headers['x-device-id'] ?? request.query.device_id;
      if (deviceId === undefined) {
        throw new DomainError('INVALID_HEADER', 'X-Device-ID (or the device_id query parameter) is required', { field: 'x-device-id', location: 'header' });
      }
      const feature = await app.services.dashboards.evaluateFeature(walletEventsFlag, { deviceId, meshId: null });
      if (feature === null || feature.eligible !== true) {
        throw new DomainError('FEATURE_NOT_ENABLED', 'live PLC events are not enabled for this device yet', { flag: walletEventsFlag });
      }
      const after = resumeFrom(request, request.query.last_event_id);
      if ((await getPlc(app.deps.pool, request.params.token_id)) === null) throw new DomainError('PLC_NOT_FOUND', 'no such PLC');
      await stream(app, request, reply, { tokenId: request.params.token_id, after, endAtMs: null });
    },
  );
}

export async function adminEventRoutes(app: FastifyInstance): Promise<void> {
  const routes = app.withTypeProvider<ZodTypeProvider>();
  routes.get(
    '/events',
    {
      schema: {
        tags: ['admin: dashboards'],
        summary: 'Every change of a PLC, a redemption or a charge as Server-Sent Events (beyond the spec); ends when the token expires',
        description: sseDescription,
        security: [{ bearer: [] }],
        headers: z.object({ 'last-event-id': lastEventIdSchema.optional() }),
        querystring: z.object({ last_event_id: lastEventIdSchema.optional() }),
        requestExample: { headers: { 'last-event-id': '812345-1042' }, querystring: { last_event_id: '812345-1042' } },
        response: { 200: z.string().describe(sseDescription), 503: errorResponse, ...adminErrors },
      },
      onRequest: app.requireAdmin(),
    },
    async (request, reply) => {
      const after = resumeFrom(request, request.query.last_event_id);
      const expiresAtMs = request.admin === null ? null : request.admin.exp * 1000;
      await stream(app, request, reply, { tokenId: null, after, endAtMs: expiresAtMs });
    },
  );
}
