import { SpanKind } from '@opentelemetry/api';
import { startInMemoryTracing } from '@almanac/testing/in-memory-tracing';
import { type ApiHarness, startApi } from './api-harness';

/**
 * Ingest under OpenTelemetry (the SDK with an in-memory exporter): each create call is a
 * producer span, a child of the request's W3C traceparent (or a new trace), and the rows keep
 * that span's traceparent, for their runs' span links (apps/worker/src/run-spans.spec.ts).
 */
describe('ingest spans', () => {
  const tracing = startInMemoryTracing();
  let api: ApiHarness;
  let auth: string;
  const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
  const callerSpan = '00f067aa0ba902b7';

  beforeAll(async () => {
    api = await startApi();
    auth = `Bearer ${(await api.createTenant()).apiKey}`;
  });
  afterAll(async () => {
    await api.close();
    await tracing.stop();
  });
  beforeEach(() => tracing.reset());

  const storedTraceParent = async (id: string) =>
    (await api.db.dataSource.query<{ trace_parent: string | null }[]>(`SELECT trace_parent FROM jobs WHERE id = $1`, [id]))[0].trace_parent;
  const sendSpans = () => tracing.spans().filter((s) => s.kind === SpanKind.PRODUCER);

  it("continues the caller's trace and keeps the producer span's traceparent with the row", async () => {
    const res = await api.http().post('/v1/jobs').set('Authorization', auth)
      .set('traceparent', `00-${traceId}-${callerSpan}-01`)
      .send({ kind: 'noop', key: 'traced-1', runAt: new Date().toISOString() })
      .expect(201);
    const [span] = sendSpans();
    expect(span.name).toBe('send noop');
    expect(span.spanContext().traceId).toBe(traceId);
    expect(span.parentSpanContext?.spanId).toBe(callerSpan);
    expect(span.attributes).toMatchObject({
      'messaging.system': 'almanac', 'messaging.operation.type': 'send', 'messaging.destination.name': 'noop',
      'almanac.job.id': res.body.id, 'almanac.job.key': 'traced-1', 'almanac.tenant': expect.any(Number),
    });
    expect(await storedTraceParent(res.body.id as string)).toBe(`00-${traceId}-${span.spanContext().spanId}-01`);
  });

  it('starts a trace for a request without one; a batch is one span, its rows share its traceparent', async () => {
    const res = await api.http().post('/v1/jobs/batch').set('Authorization', auth)
      .send({ jobs: ['traced-b1', 'traced-b2', 'traced-b3'].map((key, i) => ({ kind: i < 2 ? 'noop' : 'nope', key, runAt: new Date().toISOString() })) })
      .expect(200);
    const [span] = sendSpans();
    expect(sendSpans()).toHaveLength(1);
    expect(span.parentSpanContext).toBeUndefined();
    expect(span.attributes['messaging.batch.message_count']).toBe(3);
    const ids = (res.body.results as { job?: { id: string } }[]).flatMap((r) => (r.job ? [r.job.id] : []));
    expect(ids).toHaveLength(2);
    for (const id of ids) expect(await storedTraceParent(id)).toBe(`00-${span.spanContext().traceId}-${span.spanContext().spanId}-01`);
  });

  it('marks the span failed when the call fails', async () => {
    await api.http().post('/v1/jobs').set('Authorization', auth).send({ kind: 'noop' }).expect(400);
    const [span] = sendSpans();
    expect(span.status.code).toBe(2); // SpanStatusCode.ERROR
    expect(span.events.map((e) => e.name)).toEqual(['exception']);
  });
});
