import { createDataSource } from '@almanac/persistence';
import { Inject, Injectable, OnApplicationShutdown } from '@nestjs/common';
import { type HealthIndicatorResult, TypeOrmHealthIndicator } from '@nestjs/terminus';
import type { DataSource } from 'typeorm';
import { ALMANAC_CONFIG, type AlmanacConfig } from '../config/almanac-config';
import { within } from '../time/within';

/**
 * Readiness' look at Postgres, on a connection of its own (one more per process). Through the
 * role's pool, a pool kept busy for a second (POSTs waiting up to the acquire timeout behind a
 * lock, a slow Postgres) failed every replica's readiness at once, and the Service dropped them
 * all: a slowdown became an outage (review). The worker's heartbeat has its own for the same reason.
 */
@Injectable()
export class PostgresPing implements OnApplicationShutdown {
  private source: Promise<DataSource> | undefined;

  constructor(
    @Inject(ALMANAC_CONFIG) private readonly config: AlmanacConfig,
    private readonly indicator: TypeOrmHealthIndicator,
  ) {}

  async check(key: string, timeoutMs: number): Promise<HealthIndicatorResult> {
    const source = (this.source ??= createDataSource({ ...this.config.database, poolSize: 1 })
      .initialize()
      .catch((err: unknown) => {
        this.source = undefined; // not reached: tried again at the next look
        throw err;
      }));
    const result = await this.indicator.pingCheck(key, { connection: await within(timeoutMs, source, 'a connection to ping Postgres on'), timeout: timeoutMs });
    if (result[key]?.status !== 'up') {
      // A ping that timed out keeps the one connection: on a socket a failover left dead, for TCP's
      // ~15 minutes, and every look failed meanwhile (review). The next look connects anew.
      if (this.source === source) this.source = undefined;
      void source.then((s) => s.destroy()).catch(() => undefined);
    }
    return result;
  }

  async onApplicationShutdown(): Promise<void> {
    const source = await this.source?.catch(() => undefined);
    this.source = undefined;
    if (source?.isInitialized) await source.destroy();
  }
}
