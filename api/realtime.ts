import type { Pool } from '../db/pool.ts';
import {
  comparePositions,
  formatPosition,
  hasHeldEvents,
  listenForEvents,
  positionOf,
  pruneEvents,
  readEventsAfter,
  readHorizon,
  readSafePosition,
  type EventPosition,
  type RealtimeEventRow,
} from '../db/realtime-events.ts';

/**
 * The realtime event bus of one API process (docs/operations-console.md, "Realtime events"). It
 * LISTENs on `realtime_events` (a NOTIFY comes with every commit that wrote events, whichever
 * replica or worker made it) and reads the table from its cursor, so every replica streams every
 * change; it also polls while anyone subscribes, in case a notification was missed (the LISTEN
 * connection reconnecting). Each subscriber has a cursor of its own: a resume (Last-Event-ID)
 * catches up from the table, then joins the live feed without a gap or a duplicate.
 *
 * A subscriber that does not read is dropped, never buffered without bound: `write` answers
 * false once the subscriber's connection holds more than its limit, and the bus closes it; the
 * client reconnects with Last-Event-ID and catches up from the table.
 */

export interface Subscriber {
  /** Only events of this PLC (a wallet following its PLC); null: every event (an admin). */
  tokenId: string | null;
  /**
   * Hands live events over; false: the subscriber still holds more unsent data than its limit
   * from earlier events (it does not read), and must be dropped.
   */
  write(events: readonly RealtimeEventRow[]): boolean;
  /**
   * Catching up, the bus waits for the subscriber to take what it was sent before it reads the
   * next page; false: no room came in time (dropped as slow).
   */
  waitForRoom(): Promise<boolean>;
  /** The stream's position was pruned: events may have been missed. */
  reset(horizon: EventPosition): boolean;
  /** Called once when the bus drops the subscriber (slow, or the bus is closing). */
  drop(reason: 'slow' | 'closing'): void;
}

interface Entry {
  subscriber: Subscriber;
  cursor: EventPosition;
  live: boolean;
}

export interface RealtimeBusOptions {
  pool: Pool;
  /** For the LISTEN connection; without it the bus polls only. */
  databaseUrl: string | undefined;
  pollMs: number;
  /** Events read per statement. */
  pageSize?: number;
  keepEvents: number;
  retentionMs: number;
  pruneEveryMs?: number;
  log: { warn(object: object, message: string): void; info(object: object, message: string): void };
}

export interface RealtimeStats {
  subscribers: number;
  dropped: number;
  cursor: string;
  listening: boolean;
}

export interface RealtimeBus {
  /**
   * Prunes the event table every `pruneEveryMs` from now on, whether or not anyone listens (the
   * table must stay bounded on a replica nobody follows); one replica at a time does it.
   */
  startPruning(): void;
  /**
   * Adds a subscriber from `after` (its Last-Event-ID) or from now (null). Resolves once it is
   * caught up and live; the returned function removes it (`'slow'`: the subscriber's own
   * connection found it does not read, e.g. at a heartbeat: dropped and counted like the bus's own
   * finding).
   */
  subscribe(subscriber: Subscriber, after: EventPosition | null): Promise<(reason?: 'slow') => void>;
  stats(): RealtimeStats;
  close(): Promise<void>;
}

const reconnectDelayMs = 1000;
/** How soon the bus looks again when committed events wait for an older transaction to end. */
const heldRetryMs = 100;

