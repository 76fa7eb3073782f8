import { InMemorySpanExporter, NodeTracerProvider, type ReadableSpan, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-node';

/**
 * The OpenTelemetry SDK for one test file (each has its own globals), exporting into memory as
 * each span ends: the global tracer provider and W3C trace-context propagation, with no context
 * manager, as startTracing registers them in a role by default (a span's context is passed by hand).
 */
export function startInMemoryTracing(): { spans: () => ReadableSpan[]; reset: () => void; stop: () => Promise<void> } {
  const exporter = new InMemorySpanExporter();
  const provider = new NodeTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  provider.register({ contextManager: null });
  return { spans: () => exporter.getFinishedSpans(), reset: () => exporter.reset(), stop: () => provider.shutdown() };
}
