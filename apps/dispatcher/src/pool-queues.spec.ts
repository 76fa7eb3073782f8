import { createTestRedis, TestRedis } from '../../../test/support/test-redis';
import { PoolQueues } from './pool-queues';

describe('PoolQueues', () => {
  let redis: TestRedis;
  let pools: PoolQueues;

  beforeAll(async () => {
    redis = await createTestRedis();
    pools = new PoolQueues(redis.connection, redis.prefix);
  });
  afterAll(async () => {
    await pools.close();
    await redis.cleanup();
  });

  it('leaves connection errors to the connection owner instead of printing each one to stderr', () => {
    const printed = jest.spyOn(console, 'error').mockImplementation(() => undefined);
    try {
      pools.queue('default').emit('error', new Error('connect ECONNREFUSED'));
      expect(printed).not.toHaveBeenCalled();
    } finally {
      printed.mockRestore();
    }
  });
});
