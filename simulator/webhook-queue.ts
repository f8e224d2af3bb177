import type { Logger } from 'pino';
import { webhookEvents, type BillingType, type WebhookEvent } from '../gateway/types.ts';
import type { WebhookUpdateWire, WebhookWire } from '../gateway/wire.ts';
import { wireHeaders } from '../gateway/wire.ts';
import type { FaultInjector } from './faults.ts';
import { memoryStore, type SimulatorStore } from './store.ts';

/**
 * The gateway's webhook queues. Each configured webhook has one queue, delivered in order
 * (`sendType: SEQUENTIALLY`): the head is POSTed until it is answered 2xx, at-least-once, so a
 * failing head holds the events behind it, as at the real gateway.
 *
 * The penalty model: every failed attempt (non-2xx, timeout, connection error) adds one to the
 * queue's `penalizedRequestsCount` and the next attempt waits an exponential backoff
 * (base * 2^(n-1), capped). A delivered event resets the count. After `interruptAfterFailures`
 * consecutive failures the queue is interrupted: nothing is sent, events keep queueing (up to
 * `queueMax`), until `removeBackoff` (at most once per cooldown per webhook) or an update with
 * `interrupted: false` resumes it. A disabled webhook does not queue events at all.
 *
 * With a file store (simulator/store.ts) each webhook's settings and penalty and every queued
 * event are kept across a restart: the queue resumes where it stopped (a webhook whose configured
 * URL changed since takes the new one). The backoff's timer is not kept: the head is retried at
 * once after a restart.
 */

export interface WebhookDefinition {
  id: string;
  name: string;
  url: string;
  /**
   * Routing the simulator adds on top of the subscribed events, so that Pix and Boleto charge
   * events and transfer events can go to different service endpoints (see the config).
   */
  accepts: (event: WebhookEvent, billingType: BillingType | null) => boolean;
}

export interface DispatcherOptions {
  token: string;
  timeoutMs: number;
  retryBaseMs: number;
  retryMaxMs: number;
  interruptAfterFailures: number;
  queueMax: number;
  backoffRemovalCooldownMs: number;
  faults: FaultInjector;
  logger: Logger | null;
  /** Where settings and queued events are written; memory (nothing kept) by default. */
  store?: SimulatorStore;
  fetch?: typeof fetch;
}

export type DeliveryOutcome = 'DELIVERED' | 'FAILED' | 'DROPPED' | 'QUEUE_FULL' | 'INTERRUPTED' | 'SKIPPED_DISABLED';

export interface DeliveryLogEntry {
  seq: number;
  at: string;
  webhookId: string;
  url: string;
  eventId: string;
  event: string;
  resourceId: string | null;
  outcome: DeliveryOutcome;
  attempt: number | null;
  copy: number | null;
  httpStatus: number | null;
  error: string | null;
  durationMs: number | null;
}

export interface PublishedEvent {
  id: string;
  event: WebhookEvent;
  resourceId: string;
  billingType: BillingType | null;
  /** The JSON text sent, built once so every copy and retry carries the same bytes. */
  body: string;
}

interface QueuedDelivery {
  event: PublishedEvent;
  copy: number;
  attempts: number;
  reordered: boolean;
  /** Its row in the store. */
  storeId: number;
}

/** A webhook's settings as kept in the store. */
interface StoredWebhook {
  /** The URL the configuration gave when this was written: a new configured URL wins over a kept one. */
  configuredUrl: string;
  url: string;
  email: string | null;
  enabled: boolean;
  interrupted: boolean;
  events: WebhookEvent[];
  authToken: string;
  penalizedRequestsCount: number;
  lastBackoffRemovalAtMs: number | null;
}

/** A webhook's settings (as stored) and its delivery state, which lives only in memory. */
interface WebhookState extends Omit<StoredWebhook, 'configuredUrl'> {
  definition: WebhookDefinition;
  backoffUntilMs: number | null;
  queue: QueuedDelivery[];
  wake: (() => void) | null;
  loop: Promise<void> | null;
}

/** What `PUT /v3/webhooks/{id}` changes: the body the client sends. */
export type WebhookUpdate = WebhookUpdateWire;

export type RemoveBackoffResult =
  | { kind: 'removed'; webhook: WebhookWire }
  | { kind: 'not_found' }
  | { kind: 'too_soon'; retryAfterMs: number };

export const deliveryLogMax = 2_000;

