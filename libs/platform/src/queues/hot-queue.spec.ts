import { createTestRedis, TestRedis } from '@almanac/testing/test-redis';
import IORedis from 'ioredis';
import { AddressInfo, createServer, Socket } from 'node:net';
import { WaitTimeoutError } from '../time/within';
import { DELIVERY_LEAD_MS, ENVELOPE_MAX, ENVELOPE_MIN, hotJobRowIds, HotQueue } from './hot-queue';

describe('HotQueue', () => {
  let redis: TestRedis;
  let hot: HotQueue;
  const now = new Date('2026-11-29T10:00:00.000Z');

  beforeAll(async () => {
    redis = await createTestRedis();
    hot = HotQueue.open(redis.connection, redis.prefix);
  });
  afterAll(async () => {
    await hot.close();
    await redis.cleanup();
  });

  it('enqueues a batch under the given prefix with routing data only and the delay to run time, less the delivery lead', async () => {
    await hot.enqueue(
      [
        { id: '101', runAt: new Date(now.getTime() + 60_000), tenantId: 7, kind: 'noop' },
        { id: '102', runAt: new Date(now.getTime() - 5_000), tenantId: 8, kind: 'http' },
      ],
      now,
    );
    expect(hot.prefix).toBe(redis.prefix);
    const later = await hot.queue.getJob('j-101');
    expect(later).toMatchObject({ name: 'noop', data: { t: 7, d: now.getTime() + 60_000 } });
    expect(later?.opts).toMatchObject({ delay: 60_000 - DELIVERY_LEAD_MS }); // out of the delayed set a little early
    expect(later?.opts.removeOnComplete).toBeUndefined();
    // Every field stays under hash-max-listpack-value, so Redis keeps the compact encoding.
    expect(await redis.connection.object('ENCODING', `${redis.prefix}:hot:j-101`)).toBe('listpack');
    const overdue = await hot.queue.getJob('j-102');
    expect(overdue?.opts.delay).toBe(0);
    expect(await overdue?.getState()).toBe('waiting');
    expect(await later?.getState()).toBe('delayed');
    expect(await redis.connection.exists(`${redis.prefix}:hot:j-101`)).toBe(1);
  });

  it('sends a burst (one tenant, kind and instant) as envelopes of at most ENVELOPE_MAX rows, idempotently; smaller groups one job per row', async () => {
    const at = new Date(now.getTime() + 30_000);
    const burst = Array.from({ length: ENVELOPE_MAX + 3 }, (_, i) => ({ id: String(5000 + i), runAt: at, tenantId: 3, kind: 'charge' }));
    const few = Array.from({ length: ENVELOPE_MIN - 1 }, (_, i) => ({ id: String(9000 + i), runAt: at, tenantId: 4, kind: 'charge' }));
    const before = await hot.queue.getJobCountByTypes('delayed');
    await hot.enqueue([...burst, ...few], now);
    await hot.enqueue(burst, now); // a promoter retry of the same rows adds nothing
    expect((await hot.queue.getJobCountByTypes('delayed')) - before).toBe(2 + few.length);
    const envelopes = (await hot.queue.getDelayed()).filter((j) => j.id?.startsWith('e-'));
    const ids = envelopes.flatMap((j) => hotJobRowIds(j.id as string, j.data));
    expect(ids.sort()).toEqual(burst.map((b) => b.id).sort());
    expect(envelopes.map((j) => j.data.ids?.length).sort((a, b) => (a ?? 0) - (b ?? 0))).toEqual([3, ENVELOPE_MAX]);
    expect(envelopes[0]).toMatchObject({ name: 'charge', data: { t: 3, d: at.getTime() } });
    expect(envelopes[0].opts.delay).toBe(30_000 - DELIVERY_LEAD_MS);
    expect(await hot.queue.getJob('j-9000')).toMatchObject({ name: 'charge', data: { t: 4, d: at.getTime() } });
    expect(hotJobRowIds('j-9000', { t: 4, d: at.getTime() })).toEqual(['9000']);
  });

  it("hands a consumer single rows before a burst's envelopes that were queued first", async () => {
    const own = HotQueue.open(redis.connection, `${redis.prefix}-order`);
    const { Worker } = await import('bullmq');
    const connection = redis.connection.duplicate();
    const consumer = new Worker('hot', null, { connection, prefix: own.prefix, autorun: false });
    try {
      const due = new Date(now.getTime() - 1000); // due already: straight to the waiting lists
      const burst = Array.from({ length: 3 * ENVELOPE_MAX }, (_, i) => ({ id: String(20_000 + i), runAt: due, tenantId: 1, kind: 'noop' }));
      await own.enqueue(burst, now);
      await own.enqueue([{ id: '30001', runAt: due, tenantId: 2, kind: 'noop' }], now);
      await own.enqueue([{ id: '30002', runAt: new Date(now.getTime() - 500), tenantId: 3, kind: 'noop' }], now);
      const order: string[] = [];
      for (let i = 0; i < 5; i++) order.push(((await consumer.getNextJob(`t${i}`, { block: false })) as { id: string } | undefined)?.id ?? 'none');
      // In BullMQ's FIFO the quiet rows would have come fourth and fifth, after 1,500 burst rows.
      expect(order.slice(0, 2)).toEqual(['j-30001', 'j-30002']);
      expect(order.slice(2).every((id) => id.startsWith('e-'))).toBe(true);
    } finally {
      await consumer.close();
      await connection.quit();
      await own.queue.obliterate({ force: true });
      await own.close();
    }
  });

  it('is a no-op for a job id already in the queue, and for an empty batch', async () => {
    await hot.enqueue([{ id: '101', runAt: new Date(now.getTime() + 999_000), tenantId: 7, kind: 'noop' }], now);
    await hot.enqueue([], now);
    expect((await hot.queue.getJob('j-101'))?.opts.delay).toBe(60_000 - DELIVERY_LEAD_MS);
  });

  it('removes a job; removing one that is not there also leaves it gone', async () => {
    expect(await hot.remove('101')).toBe(true);
    expect(await hot.queue.getJob('j-101')).toBeUndefined();
    expect(await hot.remove('101')).toBe(true);
  });

  it('cannot remove a job a consumer holds', async () => {
    const { Worker } = await import('bullmq');
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    let started!: () => void;
    const running = new Promise<void>((r) => (started = r));
    const connection = redis.connection.duplicate();
    const worker = new Worker(
      'hot',
      async () => {
        started();
        await held;
      },
      { connection, prefix: redis.prefix, autorun: true },
    );
    try {
      await running;
      expect(await hot.remove('102')).toBe(false);
    } finally {
      release();
      await worker.close();
      await connection.quit();
    }
  });

  it('bounds every wait on a Redis that accepts the connection and never answers (its connection has no command timeout)', async () => {
    const sockets: Socket[] = [];
    const silent = createServer((socket) => void sockets.push(socket));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const connection = new IORedis({ port: (silent.address() as AddressInfo).port, host: '127.0.0.1', maxRetriesPerRequest: null });
    const stalled = HotQueue.open(connection, 'stalled', 200);
    try {
      const started = Date.now();
      await expect(stalled.enqueue([{ id: '1', runAt: now, tenantId: 1, kind: 'noop' }], now)).rejects.toBeInstanceOf(WaitTimeoutError);
      await expect(stalled.remove('1')).rejects.toBeInstanceOf(WaitTimeoutError);
      await expect(stalled.expedite(['1'])).rejects.toBeInstanceOf(WaitTimeoutError);
      expect(Date.now() - started).toBeLessThan(2_000);
    } finally {
      for (const socket of sockets) socket.destroy();
      connection.disconnect();
      await stalled.close().catch(() => undefined);
      await new Promise((resolve) => silent.close(resolve));
    }
  });
});
