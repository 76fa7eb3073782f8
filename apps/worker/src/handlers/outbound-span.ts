import { endWith, tracer } from '@almanac/platform';
import { type Context, propagation, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';

/**
 * Runs one outbound HTTP call inside its client span (a child of the handler's), and gives the
 * call the headers that carry the span's W3C `traceparent`, so the receiver's trace continues
 * this run's. The span names the server and path, never the query string (it may hold a token).
 * With tracing off the headers are empty.
 */
export function inClientSpan<T extends { status: number }>(
  parent: Context, method: string, url: URL, call: (traceHeaders: Record<string, string>) => Promise<T>,
): Promise<T> {
  const span = tracer.startSpan(method, {
    kind: SpanKind.CLIENT,
    attributes: {
      'http.request.method': method,
      'server.address': url.hostname,
      'server.port': url.port ? Number(url.port) : url.protocol === 'https:' ? 443 : 80,
      'url.scheme': url.protocol.slice(0, -1),
      'url.path': url.pathname,
    },
  }, parent);
  const traceHeaders: Record<string, string> = {};
  propagation.inject(trace.setSpan(parent, span), traceHeaders);
  return endWith(span, () => call(traceHeaders), (res) => {
    if (res.status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
    return { 'http.response.status_code': res.status };
  });
}
