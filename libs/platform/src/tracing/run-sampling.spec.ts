import { INVALID_SPAN_CONTEXT, isSpanContextValid, propagation, ROOT_CONTEXT, SpanKind, trace, TraceFlags } from '@opentelemetry/api';
import { InMemorySpanExporter, NodeTracerProvider, RandomIdGenerator, SamplingDecision, SimpleSpanProcessor, TraceIdRatioBasedSampler } from '@opentelemetry/sdk-trace-node';
import { tracer } from './job-spans';
import { type RunDecision, runSamplingFromEnv, setRunDecision, startRunSpan } from './run-sampling';

const ingest = (flags: string) => `00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-${flags}`;
const ids = new RandomIdGenerator();
/** A run's decision: by its link, else as a root on a trace id. */
const sampledRun = (decide: RunDecision, flags: number | undefined, traceId = ids.generateTraceId()) => decide.linked(flags) ?? decide.root(traceId);

describe('runSamplingFromEnv: a run decided before its span', () => {
  it.each([
    // sampler, ratio, the ingest span's flags (none: no link), sampled
    [undefined, undefined, undefined, true], // parentbased_always_on, the SDK's default
    [undefined, undefined, 0, false], // an ingest span explicitly not sampled: the run follows it
    ['parentbased_always_off', undefined, 1, true], // an ingest span sampled: so is its run, so the trace connects
    ['parentbased_always_off', undefined, undefined, false],
    ['parentbased_traceidratio', '0', 1, true],
    ['parentbased_traceidratio', '1', 0, false],
    ['parentbased_traceidratio', '0', undefined, false],
    ['parentbased_traceidratio', '1', undefined, true],
    ['always_on', undefined, 0, true], // not parent-based: the link's flag is not looked at
    ['always_off', undefined, 1, false],
    ['traceidratio', '1', 0, true],
    ['traceidratio', '0', 1, false],
    ['traceidratio', '7', undefined, true], // out of range: 1, as the SDK reads it
    ['jaeger_remote', undefined, 0, false], // unknown: parentbased_always_on, as the SDK reads it
  ])('%s (arg %s), ingest flags %s → sampled %s', (sampler, arg, flags, sampled) => {
    const env = { ...(sampler ? { OTEL_TRACES_SAMPLER: sampler } : {}), ...(arg ? { OTEL_TRACES_SAMPLER_ARG: arg } : {}) };
    expect(sampledRun(runSamplingFromEnv(env).decide, flags)).toBe(sampled);
  });

  it("decides a traceidratio root on its trace id, as the SDK's ratio sampler decides that trace's spans", () => {
    for (const sampler of ['traceidratio', 'parentbased_traceidratio']) {
      const { decide } = runSamplingFromEnv({ OTEL_TRACES_SAMPLER: sampler, OTEL_TRACES_SAMPLER_ARG: '0.5' });
      const ratio = new TraceIdRatioBasedSampler(0.5);
      for (let i = 0; i < 50; i++) {
        const traceId = ids.generateTraceId();
        expect(decide.root(traceId)).toBe(ratio.shouldSample(ROOT_CONTEXT, traceId).decision === SamplingDecision.RECORD_AND_SAMPLED);
      }
    }
  });

  it('samples about the configured ratio of runs without a link', () => {
    const { decide } = runSamplingFromEnv({ OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '0.1' });
    let n = 0;
    for (let i = 0; i < 20_000; i++) if (sampledRun(decide, undefined)) n++;
    expect(n).toBeGreaterThan(1_600);
    expect(n).toBeLessThan(2_400);
  });
});

describe('startRunSpan', () => {
  const exporter = new InMemorySpanExporter();
  const { sampler, decide } = runSamplingFromEnv({ OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '0' });
  const provider = new NodeTracerProvider({ sampler, spanProcessors: [new SimpleSpanProcessor(exporter)] });
  beforeAll(() => {
    provider.register({ contextManager: null });
    setRunDecision(decide);
  });
  afterAll(async () => {
    setRunDecision(undefined);
    await provider.shutdown();
  });
  beforeEach(() => exporter.reset());

  it('makes a non-recording span, and no SDK span, for a run not sampled: valid ids, not sampled, in its request\'s trace when it has one', () => {
    const span = startRunSpan('process noop', SpanKind.CONSUMER, 1, ingest('00'));
    expect(span.isRecording()).toBe(false);
    expect(span.spanContext()).toMatchObject({ traceId: '4bf92f3577b34da6a3ce929d0e0e4736', traceFlags: TraceFlags.NONE });
    expect(isSpanContextValid(span.spanContext())).toBe(true);
    expect(span.spanContext().spanId).not.toBe('00f067aa0ba902b7'); // its own span, not the ingest span (linked, not parented)
    expect(startRunSpan('process noop', SpanKind.CONSUMER, 1, ingest('00')).spanContext().spanId).not.toBe(span.spanContext().spanId); // each run (a batch's jobs, each attempt) its own
    span.end();
    const root = startRunSpan('process noop', SpanKind.CONSUMER, 1, null); // ratio 0
    expect(root.isRecording()).toBe(false);
    expect(isSpanContextValid(root.spanContext()) && root.spanContext().traceFlags).toBe(TraceFlags.NONE);
    expect(exporter.getFinishedSpans()).toEqual([]);
  });

  it.each(['always_off', 'parentbased_always_off'])('under %s, a root run carries no trace: no ids, nothing to propagate, no span', (sampler) => {
    setRunDecision(runSamplingFromEnv({ OTEL_TRACES_SAMPLER: sampler }).decide);
    try {
      const span = startRunSpan('process noop', SpanKind.CONSUMER, 1, sampler === 'always_off' ? ingest('01') : null); // always_off: the link's flag not looked at
      expect(span.spanContext()).toEqual(INVALID_SPAN_CONTEXT);
      const headers: Record<string, string> = {};
      propagation.inject(trace.setSpan(ROOT_CONTEXT, span), headers);
      expect(headers).toEqual({});
      span.end();
      expect(exporter.getFinishedSpans()).toEqual([]);
    } finally {
      setRunDecision(decide);
    }
  });

  it('a run decided sampled is recorded although the SDK sampler (ratio 0) would drop a root, and keeps its link', () => {
    const span = startRunSpan('process noop', SpanKind.CONSUMER, 1, ingest('01'));
    expect(span.isRecording()).toBe(true);
    span.end();
    const [done] = exporter.getFinishedSpans();
    expect(done.parentSpanContext).toBeUndefined();
    expect(done.links.map((l) => l.context.spanId)).toEqual(['00f067aa0ba902b7']);
  });

  it('other spans keep the configured sampler', () => {
    expect(tracer.startSpan('ingest', {}, ROOT_CONTEXT).isRecording()).toBe(false); // a root at ratio 0
  });
});
