import { TenantOutboundRepository, TenantsRepository } from '@almanac/persistence';
import { runSamplingFromEnv, setRunDecision } from '@almanac/platform';
import { createHarness, DeliveryHarness, destroyHarness } from '@almanac/testing/delivery-harness';
import { startInMemoryTracing } from '@almanac/testing/in-memory-tracing';
import { tracedKind } from '@almanac/testing/traced-handler';
import { SpanKind } from '@opentelemetry/api';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-node';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { chargeHandler, noopHandler } from './handlers';
import { httpHandler } from './handlers/http.handler';
import { TENANT_OUTBOUND_CACHE, TenantOutboundCache } from './handlers/tenant-outbound';

/**
 * A run under OpenTelemetry (the SDK with an in-memory exporter): one `process` span per attempt,
 * linked (not parented) to the ingest span that created the job, ending at the outcome's write,
 * with the claim as its `claimed` event and the handler, its ctx.tx() and its outbound call as children; the http kind
 * carries the call's traceparent to the receiver. The dispatcher's hand-offs are spans too. All
 * of it with the SDK's spans for a run and with LeanSpans (what OTLP protobuf export uses).
 */
const tracing = startInMemoryTracing();
afterAll(() => tracing.stop());

/** What a handler does with ctx.traceContext: a span of its own, a traceparent for a call it makes (kept in `sent`), its transaction. */
let sent: string[];
const tracedHandler = tracedKind((_, traceparent) => void sent.push(traceparent));


