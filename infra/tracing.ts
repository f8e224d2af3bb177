import { createRequire } from 'node:module';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { registerInstrumentations } from '@opentelemetry/instrumentation';
import { HttpInstrumentation } from '@opentelemetry/instrumentation-http';
import { PgInstrumentation } from '@opentelemetry/instrumentation-pg';
import { UndiciInstrumentation } from '@opentelemetry/instrumentation-undici';
import { Resource } from '@opentelemetry/resources';
import { BatchSpanProcessor, type ReadableSpan, type SpanProcessor } from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';

/**
 * OpenTelemetry traces (docs/operations.md, "Traces"): one trace per request, from the HTTP server
 * span (its name the route template) through the Temporal workflows and activities it starts (the
 * SDK's interceptors, wired in api/server.ts and worker/create-worker.ts), their PostgreSQL
 * statements (instrumentation-pg, only inside a trace) and the gateway's HTTP calls (fetch, through
 * instrumentation-undici). Spans go over OTLP/HTTP when an endpoint is configured; without one and
 * without TRACING_ENABLED nothing here runs at all.
 */

/** Requests that are not worth a trace: probes and scrapes. */
const untracedPaths = new Set(['/healthz', '/livez', '/readyz', '/metrics']);

export interface Tracing {
  /** Forwards to every configured processor: the worker hands it to the workflow span sink. */
  readonly spanProcessor: SpanProcessor;
  readonly resource: Resource;
  /** Sends what is buffered and stops. */
  shutdown(): Promise<void>;
}

export interface TracingOptions {
  serviceName: string;
  /** OTLP/HTTP base URL (`http://collector:4318`); spans are posted to `<url>/v1/traces`. */
  otlpEndpoint?: string | undefined;
  /** Further processors (tests: a SimpleSpanProcessor over an InMemorySpanExporter). */
  spanProcessors?: readonly SpanProcessor[];
}

function forwardingProcessor(processors: readonly SpanProcessor[]): SpanProcessor {
  return {
    onStart: (span, parent) => {
      for (const processor of processors) processor.onStart(span as never, parent);
    },
    onEnd: (span: ReadableSpan) => {
      for (const processor of processors) processor.onEnd(span);
    },
    forceFlush: async () => {
      await Promise.all(processors.map((processor) => processor.forceFlush()));
    },
    shutdown: async () => {
      await Promise.all(processors.map((processor) => processor.shutdown()));
    },
  };
}

/**
 * Installs the global tracer provider and the instrumentations. May run after `pg` and the HTTP
 * server module were loaded: the instrumentations patch the shared module objects, so clients and
 * servers created earlier are traced too.
 */
export function startTracing(options: TracingOptions): Tracing {
  const resource = new Resource({ 'service.name': options.serviceName });
  const processors: SpanProcessor[] = [...(options.spanProcessors ?? [])];
  if (options.otlpEndpoint !== undefined) {
    const url = `${options.otlpEndpoint.replace(/\/+$/, '')}/v1/traces`;
    processors.push(new BatchSpanProcessor(new OTLPTraceExporter({ url })));
  }
  const spanProcessor = forwardingProcessor(processors);
  const provider = new NodeTracerProvider({ resource, spanProcessors: [spanProcessor] });
  provider.register();
  const disable = registerInstrumentations({
    tracerProvider: provider,
    instrumentations: [
      new HttpInstrumentation({
        // Server spans only: outgoing calls go through fetch (undici) or gRPC.
        disableOutgoingRequestInstrumentation: true,
        ignoreIncomingRequestHook: (request) => untracedPaths.has((request.url ?? '').split('?')[0] ?? ''),
      }),
      // Statements only inside a trace: the background pollers' queries make no traces of their own.
      new PgInstrumentation({ requireParentSpan: true }),
      new UndiciInstrumentation({ requireParentforSpans: true }),
    ],
  });
  // Modules loaded before this point are patched when required again (the hook sees them then).
  const require = createRequire(import.meta.url);
  for (const name of ['node:http', 'pg']) require(name);
  require(require.resolve('pg-pool', { paths: [require.resolve('pg')] }));
  return {
    spanProcessor,
    resource,
    async shutdown() {
      disable();
      await provider.shutdown();
    },
  };
}
