import { createTestRedis, TestRedis } from '../../../../test/support/test-redis';
import { DELIVERY_LEAD_MS, HotQueue } from './hot-queue';

describe('HotQueue', () => {
  let redis: TestRedis;
  let hot: HotQueue;
  const now = new Date('2026-11-29T10:00:00.000Z');

  beforeAll(async () => {
    redis = await createTestRedis();
    hot = new HotQueue(redis.connection, redis.prefix);
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
});
