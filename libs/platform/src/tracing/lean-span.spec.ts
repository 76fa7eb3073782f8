import { type HrTime, ROOT_CONTEXT, type Span, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { ExportResultCode, type InstrumentationScope, otperformance } from '@opentelemetry/core';
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

  it("takes the SDK span's times when given none, with Date's clock years away from the performance clock", () => {
    jest.useFakeTimers({ now: Date.UTC(2030, 0, 1), doNotFake: ['nextTick', 'queueMicrotask'] }); // Date only: the SDK reads perf_hooks' own performance
    try {
      const sdkRoot = sdk.startSpan('process noop', { kind: SpanKind.CONSUMER, startTime: Date.now() - 5 }, ROOT_CONTEXT);
      const leanRoot = LeanSpan.root(sink, 'process noop', SpanKind.CONSUMER, Date.now() - 5, []);
      jest.advanceTimersByTime(3);
      const children = [sdk.startSpan('handle noop', {}, trace.setSpan(ROOT_CONTEXT, sdkRoot)), leanRoot.child('handle noop')];
      jest.advanceTimersByTime(7);
      for (const c of children) c.addEvent('now').addEvent('a performance reading', otperformance.now() - 1);
      children.forEach((c) => c.end());
      jest.advanceTimersByTime(2);
      [sdkRoot, leanRoot].forEach((r) => r.end());
      const [sdkChild, sdkEnded] = memory.getFinishedSpans();
      const [leanChild, leanEnded] = ended;
      // Performance readings move between the two spans' calls: times agree to within a few ms.
      const ms = (t: HrTime) => Math.round((t[0] * 1e3 + t[1] / 1e6) / 20); // 20 ms steps
      const times = (s: ReadableSpan) => [s.startTime, s.endTime, ...s.events.map((e) => e.time)].map(ms);
      expect(times(leanChild)).toEqual(times(sdkChild));
      expect(times(leanEnded)).toEqual(times(sdkEnded));
      expect(leanEnded.endTime[0]).toBe(Date.UTC(2030, 0, 1, 0, 0, 0) / 1000); // Date's clock, not the performance clock's
      expect({ ...fields(leanChild), startTime: 0, endTime: 0, duration: 0, events: leanChild.events.map((e) => e.name) })
        .toEqual({ ...fields(sdkChild), startTime: 0, endTime: 0, duration: 0, events: sdkChild.events.map((e) => e.name) });
    } finally {
      jest.useRealTimers();
    }
  });

  it('keeps a copy of an array value, never starts after it ends, and has no duration before it ends', () => {
    const list = ['a'];
    const span = LeanSpan.root(sink, 'process noop', SpanKind.CONSUMER, Date.now() + 60_000, []).setAttribute('list', list);
    list.push('b');
    expect(span.duration).toEqual([-1, -1]);
    span.end();
    expect(span.attributes.list).toEqual(['a']);
    expect(span.endTime).toEqual(span.startTime);
  });
});