export function createRealtimeBus(options: RealtimeBusOptions): RealtimeBus {
  const pageSize = options.pageSize ?? 500;
  const pruneEveryMs = options.pruneEveryMs ?? 60_000;
  const entries = new Set<Entry>();
  let cursor: EventPosition | null = null;
  let starting: Promise<void> | null = null;
  let listener: { close(): Promise<void> } | null = null;
  let pollTimer: NodeJS.Timeout | null = null;
  let reconnectTimer: NodeJS.Timeout | null = null;
  let pumping: Promise<void> | null = null;
  let pumpAgain = false;
  let heldTimer: NodeJS.Timeout | null = null;
  let dropped = 0;
  let closed = false;
  /**
   * Nobody subscribed when events last arrived: they were not read (every replica would otherwise
   * read every event of the whole service for no one), and the cursor is stale until the next
   * subscriber moves it to the present.
   */
  let idle = false;

  function remove(entry: Entry, reason: 'slow' | 'closing' | null): void {
    if (!entries.delete(entry)) return;
    if (reason === 'slow') dropped += 1;
    if (reason !== null) entry.subscriber.drop(reason);
  }

  function deliver(entry: Entry, events: readonly RealtimeEventRow[]): boolean {
    const wanted = events.filter(
      (event) => comparePositions(positionOf(event), entry.cursor) > 0 && (entry.subscriber.tokenId === null || event.token_id === entry.subscriber.tokenId),
    );
    const last = events[events.length - 1];
    if (last !== undefined && comparePositions(positionOf(last), entry.cursor) > 0) entry.cursor = positionOf(last);
    if (wanted.length === 0) return true;
    if (entry.subscriber.write(wanted)) return true;
    remove(entry, 'slow');
    return false;
  }

  async function listen(): Promise<void> {
    if (options.databaseUrl === undefined || closed) return;
    try {
      listener = await listenForEvents(options.databaseUrl, {
        onNotify: () => void pump(),
        onError: (error) => {
          if (closed || listener === null) return;
          options.log.warn({ err: error }, 'realtime: the LISTEN connection failed; reconnecting');
          const failed = listener;
          listener = null;
          void failed.close();
          reconnectTimer = setTimeout(() => void listen().then(() => pump()), reconnectDelayMs);
        },
      });
    } catch (error) {
      options.log.warn({ err: error }, 'realtime: cannot LISTEN; retrying');
      reconnectTimer = setTimeout(() => void listen().then(() => pump()), reconnectDelayMs);
    }
  }

  function start(): Promise<void> {
    starting ??= (async () => {
      cursor = await readSafePosition(options.pool);
      await listen();
      pollTimer = setInterval(() => {
        if (entries.size > 0) void pump();
      }, options.pollMs);
      pollTimer.unref();
    })();
    return starting;
  }

  /** Reads what is new since the bus cursor and hands it to the live subscribers; one pump at a time. */
  function pump(): Promise<void> {
    if (pumping !== null) {
      pumpAgain = true;
      return pumping;
    }
    pumping = (async () => {
      try {
        do {
          pumpAgain = false;
          await pumpOnce();
        } while (pumpAgain && !closed);
      } catch (error) {
        options.log.warn({ err: error }, 'realtime: reading events failed; the next notification or poll retries');
      } finally {
        pumping = null;
      }
    })();
    return pumping;
  }

  async function pumpOnce(): Promise<void> {
    if (cursor === null || closed) return;
    if (entries.size === 0) {
      idle = true;
      return;
    }
    for (let page = 0; page < 1000; page += 1) {
      const events = await readEventsAfter(options.pool, cursor, { limit: pageSize });
      const last = events[events.length - 1];
      if (last === undefined) break;
      cursor = positionOf(last);
      for (const entry of [...entries]) if (entry.live) deliver(entry, events);
      if (events.length < pageSize) break;
    }
    // Events held back by an open transaction are read again soon, not at the next poll.
    if (entries.size > 0 && heldTimer === null && (await hasHeldEvents(options.pool, cursor))) {
      heldTimer = setTimeout(() => {
        heldTimer = null;
        void pump();
      }, heldRetryMs);
      heldTimer.unref();
    }
  }

  let pruneTimer: NodeJS.Timeout | null = null;
  async function prune(): Promise<void> {
    try {
      const deleted = await pruneEvents(options.pool, { keep: options.keepEvents, maxAgeMs: options.retentionMs, batch: 10_000 });
      if (deleted > 0) options.log.info({ deleted }, 'realtime: pruned old events');
    } catch (error) {
      options.log.warn({ err: error }, 'realtime: pruning failed; the next round retries');
    }
  }

  /** Brings a resuming subscriber up to the bus cursor from the table, page by page. */
  async function catchUp(entry: Entry): Promise<void> {
    const horizon = await readHorizon(options.pool);
    // The newest pruned event is the horizon: a client that saw it has missed nothing after it.
    if (comparePositions(entry.cursor, horizon) < 0) {
      if (!entry.subscriber.reset(horizon)) return remove(entry, 'slow');
      entry.cursor = horizon;
    }
    for (let round = 0; round < 100_000 && entries.has(entry); round += 1) {
      const target = cursor as EventPosition;
      if (comparePositions(entry.cursor, target) >= 0) {
        entry.live = true;
        return;
      }
      if (!(await entry.subscriber.waitForRoom())) return remove(entry, 'slow');
      const events = await readEventsAfter(options.pool, entry.cursor, { limit: pageSize, tokenId: entry.subscriber.tokenId, upTo: target });
      if (events.length > 0 && !entry.subscriber.write(events)) return remove(entry, 'slow');
      const last = events[events.length - 1];
      entry.cursor = events.length < pageSize || last === undefined ? target : positionOf(last);
    }
  }

  return {
    startPruning() {
      if (pruneTimer !== null || closed) return;
      pruneTimer = setInterval(() => void prune(), pruneEveryMs);
      pruneTimer.unref();
    },
    async subscribe(subscriber, after) {
      if (closed) throw new Error('the realtime bus is closed');
      await start();
      if (idle) {
        // Back from idle: the present is where a new subscriber starts (a resuming one catches up
        // from the table to it). Only while nobody else subscribed in between moved it already.
        const present = await readSafePosition(options.pool);
        if (idle && entries.size === 0) {
          cursor = present;
          idle = false;
        }
      }
      const entry: Entry = { subscriber, cursor: after ?? (cursor as EventPosition), live: after === null };
      entries.add(entry);
      if (!entry.live) await catchUp(entry);
      return (reason) => remove(entry, reason ?? null);
    },
    stats() {
      return { subscribers: entries.size, dropped, cursor: cursor === null ? '-' : formatPosition(cursor), listening: listener !== null };
    },
    async close() {
      closed = true;
      if (pollTimer !== null) clearInterval(pollTimer);
      if (reconnectTimer !== null) clearTimeout(reconnectTimer);
      if (heldTimer !== null) clearTimeout(heldTimer);
      if (pruneTimer !== null) clearInterval(pruneTimer);
      for (const entry of [...entries]) remove(entry, 'closing');
      await pumping;
      await listener?.close();
      listener = null;
    },
  };
}
