import { Inject, Injectable } from '@nestjs/common';
import { HealthIndicatorService } from '@nestjs/terminus';
import type IORedis from 'ioredis';
import { REDIS } from '../redis/redis';

/**
 * Terminus has no Redis indicator; this one PINGs the shared connection. While Redis is away
 * the connection queues commands (BullMQ needs that), so a disconnected client answers "down"
 * at once instead of waiting for the timeout.
 */
@Injectable()
export class RedisHealthIndicator {
  constructor(
    private readonly health: HealthIndicatorService,
    @Inject(REDIS) private readonly redis: IORedis,
  ) {}

  pingCheck(key = 'redis', timeoutMs = 1000) {
    return this.health
      .check(key)
      .attempt(async () => {
        if (this.redis.status !== 'ready') throw new Error(`redis connection is ${this.redis.status}`);
        await this.redis.ping();
      })
      .withTimeout(timeoutMs);
  }
}
