import { CONSUMER_REMOVAL, DELIVERY_LEAD_MS, HOT_QUEUE_NAME, HotJobData, hotJobRowIds, MicroBatcher } from '@almanac/platform';
import { OnWorkerEvent, Processor, WorkerHost } from '@nestjs/bullmq';
import { Inject } from '@nestjs/common';
import type { Job, Worker } from 'bullmq';
import type { Logger } from 'pino';
import { Dispatcher, DispatchResult, HotDelivery } from './dispatcher';
import { TenantFairOrder } from './tenant-fair-order';

export const HOT_CONSUMER_SETTINGS = Symbol('HOT_CONSUMER_SETTINGS');
/** The dispatcher role's pino logger (`component: dispatcher`). */
export const DISPATCHER_LOGGER = Symbol('DISPATCHER_LOGGER');

export interface HotConsumerSettings {
  /** Hot jobs taken at once; also the rows of one dispatch batch (give or take one hot job). */
  concurrency: number;
  /**
   * Hot jobs that may wait for a busy pool at once. Below `concurrency`, so busy pools never
   * hold all of its slots: the rest keep moving (parking what cannot wait), and other pools'
   * jobs behind a burst still get through.
   */
  maxWaitingSlots: number;
}

/**
 * The BullMQ Worker's options, fixed for every dispatcher. Its connection and prefix are
 * BullModule's (OpsModule: the delivery connection); concurrency comes from the settings at
 * start(). It does not run by itself: DispatchService starts it at boot, tests use runOnce().
 */
const HOT_WORKER_OPTIONS = {
  autorun: false,
  // A killed dispatcher's active hot jobs go back to waiting once their lock lapses and a
  // stalled check runs: with BullMQ's 30 s / 30 s that made jobs up to 62 s late in the chaos
  // bench. Locks are renewed in one call for all active jobs every 5 s.
  lockDuration: 10_000,
  stalledInterval: 5_000,
  ...CONSUMER_REMOVAL,
};

/**
 * The hop to the worker pool and the worker's claim take a few ms (tens at p99 on a busy
 * machine): a job is handed off this long before its run time and the worker waits out the
 * rest, so the handler starts on time while a worker slot is held only briefly. Measured at
 * 500 jobs/s (bench/lag.ts): 25 ms gave p99 lag 14-16 ms, 50 ms gives 7 ms.
 */
export const HANDOFF_AHEAD_MS = 50;

/** A busy pool's waiting line is parked once no room has freed in it for this long. */
export const MAX_ROOM_WAIT_MS = 500;

/** The deliveries one hot-queue job carries: one row, or an envelope's rows (a burst). */
function deliveriesOf(job: Job<HotJobData, unknown, string>, mayWait?: boolean): HotDelivery[] {
  return hotJobRowIds(job.id as string, job.data).map((id) => ({ id, kind: job.name, tenantId: job.data.t, dueMs: job.data.d, mayWait }));
}

/**
 * One hot job's rows, submitted to the batcher as one item. Submitting row by row cost a promise
 * and a copy per row: a 200,000-row burst's 400 envelopes, whose timers all fire at once, held
 * the dispatcher's event loop for 1.2 s (a CPU profile: promises, copies and their GC), and a
 * quiet tenant's job due in that second waited behind it.
 */
interface HotIntake {
  tenantId: number;
  kind: string;
  rows: number;
  deliveries: HotDelivery[];
}

/** One hot job's answer: its rows' results, and the parking of those that park (see dispatchAside). */
interface IntakeAnswer {
  results: DispatchResult[];
  parked: Promise<void>;
}

/** Dispatches the hot jobs of one batch together; answers each its rows' results. */
async function dispatchIntakes(dispatcher: Dispatcher, intakes: HotIntake[]): Promise<IntakeAnswer[]> {
  const { results, parked } = await dispatcher.dispatchAside(intakes.flatMap((i) => i.deliveries));
  let at = 0;
  return intakes.map((i) => {
    const mine = results.slice(at, (at += i.rows));
    return { results: mine, parked: mine.some((r) => r.status === 'parked') ? parked : Promise.resolve() };
  });
}

/**
 * Consumes the hot queue as jobs come due: the hot queue's @Processor, whose BullMQ Worker
 * Nest creates. BullMQ hands over one job per `process` call; the batcher gathers the calls in
 * flight into one dispatch, so Redis and the backlog see batches.
 */
