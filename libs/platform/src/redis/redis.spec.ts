import { once } from 'node:events';
import IORedis from 'ioredis';
import { TEST_REDIS_URL as URL } from '@almanac/testing/test-redis';
import { closeRedis, createRedis } from './redis';

describe('the process-wide Redis connection', () => {
  it('fails a command Redis does not answer within the command timeout, instead of waiting forever', async () => {
    const redis = createRedis({ url: URL }, { commandTimeoutMs: 200 });
    const admin = new IORedis(URL);
    try {
      // The timeout also runs while a command waits for the connection; on a loaded machine the
      // first connect took over 200 ms (CI, 2026-12-01), so wait for it before the clock matters.
      if (redis.status !== 'ready') await once(redis, 'ready');
      await redis.ping();
      // Stall the server for this client's commands (the test runs alone: jest --runInBand).
      await admin.call('CLIENT', 'PAUSE', '1500', 'ALL');
      const t0 = Date.now();
      await expect(redis.ping()).rejects.toThrow(/timed out/i);
      expect(Date.now() - t0).toBeLessThan(1200);
    } finally {
      await admin.call('CLIENT', 'UNPAUSE').catch(() => undefined);
      admin.disconnect();
      await closeRedis(redis);
    }
  });
});
