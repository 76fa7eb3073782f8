import { createTestRedis, type TestRedis } from '@almanac/testing/test-redis';
import { WorkerRoster } from './worker-roster';

const TTL = 5000;
const T = Date.parse('2026-12-01T12:00:00Z');

describe('WorkerRoster (Redis): liveness without comparing the worker\'s clock with the reader\'s', () => {
  let redis: TestRedis;
  let prefix: string;
  beforeAll(async () => {
    redis = await createTestRedis();
  });
  beforeEach(() => {
    prefix = `${redis.prefix}-${Math.random().toString(36).slice(2, 8)}`;
  });
  afterAll(async () => redis.cleanup());

  const beat = (roster: WorkerRoster, workerNow: number) =>
    roster.beat([{ workerId: 'w1', pool: 'default', concurrency: 10, running: 2 }], workerNow, TTL);
  const workers = async (roster: WorkerRoster, readerNow: number) => (await roster.status(['default'], readerNow)).get('default')?.workers;

  it('a reader 8 s ahead of a live worker counts it once its beat changes', async () => {
    const worker = new WorkerRoster(redis.connection, prefix);
    const reader = new WorkerRoster(redis.connection, prefix);
    await beat(worker, T);
    expect(await workers(reader, T + 8000)).toBe(0); // first sight: only the expiry to go by
    await beat(worker, T + 1000);
    expect(await workers(reader, T + 9000)).toBe(1);
    await beat(worker, T + 2000);
    expect(await workers(reader, T + 10_000)).toBe(1);
    expect(await workers(reader, T + 10_000 + TTL - 1)).toBe(1);
    expect(await workers(reader, T + 10_000 + TTL + 1)).toBe(0); // it stopped beating
  });

  it('a reader 8 s behind a dead worker drops it one TTL after its last change, not 8 s later', async () => {
    const worker = new WorkerRoster(redis.connection, prefix);
    const reader = new WorkerRoster(redis.connection, prefix);
    await beat(worker, T + 8000);
    expect(await workers(reader, T)).toBe(1);
    // The worker dies. By the reader's clock its entry "expires" at T + 13 s; one TTL is enough.
    expect(await workers(reader, T + TTL + 1)).toBe(0);
  });

  it('a reader over a minute ahead does not forget a live worker on first sight; it counts it once the beat changes', async () => {
    const worker = new WorkerRoster(redis.connection, prefix);
    const reader = new WorkerRoster(redis.connection, prefix);
    await beat(worker, T);
    expect(await workers(reader, T + 90_000)).toBe(0);
    expect(await redis.connection.hlen(`${prefix}:almanac:workers:default`)).toBe(1); // not deleted
    await beat(worker, T + 1000);
    expect(await workers(reader, T + 91_000)).toBe(1);
  });

  it('with equal clocks it behaves as expiry always did, and forgets a long-dead entry', async () => {
    const worker = new WorkerRoster(redis.connection, prefix);
    const reader = new WorkerRoster(redis.connection, prefix);
    await beat(worker, T);
    expect(await workers(reader, T + 100)).toBe(1);
    expect(await workers(reader, T + TTL + 1)).toBe(0);
    await reader.status(['default'], T + TTL + 60_001);
    expect(await redis.connection.hlen(`${prefix}:almanac:workers:default`)).toBe(0);
  });
});
