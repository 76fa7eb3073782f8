import { JobChangesRepository } from '@almanac/persistence';
import type { Hint } from '@almanac/domain';
import { Clock, HotQueue, MetricsService, REDIS, type RedisClient, within } from '@almanac/platform';
import { Inject, Injectable } from '@nestjs/common';
import { InjectPinoLogger, PinoLogger } from 'nestjs-pino';
import type { Counter } from 'prom-client';
import { API_SETTINGS, ApiSettings } from '../api-settings';

/** Connection states in which a command would only wait in ioredis' offline queue. */
const DOWN = new Set(['reconnecting', 'close', 'end']);

/**
 * Gives committed immediate and hot rows their hints on the hot queue. The row is the truth:
 * when Redis is down or slow, the rows go back to `scheduled` (guarded on `queued` + run time)
 * and the promoter's sweeps deliver them; ingest still answers success.
 */
@Injectable()
export class HotRoutingService {
  @InjectPinoLogger('hot-routing') private readonly log!: PinoLogger;
  private readonly failures: Counter;

  constructor(
    private readonly hotQueue: HotQueue,
    private readonly jobs: JobChangesRepository,
    private readonly clock: Clock,
    @Inject(REDIS) private readonly redis: RedisClient,
    @Inject(API_SETTINGS) private readonly settings: ApiSettings,
    metrics: MetricsService,
  ) {
    this.failures = metrics.counter({
      name: 'almanac_ingest_enqueue_failures_total',
      help: 'Jobs committed as queued whose enqueue failed (left to the promoter as scheduled)',
    });
  }

  /** Returns the ids that could not be enqueued (now `scheduled` rows). */
  async enqueueOrDemote(items: Hint[]): Promise<Set<string>> {
    if (items.length === 0) return new Set();
    try {
      if (DOWN.has(this.redis.status)) throw new Error(`redis is ${this.redis.status}`);
      await within(this.settings.enqueueTimeoutMs, this.hotQueue.enqueue(items, this.clock.now()), 'hot queue enqueue');
      return new Set();
    } catch (err) {
      this.failures.inc(items.length);
      this.log.warn({ jobs: items.length, err: (err as Error).message }, 'enqueue failed; rows left for the promoter');
      try {
        await this.jobs.demoteToScheduled(items.map((i) => ({ id: i.id, runAt: new Date(i.dueMs) })));
      } catch (dbErr) {
        // Still `queued` without a queue entry: the overdue sweep finds such rows.
        this.log.error({ jobs: items.length, err: (dbErr as Error).message }, 'could not demote rows after enqueue failure');
      }
      return new Set(items.map((i) => i.id));
    }
  }
}
