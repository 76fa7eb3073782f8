import { InjectQueue } from '@nestjs/bullmq';
import { Inject, Injectable, Optional } from '@nestjs/common';
import { Queue } from 'bullmq';
import type { RedisClient } from '../redis/redis';
import { DELIVERY_REDIS } from '../redis/redis';
import { within } from '../time/within';
import { envelopeJobId, jobIdFromQueueJobId, queueJobId } from './queue-ids';

export const HOT_QUEUE_NAME = 'hot';

/**
 * Jobs come out of the delayed set this much before their run time. Redis moves delayed jobs
 * on its timer tick (every 100 ms at its default `hz 10`), which alone put ~100 ms into p99
 * dispatch lag. Arriving early absorbs the tick; the dispatcher holds each job until its run
 * time before handing it to a worker, and the worker waits for it, so no handler starts early.
 */
export const DELIVERY_LEAD_MS = 150;

/** When a job due at `runAtMs` leaves the delayed set (every path that delays a hot job). */
export function deliveryTime(runAtMs: number): number {
  return runAtMs - DELIVERY_LEAD_MS;
}

/** What the hot queue carries: never the payload (the row has it), only what routing needs. */
export interface HotJobData {
  /** tenant id */
  t: number;
  /** due time, epoch ms (BullMQ zeroes `delay` once a job is waiting, so lag needs this) */
  d: number;
  /** An envelope's row ids (all of tenant `t`, kind = the job's name, due at `d`); absent for one row. */
  ids?: string[];
}

/**
 * Rows due at one instant for one tenant and kind (a burst: the 09:00 invoices) travel as one
 * queue job of up to ENVELOPE_MAX rows once there are at least ENVELOPE_MIN of them: BullMQ's
 * per-job work (add, move to active, finish) was ~100 µs of CPU per job over node and Redis,
 * as much as plain BullMQ's whole cost. Smaller groups stay one job per row (`j-<id>`), which
 * cancel can remove; a cancelled row inside an envelope is dropped by the worker's claim.
 */
export const ENVELOPE_MIN = 16;
export const ENVELOPE_MAX = 500;

/**
 * Envelopes are BullMQ-prioritized jobs, and BullMQ's fetch takes every waiting (unprioritized)
 * job before a prioritized one: a single row due now goes ahead of a burst's envelopes still in
 * the queue. A Worker fetches one job per round trip, in sequence, so a 200,000-row burst's 400
 * envelopes took the dispatcher ~700 ms to fetch, and a light tenant's job due half a second
 * after the burst waited behind all of them (bench/fairness.ts). The rows behind an envelope
 * wait in the dispatcher's fair lines anyway; this only stops a burst's intake from holding
 * everyone else's. Among envelopes the order is still FIFO (one priority).
 */
export const ENVELOPE_PRIORITY = 1;

/** The row ids a hot-queue job delivers: its envelope's, or the one in its id. */
export function hotJobRowIds(jobId: string, data: HotJobData): string[] {
  return data.ids ?? [jobIdFromQueueJobId(jobId)];
}

export interface HotItem {
  id: string;
  runAt: Date;
  tenantId: number;
  kind: string;
  /** Set when a worker re-enqueues the row after this attempt: queue id `j-<id>-r<n>` (see queueJobId). */
  afterAttempt?: number;
}

/** Nest injection token for how long a producer waits on Redis (ALMANAC_REDIS_COMMAND_TIMEOUT_MS). */
export const HOT_QUEUE_WAIT_MS = Symbol('HOT_QUEUE_WAIT_MS');

const DEFAULT_WAIT_MS = 5000;

/**
 * The delivery queue for the next hours of work. Enqueueing is idempotent while a job is in
 * Redis (jobId `j-<row id>`); Postgres state, not the queue, decides whether a job was done.
 * The queue is BullModule's (`registerQueue` in OpsModule) on the delivery connection, which
 * has no command timeout (a Worker's blocking reads share its options), so every wait here is
 * bounded by `waitMs` instead: a stalled Redis fails a sweep's enqueue, never hangs it.
 */
@Injectable()
export class HotQueue {
  constructor(
    @InjectQueue(HOT_QUEUE_NAME) readonly queue: Queue<HotJobData, unknown, string>,
    @Inject(DELIVERY_REDIS) private readonly redis: RedisClient,
    @Optional() @Inject(HOT_QUEUE_WAIT_MS) private readonly waitMs: number = DEFAULT_WAIT_MS,
  ) {
    // Connection errors are the connection owner's to report (once per outage); without a
    // listener BullMQ prints every reconnect failure to stderr.
    this.queue.on('error', () => undefined);
  }

  /** A hot queue outside Nest (tests, benches, tools) on `connection`, which its caller closes. */
  static open(connection: RedisClient, prefix: string, waitMs = DEFAULT_WAIT_MS): HotQueue {
    return new HotQueue(new Queue<HotJobData, unknown, string>(HOT_QUEUE_NAME, { connection, prefix }), connection, waitMs);
  }

  get prefix(): string {
    return this.queue.opts.prefix ?? 'bull';
  }

