import { tracer } from './job-spans';
import { startTracing, stopTracing, tracingChoice } from './tracing';

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

describe('startTracing', () => {
  it('with none of the OTEL_* variables, starts nothing: spans are the no-op kind', async () => {
    expect(startTracing('probe')).toBe('off');
    const span = tracer.startSpan('nothing');
    expect(span.isRecording()).toBe(false);
    span.end();
    await stopTracing();
  });
});
