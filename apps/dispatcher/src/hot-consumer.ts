import { jobIdFromQueueJobId } from '@almanac/persistence';
import { CONSUMER_REMOVAL, DELIVERY_LEAD_MS, deliveryTime, HOT_QUEUE_NAME, HotJobData } from '@almanac/platform';
import { DelayedError, Job, Worker } from 'bullmq';
import type IORedis from 'ioredis';
import type { Logger } from 'pino';
import { MicroBatcher } from '../../worker/src/delivery/micro-batcher';
import type { Dispatcher, DispatchResult, HotDelivery } from './dispatcher';

export interface HotConsumerOptions {
  connection: IORedis;
  prefix: string;
  /** Hot jobs taken at once; also the largest claim batch. */
  concurrency: number;
  dispatcher: Dispatcher;
  logger: Logger;
}

/**
 * The claim and the hop to the worker pool take a few ms (tens at p99 on a busy machine): a job
 * is claimed this long before its run time and the worker waits out the rest, so the handler
 * starts on time while a worker slot is held only briefly.
 */
export const HANDOFF_AHEAD_MS = 25;

function toDelivery(job: Job<HotJobData, unknown, string>): HotDelivery {
  return { id: jobIdFromQueueJobId(job.id as string), kind: job.name, tenantId: job.data.t, dueMs: job.data.d };
}

/**
 * Consumes the hot queue as jobs come due. BullMQ hands over one job per processor call; the
 * batcher gathers the calls in flight into one claim, so the database sees batches.
 */
export class HotConsumer {
  readonly worker: Worker<HotJobData, unknown, string>;
  private readonly batcher: MicroBatcher<HotDelivery, DispatchResult>;
  private started = false;

  constructor(private readonly o: HotConsumerOptions) {
    this.batcher = new MicroBatcher((items) => o.dispatcher.dispatch(items), { maxBatch: o.concurrency, maxInFlight: 2 });
    this.worker = new Worker<HotJobData, unknown, string>(HOT_QUEUE_NAME, (job, token) => this.process(job, token), {
      connection: o.connection,
      prefix: o.prefix,
      concurrency: o.concurrency,
      autorun: false,
      ...CONSUMER_REMOVAL,
    });
    this.worker.on('error', (err) => o.logger.error({ err }, 'hot queue worker error'));
  }

  start(): void {
    if (this.started) return;
    this.started = true;
    this.worker.run().catch((err: unknown) => this.o.logger.error({ err }, 'hot queue worker stopped'));
  }

  /** Dispatches every hot job due now in one batch; returns how many it took. Tests and tools. */
  async runOnce(max = 10_000): Promise<number> {
    const token = `once-${process.pid}-${Date.now()}`;
    const jobs: Job<HotJobData, unknown, string>[] = [];
    while (jobs.length < max) {
      const job = (await this.worker.getNextJob(token, { block: false })) as Job<HotJobData, unknown, string> | undefined;
      if (!job) break;
      jobs.push(job);
    }
    if (jobs.length === 0) return 0;
    const results = await this.o.dispatcher.dispatch(jobs.map(toDelivery));
    await Promise.all(
      jobs.map(async (job, i) => {
        const r = results[i];
        if (r.status === 'not_due') await job.moveToDelayed(deliveryTime(r.runAt.getTime()), token);
        else await job.moveToCompleted(r.status, token, false);
      }),
    );
    return jobs.length;
  }

  async close(): Promise<void> {
    await this.worker.close();
    await this.batcher.drain();
  }

  private async process(job: Job<HotJobData, unknown, string>, token?: string): Promise<string> {
    // Jobs leave the delayed set DELIVERY_LEAD_MS early (Redis' timer tick): hold this one until
    // just before its run time (HANDOFF_AHEAD_MS) so the row stays cancellable and the worker's
    // slots are not spent waiting. Further off than that (clock skew), the claim's early window
    // and the worker's own wait decide.
    const early = job.data.d - Date.now() - HANDOFF_AHEAD_MS;
    if (early > 0 && early <= 2 * DELIVERY_LEAD_MS) await new Promise((r) => setTimeout(r, early));
    const r = await this.batcher.submit(toDelivery(job));
    if (r.status === 'not_due') {
      // Rescheduled to later but still in the hot horizon: wait in the queue until then.
      await job.moveToDelayed(deliveryTime(r.runAt.getTime()), token);
      throw new DelayedError();
    }
    return r.status;
  }
}
