import { createServer, IncomingHttpHeaders, Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createHarness, DeliveryHarness, destroyHarness } from '@almanac/testing/delivery-harness';
import { DOUBLE_RUN_MODES, runTwice } from '@almanac/testing/double-run';
import { httpHandler, isHostAllowed, parseHttpPayload } from './http.handler';

interface Seen {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: string;
}

describe('http handler', () => {
  let server: Server;
  let port: number;
  let seen: Seen[];
  let h: DeliveryHarness;

  beforeAll(async () => {
    server = createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body });
        const routes: Record<string, () => void> = {
          '/ok': () => res.writeHead(201).end('created'),
          '/unavailable': () => res.writeHead(503, { 'retry-after': '7' }).end(),
          '/broken': () => res.writeHead(500).end(),
          '/missing': () => res.writeHead(404).end('nope'),
          '/redirect-in': () => res.writeHead(307, { location: '/ok' }).end(),
          '/redirect-out': () => res.writeHead(302, { location: `http://localhost:${port}/ok` }).end(),
        };
        (routes[req.url ?? ''] ?? (() => res.writeHead(418).end()))();
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));

  beforeEach(async () => {
    seen = [];
    h = await createHarness({ handlers: [httpHandler({ allowHosts: ['127.0.0.1'], timeoutMs: 2000 })] });
  });
  afterEach(() => destroyHarness(h));

  async function run(path: string, extra: Record<string, unknown> = {}, host = '127.0.0.1') {
    const [id] = await h.enqueue([{ kind: 'http', key: `hook-${path}`, tenantId: 7, payload: { url: `http://${host}:${port}${path}`, body: { hello: 'world' }, ...extra } }]);
    const w = h.worker();
    await h.hot.runOnce();
    await h.runWorker(w);
    return { id, row: await h.job(id), attempts: await h.attempts(id) };
  }

  it('POSTs the body as JSON with Idempotency-Key <tenant>:<key> and records the status', async () => {
    const { row, attempts } = await run('/ok', { headers: { 'X-Trace': 'abc', 'Idempotency-Key': 'forged' } });
    expect(row).toMatchObject({ state: 'd', result: { status: 201 } });
    expect(attempts[0]).toMatchObject({ outcome: 'succeeded', result: { status: 201 } });
    expect(seen).toHaveLength(1);
    expect(seen[0]).toMatchObject({ method: 'POST', url: '/ok', body: '{"hello":"world"}' });
    expect(seen[0].headers).toMatchObject({ 'idempotency-key': '7:hook-/ok', 'content-type': 'application/json', 'x-trace': 'abc' });
  });

  it('retries on 5xx (honouring Retry-After) and records the status on the attempt', async () => {
    const before = Date.now();
    const { row, attempts } = await run('/unavailable');
    expect(row).toMatchObject({ state: 'q', attempts: 1, last_error: 'HTTP 503' });
    expect(row.run_at.getTime()).toBeGreaterThanOrEqual(before + 7000);
    expect(attempts[0]).toMatchObject({ outcome: 'failed', result: { status: 503 } });
    const broken = await run('/broken');
    expect(broken.row).toMatchObject({ state: 'q', last_error: 'HTTP 500' });
  });

  it('gives up on 4xx: the job is dead with the status recorded', async () => {
    const { row, attempts } = await run('/missing');
    expect(row).toMatchObject({ state: 'x', attempts: 1, last_error: 'HTTP 404', result: { status: 404 } });
    expect(attempts[0].outcome).toBe('discarded');
  });

  it('retries on a network error', async () => {
    const closed = createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const deadPort = (closed.address() as AddressInfo).port;
    await new Promise<void>((r) => closed.close(() => r()));
    const [id] = await h.enqueue([{ kind: 'http', payload: { url: `http://127.0.0.1:${deadPort}/x` } }]);
    const w = h.worker();
    await h.hot.runOnce();
    await h.runWorker(w);
    expect(await h.job(id)).toMatchObject({ state: 'q', attempts: 1, last_error: expect.stringMatching(/fetch failed/) });
  });

  it('never contacts a host off the allowlist', async () => {
    const { row } = await run('/ok', {}, 'localhost');
    expect(row).toMatchObject({ state: 'x', last_error: `host localhost:${port} is not on ALMANAC_HTTP_ALLOW_HOSTS` });
    expect(seen).toHaveLength(0);
  });

  it('follows a redirect on an allowed host but not one off the list', async () => {
    const inside = await run('/redirect-in');
    expect(inside.row).toMatchObject({ state: 'd', result: { status: 201 } });
    expect(seen.map((s) => `${s.method} ${s.url}`)).toEqual(['POST /redirect-in', 'POST /ok']);
    seen = [];
    const outside = await run('/redirect-out');
    expect(outside.row).toMatchObject({ state: 'x', last_error: `redirect to localhost:${port} is not on ALMANAC_HTTP_ALLOW_HOSTS` });
    expect(seen.map((s) => s.url)).toEqual(['/redirect-out']);
  });

  it('does not carry the payload\'s credentials across a redirect to another allowed host', async () => {
    await destroyHarness(h);
    h = await createHarness({ handlers: [httpHandler({ allowHosts: ['127.0.0.1', 'localhost'], timeoutMs: 2000 })] });
    const { row } = await run('/redirect-out', { headers: { Authorization: 'Bearer hook-secret', Cookie: 's=1', 'X-Trace': 'abc' } });
    expect(row).toMatchObject({ state: 'd', result: { status: 201 } });
    expect(seen.map((s) => s.url)).toEqual(['/redirect-out', '/ok']);
    expect(seen[0].headers).toMatchObject({ authorization: 'Bearer hook-secret', cookie: 's=1' });
    expect(seen[1].headers.authorization).toBeUndefined();
    expect(seen[1].headers.cookie).toBeUndefined();
    expect(seen[1].headers).toMatchObject({ 'x-trace': 'abc', 'idempotency-key': '7:hook-/redirect-out' });
  });

  it('an empty allowlist allows nothing', () => {
    expect(isHostAllowed(new URL('http://127.0.0.1/'), [])).toBe(false);
    expect(isHostAllowed(new URL('https://api.example.com/x'), ['api.example.com:443'])).toBe(true);
    expect(isHostAllowed(new URL('https://api.example.com:8443/x'), ['api.example.com:443'])).toBe(false);
    expect(isHostAllowed(new URL('https://API.example.com/x'), ['api.example.com'])).toBe(true);
  });

  it('rejects payloads that can never work', () => {
    expect(() => parseHttpPayload({ url: 'ftp://x' })).toThrow('http(s)');
    expect(() => parseHttpPayload({ url: 'http://u:p@x/' })).toThrow('credentials');
    expect(() => parseHttpPayload({})).toThrow('url must be a string');
    expect(() => parseHttpPayload({ url: 'http://x/', headers: { a: 1 } })).toThrow('header a');
  });

  it.each(DOUBLE_RUN_MODES)('has one effect at a receiver that honours Idempotency-Key when the job runs twice (%s)', async (mode) => {
    seen = [];
    const report = await runTwice(httpHandler({ allowHosts: ['127.0.0.1'], timeoutMs: 2000 }), { url: `http://127.0.0.1:${port}/ok` }, {
      mode,
      // What a receiver applies: one effect per Idempotency-Key, however often it is called.
      effects: async () => new Set(seen.map((s) => s.headers['idempotency-key'])).size,
    });
    expect(report.effects).toBe(1);
    expect(seen.length).toBeGreaterThanOrEqual(mode === 'sequential' ? 2 : 1); // it was called again, with the same key
  });
});
