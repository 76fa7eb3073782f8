import { type Cidr, parseCidr } from '@almanac/domain';
import { createServer, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { OUTBOUND_SOCKETS, OutboundClient, type Resolver } from './outbound-net';

/**
 * The agents' socket bounds against a server that never closes an idle connection (no
 * keep-alive timeout, no `Keep-Alive` hint), called under many names: a tenant allowed
 * `http://*.example.com` calling a1, a2, … of it.
 */
describe('OutboundClient sockets', () => {
  let server: Server;
  let port: number;
  const open = new Set<Socket>();
  let inFlight = 0;
  let peakInFlight = 0;
  const paths: string[] = [];
  const loopback = [parseCidr('127.0.0.1/32') as Cidr];
  /** Test DNS: every `*.test` name is this host. */
  const resolve: Resolver = async () => [{ address: '127.0.0.1', family: 4 }];

  beforeAll(async () => {
    server = createServer((req, res) => {
      paths.push(req.url ?? '');
      const delayMs = Number(new URL(req.url ?? '/', 'http://x').searchParams.get('delay') ?? 0);
      peakInFlight = Math.max(peakInFlight, ++inFlight); // each request in flight holds a connection of its own
      req.resume().on('end', () => setTimeout(() => (inFlight--, res.writeHead(204).end()), delayMs));
    });
    server.keepAliveTimeout = 0; // never closes an idle connection
    server.on('connection', (socket: Socket) => {
      open.add(socket);
      socket.on('close', () => open.delete(socket));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(() => {
    server.closeAllConnections();
    return new Promise<void>((r) => server.close(() => r()));
  });
  beforeEach(async () => {
    server.closeAllConnections();
    expect(await openAfter(1000)).toBe(0); // the last test's connections are gone before this one counts
    peakInFlight = 0;
  });

  const call = (client: OutboundClient, host: string, path = '/') =>
    client.send({ tenantId: 1, url: new URL(`http://${host}:${port}${path}`), method: 'POST', headers: {}, body: '{}', signal: new AbortController().signal, maxBodyBytes: 1024 });

  /** Polls (every 20 ms, at most `withinMs`) until the server holds at most `atMost` connections; how many it holds then. */
  async function openAfter(withinMs: number, atMost = 0): Promise<number> {
    for (const end = Date.now() + withinMs; open.size > atMost && Date.now() < end; ) await new Promise((r) => setTimeout(r, 20));
    return open.size;
  }

  it('closes idle kept-alive connections after the idle timeout: the server is left with none', async () => {
    // 1 s idle: at 150 ms the first calls' sockets closed before the sixth call on a loaded CI host (4 of 6 open).
    const client = new OutboundClient(loopback, resolve, { ...OUTBOUND_SOCKETS, idleMs: 1000 });
    for (let i = 1; i <= 6; i++) expect((await call(client, `a${i}.test`)).status).toBe(204);
    expect(open.size).toBe(6); // kept alive, one per name
    expect(await openAfter(5000)).toBe(0);
  });

  it('ends a call aborted while it waits in the agent for a socket, and never sends it', async () => {
    const client = new OutboundClient(loopback, resolve, { ...OUTBOUND_SOCKETS, perOrigin: 1 });
    const holding = call(client, 'busy.test', '/?delay=1500'); // the origin's one socket, for 1.5 s
    const deadline = new AbortController();
    const queued = client.send({ tenantId: 1, url: new URL(`http://busy.test:${port}/queued`), method: 'POST', headers: {}, body: '{}', signal: deadline.signal, maxBodyBytes: 1024 });
    const [started, reason] = [Date.now(), new Error('the job ran out of time')];
    deadline.abort(reason);
    await expect(queued).rejects.toBe(reason);
    expect(Date.now() - started).toBeLessThan(500); // not when the held socket frees
    expect((await holding).status).toBe(204);
    expect((await call(client, 'busy.test', '/after')).status).toBe(204); // the agent's queue is first in, first out
    expect(paths.filter((p) => p === '/queued' || p === '/after')).toEqual(['/after']);
  });

  it('keeps a connection whose response takes longer than the idle timeout: that is the call’s own timeout', async () => {
    const client = new OutboundClient(loopback, resolve, { ...OUTBOUND_SOCKETS, idleMs: 100 });
    expect((await call(client, 'slow.test', '/?delay=400')).status).toBe(204);
  });

  it('keeps at most the idle cap over every name; a call to a new name connects at once, not after an idle timeout', async () => {
    const client = new OutboundClient(loopback, resolve, { ...OUTBOUND_SOCKETS, idleMs: 60_000, idle: 3 }); // no idle socket times out during the test
    for (let i = 1; i <= 8; i++) expect((await call(client, `c${i}.test`)).status).toBe(204);
    expect(await openAfter(1000, 3)).toBe(3); // the sockets freed past the cap were closed, not kept
    // Behind a cap on all sockets it would wait for an idle one to time out (and a queued call ignores its abort).
    const began = Date.now();
    expect((await call(client, 'fresh.test')).status).toBe(204);
    expect(Date.now() - began).toBeLessThan(1000);
    expect(await openAfter(1000, 3)).toBe(3);
  });

  it('caps idle sockets only: calls to many names all run at once, and then at most the cap is kept', async () => {
    const client = new OutboundClient(loopback, resolve, { ...OUTBOUND_SOCKETS, idleMs: 30_000, idle: 2 });
    const results = await Promise.all(Array.from({ length: 12 }, (_, i) => call(client, `b${i}.test`, '/?delay=50')));
    expect(results.every((r) => r.status === 204)).toBe(true);
    expect(peakInFlight).toBe(12);
    expect(await openAfter(1000, 2)).toBe(2);
  });
});
