import { createTestRedis, type TestRedis } from '@almanac/testing/test-redis';
import IORedis from 'ioredis';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { SharedTokenBuckets } from './shared-token-buckets';

describe('SharedTokenBuckets', () => {
  let redis: TestRedis;

  beforeAll(async () => {
    redis = await createTestRedis();
    await redis.connection.ping(); // ready: a bucket asks Redis only over a ready connection
  });
  afterAll(() => redis.cleanup());

  it('is one budget for every replica: what one spends, the other cannot', async () => {
    const other = redis.connection.duplicate(); // the second replica's own connection
    await other.ping();
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
    expect(await buckets.take(1, 10, 100, 10, 1_000_000)).toEqual({ ok: true }); // refilled to 10, not beyond
    expect(await buckets.take(1, 1, 100, 10, 1_000_000)).toMatchObject({ ok: false });
    // A replica whose clock is 500 ms behind refills nothing and does not move the bucket back.
    expect(await buckets.take(1, 1, 100, 10, 999_500)).toEqual({ ok: false, retryAfterMs: 10 });
    expect(await buckets.take(1, 1, 100, 10, 1_000_010)).toEqual({ ok: true });
    const ttl = await redis.connection.pttl(`${redis.prefix}:rate:two:1`);
    expect(ttl).toBeGreaterThan(60_000); // ~100 ms to refill, plus the margin
    expect(ttl).toBeLessThanOrEqual(60_100);
    // A cost above the capacity takes the whole bucket, or it could never be taken.
    expect(await buckets.take(2, 15, 100, 10, 0)).toEqual({ ok: true });
    expect(await buckets.take(2, 15, 100, 10, 50)).toEqual({ ok: false, retryAfterMs: 50 });
  });

  it('looks without asking: short after a refusal until one token is back, whatever the refused cost', async () => {
    const buckets = new SharedTokenBuckets(redis.connection, `${redis.prefix}:rate:look`, 1000);
    expect(buckets.look(3, 0)).toEqual({ ok: true }); // nothing refused yet
    expect(await buckets.take(3, 1000, 10, 1000, 0)).toEqual({ ok: true });
    expect(await buckets.take(3, 1000, 10, 1000, 0)).toEqual({ ok: false, retryAfterMs: 100_000 });
    // 10 a second: one token is back after 100 ms, so a single job may pass then, not in 100 s.
    expect(buckets.look(3, 50)).toEqual({ ok: false, retryAfterMs: 50 });
    expect(buckets.look(3, 100)).toEqual({ ok: true });
    expect(await buckets.take(3, 1, 10, 1000, 100)).toEqual({ ok: true });
    expect(buckets.look(3, 100)).toEqual({ ok: true });
  });

  /** A proxy to the real Redis that, while `held`, keeps what the client sends and passes it on at `release()`. */
  async function holdingProxy(): Promise<{ client: IORedis; hold(): void; release(): void; close(): void }> {
    let held: Buffer[] | null = null;
    const sockets: Socket[] = [];
    const target = new URL(redis.url);
    let upstream!: Socket;
    const proxy: Server = createServer((client) => {
      upstream = connect(Number(target.port || 6379), target.hostname);
      sockets.push(client, upstream);
      client.on('data', (b) => void (held ? held.push(b) : upstream.write(b)));
      upstream.on('data', (b) => void client.write(b));
      client.on('error', () => undefined);
      upstream.on('error', () => undefined);
    }).listen(0, '127.0.0.1');
    await new Promise((resolve) => proxy.once('listening', resolve));
    // The options RateLimits gives its connection: answered now or not at all.
    const client = new IORedis({ port: (proxy.address() as { port: number }).port, host: '127.0.0.1', enableOfflineQueue: false, autoResendUnfulfilledCommands: false, maxRetriesPerRequest: 0 });
    await new Promise((resolve) => client.once('ready', resolve));
    return {
      client,
      hold: () => void (held = []),
      release: () => {
        for (const b of held ?? []) upstream.write(b);
        held = null;
      },
      close: () => {
        client.disconnect();
        for (const socket of sockets) socket.destroy();
        proxy.close();
      },
    };
  }

  it('decides alone, with its own bucket, when Redis is not ready or does not answer in time, and then for a second without asking', async () => {
    const proxy = await holdingProxy();
    let local = 0;
    const buckets = new SharedTokenBuckets(proxy.client, `${redis.prefix}:rate:three`, 500, () => local++);
    try {
      expect(await buckets.take(1, 10, 5, 10, 0)).toEqual({ ok: true });
      expect(local).toBe(0);
      proxy.hold();
      const started = Date.now();
      expect(await buckets.take(1, 10, 5, 10, 0)).toEqual({ ok: true }); // Redis' bucket is spent; this replica's is not
      expect(Date.now() - started).toBeLessThan(2000);
      const next = Date.now();
      expect(await buckets.take(1, 1, 5, 10, 0)).toEqual({ ok: false, retryAfterMs: 200 });
      expect(Date.now() - next).toBeLessThan(300); // not asked again within the second
      expect(local).toBe(2);
      // Down (closed, reconnecting, connecting): decided at once, without waiting for a reconnect.
      const ended = new Promise((resolve) => proxy.client.once('end', resolve));
      proxy.client.disconnect();
      await ended;
      const patient = new SharedTokenBuckets(proxy.client, `${redis.prefix}:rate:three`, 60_000, () => local++);
      const asked = Date.now();
      expect(await patient.take(1, 1, 5, 10, 200)).toEqual({ ok: true });
      expect(Date.now() - asked).toBeLessThan(1000);
      expect(local).toBe(3);
    } finally {
      proxy.close();
    }
  });

  it('spends nothing for a call that reaches Redis after its caller stopped waiting', async () => {
    const proxy = await holdingProxy();
    const key = `${redis.prefix}:rate:late`;
    try {
      const buckets = new SharedTokenBuckets(proxy.client, key, 100);
      proxy.hold();
      const asked = Date.now();
      expect(await buckets.take(1, 10, 5, 10, 0)).toEqual({ ok: true }); // decided locally after 100 ms
      // A timer counts from the event loop's cached time, which can lag Date.now(), so it may fire before
      // the deadline the script checks: release the call only once the deadline has surely passed (CI once did not).
      while (Date.now() <= asked + 110) await new Promise((resolve) => setImmediate(resolve));
      proxy.release(); // the held script call runs now, late
      for (let i = 0; i < 10_000 && proxy.client.commandQueue.length > 0; i++) await new Promise((resolve) => setImmediate(resolve)); // its answer is in
      expect(await redis.connection.hgetall(`${key}:1`)).toEqual({}); // the bucket was not touched
      const fresh = new SharedTokenBuckets(redis.connection, key, 1000, () => {
        throw new Error('decided locally');
      });
      expect(await fresh.take(1, 10, 5, 10, 0)).toEqual({ ok: true }); // all ten are still there
    } finally {
      proxy.close();
    }
  });

  it('is still one budget when the replicas\' clocks run a second behind Redis\'', async () => {
    const other = redis.connection.duplicate();
    await other.ping();
    // This host's wall clock, which the class reads for its deadlines, a second behind Redis' TIME.
    const realNow = Date.now.bind(Date);
    const behind = jest.spyOn(Date, 'now').mockImplementation(() => realNow() - 1000);
    let local = 0;
    const a = new SharedTokenBuckets(redis.connection, `${redis.prefix}:rate:skew`, 250, () => local++);
    const b = new SharedTokenBuckets(other, `${redis.prefix}:rate:skew`, 250, () => local++);
    try {
      let taken = 0;
      for (let i = 0; i < 10; i++) {
        for (const replica of [a, b]) if ((await replica.take(1, 1, 0.001, 10, Date.now())).ok) taken++;
      }
      expect(taken).toBe(10); // not 20: each replica deciding alone would give each the capacity
      expect(local).toBe(0);
    } finally {
      behind.mockRestore();
      await other.quit();
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
