import { createServer, type Server } from 'node:http';
import { timingSafeEqual } from 'node:crypto';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import { onCommitted, type CommittedFact } from '../db/committed.ts';

/**
 * The service's Prometheus metrics (prom-client), one registry per process (docs/operations.md
 * lists every metric and what to do when one turns bad). Label values come from closed sets only:
 * route templates (never a path with ids), transaction types, outcomes, gateway operations.
 *
 * Counters of business facts (postings, PLCs, redemptions, charges, webhook events, fork
 * detections) are fed by the database layer's committed facts (db/committed.ts): a fact is heard
 * after its transaction committed, and only when the write changed something, so neither a
 * rolled-back transaction nor a retried activity counts twice.
 */

export const metricsContentType = Registry.PROMETHEUS_CONTENT_TYPE;

/** Seconds from a request to its final state: a minute to a week (payouts wait on webhooks and operators). */
const settlementBuckets = [1, 5, 15, 60, 300, 900, 1800, 3600, 4 * 3600, 24 * 3600, 7 * 24 * 3600];
const httpBuckets = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
const gatewayBuckets = [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

/** Outcome label of a gateway call: `ok`, the client's failure code, or the HTTP status class. */
export function gatewayOutcomeLabel(error: unknown): string {
  if (error === undefined) return 'ok';
  const e = error as { status?: number | null; code?: string };
  if (typeof e.status === 'number') return `http_${Math.floor(e.status / 100)}xx`;
  switch (e.code) {
    case 'TIMEOUT':
    case 'NETWORK_ERROR':
    case 'ABORTED':
    case 'INVALID_RESPONSE':
    case 'INVALID_REQUEST':
      return e.code.toLowerCase();
    default:
      return 'error';
  }
}

export interface ServiceMetrics {
  readonly registry: Registry;
  readonly httpRequestDuration: Histogram<'method' | 'route' | 'status_code'>;
  readonly rateLimitRefusals: Counter<'route'>;
  readonly idempotentReplays: Counter<'route'>;
  readonly gatewayCalls: Histogram<'operation' | 'outcome'>;
  /** Observes one gateway call (the gateway client's `observe` option). */
  observeGatewayCall(call: { operation: string; seconds: number; error?: unknown }): void;
  /** The Prometheus text of every metric. */
  render(): Promise<string>;
  /** Stops listening to committed facts. */
  close(): void;
}

export interface DatabaseGaugeReaders {
  /** The queues' state (db/queue-stats.ts), read at scrape time. */
  queues(): Promise<{ inbox_dead: number; inbox_oldest_ms: number | null; outbox_pending: number; outbox_oldest_ms: number | null }>;
  /** Redemptions waiting for their payout: how many, and the oldest's age. */
  pendingRedemptions(): Promise<{ count: number; oldest_ms: number | null }>;
  /** The latest ledger check: its violations and when it ran. */
  latestLedgerCheck(): Promise<{ violations: number; checked_at: Date } | null>;
}

export function createServiceMetrics(options: { process: 'api' | 'worker'; database?: DatabaseGaugeReaders; defaultMetrics?: boolean }): ServiceMetrics {
  const registry = new Registry();
  registry.setDefaultLabels({ process: options.process });
  if (options.defaultMetrics !== false) collectDefaultMetrics({ register: registry, prefix: 'plc_' });

  const httpRequestDuration = new Histogram({
    name: 'plc_http_request_duration_seconds',
    help: 'HTTP requests by route template and status, with their latency (its _count is the request count)',
    labelNames: ['method', 'route', 'status_code'] as const,
    buckets: httpBuckets,
    registers: [registry],
  });
  const rateLimitRefusals = new Counter({
    name: 'plc_rate_limit_refusals_total',
    help: 'Requests refused by a rate limit (429), by route template',
    labelNames: ['route'] as const,
    registers: [registry],
  });
  const idempotentReplays = new Counter({
    name: 'plc_idempotent_replays_total',
    help: 'Requests answered from the Idempotency-Key store (a retry of an answered request), by route template',
    labelNames: ['route'] as const,
    registers: [registry],
  });
  const gatewayCalls = new Histogram({
    name: 'plc_gateway_call_duration_seconds',
    help: 'Payment gateway calls by operation and outcome, with their latency (its _count is the call count)',
    labelNames: ['operation', 'outcome'] as const,
    buckets: gatewayBuckets,
    registers: [registry],
  });
  const ledgerPostings = new Counter({
    name: 'plc_ledger_postings_total',
    help: 'Ledger transactions committed, by transaction type',
    labelNames: ['tx_type'] as const,
    registers: [registry],
  });
  const plcEvents = new Counter({
    name: 'plc_plc_events_total',
    help: 'PLCs created, hops registered (transferred), cancelled, expired and redeemed, as committed',
    labelNames: ['event'] as const,
    registers: [registry],
  });
  const redemptions = new Counter({
    name: 'plc_redemptions_total',
    help: 'Redemptions opened and finished (SETTLED, FAILED), as committed',
    labelNames: ['outcome'] as const,
    registers: [registry],
  });
  const redemptionDuration = new Histogram({
    name: 'plc_redemption_duration_seconds',
    help: 'From a redemption request to its final state',
    labelNames: ['outcome'] as const,
    buckets: settlementBuckets,
    registers: [registry],
  });
  const charges = new Counter({
    name: 'plc_charges_total',
    help: 'Charges opened and finished (SETTLED, FAILED), as committed',
    labelNames: ['outcome'] as const,
    registers: [registry],
  });
  const chargeDuration = new Histogram({
    name: 'plc_charge_duration_seconds',
    help: 'From a charge request to its final state',
    labelNames: ['outcome'] as const,
    buckets: settlementBuckets,
    registers: [registry],
  });
  const webhookEvents = new Counter({
    name: 'plc_webhook_events_total',
    help: 'Inbound webhook events by provider and outcome (received, duplicate, PROCESSED, IGNORED, CONTRADICTED, DEAD)',
    labelNames: ['provider', 'outcome'] as const,
    registers: [registry],
  });
  const forkDetections = new Counter({
    name: 'plc_fork_detections_total',
    help: 'Double spends (forked chains) detected and refused, by route',
    labelNames: ['route'] as const,
    registers: [registry],
  });

  if (options.database !== undefined) registerDatabaseGauges(registry, options.database);

  const stopListening = onCommitted((fact: CommittedFact) => {
    switch (fact.kind) {
      case 'ledger_posting':
        ledgerPostings.inc({ tx_type: fact.txType });
        return;
      case 'plc':
        plcEvents.inc({ event: fact.event }, fact.count);
        return;
      case 'redemption':
        redemptions.inc({ outcome: fact.outcome });
        if (fact.seconds !== undefined) redemptionDuration.observe({ outcome: fact.outcome }, fact.seconds);
        return;
      case 'charge':
        charges.inc({ outcome: fact.outcome });
        if (fact.seconds !== undefined) chargeDuration.observe({ outcome: fact.outcome }, fact.seconds);
        return;
      case 'webhook_event':
        webhookEvents.inc({ provider: fact.provider, outcome: fact.outcome });
        return;
      case 'fork_detected':
        forkDetections.inc({ route: fact.route });
        return;
    }
  });

  return {
    registry,
    httpRequestDuration,
    rateLimitRefusals,
    idempotentReplays,
    gatewayCalls,
    observeGatewayCall(call) {
      gatewayCalls.observe({ operation: call.operation, outcome: gatewayOutcomeLabel(call.error) }, call.seconds);
    },
    render: () => registry.metrics(),
    close: stopListening,
  };
}

/**
 * Gauges read from the committed tables at scrape time: what waits and for how long. Each scrape
 * reads at most once every 5 s (a burst of scrapes shares one read); a failed read leaves the
 * gauges as they were and sets plc_metrics_database_up to 0.
 */
function registerDatabaseGauges(registry: Registry, readers: DatabaseGaugeReaders): void {
  let last: Promise<void> | null = null;
  let lastAt = 0;
  const values = {
    up: 0,
    inboxDead: 0,
    inboxOldest: 0,
    outboxPending: 0,
    outboxOldest: 0,
    pendingRedemptions: 0,
    oldestRedemption: 0,
    ledgerViolations: 0,
    ledgerCheckedAt: 0,
  };
  async function read(): Promise<void> {
    try {
      const [queues, pending, check] = await Promise.all([readers.queues(), readers.pendingRedemptions(), readers.latestLedgerCheck()]);
      values.inboxDead = queues.inbox_dead;
      values.inboxOldest = (queues.inbox_oldest_ms ?? 0) / 1000;
      values.outboxPending = queues.outbox_pending;
      values.outboxOldest = (queues.outbox_oldest_ms ?? 0) / 1000;
      values.pendingRedemptions = pending.count;
      values.oldestRedemption = (pending.oldest_ms ?? 0) / 1000;
      values.ledgerViolations = check?.violations ?? 0;
      values.ledgerCheckedAt = check === null ? 0 : check.checked_at.getTime() / 1000;
      values.up = 1;
    } catch {
      values.up = 0;
    }
  }
  function refresh(): Promise<void> {
    if (last === null || Date.now() - lastAt > 5000) {
      lastAt = Date.now();
      last = read();
    }
    return last;
  }
  const gauge = (name: string, help: string, pick: () => number) =>
    new Gauge({
      name,
      help,
      registers: [registry],
      async collect() {
        await refresh();
        this.set(pick());
      },
    });
  gauge('plc_metrics_database_up', 'Whether the last read of the gauges below from PostgreSQL succeeded', () => values.up);
  gauge('plc_webhook_inbox_dead', 'Inbox events that failed processing for good (DEAD): each needs an operator', () => values.inboxDead);
  gauge('plc_webhook_inbox_oldest_waiting_seconds', 'Age of the oldest inbox event still waiting to be processed (0: none)', () => values.inboxOldest);
  gauge('plc_status_outbox_pending', 'PLC statuses waiting to reach their workflows', () => values.outboxPending);
  gauge('plc_status_outbox_oldest_seconds', 'Age of the oldest PLC status waiting to reach its workflow (0: none)', () => values.outboxOldest);
  gauge('plc_redemptions_pending_payment', 'Redemptions waiting for their payout (PENDING_PAYMENT)', () => values.pendingRedemptions);
  gauge('plc_redemption_oldest_pending_seconds', 'Age of the oldest redemption waiting for its payout (0: none)', () => values.oldestRedemption);
  gauge('plc_ledger_invariant_violations', 'Violations found by the latest ledger check (must be 0)', () => values.ledgerViolations);
  gauge('plc_ledger_check_timestamp_seconds', 'When the latest ledger check ran (Unix time; 0: never)', () => values.ledgerCheckedAt);
}

/** Compares a request's Authorization header with `Bearer <token>` in constant time. */
export function bearerMatches(header: string | undefined, token: string): boolean {
  if (header === undefined) return false;
  const expected = Buffer.from(`Bearer ${token}`);
  const given = Buffer.from(header);
  return given.length === expected.length && timingSafeEqual(given, expected);
}

/**
 * The worker's metrics server: `GET /metrics` on its own address (loopback by default, so
 * reaching it is a deployment decision), and, when `health` is given (the worker), the probes
 * Kubernetes calls (deploy/kubernetes/worker.yaml): `GET /livez` answers 200 while the process
 * answers at all, `GET /readyz` 200 while `health.ready()` says so and 503 otherwise. Nothing else.
 */
export async function serveMetrics(metrics: ServiceMetrics, address: { host: string; port: number }, health?: { ready: () => boolean }): Promise<Server> {
  const server = createServer((request, response) => {
    const url = (request.url ?? '').split('?')[0];
    if (request.method === 'GET' && health !== undefined && (url === '/livez' || url === '/readyz')) {
      const ok = url === '/livez' || health.ready();
      response.writeHead(ok ? 200 : 503, { 'content-type': 'application/json' }).end(JSON.stringify({ status: ok ? 'ok' : 'not ready' }));
      return;
    }
    if (request.method !== 'GET' || url !== '/metrics') {
      response.writeHead(404).end();
      return;
    }
    metrics.render().then(
      (text) => response.writeHead(200, { 'content-type': metricsContentType }).end(text),
      () => response.writeHead(500).end(),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(address.port, address.host, () => resolve());
  });
  return server;
}
