import { startInMemoryTracing } from '@almanac/testing/in-memory-tracing';
import { INVALID_SPAN_CONTEXT, ROOT_CONTEXT, SpanKind, trace, TraceFlags } from '@opentelemetry/api';
import { inClientSpan } from './outbound-span';

/** The SDK exporting into memory, with runs' sampling decided as a worker decides it. */
const tracing = startInMemoryTracing();
afterAll(() => tracing.stop());
beforeEach(() => tracing.reset());

/** A Slack-style webhook URL: the secret is the path. */
const HOOK = new URL('https://hooks.example.com:8443/services/T0AAA/B0BBB/Xy7secretPathPart?token=query-secret');
const answered = (headers: Record<string, string>[]) => async (traceHeaders: Record<string, string>) => {
  headers.push(traceHeaders);
  return { status: 204 };
};

describe('inClientSpan', () => {
  it('records the method and server of a call under a recording parent, never its path or query', async () => {
    const handler = trace.getTracer('test').startSpan('handle http');
    const sent: Record<string, string>[] = [];
    await inClientSpan(trace.setSpan(ROOT_CONTEXT, handler), 'POST', HOOK, answered(sent));
    handler.end();
    const call = tracing.spans().find((s) => s.kind === SpanKind.CLIENT)!;
    expect(call.parentSpanContext?.spanId).toBe(handler.spanContext().spanId);
    expect(call.attributes).toEqual({
      'http.request.method': 'POST', 'server.address': 'hooks.example.com', 'server.port': 8443, 'url.scheme': 'https', 'http.response.status_code': 204,
    });
    const exported = JSON.stringify(tracing.spans().map((s) => [s.name, s.attributes, s.events]));
    expect(exported).not.toContain('secretPathPart');
    expect(exported).not.toContain('query-secret');
    expect(sent[0].traceparent).toBe(`00-${call.spanContext().traceId}-${call.spanContext().spanId}-01`);
  });

  it('starts no span under a run that was not sampled (the non-recording span it gets): nothing exported, no traceparent', async () => {
    const sent: Record<string, string>[] = [];
    const res = await inClientSpan(trace.setSpan(ROOT_CONTEXT, trace.wrapSpanContext(INVALID_SPAN_CONTEXT)), 'POST', HOOK, answered(sent));
    expect(res.status).toBe(204);
    expect(tracing.spans()).toEqual([]); // no orphan CLIENT span, a root of its own
    expect(sent).toEqual([{}]);
  });

  it('sends the parent’s own traceparent under a parent that is not recording', async () => {
    const parent = { traceId: '4bf92f3577b34da6a3ce929d0e0e4736', spanId: '00f067aa0ba902b7', traceFlags: TraceFlags.NONE };
    const sent: Record<string, string>[] = [];
    await inClientSpan(trace.setSpan(ROOT_CONTEXT, trace.wrapSpanContext(parent)), 'POST', HOOK, answered(sent));
    expect(tracing.spans()).toEqual([]);
    expect(sent[0].traceparent).toBe(`00-${parent.traceId}-${parent.spanId}-00`);
  });
});
