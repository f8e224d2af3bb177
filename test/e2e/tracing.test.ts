import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { SpanKind, trace } from '@opentelemetry/api';
import { pino } from 'pino';
import { loggerOptions } from '../../infra/logger.ts';
import { InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { bundleWorkflowCode } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTracing, type Tracing } from '../../infra/tracing.ts';
import { workflowTracingModule } from '../../worker/create-worker.ts';
import { workflowsPath } from '../../worker/workflows-path.ts';
import { redeemBody, startSettlementHarness, type SettlementHarness } from '../support/settlement.ts';
import { waitFor } from '../support/wait.ts';
import { hop, issue, newWallet, plcToJson } from '../support/wallet.ts';

/**
 * Traces end to end (docs/operations.md, "Traces"): with an in-memory exporter, one redemption
 * sent over HTTP to POST /api/v1/redeem/ shows up as connected spans, from the route through the
 * redemption workflow and its payout activity (with the activity's SQL and its call to the
 * gateway) to the settlement the gateway's webhook brings.
 */
const exporter = new InMemorySpanExporter();
let tracing: Tracing;
let h: SettlementHarness;
let bundleDir: string;
const pixKey = '123e4567-e89b-42d3-a456-556642440000';

beforeAll(async () => {
  tracing = startTracing({ serviceName: 'plc-settlement-test', spanProcessors: [new SimpleSpanProcessor(exporter)] });
  bundleDir = await mkdtemp(path.join(tmpdir(), 'plc-tracing-bundle-'));
  const bundle = await bundleWorkflowCode({ workflowsPath, workflowInterceptorModules: [workflowTracingModule], logger: undefined });
  const workflowBundlePath = path.join(bundleDir, 'workflow-bundle.js');
  await writeFile(workflowBundlePath, bundle.code);
  h = await startSettlementHarness({}, {}, { testApp: { tracing: { spanProcessor: tracing.spanProcessor, resource: tracing.resource }, workflowBundlePath } });
}, 180_000);

afterAll(async () => {
  await h?.close();
  await tracing?.shutdown();
  if (bundleDir !== undefined) await rm(bundleDir, { recursive: true, force: true });
});

function ancestors(span: ReadableSpan, byId: Map<string, ReadableSpan>): ReadableSpan[] {
  const chain: ReadableSpan[] = [];
  let current: ReadableSpan | undefined = span;
  for (let i = 0; current !== undefined && i < 100; i += 1) {
    chain.push(current);
    current = current.parentSpanId === undefined ? undefined : byId.get(current.parentSpanId);
  }
  return chain;
}

function tree(spans: readonly ReadableSpan[]): string {
  const children = new Map<string, ReadableSpan[]>();
  const ids = new Set(spans.map((s) => s.spanContext().spanId));
  const roots: ReadableSpan[] = [];
  for (const span of spans) {
    if (span.parentSpanId === undefined || !ids.has(span.parentSpanId)) roots.push(span);
    else children.set(span.parentSpanId, [...(children.get(span.parentSpanId) ?? []), span]);
  }
  const lines: string[] = [];
  const walk = (span: ReadableSpan, depth: number) => {
    lines.push(`${'  '.repeat(depth)}${span.name} [${span.spanContext().traceId.slice(0, 8)}]${span.parentSpanId !== undefined && !ids.has(span.parentSpanId) ? ' (parent missing)' : ''}`);
    for (const child of children.get(span.spanContext().spanId) ?? []) walk(child, depth + 1);
  };
  for (const root of roots) walk(root, 0);
  return lines.join('\n');
}

