import { Inject, Injectable } from '@nestjs/common';
import { HealthIndicatorService } from '@nestjs/terminus';
import { isCluster, REDIS, type RedisClient } from '../redis/redis';

/**
 * Terminus has no Redis indicator; this one PINGs the shared connection (on a cluster: checks
 * the cluster's state and PINGs every master). While Redis is away
 * the connection queues commands (BullMQ needs that), so a disconnected client answers "down"
 * at once instead of waiting for the timeout.
 */
@Injectable()
export class RedisHealthIndicator {
  constructor(
    private readonly health: HealthIndicatorService,
    @Inject(REDIS) private readonly redis: RedisClient,
  ) {}

  pingCheck(key = 'redis', timeoutMs = 1000) {
    return this.health
      .check(key)
      .attempt(async () => {
        if (this.redis.status !== 'ready') throw new Error(`redis connection is ${this.redis.status}`);
        if (!isCluster(this.redis)) {
          await this.redis.ping();
          return;
        }
        // A cluster answers PING on a live node even while some of its slots have no master.
        const info = await this.redis.cluster('INFO');
        if (!/^cluster_state:ok/m.test(info)) throw new Error('redis cluster state is not ok');
        await Promise.all(this.redis.nodes('master').map((n) => n.ping()));
      })
      .withTimeout(timeoutMs);
  }
}
