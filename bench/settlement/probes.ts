import { performance } from 'node:perf_hooks';
import type { Client } from '@temporalio/client';

/**
 * Bench-only instrumentation of the settlement path, all in this process and none of it in the
 * service's code: the service gets wrapped objects (the gateway client's fetch, the simulator's
 * fetch, the Temporal client's update-with-start and start, the worker's activity functions),
 * each of which records a timestamp and calls through unchanged. Times are epoch milliseconds
 * with sub-millisecond precision, comparable with PostgreSQL `now()` and Temporal event times
 * (the same machine clock).
 */

export const nowMs = (): number => performance.timeOrigin + performance.now();

export interface Span {
  start: number;
  end: number;
}

export interface WebhookSend extends Span {
  event: string;
  eventId: string;
  httpStatus: number | null;
}

/** What the probes saw of one redemption, keyed by its id. */
export interface RedemptionProbe {
  /** `executeUpdateWithStart` in the redeem handler: workflow start + opening update. */
  update?: Span;
  /** The gateway `POST /v3/transfers` made by createPayout. */
  transferCreate?: Span;
  /** The simulator's transfer validation request to the API. */
  validation?: Span;
  /** Every webhook the simulator POSTed about this redemption's transfer, in send order. */
  webhooks: WebhookSend[];
}

/** What the probes saw of one bare settlement, keyed by its id. */
export interface BareProbe {
  update?: Span;
  /** The emulated webhook POST (the bench's "gateway" sending TRANSFER_DONE). */
  webhook?: Span & { eventId: string };
}

type AnyAsync = (...args: never[]) => Promise<unknown>;

function bodyJson(init: RequestInit | undefined): Record<string, unknown> | null {
  if (typeof init?.body !== 'string') return null;
  try {
    const parsed: unknown = JSON.parse(init.body);
    return typeof parsed === 'object' && parsed !== null ? (parsed as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

function field(object: unknown, key: string): unknown {
  return typeof object === 'object' && object !== null ? (object as Record<string, unknown>)[key] : undefined;
}

function urlOf(input: Parameters<typeof fetch>[0]): string {
  if (typeof input === 'string') return input;
  if (input instanceof URL) return input.href;
  return input.url;
}

export class Probes {
  readonly redemptions = new Map<string, RedemptionProbe>();
  readonly bare = new Map<string, BareProbe>();
  /** Activity (and local activity) execution times by activity name, since the last `resetCounters`. */
  activityMs = new Map<string, number[]>();
  /** `temporal.workflow.start` durations in the webhook route, since the last reset. */
  webhookStartMs: number[] = [];
  /** Simulator webhook POSTs by outcome, since the last reset. */
  webhookPosts: { durationMs: number; event: string; ok: boolean }[] = [];

  resetCounters(): void {
    this.activityMs = new Map();
    this.webhookStartMs = [];
    this.webhookPosts = [];
  }

  redemption(id: string): RedemptionProbe {
    let probe = this.redemptions.get(id);
    if (probe === undefined) {
      probe = { webhooks: [] };
      this.redemptions.set(id, probe);
    }
    return probe;
  }

  bareProbe(id: string): BareProbe {
    let probe = this.bare.get(id);
    if (probe === undefined) {
      probe = {};
      this.bare.set(id, probe);
    }
    return probe;
  }

  /** The same activities, each timed; the recorder never changes arguments, results or errors. */
  wrapActivities<T extends Record<string, AnyAsync>>(activities: T): T {
    const wrapped: Record<string, AnyAsync> = {};
    for (const [name, fn] of Object.entries(activities)) {
      wrapped[name] = async (...args: never[]) => {
        const start = performance.now();
        try {
          return await fn(...args);
        } finally {
          const list = this.activityMs.get(name) ?? [];
          list.push(performance.now() - start);
          this.activityMs.set(name, list);
        }
      };
    }
    return wrapped as T;
  }

  /** For the service's gateway client: times `POST /v3/transfers` per redemption (externalReference). */
  gatewayFetch(inner: typeof fetch = globalThis.fetch): typeof fetch {
    return async (input, init) => {
      const url = urlOf(input);
      if (init?.method !== 'POST' || !url.endsWith('/v3/transfers')) return inner(input, init);
      const reference = field(bodyJson(init), 'externalReference');
      const start = nowMs();
      try {
        return await inner(input, init);
      } finally {
        if (typeof reference === 'string') this.redemption(reference).transferCreate = { start, end: nowMs() };
      }
    };
  }

  /** For the simulator: times its validation requests and webhook deliveries per redemption. */
  simulatorFetch(inner: typeof fetch = globalThis.fetch): typeof fetch {
    return async (input, init) => {
      const body = bodyJson(init);
      const transfer = field(body, 'transfer');
      const reference = field(transfer, 'externalReference');
      const event = field(body, 'event');
      const start = nowMs();
      let httpStatus: number | null = null;
      try {
        const response = await inner(input, init);
        httpStatus = response.status;
        return response;
      } finally {
        const end = nowMs();
        if (typeof event === 'string') {
          this.webhookPosts.push({ durationMs: end - start, event, ok: httpStatus !== null && httpStatus < 300 });
        }
        if (typeof reference === 'string') {
          const probe = this.redemption(reference);
          if (typeof event === 'string') {
            const eventId = field(body, 'id');
            probe.webhooks.push({ event, eventId: typeof eventId === 'string' ? eventId : '', start, end, httpStatus });
          } else if (field(body, 'type') === 'TRANSFER' && probe.validation === undefined) {
            probe.validation = { start, end };
          }
        }
      }
    };
  }

  /**
   * Times the app's calls on its Temporal client: update-with-start by workflow id
   * (`redemption-<id>`, `bare-<id>`), and `workflow.start` of webhook workflows.
   */
  instrumentClient(client: Client): void {
    const workflow = client.workflow as unknown as Record<'executeUpdateWithStart' | 'start', (...args: unknown[]) => Promise<unknown>>;
    const updateWithStart = workflow.executeUpdateWithStart.bind(workflow);
    const start = workflow.start.bind(workflow);
    workflow.executeUpdateWithStart = async (...args: unknown[]) => {
      const begin = nowMs();
      try {
        return await updateWithStart(...args);
      } finally {
        const workflowId = field(field(field(args[1], 'startWorkflowOperation'), 'options'), 'workflowId');
        if (typeof workflowId === 'string') {
          const span = { start: begin, end: nowMs() };
          if (workflowId.startsWith('redemption-')) this.redemption(workflowId.slice('redemption-'.length)).update = span;
          else if (workflowId.startsWith('bare-')) this.bareProbe(workflowId.slice('bare-'.length)).update = span;
        }
      }
    };
    workflow.start = async (...args: unknown[]) => {
      const begin = performance.now();
      try {
        return await start(...args);
      } finally {
        const workflowId = field(args[1], 'workflowId');
        if (typeof workflowId === 'string' && workflowId.startsWith('webhook-')) this.webhookStartMs.push(performance.now() - begin);
      }
    };
  }
}
