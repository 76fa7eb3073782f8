import { once } from 'node:events';
import IORedis from 'ioredis';
import { startPrivateRedis } from '@almanac/testing/private-redis';
import { within } from '../time/within';
import { closeRedis, createDeliveryRedis, createRedis } from './redis';

describe('the process-wide Redis connection', () => {
  it('fails a command Redis does not answer within the command timeout, instead of waiting forever', async () => {
    // A server of its own: CLIENT PAUSE stalls every client, and test files run in parallel.
    const server = await startPrivateRedis();
    const redis = createRedis({ url: server.url }, { commandTimeoutMs: 200 });
    const admin = new IORedis(server.url);
    try {
      // The timeout also runs while a command waits for the connection; on a loaded machine the
      // first connect took over 200 ms (CI, 2026-12-01), so wait for it before the clock matters.
      if (redis.status !== 'ready') await once(redis, 'ready');
      await redis.ping();
      // Stall the server for this client's commands.
      await admin.call('CLIENT', 'PAUSE', '1500', 'ALL');
      const t0 = Date.now();
      await expect(redis.ping()).rejects.toThrow(/timed out/i);
      expect(Date.now() - t0).toBeLessThan(1200);
    } finally {
      await admin.call('CLIENT', 'UNPAUSE').catch(() => undefined);
      admin.disconnect();
      await closeRedis(redis);
      await server.stop();
    }
  });

  it('closes a connection without a command timeout while Redis is stalled: a role\'s shutdown waited for QUIT until SIGKILL', async () => {
    const server = await startPrivateRedis();
    const redis = createDeliveryRedis({ url: server.url });
    try {
      await redis.ping();
      process.kill(server.pid, 'SIGSTOP');
      await within(3000, closeRedis(redis), 'closeRedis of a stalled server');
    } finally {
      process.kill(server.pid, 'SIGCONT');
      redis.disconnect();
      await server.stop();
    }
  });
});
