import { leanSinkOf, runSamplingFromEnv, setRunDecision } from '@almanac/platform';
import { defaultResource } from '@opentelemetry/resources';
import { InMemorySpanExporter, NodeTracerProvider, type ReadableSpan, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-node';

/**
 * The OpenTelemetry SDK for one test file (each has its own globals), exporting into memory as
 * each span ends: the global tracer provider and W3C trace-context propagation, with no context
 * manager, and runs' sampling decided before their spans from OTEL_TRACES_SAMPLER in `env`
 * (default: parentbased_always_on), as startTracing registers them in a role by default (a
 * span's context is passed by hand). A sampled run's spans are the SDK's; `runs('lean')` makes
 * them LeanSpans, as startTracing does for OTLP protobuf export.
 */
export function startInMemoryTracing(env: Record<string, string> = {}): {
  spans: () => ReadableSpan[]; reset: () => void; runs: (spans: 'sdk' | 'lean') => void; stop: () => Promise<void>;
} {
  const exporter = new InMemorySpanExporter();
  const { sampler, decide } = runSamplingFromEnv(env);
  const resource = defaultResource();
  const processor = new SimpleSpanProcessor(exporter);
  const provider = new NodeTracerProvider({ resource, sampler, spanProcessors: [processor] });
  provider.register({ contextManager: null });
  setRunDecision(decide);
  return {
    spans: () => exporter.getFinishedSpans(),
    reset: () => exporter.reset(),
    runs: (spans) => setRunDecision(decide, spans === 'lean' ? leanSinkOf(provider, resource, processor) : undefined),
    stop: () => {
      setRunDecision(undefined);
      return provider.shutdown();
    },
  };
}
