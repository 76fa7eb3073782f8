import { createTestRedis, type TestRedis } from '@almanac/testing/test-redis';
import IORedis from 'ioredis';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { SharedTokenBuckets } from './shared-token-buckets';

describe('SharedTokenBuckets', () => {
  let redis: TestRedis;

  beforeAll(async () => {
    redis = await createTestRedis();
  });
  afterAll(() => redis.cleanup());

  it('is one budget for every replica: what one spends, the other cannot', async () => {
    const other = redis.connection.duplicate(); // the second replica's own connection
    const a = new SharedTokenBuckets(redis.connection, `${redis.prefix}:rate:one`, 1000);
    const b = new SharedTokenBuckets(other, `${redis.prefix}:rate:one`, 1000);
    try {
      expect(await a.take(7, 10, 5, 10, 0)).toEqual({ ok: true });
      expect(await b.take(7, 1, 5, 10, 0)).toEqual({ ok: false, retryAfterMs: 200 });
      expect(await b.take(7, 1, 5, 10, 200)).toEqual({ ok: true }); // refilled by the callers' time
      expect(await a.take(7, 1, 5, 10, 200)).toMatchObject({ ok: false });
      expect(await a.take(8, 10, 5, 10, 200)).toEqual({ ok: true }); // another key, its own bucket
    } finally {
      await other.quit();
    }
  });

  it('never refills past capacity, never goes back in time, and forgets a bucket only once it would be full', async () => {
    const buckets = new SharedTokenBuckets(redis.connection, `${redis.prefix}:rate:two`, 1000);
    await buckets.take(1, 1, 100, 10, 1_000);
    expect(await buckets.take(1, 11, 100, 10, 1_000_000)).toMatchObject({ ok: false });
    expect(await buckets.take(1, 10, 100, 10, 1_000_000)).toEqual({ ok: true });
    // A replica whose clock is 500 ms behind refills nothing and does not move the bucket back.
    expect(await buckets.take(1, 1, 100, 10, 999_500)).toEqual({ ok: false, retryAfterMs: 10 });
    expect(await buckets.take(1, 1, 100, 10, 1_000_010)).toEqual({ ok: true });
    const ttl = await redis.connection.pttl(`${redis.prefix}:rate:two:1`);
    expect(ttl).toBeGreaterThan(60_000); // ~100 ms to refill, plus the margin
    expect(ttl).toBeLessThanOrEqual(60_100);
  });

  it('decides alone, with its own bucket, when Redis is down or does not answer in time', async () => {
    // A proxy to the real Redis that, once `stalled`, keeps the connection and drops every byte.
    let stalled = false;
    const sockets: Socket[] = [];
    const target = new URL(redis.url);
    const proxy: Server = createServer((client) => {
      const upstream = connect(Number(target.port || 6379), target.hostname);
      sockets.push(client, upstream);
      client.on('data', (b) => void (stalled || upstream.write(b)));
      upstream.on('data', (b) => void (stalled || client.write(b)));
      client.on('error', () => undefined);
      upstream.on('error', () => undefined);
    }).listen(0, '127.0.0.1');
    await new Promise((resolve) => proxy.once('listening', resolve));
    const viaProxy = new IORedis({ port: (proxy.address() as { port: number }).port, host: '127.0.0.1', maxRetriesPerRequest: null });
    let local = 0;
    const buckets = new SharedTokenBuckets(viaProxy, `${redis.prefix}:rate:three`, 50, () => local++);
    try {
      await viaProxy.ping();
      expect(await buckets.take(1, 10, 5, 10, 0)).toEqual({ ok: true });
      expect(local).toBe(0);
      stalled = true;
      const started = Date.now();
      expect(await buckets.take(1, 10, 5, 10, 0)).toEqual({ ok: true }); // Redis' bucket is spent; this replica's is not
      expect(Date.now() - started).toBeLessThan(1000);
      expect(await buckets.take(1, 1, 5, 10, 0)).toEqual({ ok: false, retryAfterMs: 200 });
      expect(local).toBe(2);
      // Down (closed, reconnecting): decided at once, without waiting for a reconnect.
      const ended = new Promise((resolve) => viaProxy.once('end', resolve));
      viaProxy.disconnect();
      await ended;
      const patient = new SharedTokenBuckets(viaProxy, `${redis.prefix}:rate:three`, 60_000, () => local++);
      const asked = Date.now();
      expect(await patient.take(1, 1, 5, 10, 200)).toEqual({ ok: true });
      expect(Date.now() - asked).toBeLessThan(1000);
      expect(local).toBe(3);
    } finally {
      viaProxy.disconnect();
      for (const socket of sockets) socket.destroy();
      proxy.close();
    }
  });

  it('loads its script again after Redis forgot it', async () => {
    const buckets = new SharedTokenBuckets(redis.connection, `${redis.prefix}:rate:four`, 1000, () => {
      throw new Error('decided locally');
    });
    await redis.connection.script('FLUSH');
    expect(await buckets.take(1, 1, 1, 1, 0)).toEqual({ ok: true });
    expect(await buckets.take(1, 1, 1, 1, 0)).toEqual({ ok: false, retryAfterMs: 1000 });
  });
});