export class WebhookDispatcher {
  readonly #options: DispatcherOptions;
  readonly #definitions: readonly WebhookDefinition[];
  #hooks = new Map<string, WebhookState>();
  #log: DeliveryLogEntry[] = [];
  #seq = 0;
  #closed = false;
  #started = false;
  /** Aborted on close and on reset, so in-flight posts and sleeps of the old queues end at once. */
  #abort = new AbortController();
  readonly #store: SimulatorStore;

  constructor(definitions: readonly WebhookDefinition[], options: DispatcherOptions) {
    this.#definitions = definitions;
    this.#options = options;
    this.#store = options.store ?? memoryStore();
    this.#resetHooks();
    this.#restore();
  }

  /** Takes back the kept settings and queued events (a file store); drops events of webhooks no longer configured. */
  #restore(): void {
    const stored = this.#store.load();
    for (const { id, body } of stored.webhooks) {
      const hook = this.#hooks.get(id);
      if (hook === undefined) continue;
      const kept = JSON.parse(body) as StoredWebhook;
      if (kept.configuredUrl === hook.definition.url) hook.url = kept.url;
      hook.email = kept.email;
      hook.enabled = kept.enabled;
      hook.interrupted = kept.interrupted;
      hook.events = kept.events;
      hook.authToken = kept.authToken;
      hook.penalizedRequestsCount = kept.penalizedRequestsCount;
      hook.lastBackoffRemovalAtMs = kept.lastBackoffRemovalAtMs;
    }
    for (const delivery of stored.deliveries) {
      const hook = this.#hooks.get(delivery.webhookId);
      if (hook === undefined) {
        this.#store.removeDelivery(delivery.storeId);
        continue;
      }
      const kept = JSON.parse(delivery.body) as Omit<QueuedDelivery, 'storeId'>;
      hook.queue.push({ ...kept, storeId: delivery.storeId });
    }
  }

  #saveHook(hook: WebhookState): void {
    const kept: StoredWebhook = {
      configuredUrl: hook.definition.url,
      url: hook.url,
      email: hook.email,
      enabled: hook.enabled,
      interrupted: hook.interrupted,
      events: hook.events,
      authToken: hook.authToken,
      penalizedRequestsCount: hook.penalizedRequestsCount,
      lastBackoffRemovalAtMs: hook.lastBackoffRemovalAtMs,
    };
    this.#store.putWebhook(hook.definition.id, JSON.stringify(kept));
  }

  #deliveryBody(delivery: QueuedDelivery): string {
    const { storeId: _storeId, ...kept } = delivery;
    return JSON.stringify(kept);
  }

  start(): void {
    if (this.#started) return;
    this.#started = true;
    for (const hook of this.#hooks.values()) this.#startLoop(hook);
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#abort.abort();
    const loops: Promise<void>[] = [];
    for (const hook of this.#hooks.values()) {
      hook.wake?.();
      if (hook.loop !== null) loops.push(hook.loop);
    }
    await Promise.allSettled(loops);
  }

  /** Drops every queued event and the log, and restores the configured webhooks. */
  async reset(): Promise<void> {
    const old = [...this.#hooks.values()];
    // Detach the old loops: they see their hook is no longer current and stop; the abort ends
    // their in-flight posts and sleeps.
    this.#hooks = new Map();
    for (const hook of old) hook.queue.length = 0;
    this.#abort.abort();
    await Promise.allSettled(old.map((hook) => hook.loop ?? Promise.resolve()));
    this.#abort = new AbortController();
    this.#log = [];
    this.#resetHooks();
    if (this.#started) for (const hook of this.#hooks.values()) this.#startLoop(hook);
  }

  /** Queues an event on every webhook that takes it, applying the drop and duplicate faults. */
  publish(event: PublishedEvent): void {
    if (this.#closed) return;
    const faults = this.#options.faults;
    for (const hook of this.#hooks.values()) {
      if (!hook.events.includes(event.event) || !hook.definition.accepts(event.event, event.billingType)) continue;
      if (!hook.enabled) {
        this.#record(hook, event, { outcome: 'SKIPPED_DISABLED' });
        continue;
      }
      if (faults.dropWebhook()) {
        this.#record(hook, event, { outcome: 'DROPPED' });
        continue;
      }
      const copies = faults.faults.duplicateWebhooks;
      for (let copy = 1; copy <= copies; copy += 1) {
        if (hook.queue.length >= this.#options.queueMax) {
          this.#record(hook, event, { outcome: 'QUEUE_FULL', copy });
          continue;
        }
        const delivery: QueuedDelivery = { event, copy, attempts: 0, reordered: false, storeId: 0 };
        delivery.storeId = this.#store.addDelivery(hook.definition.id, this.#deliveryBody(delivery));
        hook.queue.push(delivery);
      }
      hook.wake?.();
    }
  }

  list(): WebhookWire[] {
    return [...this.#hooks.values()].map((hook) => this.#wire(hook));
  }

  get(id: string): WebhookWire | null {
    const hook = this.#hooks.get(id);
    return hook === undefined ? null : this.#wire(hook);
  }

  update(id: string, update: WebhookUpdate): WebhookWire | null {
    const hook = this.#hooks.get(id);
    if (hook === undefined) return null;
    if (update.url !== undefined) hook.url = update.url;
    if (update.email !== undefined) hook.email = update.email;
    if (update.enabled !== undefined) hook.enabled = update.enabled;
    if (update.interrupted !== undefined) hook.interrupted = update.interrupted;
    if (update.events !== undefined) hook.events = [...new Set(update.events)];
    if (update.authToken !== undefined) hook.authToken = update.authToken;
    // Reactivating or repointing a queue retries at once; the penalty count stays until a success
    // or a backoff removal clears it.
    if (update.url !== undefined || update.interrupted === false || update.enabled === true) hook.backoffUntilMs = null;
    this.#saveHook(hook);
    hook.wake?.();
    return this.#wire(hook);
  }

  removeBackoff(id: string, nowMs: number): RemoveBackoffResult {
    const hook = this.#hooks.get(id);
    if (hook === undefined) return { kind: 'not_found' };
    const cooldownMs = this.#options.backoffRemovalCooldownMs;
    if (hook.lastBackoffRemovalAtMs !== null && nowMs - hook.lastBackoffRemovalAtMs < cooldownMs) {
      return { kind: 'too_soon', retryAfterMs: hook.lastBackoffRemovalAtMs + cooldownMs - nowMs };
    }
    hook.lastBackoffRemovalAtMs = nowMs;
    hook.penalizedRequestsCount = 0;
    hook.interrupted = false;
    hook.backoffUntilMs = null;
    this.#saveHook(hook);
    hook.wake?.();
    return { kind: 'removed', webhook: this.#wire(hook) };
  }

  /** The newest `limit` log entries, oldest first. */
  log(limit: number): DeliveryLogEntry[] {
    return this.#log.slice(-limit);
  }

  /** Simulator-only view of the queues, for GET /sim/state. */
  queues(): { webhookId: string; queued: number; penalizedRequestsCount: number; interrupted: boolean; backoffUntil: string | null; lastBackoffRemovalAt: string | null }[] {
    return [...this.#hooks.values()].map((hook) => ({
      webhookId: hook.definition.id,
      queued: hook.queue.length,
      penalizedRequestsCount: hook.penalizedRequestsCount,
      interrupted: hook.interrupted,
      backoffUntil: hook.backoffUntilMs === null ? null : new Date(hook.backoffUntilMs).toISOString(),
      lastBackoffRemovalAt: hook.lastBackoffRemovalAtMs === null ? null : new Date(hook.lastBackoffRemovalAtMs).toISOString(),
    }));
  }

  #resetHooks(): void {
    this.#hooks = new Map(
      this.#definitions.map((definition) => [
        definition.id,
        {
          definition,
          url: definition.url,
          email: null,
          enabled: true,
          interrupted: false,
          events: [...webhookEvents],
          authToken: this.#options.token,
          penalizedRequestsCount: 0,
          lastBackoffRemovalAtMs: null,
          backoffUntilMs: null,
          queue: [],
          wake: null,
          loop: null,
        },
      ]),
    );
  }

  #wire(hook: WebhookState): WebhookWire {
    return {
      id: hook.definition.id,
      name: hook.definition.name,
      url: hook.url,
      email: hook.email,
      enabled: hook.enabled,
      interrupted: hook.interrupted,
      penalizedRequestsCount: hook.penalizedRequestsCount,
      apiVersion: 3,
      sendType: 'SEQUENTIALLY',
      events: [...hook.events],
      hasAuthToken: hook.authToken !== '',
    };
  }

  #startLoop(hook: WebhookState): void {
    hook.loop = this.#run(hook).catch((error: unknown) => {
      this.#options.logger?.error({ err: error, webhookId: hook.definition.id }, 'webhook queue stopped');
    });
  }

  #current(hook: WebhookState): boolean {
    return !this.#closed && this.#hooks.get(hook.definition.id) === hook;
  }

  /** Waits `ms` (null: forever), or until woken (when `wakeable`: an enqueue, an update, a backoff removal) or closed. */
  #sleep(hook: WebhookState, ms: number | null, wakeable: boolean): Promise<void> {
    const signal = this.#abort.signal;
    return new Promise((resolve) => {
      if (signal.aborted) {
        resolve();
        return;
      }
      let timer: NodeJS.Timeout | null = null;
      const done = (): void => {
        if (timer !== null) clearTimeout(timer);
        if (hook.wake === done) hook.wake = null;
        signal.removeEventListener('abort', done);
        resolve();
      };
      if (ms !== null) timer = setTimeout(done, ms);
      if (wakeable) hook.wake = done;
      signal.addEventListener('abort', done, { once: true });
    });
  }

  async #run(hook: WebhookState): Promise<void> {
    while (this.#current(hook)) {
      if (!hook.enabled || hook.interrupted || hook.queue.length === 0) {
        await this.#sleep(hook, null, true);
        continue;
      }
      const faults = this.#options.faults.faults;
      if (faults.reorderWebhooks) {
        await this.#sleep(hook, faults.reorderWindowMs, false);
        if (!this.#current(hook)) break;
        reverseFreshBatch(hook.queue);
      }
      if (faults.webhookDelayMs > 0) {
        await this.#sleep(hook, faults.webhookDelayMs, false);
        if (!this.#current(hook)) break;
      }
      const head = hook.queue[0];
      if (head === undefined || !hook.enabled || hook.interrupted) continue;
      head.attempts += 1;
      this.#store.updateDelivery(head.storeId, this.#deliveryBody(head));
      const result = await this.#post(hook, head);
      if (!this.#current(hook)) break;
      this.#record(hook, head.event, {
        outcome: result.ok ? 'DELIVERED' : 'FAILED',
        attempt: head.attempts,
        copy: head.copy,
        httpStatus: result.status,
        error: result.error,
        durationMs: result.durationMs,
      });
      if (result.ok) {
        hook.queue.shift();
        const hadPenalty = hook.penalizedRequestsCount !== 0;
        hook.penalizedRequestsCount = 0;
        hook.backoffUntilMs = null;
        this.#store.atomically(() => {
          this.#store.removeDelivery(head.storeId);
          if (hadPenalty) this.#saveHook(hook);
        });
        continue;
      }
      hook.penalizedRequestsCount += 1;
      this.#saveHook(hook);
      if (hook.penalizedRequestsCount >= this.#options.interruptAfterFailures) {
        hook.interrupted = true;
        hook.backoffUntilMs = null;
        this.#saveHook(hook);
        this.#record(hook, head.event, { outcome: 'INTERRUPTED', attempt: head.attempts, copy: head.copy });
        this.#options.logger?.warn({ webhookId: hook.definition.id, failures: hook.penalizedRequestsCount }, 'webhook queue interrupted');
        continue;
      }
      const backoffMs = Math.min(
        this.#options.retryBaseMs * 2 ** Math.min(hook.penalizedRequestsCount - 1, 30),
        this.#options.retryMaxMs,
      );
      hook.backoffUntilMs = Date.now() + backoffMs;
      // A backoff removal (or an update) clears backoffUntilMs and wakes the loop at once; an
      // enqueue also wakes it, and it goes back to sleep for what is left of the backoff.
      while (this.#current(hook) && hook.backoffUntilMs !== null && Date.now() < hook.backoffUntilMs) {
        await this.#sleep(hook, hook.backoffUntilMs - Date.now(), true);
      }
      hook.backoffUntilMs = null;
    }
  }

  async #post(hook: WebhookState, delivery: QueuedDelivery): Promise<{ ok: boolean; status: number | null; error: string | null; durationMs: number }> {
    const fetchImpl = this.#options.fetch ?? globalThis.fetch;
    const generation = this.#abort.signal;
    const startedAt = performance.now();
    try {
      const response = await fetchImpl(hook.url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          [wireHeaders.webhookToken]: hook.authToken,
          'user-agent': 'gateway-simulator-webhooks/1',
        },
        body: delivery.event.body,
        signal: AbortSignal.any([AbortSignal.timeout(this.#options.timeoutMs), generation]),
        redirect: 'manual',
      });
      // The answer's body means nothing to the gateway; do not read an unbounded amount of it.
      await response.body?.cancel();
      const ok = response.status >= 200 && response.status <= 299;
      return { ok, status: response.status, error: ok ? null : `HTTP ${response.status}`, durationMs: Math.round(performance.now() - startedAt) };
    } catch (error) {
      return {
        ok: false,
        status: null,
        error: error instanceof Error ? `${error.name}: ${error.message}` : String(error),
        durationMs: Math.round(performance.now() - startedAt),
      };
    }
  }

  #record(
    hook: WebhookState,
    event: PublishedEvent,
    entry: { outcome: DeliveryOutcome; attempt?: number; copy?: number; httpStatus?: number | null; error?: string | null; durationMs?: number },
  ): void {
    this.#seq += 1;
    this.#log.push({
      seq: this.#seq,
      at: new Date().toISOString(),
      webhookId: hook.definition.id,
      url: hook.url,
      eventId: event.id,
      event: event.event,
      resourceId: event.resourceId,
      outcome: entry.outcome,
      attempt: entry.attempt ?? null,
      copy: entry.copy ?? null,
      httpStatus: entry.httpStatus ?? null,
      error: entry.error ?? null,
      durationMs: entry.durationMs ?? null,
    });
    if (this.#log.length > deliveryLogMax) this.#log.splice(0, this.#log.length - deliveryLogMax);
    this.#options.logger?.debug({ webhookId: hook.definition.id, eventId: event.id, event: event.event, outcome: entry.outcome }, 'webhook');
  }
}

