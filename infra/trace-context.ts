import { trace, type Span } from '@opentelemetry/api';

/**
 * The active trace, read through the OpenTelemetry API only (no SDK): a no-op when tracing is off
 * (infra/tracing.ts). Used by the logger (every line of a traced request carries its trace id) and
 * by the API's hook that names the server span after the route template.
 */

/** Names the request's server span after its route template (called from a Fastify hook). */
export function nameServerSpan(method: string, routeTemplate: string | undefined): void {
  if (routeTemplate === undefined) return;
  const span: Span | undefined = trace.getActiveSpan();
  if (span === undefined) return;
  span.updateName(`${method} ${routeTemplate}`);
  span.setAttribute('http.route', routeTemplate);
}

/** The active span's ids for a log line, or nothing outside a trace. */
export function traceFields(): { trace_id: string; span_id: string } | Record<string, never> {
  const span = trace.getActiveSpan();
  if (span === undefined) return {};
  const context = span.spanContext();
  return { trace_id: context.traceId, span_id: context.spanId };
}