  /** One round trip (`addBulk`) for the whole batch; bursts go as envelopes (ENVELOPE_MIN). */
  async enqueue(items: readonly HotItem[], now: Date): Promise<void> {
    if (items.length === 0) return;
    const nowMs = now.getTime();
    const delay = (due: number) => Math.max(0, deliveryTime(due) - nowMs);
    const jobs: { name: string; data: HotJobData; opts: { jobId: string; delay: number; priority?: number } }[] = [];
    for (const group of groupsOf(items)) {
      const { kind, tenantId } = group[0];
      const due = group[0].runAt.getTime();
      if (group.length < ENVELOPE_MIN) {
        // No removeOn* here: the consumer's Worker options say it once. Every option byte is
        // stored in each job's hash, and past 64 B (hash-max-listpack-value) Redis turns the
        // compact hash into a real one: ~660 instead of ~280 B per queued job.
        for (const item of group) {
          jobs.push({ name: kind, data: { t: tenantId, d: due }, opts: { jobId: queueJobId(item.id, item.afterAttempt), delay: delay(due) } });
        }
        continue;
      }
      for (let i = 0; i < group.length; i += ENVELOPE_MAX) {
        const ids = group.slice(i, i + ENVELOPE_MAX).map((item) => item.id);
        // Deterministic: enqueueing the same rows again (a promoter retry) is ignored like `j-<id>`.
        const jobId = envelopeJobId(ids);
        jobs.push({ name: kind, data: { t: tenantId, d: due, ids }, opts: { jobId, delay: delay(due), priority: ENVELOPE_PRIORITY } });
      }
    }
    await within(this.waitMs, this.queue.addBulk(jobs), 'hot queue addBulk');
  }

  /**
   * For rows that are already due: a copy of `j-<id>` still delayed for a later time (left by a
   * reschedule while Redis was unreachable; an add of the same id is ignored while it exists)
   * is made waiting now. One pipelined lookup in the delayed set for the whole batch; only the
   * copies found there (rare) are promoted one by one. Returns how many were promoted.
   */
  async expedite(ids: readonly string[]): Promise<number> {
    if (ids.length === 0) return 0;
    const pipeline = this.redis.pipeline();
    for (const id of ids) pipeline.zscore(this.queue.keys.delayed, queueJobId(id));
    const scores = (await within(this.waitMs, pipeline.exec(), 'hot queue expedite')) ?? [];
    let promoted = 0;
    for (const [i, id] of ids.entries()) {
      if (scores[i]?.[1] === null || scores[i]?.[1] === undefined) continue;
      try {
        await within(this.waitMs, this.queue.getJob(queueJobId(id)).then((job) => job?.promote()), 'hot queue promote');
        promoted++;
      } catch {
        // It left the delayed set in between (it came due, or was removed): nothing to do.
      }
    }
    return promoted;
  }

  /**
   * Takes a job out of the queue (cancel, reschedule). True when it is gone (removed, or was
   * never there); false when a consumer holds it right now and it stays. Either way the row's
   * guarded state change is what makes cancel safe: the dispatcher re-checks the row.
   */
  async remove(id: string): Promise<boolean> {
    return (await within(this.waitMs, this.queue.remove(queueJobId(id)), 'hot queue remove')) === 1;
  }

  /**
   * Takes many jobs out at once (bulk operations): the removals go out together on the queue's
   * connection (one round trip's wait, not one per job). Returns how many were removed; rows in
   * an envelope have no job of their own, and the worker's claim drops them.
   */
  async removeMany(ids: readonly string[]): Promise<number> {
    const removed = await within(this.waitMs, Promise.all(ids.map((id) => this.queue.remove(queueJobId(id)))), 'hot queue remove');
    return removed.filter((r) => r === 1).length;
  }

  async close(): Promise<void> {
    await this.queue.close();
  }
}

/**
 * Items that may share an envelope: one tenant, kind and due instant, and not a worker's
 * re-enqueue (those keep their own `j-<id>-r<n>` id). Singletons keep their order.
 */
function groupsOf(items: readonly HotItem[]): HotItem[][] {
  const groups = new Map<string, HotItem[]>();
  for (const item of items) {
    const key = item.afterAttempt === undefined ? `${item.tenantId}|${item.kind}|${item.runAt.getTime()}` : `r|${item.id}|${item.afterAttempt}`;
    const group = groups.get(key);
    if (group) group.push(item);
    else groups.set(key, [item]);
  }
  return [...groups.values()];
}

/**
 * What every Almanac consumer Worker removes once a queue job is finished: everything. The row
 * and its attempts keep the history; and queue job ids are row ids (`j-<id>`), so a finished
 * or failed job left in Redis would turn the next re-enqueue of that row (overdue sweep, lease
 * rescue, retry) into a silent no-op and strand it. (`true` is not accepted by BullMQ 6.7's
 * Worker here; `{count: 0}` is.)
 */
export const CONSUMER_REMOVAL = {
  removeOnComplete: { count: 0 },
  removeOnFail: { count: 0 },
} as const;