@Processor(HOT_QUEUE_NAME, HOT_WORKER_OPTIONS)
export class HotConsumer extends WorkerHost<Worker<HotJobData, unknown, string>> {
  private readonly batcher: MicroBatcher<HotIntake, IntakeAnswer>;
  private started = false;
  /** Hot jobs that may wait for a busy pool, reserved or waiting (see maxWaitingSlots). */
  private waitingSlots = 0;

  /** Hot-consumer slots reserved for waiting now (tests, tools). */
  get slotsWaiting(): number {
    return this.waitingSlots;
  }

  constructor(
    private readonly dispatcher: Dispatcher,
    @Inject(HOT_CONSUMER_SETTINGS) private readonly settings: HotConsumerSettings,
    @Inject(DISPATCHER_LOGGER) private readonly logger: Logger,
  ) {
    super();
    // A batch is about `concurrency` rows (TenantFairOrder counts rows): one envelope, or many single rows.
    this.batcher = new MicroBatcher((intakes: HotIntake[]) => dispatchIntakes(dispatcher, intakes), {
      maxBatch: settings.concurrency,
      maxInFlight: 2,
      queue: new TenantFairOrder(dispatcher.shares),
    });
  }

  start(): void {
    if (this.started) return;
    this.started = true;
    this.worker.concurrency = this.settings.concurrency;
    this.worker.run().catch((err: unknown) => this.logger.error({ err }, 'hot queue worker stopped'));
  }

  @OnWorkerEvent('error')
  onWorkerError(err: Error): void {
    this.logger.error({ err }, 'hot queue worker error');
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
    const deliveries = jobs.map((job) => deliveriesOf(job));
    const results = await this.dispatcher.dispatch(deliveries.flat());
    await Promise.all(jobs.map((job) => job.moveToCompleted('dispatched', token, false)));
    return results.length;
  }

  /**
   * How long to hold a hot job before dispatching it. Jobs leave the delayed set DELIVERY_LEAD_MS
   * early (Redis' timer tick): each is held until just before its run time (HANDOFF_AHEAD_MS) so
   * the worker's slots are not spent waiting. Further off than that (clock skew), the worker's
   * claim and its own wait decide. A light tenant's job behind a full pool is not held: it goes to
   * the pool's light lane, whose slots are its own, and the path there (the dispatch batch, the
   * worker's take, the claim) took 30-100 ms per step at the start of a 200,000-row burst in
   * bench/fairness.ts; the worker claims it and waits out the rest of the lead.
   */
  holdMs(kind: string, data: HotJobData, nowMs: number): number {
    const early = data.d - nowMs - HANDOFF_AHEAD_MS;
    if (early <= 0 || early > 2 * DELIVERY_LEAD_MS) return 0;
    const single = (data.ids?.length ?? 1) === 1;
    return single && this.dispatcher.goesLight(kind, data.t) ? 0 : early;
  }

  async close(): Promise<void> {
    const closing = this.worker.close(); // takes nothing new; waits for the active jobs
    this.dispatcher.stopWaiting();
    await closing;
    await this.batcher.drain();
  }

  /** BullMQ's processor: one hot job, dispatched with the others in flight (see the class). */
  async process(job: Job<HotJobData, unknown, string>): Promise<string> {
    const hold = this.holdMs(job.name, job.data, Date.now());
    if (hold > 0) await new Promise((r) => setTimeout(r, hold));
    // The slot is reserved before the batch answers: hot jobs processed at once all read this
    // counter before any answer comes back, so counting only `full` answers let every slot wait.
    const mayWait = this.waitingSlots < this.settings.maxWaitingSlots;
    if (mayWait) this.waitingSlots++;
    try {
      const deliveries = deliveriesOf(job, mayWait);
      const { results: answers, parked } = await this.batcher.submit({ tenantId: job.data.t, kind: job.name, rows: deliveries.length, deliveries });
      const full = deliveries.filter((_, i) => answers[i].status === 'full');
      // A busy live pool: wait in its line (which parks the line if the pool stops freeing room).
      const pool = answers.find((a) => a.status === 'full')?.pool as string; // one kind per hot job
      // The hot job is done once its parked rows are in the backlog and its waiting rows handed
      // off or parked, not before; either failing fails it (the sweeps re-deliver those rows).
      const settled = await Promise.allSettled([parked, full.length > 0 ? this.dispatcher.waitForRoom(pool, full) : undefined]);
      for (const s of settled) if (s.status === 'rejected') throw s.reason;
      return full.length > 0 || answers.length > 1 ? 'dispatched' : answers[0].status;
    } finally {
      if (mayWait) this.waitingSlots--;
    }
  }
}
