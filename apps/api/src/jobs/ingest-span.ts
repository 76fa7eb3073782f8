import { contextFromHeaders, endWith, traceparentOf, tracer } from '@almanac/platform';
import { type Attributes, SpanKind } from '@opentelemetry/api';

type Headers = Record<string, string | string[] | undefined>;

/**
 * Runs an ingest call inside its producer span (OpenTelemetry messaging `send`), a child of the
 * request's W3C `traceparent` when it has one, a new trace otherwise. `fn` gets the span's own
 * traceparent to keep with each row it creates, so every run of the job links back to it; null
 * while tracing is off (the API's no-op span carries no trace). `describe` adds what the answer
 * tells (the job's id and key) before the span ends.
 */
export function inIngestSpan<T>(
  headers: Headers,
  attributes: Attributes,
  fn: (traceParent: string | null) => Promise<T>,
  describe: (result: T) => Attributes = () => ({}),
): Promise<T> {
  const name = typeof attributes['messaging.destination.name'] === 'string' ? `send ${attributes['messaging.destination.name']}` : 'send';
  const span = tracer.startSpan(name, { kind: SpanKind.PRODUCER, attributes }, contextFromHeaders(headers));
  span.setAttributes({ 'messaging.system': 'almanac', 'messaging.operation.type': 'send', 'messaging.operation.name': 'send' });
  return endWith(span, () => fn(traceparentOf(span)), describe);
}
