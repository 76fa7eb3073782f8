import { CONSUMER_REMOVAL, poolQueueName } from '@almanac/platform';
import { Job, Worker } from 'bullmq';
import type IORedis from 'ioredis';
import type { Logger } from 'pino';
import type { Executor, ExecutionResult } from './executor';
import type { PoolJobData } from './pool-job';

export interface PoolConsumerOptions {
  connection: IORedis;
  prefix: string;
  pools: readonly string[];
  /** Handlers running at once, per pool. */
  concurrency: number;
  executor: Executor;
  logger: Logger;
}

/**
 * Takes deliveries off the pool queues (one BullMQ worker per pool) and hands them to the
 * executor. BullMQ only delivers; whether a job ran is decided by the row, so the pool jobs
 * carry no retry settings and disappear once processed.
 */
export class PoolConsumer {
  readonly workers: Worker<PoolJobData, ExecutionResult>[];
  private started = false;
  private readonly poolOf = new Map<Worker, string>();

  constructor(private readonly o: PoolConsumerOptions) {
    this.workers = o.pools.map((pool) => {
      const worker = new Worker<PoolJobData, ExecutionResult>(
        poolQueueName(pool),
        (job) => this.process(job, pool),
        { connection: o.connection, prefix: o.prefix, concurrency: o.concurrency, autorun: false, ...CONSUMER_REMOVAL },
      );
      worker.on('error', (err) => o.logger.error({ err, pool }, 'pool worker error'));
      // Only infrastructure failures land here (handler failures are outcomes): the row stays
      // running until its lease expires and the overdue sweep puts it back.
      worker.on('failed', (job, err) => o.logger.error({ err, pool, jobId: job?.data.id, attempt: job?.data.a }, 'delivery failed; the lease rescue will retry it'));
      this.poolOf.set(worker, pool);
      return worker;
    });
  }

  start(): void {
    if (this.started) return;
    this.started = true;
    for (const w of this.workers) {
      w.run().catch((err: unknown) => this.o.logger.error({ err }, 'pool worker stopped'));
    }
  }

  /**
   * Processes everything waiting in the pool queues now, concurrently, and returns how many
   * deliveries it took. For tests and tools: no polling, no timers.
   */
  async runOnce(max = 10_000): Promise<number> {
    const token = `once-${process.pid}-${Date.now()}`;
    const jobs: { job: Job<PoolJobData, ExecutionResult>; pool: string }[] = [];
    for (const w of this.workers) {
      while (jobs.length < max) {
        const job = (await w.getNextJob(token, { block: false })) as Job<PoolJobData, ExecutionResult> | undefined;
        if (!job) break;
        jobs.push({ job, pool: this.poolOf.get(w) as string });
      }
    }
    await Promise.all(
      jobs.map(async ({ job, pool }) => {
        const result = await this.process(job, pool);
        await job.moveToCompleted(result, token, false);
      }),
    );
    await this.o.executor.drain(); // outcomes recorded before the caller looks
    return jobs.length;
  }

  /**
   * Graceful stop: no new deliveries; running handlers get until `deadlineMs`; whatever is
   * still running then is released back to `queued` and re-enqueued at once.
   */
  async close(deadlineMs: number): Promise<{ released: number }> {
    const closing = Promise.all(this.workers.map((w) => w.close()));
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<'deadline'>((resolve) => {
      timer = setTimeout(() => resolve('deadline'), deadlineMs);
    });
    let first: 'closed' | 'deadline';
    try {
      first = await Promise.race([closing.then(() => 'closed' as const), deadline]);
    } finally {
      clearTimeout(timer); // also when a worker's close rejects: the timer must not hold the process
    }
    let released = 0;
    if (first === 'deadline') {
      released = await this.o.executor.releaseUnfinished();
      await Promise.race([closing, new Promise((r) => setTimeout(r, 2000).unref())]);
      await Promise.all(this.workers.map((w) => w.close(true).catch(() => undefined)));
    }
    await this.o.executor.drain();
    return { released };
  }

  private async process(job: Job<PoolJobData, ExecutionResult>, pool: string): Promise<ExecutionResult> {
    const d = job.data;
    return this.o.executor.execute({ id: d.id, attempt: d.a, dueMs: d.d, pool });
  }
}
