import { Logger } from '@nestjs/common';
import IORedis from 'ioredis';

/** Nest injection token for the process-wide ioredis connection. */
export const REDIS = Symbol('REDIS');

/**
 * One connection per process, shared by queues (producers only), health, metrics and the
 * sweeps. `maxRetriesPerRequest: null` keeps commands queued across a reconnect, as BullMQ
 * expects; `commandTimeoutMs` bounds each of them anyway, so a stalled Redis fails a sweep or a
 * probe instead of holding its lock or transaction forever. No BullMQ Worker may use this
 * connection: its blocking reads would time out (the delivery roles have their own,
 * createDeliveryRedis). Errors are logged at most once per outage so a Redis restart does not
 * flood the log; readiness reports it.
 */
export function createRedis(url: string, opts: { commandTimeoutMs?: number; logger?: Logger } = {}): IORedis {
  const logger = opts.logger ?? new Logger('Redis');
  const redis = new IORedis(url, { maxRetriesPerRequest: null, lazyConnect: false, commandTimeout: opts.commandTimeoutMs });
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

/**
 * Quits cleanly when connected. Otherwise drops the socket and cancels the pending reconnect:
 * QUIT would wait for a reconnect that may never come. (ioredis then stays in "reconnecting"
 * without a timer or socket; nothing keeps the process alive.)
 */
export async function closeRedis(redis: IORedis): Promise<void> {
  if (redis.status === 'end') return;
  if (redis.status === 'ready') {
    // QUIT resolves on the reply; the socket closes a moment later ('end').
    const ended = new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, 1000);
      redis.once('end', () => {
        clearTimeout(timer);
        resolve();
      });
    });
    await redis.quit().catch(() => redis.disconnect());
    await ended;
  } else {
    redis.disconnect();
  }
}
