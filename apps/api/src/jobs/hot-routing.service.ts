import { JobChangesRepository } from '@almanac/persistence';
import type { Hint } from '@almanac/domain';
import { Clock, HotQueue, MetricsService, MicroBatcher, REDIS, type RedisClient, within } from '@almanac/platform';
import { Inject, Injectable } from '@nestjs/common';
import { InjectPinoLogger, PinoLogger } from 'nestjs-pino';
import type { Counter } from 'prom-client';
import { API_SETTINGS, ApiSettings } from '../api-settings';

/** Connection states in which a command would only wait in ioredis' offline queue. */
const DOWN = new Set(['reconnecting', 'close', 'end']);

/**
 * Enqueues in flight at once, apart from the commits' slots: hints that come meanwhile wait and
 * go together, so a Redis that has stopped answering holds these, not the inserts.
 */
const ENQUEUES_IN_FLIGHT = 2;
/** Most hints in one enqueue (a batch POST's worth). */
const ENQUEUE_MAX_HINTS = 1000;

/**
 * Gives committed immediate and hot rows their hints on the hot queue. The row is the truth:
 * when Redis is down or slow, the rows go back to `scheduled` (guarded on `queued` + run time)
 * and the promoter's sweeps deliver them; ingest still answers success. Once an enqueue has
 * failed, the next ALMANAC_ENQUEUE_TIMEOUT_MS of hints go that way without trying: a Redis that
 * has gone silent costs one wait per period, not one per enqueue.
 */
@Injectable()
export class HotRoutingService {
  @InjectPinoLogger('hot-routing') private readonly log!: PinoLogger;
  private readonly failures: Counter;
  private readonly enqueues: MicroBatcher<Hint, boolean>;
  /** Until when (ms) hints are left to the promoter without trying Redis, after a failed enqueue. */
  private skipUntilMs = 0;

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
      help: 'Jobs committed as queued whose enqueue failed, or was skipped just after one failed (left to the promoter as scheduled)',
    });
    this.enqueues = new MicroBatcher((hints) => this.enqueueBatch(hints), { maxBatch: ENQUEUE_MAX_HINTS, maxInFlight: ENQUEUES_IN_FLIGHT });
  }

  /** Returns the ids that could not be enqueued (now `scheduled` rows). */
  async enqueueOrDemote(items: Hint[]): Promise<Set<string>> {
    const taken = await Promise.all(items.map((hint) => this.enqueues.submit(hint)));
    return new Set(items.filter((_, i) => !taken[i]).map((hint) => hint.id));
  }

  /** Resolves once no hint waits for or is in an enqueue (shutdown). */
  drain(): Promise<void> {
    return this.enqueues.drain();
  }

  /** One enqueue; on failure the rows are demoted. Answers, per hint, whether Redis took it. */
  private async enqueueBatch(items: Hint[]): Promise<boolean[]> {
    const now = this.clock.now();
    const skip = DOWN.has(this.redis.status) ? `redis is ${this.redis.status}` : now.getTime() < this.skipUntilMs ? 'an enqueue failed moments ago' : null;
    try {
      if (skip) throw new Error(skip);
      await within(this.settings.enqueueTimeoutMs, this.hotQueue.enqueue(items, now), 'hot queue enqueue');
      return items.map(() => true);
    } catch (err) {
      if (!skip) this.skipUntilMs = this.clock.now().getTime() + this.settings.enqueueTimeoutMs;
      this.failures.inc(items.length);
      this.log.warn({ jobs: items.length, err: (err as Error).message }, 'enqueue failed; rows left for the promoter');
      try {
        await this.jobs.demoteToScheduled(items.map((i) => ({ id: i.id, runAt: new Date(i.dueMs) })));
      } catch (dbErr) {
        // Still `queued` without a queue entry: the overdue sweep finds such rows.
        this.log.error({ jobs: items.length, err: (dbErr as Error).message }, 'could not demote rows after enqueue failure');
      }
      return items.map(() => false);
    }
  }
}