/**
 * Reverses the deliveries that have not been reordered or attempted yet (the batch gathered during
 * the reorder window), so that a batch of two or more always arrives out of order.
 */
function reverseFreshBatch(queue: QueuedDelivery[]): void {
  const fresh: number[] = [];
  queue.forEach((delivery, index) => {
    if (!delivery.reordered && delivery.attempts === 0) fresh.push(index);
  });
  const batch = fresh.map((index) => queue[index] as QueuedDelivery).reverse();
  fresh.forEach((index, i) => {
    const delivery = batch[i] as QueuedDelivery;
    delivery.reordered = true;
    queue[index] = delivery;
  });
}

/** Builds the webhook definitions from the configured URLs (see docs/gateway-wire-api.md, "Webhook routing"). */
export function webhookDefinitionsFromConfig(config: {
  webhookUrl: string | null;
  paymentWebhookUrlPix: string | null;
  paymentWebhookUrlBoleto: string | null;
  transferWebhookUrl: string | null;
  webhookIdSuffix?: string;
}): WebhookDefinition[] {
  const suffix = config.webhookIdSuffix ?? '';
  const isPayment = (event: WebhookEvent): boolean => event.startsWith('PAYMENT_');
  const pix = (event: WebhookEvent, billingType: BillingType | null): boolean => isPayment(event) && billingType === 'PIX';
  const boleto = (event: WebhookEvent, billingType: BillingType | null): boolean => isPayment(event) && billingType === 'BOLETO';
  // Payout events: Pix transfers and bill payments (the boleto rail's payouts).
  const transfer = (event: WebhookEvent): boolean => event.startsWith('TRANSFER_') || event.startsWith('BILL_');
  const definitions: WebhookDefinition[] = [];
  if (config.paymentWebhookUrlPix !== null) {
    definitions.push({ id: `wh_payment_pix${suffix}`, name: 'Pix charges', url: config.paymentWebhookUrlPix, accepts: pix });
  }
  if (config.paymentWebhookUrlBoleto !== null) {
    definitions.push({ id: `wh_payment_boleto${suffix}`, name: 'Boleto charges', url: config.paymentWebhookUrlBoleto, accepts: boleto });
  }
  if (config.transferWebhookUrl !== null) {
    definitions.push({ id: `wh_transfer${suffix}`, name: 'Pix transfers', url: config.transferWebhookUrl, accepts: (event) => transfer(event) });
  }
  if (config.webhookUrl !== null) {
    const routedElsewhere = (event: WebhookEvent, billingType: BillingType | null): boolean =>
      (config.paymentWebhookUrlPix !== null && pix(event, billingType)) ||
      (config.paymentWebhookUrlBoleto !== null && boleto(event, billingType)) ||
      (config.transferWebhookUrl !== null && transfer(event));
    definitions.push({
      id: `wh_gateway${suffix}`,
      name: 'Gateway events',
      url: config.webhookUrl,
      accepts: (event, billingType) => !routedElsewhere(event, billingType),
    });
  }
  return definitions;
}
