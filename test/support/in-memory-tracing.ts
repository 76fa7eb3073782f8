import { runSamplingFromEnv, setRunDecision } from '@almanac/platform';
import { InMemorySpanExporter, NodeTracerProvider, type ReadableSpan, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-node';

/**
 * The OpenTelemetry SDK for one test file (each has its own globals), exporting into memory as
 * each span ends: the global tracer provider and W3C trace-context propagation, with no context
 * manager, and runs' sampling decided before their spans from OTEL_TRACES_SAMPLER in `env`
 * (default: parentbased_always_on), as startTracing registers them in a role by default (a
 * span's context is passed by hand).
 */
export function startInMemoryTracing(env: Record<string, string> = {}): { spans: () => ReadableSpan[]; reset: () => void; stop: () => Promise<void> } {
  const exporter = new InMemorySpanExporter();
  const { sampler, decide } = runSamplingFromEnv(env);
  const provider = new NodeTracerProvider({ sampler, spanProcessors: [new SimpleSpanProcessor(exporter)] });
  provider.register({ contextManager: null });
  setRunDecision(decide);
  return {
    spans: () => exporter.getFinishedSpans(),
    reset: () => exporter.reset(),
    stop: () => {
      setRunDecision(undefined);
      return provider.shutdown();
    },
  };
}
