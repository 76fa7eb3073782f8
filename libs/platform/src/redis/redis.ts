import { Logger } from '@nestjs/common';
import IORedis from 'ioredis';

/** Nest injection token for the process-wide ioredis connection. */
export const REDIS = Symbol('REDIS');

/**
 * One connection per process, shared by queues and health. `maxRetriesPerRequest: null` is
 * what BullMQ requires (its blocking commands must wait out a reconnect, not fail). Errors are
 * logged at most once per outage so a Redis restart does not flood the log; readiness reports it.
 */
export function createRedis(url: string, logger = new Logger('Redis')): IORedis {
  const redis = new IORedis(url, { maxRetriesPerRequest: null, lazyConnect: false });
  let down = false;
  redis.on('error', (err: Error) => {
    if (down) return;
    down = true;
    logger.warn(`redis unavailable: ${err.message}`);
  });
  redis.on('ready', () => {
    if (down) logger.log('redis connection restored');
    down = false;
  });
  return redis;
}

/** Quits cleanly when connected; drops the socket when not (QUIT would wait for a reconnect). */
export async function closeRedis(redis: IORedis): Promise<void> {
  if (redis.status === 'end') return;
  if (redis.status !== 'ready') {
    redis.disconnect();
    return;
  }
  try {
    await redis.quit();
  } catch {
    redis.disconnect();
  }
}
