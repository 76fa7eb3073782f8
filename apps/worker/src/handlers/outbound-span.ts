import { endWith, tracer } from '@almanac/platform';
import { type Context, propagation, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';

/**
 * Runs one outbound HTTP call inside its client span (a child of the handler's), and gives the
 * call the headers that carry the span's W3C `traceparent`, so the receiver's trace continues
 * this run's. The span names the method and the server (scheme, host, port), never the path or
 * the query: webhook URLs carry their secret there (`/services/T0/B0/XXXX`, `?token=`), and
 * spans go to a tracing backend that is not meant to hold secrets.
 * Under a parent that is not recording (tracing off, or a run that was not sampled) there is no
 * span: one would be exported on its own, a root with no run above it. The headers are then the
 * parent's own (none for a run that was not sampled).
 */
export function inClientSpan<T extends { status: number }>(
  parent: Context, method: string, url: URL, call: (traceHeaders: Record<string, string>) => Promise<T>,
): Promise<T> {
  const traceHeaders: Record<string, string> = {};
  if (!trace.getSpan(parent)?.isRecording()) {
    propagation.inject(parent, traceHeaders);
    return call(traceHeaders);
  }
  const span = tracer.startSpan(method, {
    kind: SpanKind.CLIENT,
    attributes: {
      'http.request.method': method,
      'server.address': url.hostname,
      'server.port': url.port ? Number(url.port) : url.protocol === 'https:' ? 443 : 80,
      'url.scheme': url.protocol.slice(0, -1),
    },
  }, parent);
  propagation.inject(trace.setSpan(parent, span), traceHeaders);
  return endWith(span, () => call(traceHeaders), (res) => {
    if (res.status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
    return { 'http.response.status_code': res.status };
  });
}
