import {
  type Attributes, context, type Context, isSpanContextValid, type Link, propagation, ROOT_CONTEXT, type Span,
  SpanStatusCode, trace, type Tracer,
} from '@opentelemetry/api';

/** The name of the one tracer of Almanac's own spans. */
export const TRACER_NAME = 'almanac';

/** The one tracer of Almanac's own spans (`@opentelemetry/api`: a no-op until an SDK registers). */
export const tracer: Tracer = trace.getTracer(TRACER_NAME);

/**
 * A job's attributes on every span about it (OpenTelemetry messaging conventions, plus Almanac's),
 * with `extra` (the operation's own). One object literal: spreading one attributes object into
 * another cost ~1.5 µs (the keys have dots), which a worker paid per job with tracing off.
 */
export function jobAttributes(job: { tenantId: number; id: string; key: string; kind: string; attempt: number }): Attributes {
  return {
    'messaging.system': 'almanac',
    'messaging.destination.name': job.kind,
    'messaging.message.id': job.id,
    'almanac.tenant': job.tenantId,
    'almanac.job.id': job.id,
    'almanac.job.key': job.key,
    'almanac.attempt': job.attempt,
  };
}

/** The context carried by W3C `traceparent`/`tracestate` headers (the root context without them). */
export function contextFromHeaders(headers: Record<string, string | string[] | undefined>): Context {
  return propagation.extract(ROOT_CONTEXT, headers);
}

/** `span` as a W3C traceparent to keep with a row, or null when it carries no trace (tracing off). */
export function traceparentOf(span: Span): string | null {
  const sc = span.spanContext();
  if (!isSpanContextValid(sc)) return null;
  return `00-${sc.traceId}-${sc.spanId}-${(sc.traceFlags & 1).toString(16).padStart(2, '0')}`;
}

/** A link to the span a stored traceparent names; none for null or a malformed value. */
export function linksTo(traceparent: string | null | undefined): Link[] {
  if (!traceparent) return [];
  const sc = trace.getSpanContext(propagation.extract(ROOT_CONTEXT, { traceparent }));
  return sc && isSpanContextValid(sc) ? [{ context: sc }] : [];
}

/** Ends `span` as failed with `err` (recorded as its exception event). */
export function endFailed(span: Span, err: unknown): void {
  const e = err instanceof Error ? err : new Error(String(err));
  span.recordException(e);
  span.setStatus({ code: SpanStatusCode.ERROR, message: e.message });
  span.end();
}

/**
 * Ends `span` with the outcome of `run`: the attributes `describe` reads from its result, or
 * failed with its error (rethrown).
 */
export async function endWith<T>(span: Span, run: () => Promise<T>, describe: (result: T) => Attributes = () => ({})): Promise<T> {
  try {
    const result = await run();
    span.setAttributes(describe(result));
    span.end();
    return result;
  } catch (err) {
    endFailed(span, err);
    throw err;
  }
}

/**
 * Runs `fn` under `span`: `fn` gets the span's context to parent the spans it starts (Almanac
 * passes it by hand), and it is also the active context for code that asks the context manager,
 * when one is registered (ALMANAC_TRACING_CONTEXT=async-local-storage).
 */
export function inSpanContext<T>(span: Span, fn: (traceContext: Context) => T): T {
  const traceContext = trace.setSpan(ROOT_CONTEXT, span);
  return context.with(traceContext, () => fn(traceContext));
}