describe.each(['sdk', 'lean'] as const)('run spans (%s)', (runs) => {
  const producer = { traceId: '4bf92f3577b34da6a3ce929d0e0e4736', spanId: '00f067aa0ba902b7' };
  const traceParent = `00-${producer.traceId}-${producer.spanId}-01`;
  let h: DeliveryHarness;
  let server: Server;
  let received: IncomingHttpHeaders[];
  let origin: string;

  beforeAll(async () => {
    server = createServer((req, res) => {
      received.push(req.headers);
      req.resume().on('end', () => res.writeHead(204).end());
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    tracing.runs(runs);
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));
  beforeEach(async () => {
    received = [];
    sent = [];
    tracing.reset();
    const http = httpHandler({
      allowHosts: [origin], allowCidrs: ['127.0.0.1/32'], timeoutMs: 3000,
      tenants: new TenantOutboundCache((id) => new TenantOutboundRepository(h.ds).forDelivery(id), { ...TENANT_OUTBOUND_CACHE, ttlMs: 0 }),
    });
    h = await createHarness({ handlers: [noopHandler, chargeHandler, http, tracedHandler] });
  });
  afterEach(() => destroyHarness(h));

  async function runOne(seed: Parameters<DeliveryHarness['enqueue']>[0][0]): Promise<ReadableSpan[]> {
    const [id] = await h.enqueue([seed]);
    await h.hot.runOnce();
    expect(await h.runWorker(h.worker())).toBe(1);
    expect((await h.job(id)).state).toBe('d');
    return tracing.spans();
  }
  /** A tenant whose outbound calls may reach the test server. */
  async function httpTenant(): Promise<number> {
    const { tenant } = await new TenantsRepository(h.ds).create('acme');
    const outbound = new TenantOutboundRepository(h.ds);
    await outbound.setAllowHosts(tenant.id, [origin]);
    await outbound.rotateSigningSecret(tenant.id, 86_400_000);
    return tenant.id;
  }
  const childrenOf = (spans: ReadableSpan[], parent: ReadableSpan) => spans.filter((s) => s.parentSpanContext?.spanId === parent.spanContext().spanId);

  it('links the run to the ingest span and covers the claim (an event), the handler and its transaction, up to the write', async () => {
    const spans = await runOne({ kind: 'charge', key: 'inv-1', traceParent, payload: { invoiceId: 'inv-1', amountCents: 500 } });
    const root = spans.find((s) => s.name === 'process charge')!;
    expect(root.constructor.name).toBe(runs === 'lean' ? 'LeanSpan' : 'SpanImpl');
    expect(root.kind).toBe(SpanKind.CONSUMER);
    expect(root.parentSpanContext).toBeUndefined(); // a job may run months later: a link, not a parent
    expect(root.spanContext().traceId).not.toBe(producer.traceId);
    expect(root.links.map((l) => l.context)).toEqual([expect.objectContaining(producer)]);
    expect(root.attributes).toMatchObject({
      'messaging.system': 'almanac', 'messaging.operation.type': 'process', 'messaging.destination.name': 'charge',
      'almanac.tenant': 1, 'almanac.job.key': 'inv-1', 'almanac.attempt': 1, 'messaging.consumer.group.name': 'default',
    });
    expect(childrenOf(spans, root).map((s) => s.name)).toEqual(['handle charge']);
    expect(root.events.map((e) => e.name)).toEqual(['claimed']); // the claim: from the span's start to this event
    expect(root.attributes['almanac.write']).toBe('applied');
    const handler = spans.find((s) => s.name === 'handle charge')!;
    expect(handler.attributes['almanac.outcome']).toBe('completed');
    const [tx] = childrenOf(spans, handler);
    expect(tx).toMatchObject({ name: 'tx', attributes: { 'almanac.tx.end': 'commit' } });
  });

  it("makes a span of each envelope the dispatcher hands off, counting its rows", async () => {
    await h.enqueue([{ kind: 'noop' }, { kind: 'noop' }]);
    expect(await h.hot.runOnce()).toBe(2);
    const [handOff] = tracing.spans().filter((s) => s.name === 'hand off');
    expect(handOff.attributes).toMatchObject({ 'messaging.system': 'almanac', 'messaging.batch.message_count': 2 });
  });

  it("a run whose ingest span was not sampled exports nothing, and passes its request's trace, unsampled, to what its handler starts (docs/decisions/2026-12-05-tracing-cost.md)", async () => {
    const spans = await runOne({ kind: 'traced', traceParent: traceParent.replace(/-01$/, '-00') });
    expect(spans.filter((s) => s.name !== 'hand off')).toEqual([]);
    expect(sent).toEqual([expect.stringMatching(new RegExp(`^00-${producer.traceId}-[0-9a-f]{16}-00$`))]);
  });

  it("a run whose ingest span was not sampled calls out as a span of its own in its request's trace, unsampled, not as the ingest span", async () => {
    const tenantId = await httpTenant();
    const unsampled = traceParent.replace(/-01$/, '-00');
    await runOne({ kind: 'http', tenantId, traceParent: unsampled, payload: { url: `${origin}/hook` } });
    await runOne({ kind: 'http', tenantId, traceParent: unsampled, payload: { url: `${origin}/hook` } }); // a batch's jobs share one traceparent
    const sentIds = received.map((r) => r.traceparent as string);
    for (const sentId of sentIds) expect(sentId).toMatch(new RegExp(`^00-${producer.traceId}-[0-9a-f]{16}-00$`));
    expect(sentIds.map((t) => t.slice(36, 52))).not.toContain(producer.spanId); // the API's ingest span was not exported: no call is its child
    expect(new Set(sentIds).size).toBe(2);
  });

  it.each(['always_off', 'parentbased_always_off'])('under %s, a root run propagates no trace and exports no span', async (sampler) => {
    // the decision only: this file's provider stays parentbased_always_on (one per file), and a LeanSpan sink is not needed for a run never sampled
    setRunDecision(runSamplingFromEnv({ OTEL_TRACES_SAMPLER: sampler }).decide);
    try {
      const spans = await runOne({ kind: 'http', tenantId: await httpTenant(), payload: { url: `${origin}/hook` } });
      expect(received).toHaveLength(1);
      expect(received[0].traceparent).toBeUndefined();
      expect(spans.filter((s) => s.name !== 'hand off')).toEqual([]);
    } finally {
      tracing.runs(runs);
    }
  });

  it('a sampled run passes its own trace, sampled, to what its handler starts', async () => {
    const spans = await runOne({ kind: 'traced', traceParent });
    const handler = spans.find((s) => s.name === 'handle traced')!;
    expect(childrenOf(spans, handler).map((s) => s.name).sort()).toEqual(['own work', 'tx']);
    const own = spans.find((s) => s.name === 'own work')!.spanContext();
    expect(sent).toEqual([`00-${own.traceId}-${own.spanId}-01`]);
  });

  it('has no link for a job created without a trace', async () => {
    const spans = await runOne({ kind: 'noop' });
    expect(spans.find((s) => s.name === 'process noop')!.links).toEqual([]);
  });

  it('the http kind sends its client span as traceparent', async () => {
    const spans = await runOne({ kind: 'http', tenantId: await httpTenant(), traceParent, payload: { url: `${origin}/hook?token=secret` } });
    const handler = spans.find((s) => s.name === 'handle http')!;
    const [call] = childrenOf(spans, handler);
    expect(call).toMatchObject({ name: 'POST', kind: SpanKind.CLIENT });
    expect(call.attributes).toMatchObject({ 'http.request.method': 'POST', 'http.response.status_code': 204 });
    expect(call.attributes['url.path']).toBeUndefined(); // a webhook's path may be its secret
    expect(JSON.stringify(call.attributes)).not.toContain('secret');
    expect(received[0].traceparent).toBe(`00-${call.spanContext().traceId}-${call.spanContext().spanId}-01`);
  });
});
