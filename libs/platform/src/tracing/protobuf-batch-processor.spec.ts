import { type Attributes, context, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { ExportResultCode, loggingErrorHandler, setGlobalErrorHandler, TraceState } from '@opentelemetry/core';
import { ProtobufTraceSerializer } from '@opentelemetry/otlp-transformer';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider, InMemorySpanExporter, type ReadableSpan, SamplingDecision, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-node';
import { type BatchSettings, ProtobufBatchSpanProcessor, type WrittenBatch } from './protobuf-batch-processor';

/**
 * The processor's bytes are checked against the SDK's own protobuf serializer over the same
 * spans; the export's HTTP is the SDK exporter's, tested from a real role process in
 * apps/api/test/tracing-export.spec.ts.
 */
describe('ProtobufBatchSpanProcessor', () => {
  let sent: WrittenBatch[];
  let release: (() => void)[];
  let holdExports: boolean;
  let failWith: Error | undefined;
  let reported: Error[];
  const exporter = {
    export: (batch: WrittenBatch, done: (r: { code: ExportResultCode; error?: Error }) => void) => {
      sent.push(batch);
      const result = failWith ? { code: ExportResultCode.FAILED, error: failWith } : { code: ExportResultCode.SUCCESS };
      if (holdExports) release.push(() => done(result));
      else done(result);
    },
    shutdown: () => Promise.resolve(),
  };
  beforeEach(() => {
    sent = [];
    release = [];
    holdExports = false;
    failWith = undefined;
    reported = [];
    setGlobalErrorHandler((e) => reported.push(e as Error));
  });
  afterEach(() => setGlobalErrorHandler(loggingErrorHandler()));

  /** A provider whose spans go to the processor and, all of them, to memory; spans named `unsampled…` are recorded, not sampled. */
  function provider(settings: BatchSettings, attributes: Attributes = { 'service.name': 'almanac-test', 'host.cores': 2, 'x.flag': true }) {
    const memory = new InMemorySpanExporter();
    const processor = new ProtobufBatchSpanProcessor(exporter, settings);
    const p = new BasicTracerProvider({
      resource: resourceFromAttributes(attributes),
      sampler: { shouldSample: (_c, _t, name) => ({ decision: name.startsWith('unsampled') ? SamplingDecision.RECORD : SamplingDecision.RECORD_AND_SAMPLED }) },
      spanProcessors: [new SimpleSpanProcessor(memory), processor],
    });
    return { p, memory, processor };
  }
  const bytesOf = (spans: ReadableSpan[]) => Buffer.from(ProtobufTraceSerializer.serializeRequest(spans) ?? []); // memory holds sampled spans only

  it('writes what the SDK serializer writes for the same spans, byte for byte, over two scopes', async () => {
    const resource = { 'service.name': 'almanac-test', cores: 2, map: { zone: 'eu', n: 1 } } as unknown as Attributes; // a resource's values are not checked
    const { p, memory } = provider({ delayMs: 60_000, batchSize: 100, queueSize: 100 }, resource);
    const almanac = p.getTracer('almanac');
    const other = p.getTracer('user-code', '1.2.3', { schemaUrl: 'https://opentelemetry.io/schemas/1.26.0' });
    const remote = trace.setSpanContext(ROOT_CONTEXT, {
      traceId: '4bf92f3577b34da6a3ce929d0e0e4736', spanId: '00f067aa0ba902b7', traceFlags: 1, isRemote: true, traceState: new TraceState('vendor=a,other=b'),
    });
    const root = almanac.startSpan('process charge', {
      kind: SpanKind.CONSUMER,
      attributes: { 'almanac.tenant': 7, 'almanac.job.key': 'clé-✓', big: 2 ** 40, negative: -5, ratio: 0.25, ok: false, list: ['a', 'b'], numbers: [1, 2.5], long: 'x'.repeat(200), longer: 'y'.repeat(20_000),
        ['k'.repeat(127)]: 'v'.repeat(127), ['l'.repeat(128)]: 'é'.repeat(100), 'clé': 'w'.repeat(128), ['ké'.repeat(70)]: 'one-byte length, two-byte key', lone: 'a\uD800b'.repeat(50) },
      links: [{ context: trace.getSpanContext(remote)!, attributes: { why: 'ingest' } }],
    }, remote);
    root.addEvent('claimed', { rows: 3 });
    root.addEvent('bare');
    const child = other.startSpan('handle charge', {}, trace.setSpan(context.active(), root));
    child.setStatus({ code: SpanStatusCode.ERROR, message: 'card declined' });
    child.end();
    almanac.startSpan('unsampled hand-off').end();
    root.end();
    almanac.startSpan('internal').end();
    await p.forceFlush();
    expect(sent.map((b) => b.spans)).toEqual([3]);
    expect(Buffer.from(sent[0].bytes)).toEqual(bytesOf(memory.getFinishedSpans()));
  });

  it('sends a batch as it fills, without waiting for the timer, and only sampled spans', async () => {
    const { p, memory } = provider({ delayMs: 60_000, batchSize: 2, queueSize: 100 });
    const t = p.getTracer('almanac');
    t.startSpan('a').end();
    t.startSpan('unsampled').end();
    expect(sent).toEqual([]);
    t.startSpan('b').end();
    expect(sent.map((b) => b.spans)).toEqual([2]);
    expect(Buffer.from(sent[0].bytes)).toEqual(bytesOf(memory.getFinishedSpans()));
    await p.shutdown();
  });

  it('drops spans past the queue while a batch is being sent, and sends what is left at shutdown', async () => {
    holdExports = true;
    const { p, memory } = provider({ delayMs: 60_000, batchSize: 2, queueSize: 3 });
    const t = p.getTracer('almanac');
    for (const name of ['a', 'b', 'c', 'dropped']) t.startSpan(name).end(); // a, b being sent; c written; the queue is full
    release.splice(0).forEach((r) => r());
    const c = memory.getFinishedSpans().filter((s) => s.name === 'c'); // the provider's shutdown empties the memory exporter
    const shutdown = p.shutdown();
    t.startSpan('while shutting down').end();
    await Promise.resolve();
    release.splice(0).forEach((r) => r());
    await shutdown;
    expect(sent.map((b) => b.spans)).toEqual([2, 1]);
    expect(Buffer.from(sent[1].bytes)).toEqual(bytesOf(c));
    holdExports = false;
    for (const name of ['after', 'shutdown']) t.startSpan(name).end(); // a whole batch
    expect(sent).toHaveLength(2);
  });

  it('a span that cannot be written is dropped and reported, and the batch it was written into stays whole', async () => {
    const { p, memory, processor } = provider({ delayMs: 60_000, batchSize: 100, queueSize: 100 });
    const t = p.getTracer('almanac');
    t.startSpan('before').end();
    const good = memory.getFinishedSpans()[0];
    const broken = Object.create(good, { events: { get: () => { throw new Error('unreadable'); } } }) as ReadableSpan; // fails halfway through writing
    expect(() => processor.onEnd(broken)).not.toThrow();
    t.startSpan('after').end();
    await processor.forceFlush();
    expect(reported.map((e) => e.message)).toEqual(['unreadable']);
    expect(Buffer.from(sent[0].bytes)).toEqual(bytesOf(memory.getFinishedSpans()));
  });

  it('a failed export is reported, and forceFlush rejects with it', async () => {
    failWith = new Error('collector down');
    const { p, processor } = provider({ delayMs: 60_000, batchSize: 100, queueSize: 100 });
    p.getTracer('almanac').startSpan('a').end();
    await expect(processor.forceFlush()).rejects.toThrow('collector down');
    expect(reported.map((e) => e.message)).toEqual(['collector down']);
  });

  it('a batch larger than the queue is cut to the queue, as the SDK does', () => {
    const { p } = provider({ delayMs: 60_000, batchSize: 10, queueSize: 2 });
    for (const name of ['a', 'b']) p.getTracer('almanac').startSpan(name).end();
    expect(sent.map((b) => b.spans)).toEqual([2]);
  });

  it('sends what waits when the delay runs out', () => {
    jest.useFakeTimers({ doNotFake: ['performance', 'Date', 'hrtime', 'nextTick', 'queueMicrotask'] });
    try {
      const { p } = provider({ delayMs: 5000, batchSize: 512, queueSize: 2048 });
      p.getTracer('almanac').startSpan('a').end();
      jest.advanceTimersByTime(4999);
      expect(sent).toEqual([]);
      jest.advanceTimersByTime(1);
      expect(sent.map((b) => b.spans)).toEqual([1]);
    } finally {
      jest.useRealTimers();
    }
  });
});
