import { type Attributes, ROOT_CONTEXT, type Span, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { ExportResultCode, type InstrumentationScope } from '@opentelemetry/core';
import { ProtobufTraceSerializer } from '@opentelemetry/otlp-transformer';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider, InMemorySpanExporter, type ReadableSpan, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-node';
import { LeanSpan } from './lean-span';
import { ProtobufBatchSpanProcessor, type WrittenBatch } from './protobuf-batch-processor';

/**
 * A LeanSpan keeps what the SDK's span keeps for the same calls (ids and clock readings aside),
 * and the protobuf processor writes it as the SDK's serializer writes it.
 */
describe('LeanSpan', () => {
  const resource = resourceFromAttributes({ 'service.name': 'almanac-test' });
  const memory = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ resource, spanProcessors: [new SimpleSpanProcessor(memory)] });
  const sdk = provider.getTracer('almanac');
  const scope = (sdk as unknown as { instrumentationScope: InstrumentationScope }).instrumentationScope;
  const ended: ReadableSpan[] = [];
  const sink = { resource, scope, onEnd: (s: ReadableSpan) => ended.push(s) };
  const link = { context: { traceId: '4bf92f3577b34da6a3ce929d0e0e4736', spanId: '00f067aa0ba902b7', traceFlags: 1, isRemote: true }, attributes: { why: 'ingest', bad: {} as never } };
  const declined = Object.assign(new Error('declined'), { code: 'E_CARD' }); // one stack for both
  beforeEach(() => {
    memory.reset();
    ended.length = 0;
  });

  /** The same calls on a root and its child: invalid values, limits, the forms of an event's time, status rules, an exception, calls after end. */
  function exercise(root: Span, child: () => Span): void {
    root.setAttributes({ 'almanac.tenant': 7, 'almanac.job.key': 'k-1', ok: false, list: ['a', 'b'], nothing: undefined, bad: { nested: 1 } as never, '': 'empty key' });
    for (let i = 0; i < 130; i++) root.setAttribute(`n${i}`, i);
    root.setAttribute('almanac.tenant', 8); // an existing key is replaced even at the limit
    root.addEvent('claimed', Date.UTC(2026, 11, 6, 12, 0, 0, 250));
    root.addEvent('with attributes', { rows: 3, bad: null as never }, [1_765_000_000, 5]);
    root.addEvent('at a date', new Date(Date.UTC(2026, 0, 1)));
    root.addLink({ context: { ...link.context, spanId: '00f067aa0ba902b8' } });
    const handler = child();
    handler.setStatus({ code: SpanStatusCode.ERROR, message: 'card declined' });
    handler.setStatus({ code: SpanStatusCode.UNSET });
    handler.recordException(declined, Date.UTC(2026, 11, 6, 12, 0, 1));
    handler.recordException('plain text', Date.UTC(2026, 11, 6, 12, 0, 2));
    handler.updateName('handle charge');
    handler.end(Date.UTC(2026, 11, 6, 12, 0, 3));
    handler.setAttribute('late', 1);
    root.setStatus({ code: SpanStatusCode.OK });
    root.setStatus({ code: SpanStatusCode.ERROR, message: 'ignored after OK' });
    root.end(Date.UTC(2026, 11, 6, 12, 0, 4));
    root.updateName('renamed after end');
  }

  const startMs = Date.UTC(2026, 11, 6, 12, 0, 0);
  function bySdk(): ReadableSpan[] {
    const root = sdk.startSpan('process charge', { kind: SpanKind.CONSUMER, startTime: startMs, links: [link] }, ROOT_CONTEXT);
    exercise(root, () => sdk.startSpan('handle', { startTime: startMs + 500 }, trace.setSpan(ROOT_CONTEXT, root)));
    return memory.getFinishedSpans();
  }
  function byLean(): ReadableSpan[] {
    const root = LeanSpan.root(sink, 'process charge', SpanKind.CONSUMER, startMs, [link]);
    exercise(root, () => Object.assign(root.child('handle'), { startTime: [Math.floor((startMs + 500) / 1000), 500_000_000] }));
    return ended;
  }
  const fields = (s: ReadableSpan) => ({
    name: s.name, kind: s.kind, attributes: s.attributes, links: s.links, status: s.status, events: s.events, startTime: s.startTime, endTime: s.endTime,
    duration: s.duration, ended: s.ended, resource: s.resource, scope: s.instrumentationScope, parent: s.parentSpanContext?.spanId === undefined ? 'none' : 'a span',
    dropped: [s.droppedAttributesCount, s.droppedEventsCount, s.droppedLinksCount], flags: s.spanContext().traceFlags,
  });

  it('keeps what the SDK span keeps for the same calls', () => {
    const [sdkChild, sdkRoot] = bySdk();
    const [leanChild, leanRoot] = byLean();
    expect(fields(leanRoot)).toEqual(fields(sdkRoot));
    expect(fields(leanChild)).toEqual(fields(sdkChild));
    expect(leanChild.parentSpanContext).toEqual(expect.objectContaining({ traceId: leanRoot.spanContext().traceId, spanId: leanRoot.spanContext().spanId }));
    expect(leanRoot.spanContext().traceId).toMatch(/^[0-9a-f]{32}$/);
    expect(leanRoot.spanContext().spanId).not.toBe(leanChild.spanContext().spanId);
  });

  it('is written by the protobuf processor as the SDK serializer writes it', async () => {
    const sent: WrittenBatch[] = [];
    const processor = new ProtobufBatchSpanProcessor({ export: (b, done) => (sent.push(b), done({ code: ExportResultCode.SUCCESS })), shutdown: () => Promise.resolve() }, { delayMs: 60_000, batchSize: 10, queueSize: 10 });
    const spans = byLean();
    for (const s of spans) processor.onEnd(s);
    await processor.forceFlush();
    expect(Buffer.from(sent[0].bytes)).toEqual(Buffer.from(ProtobufTraceSerializer.serializeRequest(spans)!));
  });

  it('ends now when given no time, never before its start', () => {
    const attributes: Attributes = {};
    const span = LeanSpan.root(sink, 'process noop', SpanKind.CONSUMER, Date.now() + 60_000, []).setAttributes(attributes);
    span.end();
    expect(span.endTime).toEqual(span.startTime);
    const child = LeanSpan.root(sink, 'process noop', SpanKind.CONSUMER, Date.now() - 1, []).child('handle noop');
    child.end();
    expect(child.duration[0]).toBe(0);
    expect(child.kind).toBe(SpanKind.INTERNAL);
  });
});
