import { Inject, Injectable, OnModuleInit } from '@nestjs/common';
import type { Queue } from 'bullmq';
import { Cluster } from 'ioredis';
import type { RedisClient } from '../redis/redis';
import { REDIS } from '../redis/redis';
import { MetricsService } from './metrics.service';
import { within } from '../time/within';

/** A scrape must never hang on a Redis outage: answer without the Redis-backed values instead. */
const REDIS_SCRAPE_TIMEOUT_MS = 500;
/** Queue depth is cached briefly: several scrapers (or a fast one) do not each hit Redis. */
const QUEUE_COUNTS_TTL_MS = 5000;
const QUEUE_STATES = ['waiting', 'delayed', 'active', 'prioritized', 'waiting-children', 'failed'] as const;

/**
 * Redis-backed gauges read on scrape: `almanac_redis_memory_bytes` (INFO memory; 0 while
 * `almanac_redis_up` is 0) and
 * `almanac_queue_jobs{queue,state}` for every queue registered with `trackQueue`.
 */
@Injectable()
export class RedisMetrics implements OnModuleInit {
  /** Each tracked queue as its owner has it now (a HotQueue may replace its BullMQ Queue). */
  private readonly queues = new Map<string, () => Queue>();
  private counts: { at: number; rows: { queue: string; state: string; n: number }[] } | undefined;
  /** The INFO probe of the scrape in progress, shared by the two gauges it fills. */
  private probing: Promise<number | undefined> | undefined;

  constructor(
    private readonly metrics: MetricsService,
    @Inject(REDIS) private readonly redis: RedisClient,
  ) {}

  onModuleInit(): void {
    // One INFO per scrape for both gauges: the registry reads every metric at once, so `up`
    // set from the memory gauge's collect would show the previous scrape's answer.
    this.metrics.gauge({
      name: 'almanac_redis_up',
      help: '1 when INFO answered during this scrape, else 0',
      collect: async (gauge) => gauge.set((await this.probe()) !== undefined ? 1 : 0),
    });
    this.metrics.gauge({
      name: 'almanac_redis_memory_bytes',
      help: 'Redis used_memory as reported by INFO memory (of the fullest master of a cluster: each refuses writes at its own maxmemory)',
      // prom-client cannot omit an unlabelled sample; 0 with almanac_redis_up 0 means unknown.
      collect: async (gauge) => gauge.set((await this.probe()) ?? 0),
    });
    this.metrics.gauge({
      name: 'almanac_queue_jobs',
      help: 'Jobs in each BullMQ queue by state (cached up to 5 s)',
      labelNames: ['queue', 'state'] as const,
      collect: async (gauge) => {
        const rows = await this.queueCounts();
        gauge.reset();
        for (const r of rows) gauge.set({ queue: r.queue, state: r.state }, r.n);
      },
    });
  }

  /** used_memory, read once for the collects that run together in one scrape. */
  private probe(): Promise<number | undefined> {
    this.probing ??= this.withTimeout(() => this.usedMemory()).finally(() => {
      this.probing = undefined;
    });
    return this.probing;
  }

  /**
   * used_memory of the server, or of a cluster's fullest master; undefined if any does not say.
   * Summed, a node at its maxmemory (the hot queue's, refusing enqueues) hid under the others'.
   */
  private async usedMemory(): Promise<number | undefined> {
    const servers = this.redis instanceof Cluster ? this.redis.nodes('master') : [this.redis];
    const infos = await Promise.all(servers.map((s) => s.info('memory')));
    let most = 0;
    for (const info of infos) {
      const used = /^used_memory:(\d+)/m.exec(info);
      if (!used) return undefined;
      most = Math.max(most, Number(used[1]));
    }
    return most;
  }

  /** Reports the depth of the queue `current` gives at each scrape on /metrics. Tracking the same queue name twice is a no-op. */
  trackQueue(current: () => Queue): void {
    const name = current().name;
    if (!this.queues.has(name)) this.queues.set(name, current);
  }

  private async queueCounts(): Promise<{ queue: string; state: string; n: number }[]> {
    const now = Date.now();
    if (this.counts && now - this.counts.at < QUEUE_COUNTS_TTL_MS) return this.counts.rows;
    const rows: { queue: string; state: string; n: number }[] = [];
    for (const current of this.queues.values()) {
      const queue = current();
      const counts = await this.withTimeout(() => queue.getJobCounts(...QUEUE_STATES));
      if (!counts) return this.counts?.rows ?? [];
      for (const state of QUEUE_STATES) rows.push({ queue: queue.name, state, n: counts[state] ?? 0 });
    }
    this.counts = { at: now, rows };
    return rows;
  }

  private async withTimeout<T>(fn: () => Promise<T>): Promise<T | undefined> {
    if (this.redis.status !== 'ready') return undefined;
    return within(REDIS_SCRAPE_TIMEOUT_MS, fn(), 'redis metrics').catch(() => undefined);
  }
}
