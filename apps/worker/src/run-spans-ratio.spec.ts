import { createHarness, DeliveryHarness, destroyHarness } from '@almanac/testing/delivery-harness';
import { startInMemoryTracing } from '@almanac/testing/in-memory-tracing';
import { tracedKind } from '@almanac/testing/traced-handler';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-node';

/**
 * Runs under plain `traceidratio` (not parent-based): its sampler decides every span on its trace
 * id, so a run is decided on the trace id it carries, and what its handler starts under it (its
 * transaction, a span of its own, a call's traceparent) is kept, or dropped, with it. A file of its
 * own: a test file registers one global provider, and run-spans.spec.ts's is the default.
 */
const tracing = startInMemoryTracing({ OTEL_TRACES_SAMPLER: 'traceidratio', OTEL_TRACES_SAMPLER_ARG: '0.5' });
afterAll(() => tracing.stop());

/** The traceparent each job's handler would send with a call, by job id. */
const sent = new Map<string, string>();
const tracedHandler = tracedKind((jobId, traceparent) => void sent.set(jobId, traceparent));


describe.each(['sdk', 'lean'] as const)('run spans under traceidratio 0.5 (%s)', (runs) => {
  let h: DeliveryHarness;
  beforeAll(() => tracing.runs(runs));
  beforeEach(async () => {
    sent.clear();
    tracing.reset();
    h = await createHarness({ handlers: [tracedHandler] });
  });
  afterEach(() => destroyHarness(h));

  it('keeps each run with all its children, or none of them', async () => {
    const ingest = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01'; // a link: not looked at by a sampler that is not parent-based
    const ids = await h.enqueue(Array.from({ length: 20 }, (_, i) => ({ kind: 'traced', traceParent: i % 2 ? ingest : undefined })));
    await h.hot.runOnce();
    expect(await h.runWorker(h.worker())).toBe(20);
    const spans = tracing.spans().filter((s) => s.name !== 'hand off');
    const byId = new Map(spans.map((s) => [s.spanContext().spanId, s]));
    const runOf = (s: ReadableSpan): ReadableSpan | undefined => { // the root its parents lead to, if all were exported
      if (!s.parentSpanContext) return s;
      const parent = byId.get(s.parentSpanContext.spanId);
      return parent && runOf(parent);
    };
    const runSpans = spans.filter((s) => s.name === 'process traced');
    expect(runSpans.length).toBeGreaterThan(0); // 20 runs at 0.5: all or none sampled once in 500,000
    expect(runSpans.length).toBeLessThan(20);
    for (const s of spans) expect(runOf(s)?.name).toBe('process traced'); // no child without its run
    expect(spans).toHaveLength(runSpans.length * 4); // process, handle, own work, tx
    for (const id of ids) {
      const run = runSpans.find((s) => s.attributes['almanac.job.id'] === id);
      const own = spans.find((s) => s.name === 'own work' && run && runOf(s) === run);
      expect(sent.get(id)).toMatch(run ? `00-${run.spanContext().traceId}-${own!.spanContext().spanId}-01` : /-00$/);
    }
  });
});