describe('traces', () => {
  it('one redemption: the route, the workflow, the payout activity with its SQL and gateway call, and the webhook settlement are connected spans', async () => {
    const [a, b] = [newWallet(), newWallet()];
    await h.t.deposit(a.pubkey, '50.00');
    const plc = issue(a, { amountMinor: 1500n });
    const created = await h.t.app.inject({ method: 'POST', url: '/api/v1/plc/create', headers: { 'x-device-id': 'device-trace' }, payload: { plc: plcToJson(plc) } });
    expect(created.statusCode).toBe(200);
    const plc1 = hop(plc, a, b);
    exporter.reset();

    const response = await fetch(`${h.appUrl}/api/v1/redeem/`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-device-id': 'device-trace' },
      body: JSON.stringify(redeemBody(plc1, b, pixKey)),
    });
    expect(response.status).toBe(200);
    const opened = (await response.json()) as { workflow_id: string; redemption_id: string };
    expect(await h.t.temporal.workflow.getHandle(opened.workflow_id).result()).toMatchObject({ status: 'SETTLED' });

    const named = (prefix: string) => exporter.getFinishedSpans().filter((span) => span.name.startsWith(prefix));
    await waitFor(() => named('RunActivity:settleRedemption').length > 0, { what: 'the settlement activity span', timeoutMs: 20_000 });
    const spans = exporter.getFinishedSpans();
    const byId = new Map(spans.map((span) => [span.spanContext().spanId, span]));
    const picture = tree(spans);
    const rootOf = (span: ReadableSpan) => ancestors(span, byId).at(-1)!;
    const workflowIdOf = (span: ReadableSpan) => span.attributes.temporalWorkflowId ?? span.attributes.workflowId;

    // The request's trace: route -> update-with-start -> workflow -> activities, each span's parent present.
    const route = spans.find((span) => span.kind === SpanKind.SERVER && span.name === 'POST /api/v1/redeem/');
    expect(route, picture).toBeDefined();
    const traceId = route!.spanContext().traceId;
    const inRequestTrace = (name: string) => {
      const found = spans.filter((span) => span.name === name && span.spanContext().traceId === traceId);
      expect(found.length, `${name} in the request's trace:\n${picture}`).toBeGreaterThan(0);
      for (const span of found) expect(rootOf(span), `${name} reaches the route span:\n${picture}`).toBe(route);
      return found[0]!;
    };
    inRequestTrace('UpdateWithStartWorkflow:openRedemption');
    inRequestTrace('RunActivity:openRedemption');
    const run = inRequestTrace('RunWorkflow:redemptionWorkflow');
    expect(workflowIdOf(run)).toBe(opened.workflow_id);
    const payout = inRequestTrace('RunActivity:createPayout');
    const settle = inRequestTrace('RunActivity:settleRedemption');
    expect(workflowIdOf(settle)).toBe(opened.workflow_id);
    const under = (parent: ReadableSpan) => spans.filter((span) => span !== parent && ancestors(span, byId).includes(parent));
    // The payout activity's SQL statements and its HTTP call to the gateway are its descendants.
    expect(under(payout).some((span) => span.name.startsWith('pg.query')), picture).toBe(true);
    expect(under(payout).some((span) => span.kind === SpanKind.CLIENT && String(span.attributes['url.full'] ?? '').startsWith(h.simulator.url ?? 'http://simulator')), picture).toBe(true);
    expect(under(settle).some((span) => span.name === 'pg.query:ledger-post-legs' || span.name.includes('ledger-post-legs')), picture).toBe(true);

    // The gateway's webhook: its own request's trace, route -> the signal into this redemption's
    // workflow (processed in its request since issue 38: no webhook workflow in between), whose
    // settlement activity is in the trace above.
    const signal = spans.find((span) => span.name === 'HandleSignal:transferEvent' && workflowIdOf(span) === opened.workflow_id);
    expect(signal, picture).toBeDefined();
    const webhookRoute = rootOf(signal!);
    expect(webhookRoute.kind, picture).toBe(SpanKind.SERVER);
    expect(webhookRoute.name).toBe('POST /api/v1/redemption/webhook/gateway');
    const path = ancestors(signal!, byId).map((span) => span.name);
    expect(path, picture).toEqual(expect.arrayContaining(['SignalWorkflow:transferEvent']));
    expect(path.filter((name) => name.includes('webhookEventWorkflow')), picture).toEqual([]);
  });

  it('a log line written inside a trace carries its trace id and span id', async () => {
    const lines: string[] = [];
    const logger = pino(loggerOptions('info', 'test'), { write: (line: string) => void lines.push(line) });
    const tracer = trace.getTracer('test');
    const traceId = tracer.startActiveSpan('work', (span) => {
      logger.info('inside');
      span.end();
      return span.spanContext().traceId;
    });
    logger.info('outside');
    expect(JSON.parse(lines[0]!)).toMatchObject({ msg: 'inside', trace_id: traceId, span_id: expect.any(String) });
    expect(JSON.parse(lines[1]!)).not.toHaveProperty('trace_id');
  });
});
