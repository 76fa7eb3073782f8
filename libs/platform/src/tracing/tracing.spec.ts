import { context, ROOT_CONTEXT, SpanKind, trace } from '@opentelemetry/api';
import { inSpanContext, tracer } from './job-spans';
import { LeanSpan } from './lean-span';
import { startRunSpan } from './run-sampling';
import { otlpProtocol, startTracing, stopTracing, tracingChoice, tracingContext } from './tracing';

/** The export itself is tested from a real role process: apps/api/test/tracing-export.spec.ts. */
describe('tracingChoice', () => {
  it.each([
    [{}, 'off'],
    [{ OTEL_SERVICE_NAME: 'x' }, 'off'],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }, 'otlp'],
    [{ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://collector:4318/v1/traces' }, 'otlp'],
    [{ OTEL_TRACES_EXPORTER: 'otlp' }, 'otlp'],
    [{ OTEL_TRACES_EXPORTER: 'console' }, 'console'],
    [{ OTEL_TRACES_EXPORTER: 'none', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }, 'off'],
    [{ OTEL_SDK_DISABLED: 'TRUE', OTEL_TRACES_EXPORTER: 'otlp' }, 'off'],
  ])('%j → %s', (env, choice) => {
    expect(tracingChoice(env)).toBe(choice);
  });
});

describe('otlpProtocol', () => {
  it.each([
    [{}, 'http/protobuf'],
    [{ OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' }, 'http/json'],
    [{ OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json', OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/protobuf' }, 'http/protobuf'],
    [{ OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/json' }, 'http/json'],
  ])('%j → %s', (env, protocol) => {
    expect(otlpProtocol(env)).toBe(protocol);
  });

  it('refuses gRPC, which is not shipped, by name', () => {
    expect(() => otlpProtocol({ OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' })).toThrow(/must be http\/protobuf or http\/json \(got grpc\)/);
  });
});

describe('tracingContext', () => {
  it('passes context by hand unless asked for AsyncLocalStorage, and names the variable for anything else', () => {
    expect(tracingContext({})).toBe('explicit');
    expect(tracingContext({ ALMANAC_TRACING_CONTEXT: 'async-local-storage' })).toBe('async-local-storage');
    expect(() => tracingContext({ ALMANAC_TRACING_CONTEXT: 'als' })).toThrow(/ALMANAC_TRACING_CONTEXT must be/);
  });
});

describe('startTracing', () => {
  const env = { ...process.env };
  afterEach(async () => {
    await stopTracing();
    process.env = { ...env };
  });

  it.each([
    ['async-local-storage', true],
    ['explicit', false],
  ])('ALMANAC_TRACING_CONTEXT=%s: the span is active inside inSpanContext: %s (it is always passed by hand)', async (mode, active) => {
    Object.assign(process.env, { OTEL_TRACES_EXPORTER: 'console', ALMANAC_TRACING_CONTEXT: mode, OTEL_TRACES_SAMPLER: 'always_off' });
    expect(startTracing('probe')).toBe('console');
    const span = tracer.startSpan('outer', {}, ROOT_CONTEXT);
    await inSpanContext(span, async (passed) => {
      await Promise.resolve();
      expect(trace.getSpan(passed)).toBe(span);
      expect(trace.getSpan(context.active()) === span).toBe(active);
    });
    span.end();
  });

  it('with none of the OTEL_* variables, starts nothing: spans are the no-op kind', async () => {
    expect(startTracing('probe')).toBe('off');
    const span = tracer.startSpan('nothing');
    expect(span.isRecording()).toBe(false);
    span.end();
    await stopTracing();
  });

  it.each([
    [{}, true],
    [{ OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' }, false],
    [{ OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT: '16' }, false],
    [{ OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT: '256' }, false],
  ])('over OTLP %j, a sampled run is a LeanSpan: %s (it keeps the default limits only)', (extra, lean) => {
    Object.assign(process.env, { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9', ...extra });
    expect(startTracing('probe')).toBe('otlp');
    // Linked to a sampled request, so decided here: `tracer` keeps the provider it first met in this file (always_off), not this one.
    const sampledRequest = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
    const run = startRunSpan('process noop', SpanKind.CONSUMER, Date.now(), sampledRequest); // never ended: nothing to export
    expect(run.isRecording()).toBe(true);
    expect(run instanceof LeanSpan).toBe(lean);
  });
});
