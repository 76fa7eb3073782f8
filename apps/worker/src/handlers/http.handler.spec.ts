import { lookup as dnsLookup } from 'node:dns/promises';
import { readFileSync } from 'node:fs';
import { createServer, IncomingHttpHeaders, Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { runInThisContext } from 'node:vm';
import { RetentionRepository, TenantOutboundRepository, TenantsRepository } from '@almanac/persistence';
import { createHarness, DeliveryHarness, destroyHarness } from '@almanac/testing/delivery-harness';
import { DOUBLE_RUN_MODES, runTwice } from '@almanac/testing/double-run';
import type { DataSource } from 'typeorm';
import { httpHandler, type HttpHandlerOptions, parseHttpPayload } from './http.handler';
import type { Resolver } from './outbound-net';
import { TENANT_OUTBOUND_CACHE, TenantOutboundCache } from './tenant-outbound';

interface Seen {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: string;
}

type Verify = (header: string, req: { method: string; url: string; idempotencyKey: string; rawBody: string }, secret: string, toleranceSec?: number) => boolean;

/** docs/api.md's "Verifying a signature" block, run as written. */
function readmeVerifier(): Verify {
  const readme = readFileSync(join(__dirname, '../../../../docs/api.md'), 'utf8');
  const section = readme.slice(readme.indexOf('## Verifying a signature'));
  const code = /```js\n([\s\S]*?)```/.exec(section)![1];
  return (runInThisContext(`(function (require) {\n${code}\nreturn verifyAlmanacSignature;\n})`) as (r: NodeJS.Require) => Verify)(require);
}

/** Redirects the test server answers: what, its path, its status, its Location (given the server's port). */
const REDIRECTS: [string, string, number, (port: number) => string][] = [
  ['302 to another path of the origin', '/redirect-path', 302, () => '/ok'],
  ['307 (same method and body) to another path', '/redirect-in', 307, () => '/ok#section'],
  ['308 to another path', '/redirect-permanent', 308, () => '/ok'],
  ['302 to another origin on both lists', '/redirect-out', 302, (port) => `http://localhost:${port}/ok`],
  ['307 to a private address', '/redirect-private', 307, (port) => `http://10.0.0.1:${port}/ok`],
  ['307 to a name that resolves privately', '/redirect-rebind', 307, (port) => `http://rebind.test:${port}/ok`],
  ['302 to the metadata service', '/redirect-metadata', 302, () => 'http://169.254.169.254/latest/meta-data/'],
  ['302 whose Location is not a URL', '/redirect-unparseable', 302, () => 'http://[::1'],
];

describe('http handler', () => {
  let server: Server;
  let port: number;
  let seen: Seen[];
  let endless: { written: number; closed: boolean };
  let h: DeliveryHarness;
  let ds: DataSource | undefined;
  let tenantId: number;
  let secret: string;
  const verify = readmeVerifier();

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
          // Redirects (REDIRECTS below says where each one points).
          ...Object.fromEntries(REDIRECTS.map(([, path, status, location]) => [path, () => res.writeHead(status, { location: location(port) }).end()])),
          // A body that never ends: only the bound stops the reader.
          '/endless': () => {
            res.writeHead(200, { 'content-type': 'application/octet-stream' });
            const chunk = Buffer.alloc(64 * 1024, 120);
            res.on('close', () => (endless.closed = true));
            const pump = () => {
              while (!res.destroyed && endless.written < 512 * 1024 * 1024) {
                endless.written += chunk.length;
                if (!res.write(chunk)) return void res.once('drain', pump);
              }
            };
            pump();
          },
          '/announced': () => {
            res.writeHead(200, { 'content-length': String(100 * 1024 * 1024) });
            res.write('x'.repeat(1000)); // and then nothing: a reader that waited for 100 MiB would time out
          },
        };
        (routes[req.url ?? ''] ?? (() => res.writeHead(418).end()))();
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(() => {
    server.closeAllConnections();
    return new Promise<void>((r) => server.close(() => r()));
  });

  /** Every origin the tests name, on the installation's list. */
  const origins = () => [
    `http://127.0.0.1:${port}`, `http://localhost:${port}`, `http://10.0.0.1:${port}`, `http://rebind.test:${port}`, `http://mixed.test:${port}`,
    `http://[::1]:${port}`, `http://[::ffff:127.0.0.1]:${port}`, 'http://169.254.169.254',
  ];
  /** Test DNS for names only the tests use (as a DNS server a customer controls would answer); the rest is the system's resolver. */
  const resolve: Resolver = async (host, family) =>
    ({
      'rebind.test': [{ address: '10.1.2.3', family: 4 }],
      'mixed.test': [{ address: '10.0.0.7', family: 4 }, { address: '127.0.0.1', family: 4 }],
    })[host] ?? dnsLookup(host, { all: true, family });

  /** The handler as the worker builds it, reading tenants' rules from the harness's database (no cache delay). */
  const handler = (opts: Partial<HttpHandlerOptions> = {}) =>
    httpHandler({
      allowHosts: origins(),
      allowCidrs: ['127.0.0.1/32'],
      timeoutMs: 3000,
      resolve,
      tenants: new TenantOutboundCache((id) => new TenantOutboundRepository(ds!).forDelivery(id), { ...TENANT_OUTBOUND_CACHE, ttlMs: 0 }),
      ...opts,
    });

  /** A tenant (id 1, the harness's default) allowed every test origin, with a signing secret. */
  async function prepareTenant(d: DataSource): Promise<void> {
    ds = d;
    const { tenant } = await new TenantsRepository(d).create('acme');
    tenantId = tenant.id;
    const outbound = new TenantOutboundRepository(d);
    await outbound.setAllowHosts(tenantId, origins());
    secret = (await outbound.rotateSigningSecret(tenantId, 86_400_000))!.secret;
  }

  async function start(opts: Partial<HttpHandlerOptions> = {}) {
    if (h) await destroyHarness(h);
    h = await createHarness({ handlers: [handler(opts)] });
    await prepareTenant(h.ds);
  }

  beforeEach(async () => {
    seen = [];
    endless = { written: 0, closed: false };
    await start();
  });
  afterEach(async () => {
    await destroyHarness(h);
    h = undefined as unknown as DeliveryHarness;
  });

  let runs = 0;
  async function run(url: string, extra: Record<string, unknown> = {}, key = `hook-${++runs}`) {
    const [id] = await h.enqueue([{ kind: 'http', key, tenantId, maxAttempts: 5, payload: { url, body: { hello: 'world' }, ...extra } }]);
    const w = h.worker();
    await h.hot.runOnce();
    await h.runWorker(w);
    return { id, row: await h.job(id), attempts: await h.attempts(id) };
  }
  const local = (path: string) => `http://127.0.0.1:${port}${path}`;
  /** What the receiver saw, as the documented check takes it (this server's origin is the one called). */
  const received = (s: Seen) => ({ method: s.method, url: local(s.url), idempotencyKey: s.headers['idempotency-key'] as string, rawBody: s.body });

  it('POSTs the body as JSON, signed, with Almanac-Tenant/Job-Id/Attempt and Idempotency-Key <tenant>:<job id>', async () => {
    const { id, row, attempts } = await run(local('/ok'), { headers: { 'X-Trace': 'abc', 'Idempotency-Key': 'forged', 'Almanac-Tenant': '999' } });
    expect(row).toMatchObject({ state: 'd', result: { status: 201 } });
    expect(attempts[0]).toMatchObject({ outcome: 'succeeded', result: { status: 201 } });
    expect(seen).toHaveLength(1);
    expect(seen[0]).toMatchObject({ method: 'POST', url: '/ok', body: '{"hello":"world"}' });
    expect(seen[0].headers).toMatchObject({
      'idempotency-key': `${tenantId}:${id}`, 'content-type': 'application/json', 'x-trace': 'abc',
      'almanac-tenant': String(tenantId), 'almanac-job-id': id, 'almanac-attempt': '1',
    });
    const signature = seen[0].headers['almanac-signature'] as string;
    expect(signature).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/);
    const req = received(seen[0]);
    expect(verify(signature, req, secret)).toBe(true);
    // The documented check refuses a changed body, another secret, and a stale timestamp.
    expect(verify(signature, { ...req, rawBody: '{"hello":"there"}' }, secret)).toBe(false);
    expect(verify(signature, req, `${secret}x`)).toBe(false);
    expect(verify(signature.replace(/^t=\d+/, `t=${Math.floor(Date.now() / 1000) - 3600}`), req, secret)).toBe(false);
    // A captured call replayed within the tolerance under another key, to another URL or with another method.
    expect(verify(signature, { ...req, idempotencyKey: `${tenantId}:replayed` }, secret)).toBe(false);
    expect(verify(signature, { ...req, url: local('/other') }, secret)).toBe(false);
    expect(verify(signature, { ...req, method: 'PUT' }, secret)).toBe(false);
  });

  it('sends one Idempotency-Key on every retry of a job, and another for a new job that takes the key retention freed', async () => {
    const seed = { kind: 'http', key: 'invoice-7', tenantId, maxAttempts: 2, payload: { url: local('/broken') } };
    const [first] = await h.enqueue([seed]);
    const w = h.worker();
    await h.hot.runOnce();
    await h.runWorker(w);
    expect(await h.job(first)).toMatchObject({ state: 'q', attempts: 1, last_error: 'HTTP 500' });
    // Skip the retry's wait: due now, with a hint for now.
    await h.ds.query(`UPDATE jobs SET run_at = now() WHERE id = $1`, [first]);
    await h.hotQueue.enqueue([h.hint(first, seed)], new Date());
    await h.hot.runOnce();
    await h.runWorker(w);
    expect(await h.job(first)).toMatchObject({ state: 'x', attempts: 2 });
    // Retention with keysAfterRetention "freed": the job goes and its key is free at once.
    await new TenantsRepository(h.ds).updateRetention(tenantId, { keysAfterRetention: 'freed' }); // read by the removal itself
    const removed = await new RetentionRepository(h.ds).removeExpired({ tenantId, retentionSeconds: 0, freesKeys: true, keyReservation: 0 }, new Date(Date.now() + 60_000), 100, new Date().toISOString().slice(0, 10));
    expect(removed.removed).toBe(1);
    const again = await run(local('/ok'), {}, 'invoice-7');
    expect(again.row).toMatchObject({ state: 'd', result: { status: 201 } });

    const keys = seen.map((s) => s.headers['idempotency-key']);
    expect(seen.map((s) => s.headers['almanac-attempt'])).toEqual(['1', '2', '1']);
    expect(keys).toEqual([`${tenantId}:${first}`, `${tenantId}:${first}`, `${tenantId}:${again.id}`]);
    expect(again.id).not.toBe(first); // a receiver deduplicating on the header applies the new job's call
    for (const s of seen) expect(verify(s.headers['almanac-signature'] as string, received(s), secret)).toBe(true); // the key as signed
  });

  it('signs the URL as sent: a fragment is dropped and the documented check passes', async () => {
    expect(parseHttpPayload({ url: 'https://hooks.example.com/x?a=1#anything' }).url).toBe('https://hooks.example.com/x?a=1');
    const { row } = await run(local('/ok#anything'));
    expect(row).toMatchObject({ state: 'd', result: { status: 201 } });
    expect(seen.map((s) => s.url)).toEqual(['/ok']);
    expect(verify(seen[0].headers['almanac-signature'] as string, received(seen[0]), secret)).toBe(true);
  });

  it('sends both signatures during a rotation’s overlap, the new one first, and only the new one after an overlap of 0', async () => {
    const outbound = new TenantOutboundRepository(h.ds);
    const rotated = (await outbound.rotateSigningSecret(tenantId, 86_400_000))!.secret;
    await run(local('/ok'));
    const header = seen[0].headers['almanac-signature'] as string;
    expect(header).toMatch(/^t=\d+,v1=[0-9a-f]{64},v1=[0-9a-f]{64}$/);
    expect(verify(header, received(seen[0]), rotated)).toBe(true); // a receiver already on the new secret
    expect(verify(header, received(seen[0]), secret)).toBe(true); // and one still on the old
    const [, v1New] = header.split(',');
    expect(verify(`${header.split(',')[0]},${v1New}`, received(seen[0]), rotated)).toBe(true);

    const leaked = (await outbound.rotateSigningSecret(tenantId, 0))!.secret;
    seen = [];
    await run(local('/ok'), {});
    const after = seen[0].headers['almanac-signature'] as string;
    expect(after.split(',')).toHaveLength(2);
    expect(verify(after, received(seen[0]), leaked)).toBe(true);
    expect(verify(after, received(seen[0]), rotated)).toBe(false);
  });

  it('retries on 5xx (honouring Retry-After) and records the status on the attempt', async () => {
    const before = Date.now();
    const { row, attempts } = await run(local('/unavailable'));
    expect(row).toMatchObject({ state: 'q', attempts: 1, last_error: 'HTTP 503' });
    expect(row.run_at.getTime()).toBeGreaterThanOrEqual(before + 7000);
    expect(attempts[0]).toMatchObject({ outcome: 'failed', result: { status: 503 } });
    const broken = await run(local('/broken'));
    expect(broken.row).toMatchObject({ state: 'q', last_error: 'HTTP 500' });
  });

  it('gives up on 4xx: the job is dead with the status recorded', async () => {
    const { row, attempts } = await run(local('/missing'));
    expect(row).toMatchObject({ state: 'x', attempts: 1, last_error: 'HTTP 404', result: { status: 404 } });
    expect(attempts[0].outcome).toBe('discarded');
  });

  it('retries on a network error', async () => {
    const closed = createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const dead = `http://127.0.0.1:${(closed.address() as AddressInfo).port}`;
    await new Promise<void>((r) => closed.close(() => r()));
    await start({ allowHosts: [dead] });
    await new TenantOutboundRepository(h.ds).setAllowHosts(tenantId, [dead]);
    const { row } = await run(`${dead}/x`);
    expect(row).toMatchObject({ state: 'q', attempts: 1, last_error: expect.stringMatching(/ECONNREFUSED/) });
  });

  it('calls only origins on both the installation’s list and the tenant’s: scheme, host and port', async () => {
    const outbound = new TenantOutboundRepository(h.ds);
    await outbound.setAllowHosts(tenantId, [`http://localhost:${port}`]);
    const notTenant = await run(local('/ok'));
    expect(notTenant.row).toMatchObject({ state: 'x', attempts: 1, last_error: `http://127.0.0.1:${port} is not on this tenant's httpAllowHosts` });
    await outbound.setAllowHosts(tenantId, [`http://127.0.0.1:${port + 1}`, `https://127.0.0.1:${port}`, 'http://127.0.0.1']);
    expect((await run(local('/ok'), {})).row.last_error).toBe(`http://127.0.0.1:${port} is not on this tenant's httpAllowHosts`);
    await outbound.setAllowHosts(tenantId, [`http://127.0.0.2:${port}`, local('')]);
    const notInstallation = await run(`http://127.0.0.2:${port}/ok`);
    expect(notInstallation.row).toMatchObject({ state: 'x', last_error: `http://127.0.0.2:${port} is not on the installation's allow-list (ALMANAC_HTTP_ALLOW_HOSTS)` });
    await outbound.setAllowHosts(tenantId, []);
    expect((await run(local('/ok'), {})).row.state).toBe('x');
    expect(seen).toHaveLength(0);
  });

  it('refuses a host that resolves to 127.0.0.1 unless ALMANAC_HTTP_ALLOW_CIDRS allows it, and connects only to a checked address', async () => {
    expect((await run(`http://localhost:${port}/ok`)).row).toMatchObject({ state: 'd' }); // allowed: 127.0.0.1/32
    // Two addresses, one private: the socket is handed only the checked one.
    expect((await run(`http://mixed.test:${port}/ok`)).row).toMatchObject({ state: 'd' });
    expect(seen).toHaveLength(2);

    seen = [];
    await start({ allowCidrs: [] });
    const byName = await run(`http://localhost:${port}/ok`);
    expect(byName.row).toMatchObject({ state: 'x', attempts: 1, last_error: `http://localhost:${port} resolves to a loopback address, which calls may not reach` });
    const literal = await run(local('/ok'));
    expect(literal.row).toMatchObject({ state: 'x', last_error: `http://127.0.0.1:${port} resolves to a loopback address, which calls may not reach` });
    expect(seen).toHaveLength(0);
  });

  it.each([
    ['IPv6 loopback', () => `http://[::1]:${port}/ok`, 'loopback'],
    ['IPv4-mapped IPv6 loopback', () => `http://[::ffff:127.0.0.1]:${port}/ok`, 'loopback'],
    ['the metadata service', () => 'http://169.254.169.254/latest/meta-data/', 'metadata'],
  ])('refuses %s without connecting', async (_what, url, range) => {
    await start({ allowCidrs: [] });
    const { row } = await run(url());
    expect(row).toMatchObject({ state: 'x', attempts: 1, last_error: expect.stringContaining(`resolves to a ${range} address`) });
    expect(seen).toHaveLength(0);
  });

  it.each([
    ['decimal', (p: number) => `http://2130706433:${p}/ok`],
    ['hexadecimal', (p: number) => `http://0x7f000001:${p}/ok`],
    ['short', (p: number) => `http://127.1:${p}/ok`],
    ['octal', (p: number) => `http://0177.0.0.1:${p}/ok`],
    ['long IPv4-mapped', (p: number) => `http://[0:0:0:0:0:ffff:7f00:1]:${p}/ok`],
  ])('refuses loopback spelled as a %s host', async (_how, url) => {
    await start({ allowCidrs: [] });
    const { row } = await run(url(port));
    expect(row).toMatchObject({ state: 'x', attempts: 1, last_error: expect.stringContaining('resolves to a loopback address') });
    expect(seen).toHaveLength(0);
  });

  // A followed hop would carry a fresh signature over a URL the receiver chose, which the
  // documented check accepts there: a signed call to another of the tenant's URLs.
  it.each(REDIRECTS)('follows no redirect (%s): the 3xx is the outcome, and nothing is sent where it points', async (_what, path, status, location) => {
    const { row, attempts } = await run(local(path), { headers: { Authorization: 'Bearer hook-secret' } });
    expect(row).toMatchObject({
      state: 'x', attempts: 1, result: { status },
      last_error: `HTTP ${status}: redirects are not followed (Location ${JSON.stringify(location(port))}); give the job the final URL`,
    });
    expect(attempts.map((a) => a.outcome)).toEqual(['discarded']);
    expect(seen.map((s) => s.url)).toEqual([path]); // the job's own URL, once; no request where the Location points
  });

  it.each([
    ['LF', 'a\nInjected: yes'],
    ['CR LF', 'a\r\nInjected: yes'],
    ['CR', 'a\rb'],
  ])('discards a header value with %s at the first attempt, sending nothing', async (_what, value) => {
    const { row, attempts } = await run(local('/ok'), { headers: { 'X-Note': value } });
    expect(row).toMatchObject({ state: 'x', attempts: 1, last_error: 'InvalidPayloadError: http payload: header X-Note contains CR or LF, which would inject headers' });
    expect(attempts).toHaveLength(1);
    expect(attempts[0].outcome).toBe('discarded');
    expect(seen).toHaveLength(0);
  });

  it('discards a header value Node would refuse (above U+00FF) at the first attempt, sending nothing; é is sent', async () => {
    const { row, attempts } = await run(local('/ok'), { headers: { Authorization: 'Bearer €' } });
    expect(row).toMatchObject({ state: 'x', attempts: 1, last_error: expect.stringContaining('http payload: header Authorization contains U+20AC') });
    expect(attempts.map((a) => a.outcome)).toEqual(['discarded']);
    expect(seen).toHaveLength(0);
    expect((await run(local('/ok'), { headers: { 'X-Name': 'é' } })).row).toMatchObject({ state: 'd' });
    // Node writes it as UTF-8 bytes, which the receiver's parser reads one byte per character.
    expect(Buffer.from(seen[0].headers['x-name'] as string, 'latin1').toString('utf8')).toBe('é');
  });

  it('never reads a response body past the bound', async () => {
    await start({ maxResponseBytes: 64 * 1024 });
    const began = Date.now();
    const { row } = await run(local('/endless'));
    expect(row).toMatchObject({ state: 'd', result: { status: 200, bodyTruncatedAt: 65536 } });
    expect(Date.now() - began).toBeLessThan(2500); // the bound ended it, not the 3 s timeout
    await new Promise((r) => setTimeout(r, 50));
    expect(endless.closed).toBe(true); // the connection was closed on the sender
    expect(endless.written).toBeLessThan(64 * 1024 * 1024); // it stopped writing, far from the 512 MiB it would send
    const announced = await run(local('/announced'));
    expect(announced.row).toMatchObject({ state: 'd', result: { status: 200, bodyTruncatedAt: 65536 } });
  });

  it('discards the job of a tenant with no signing secret, naming how to make one', async () => {
    const { tenant } = await new TenantsRepository(h.ds).create('unsigned');
    await new TenantOutboundRepository(h.ds).setAllowHosts(tenant.id, origins());
    const [id] = await h.enqueue([{ kind: 'http', tenantId: tenant.id, payload: { url: local('/ok') } }]);
    const w = h.worker();
    await h.hot.runOnce();
    await h.runWorker(w);
    expect(await h.job(id)).toMatchObject({ state: 'x', last_error: `tenant ${tenant.id} has no signing secret: an operator makes one with POST /v1/admin/tenants/${tenant.id}/signing-secrets` });
    expect(seen).toHaveLength(0);
  });

  it('rejects payloads that can never work', () => {
    expect(() => parseHttpPayload({ url: 'ftp://x' })).toThrow('http(s)');
    expect(() => parseHttpPayload({ url: 'http://u:p@x/' })).toThrow('credentials');
    expect(() => parseHttpPayload({})).toThrow('url must be a string');
    expect(() => parseHttpPayload({ url: 'http://x/', headers: { a: 1 } })).toThrow('header a');
    expect(() => parseHttpPayload({ url: 'http://x/', headers: { 'a b': '1' } })).toThrow('not a valid header name');
    expect(() => parseHttpPayload({ url: 'http://x/', headers: { a: 'x\u0000y' } })).toThrow('header a contains U+0000');
    expect(() => parseHttpPayload({ url: 'http://x/', headers: { a: 'x\u007fy' } })).toThrow('header a contains U+007F');
    expect(() => parseHttpPayload({ url: 'http://x/', headers: { a: 'x😀' } })).toThrow('header a contains U+1F600');
    expect(parseHttpPayload({ url: 'http://x/', headers: { 'Almanac-Signature': 'forged', 'user-agent': 'me', ok: 'x' } }).headers).toEqual({ ok: 'x' });
  });

  it.each(DOUBLE_RUN_MODES)('has one effect at a receiver that honours Idempotency-Key when the job runs twice (%s)', async (mode) => {
    seen = [];
    const report = await runTwice(handler(), { url: local('/ok') }, {
      mode,
      setup: (d) => prepareTenant(d.ds), // the harness's default tenant, 1
      // What a receiver applies: one effect per Idempotency-Key, however often it is called.
      effects: async () => new Set(seen.filter((s) => verify(s.headers['almanac-signature'] as string, received(s), secret)).map((s) => s.headers['idempotency-key'])).size,
    });
    expect(tenantId).toBe(1);
    expect(report.effects).toBe(1);
    expect(seen.length).toBeGreaterThanOrEqual(mode === 'sequential' ? 2 : 1); // it was called again, with the same key
  });
});
