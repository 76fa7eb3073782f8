import { SpanKind } from '@opentelemetry/api';
import { InMemorySpanExporter, NodeTracerProvider, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-node';
import { runSamplingFromEnv, setRunDecision, startRunChildSpan, startRunSpan } from './run-sampling';

/** A file of its own: a test file registers one global provider, and run-sampling.spec.ts's is parent-based. */
describe('startRunChildSpan under a sampler that is not parent-based', () => {
  const exporter = new InMemorySpanExporter();
  const { sampler } = runSamplingFromEnv({ OTEL_TRACES_SAMPLER: 'traceidratio', OTEL_TRACES_SAMPLER_ARG: '0.5' });
  const provider = new NodeTracerProvider({ sampler, spanProcessors: [new SimpleSpanProcessor(exporter)] });
  beforeAll(() => {
    provider.register({ contextManager: null });
    setRunDecision({ linked: () => true, root: () => true, rootsOff: false }); // every run decided sampled, whatever its trace id
  });
  afterAll(async () => {
    setRunDecision(undefined);
    await provider.shutdown();
  });

  it("records a sampled run's handle span with it, as a LeanSpan's child is, instead of drawing again", () => {
    for (let i = 0; i < 20; i++) { // drawn again by trace id, about half the children would be dropped
      const run = startRunSpan('process noop', SpanKind.CONSUMER, Date.now(), null);
      expect(run.isRecording()).toBe(true);
      expect(startRunChildSpan('handle noop', run).isRecording()).toBe(true);
    }
  });
});
