import { CONSUMER_REMOVAL, DatabaseClock, endWith, type EnvelopeData, ENVELOPE_LOCK_MS, ENVELOPE_STALLED_CHECK_MS, flowsOf, hintsOf, HANDOFF_RETRY_FOR_MS, HANDOFF_WITHIN_MS, HOST_AHEAD_TRUSTED_MS, HOT_QUEUE_NAME, HotQueue, retryHandOff, tracer, within } from '@almanac/platform';
import { OnWorkerEvent, Processor, WorkerHost } from '@nestjs/bullmq';
import { Inject } from '@nestjs/common';
import type { Job, Worker } from 'bullmq';
import type { Logger } from 'pino';
import { Dispatcher } from './dispatcher';

export const HOT_CONSUMER_SETTINGS = Symbol('HOT_CONSUMER_SETTINGS');
/** The dispatcher role's pino logger (`component: dispatcher`). */
export const DISPATCHER_LOGGER = Symbol('DISPATCHER_LOGGER');

export interface HotConsumerSettings {
  /** Envelopes handed off at once: a burst's envelopes all come out together. */
  concurrency: number;
}

/**
 * The BullMQ Worker's options; connection and prefix are BullModule's (the delivery connection),
 * concurrency the settings' at start(). DispatcherService starts it at boot, tests use runOnce().
 */
const HOT_WORKER_OPTIONS = { autorun: false, lockDuration: ENVELOPE_LOCK_MS, stalledInterval: ENVELOPE_STALLED_CHECK_MS, ...CONSUMER_REMOVAL };

/**
 * The hot queue's @Processor (Nest creates its BullMQ Worker). It hands an envelope's rows to
 * their pools as it comes out (DELIVERY_LEAD_MS before its first row is due: they wait in the
 * pool, where a take leaves rows not due yet); the envelope stays active until the push landed,
 * so a dispatcher killed meanwhile loses nothing. A coarse window, or an envelope with rows due
 * later than HANDOFF_WITHIN_MS, goes back on the hot queue.
 */
@Processor(HOT_QUEUE_NAME, HOT_WORKER_OPTIONS)
export class HotConsumer extends WorkerHost<Worker<EnvelopeData, unknown, string>> {
  private started = false;

  constructor(
    private readonly dispatcher: Dispatcher,
    private readonly hotQueue: HotQueue,
    private readonly clock: DatabaseClock,
    @Inject(HOT_CONSUMER_SETTINGS) private readonly settings: HotConsumerSettings,
    @Inject(DISPATCHER_LOGGER) private readonly logger: Logger,
  ) {
    super();
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

  @OnWorkerEvent('failed')
  onEnvelopeFailed(job: Job<EnvelopeData, unknown, string> | undefined, err: Error): void {
    const what = job?.data.w === undefined ? { rows: job && hintsOf(job.data).length } : { window: job.data.w };
    this.logger.error({ err, envelope: job?.id, ...what }, 'an envelope could not be handed off; the overdue sweep hints its rows again');
  }

  /** Hands over every envelope waiting now; returns how many rows it handed. Tests and tools. */
  async runOnce(max = 10_000): Promise<number> {
    const token = `once-${process.pid}-${Date.now()}`;
    let rows = 0;
    for (let n = 0; n < max; n++) {
      const job = (await this.worker.getNextJob(token, { block: false })) as Job<EnvelopeData, unknown, string> | undefined;
      if (!job) break;
      rows += await this.deliver(job.data);
      await job.moveToCompleted('handed_off', token, false);
    }
    return rows;
  }

  /**
   * Takes nothing new, waits for the hand-offs held (a refused push's retries too), then closes
   * without QUIT: a stalled Redis answered neither, and the role waited until SIGKILL. Envelopes
   * still held stay active; another dispatcher takes them once their locks lapse.
   */
  async close(): Promise<void> {
    const waitedMs = HANDOFF_RETRY_FOR_MS + 1_000;
    await within(waitedMs, this.worker.pause(), 'the hand-offs held').catch(() => this.logger.warn({ waitedMs }, 'stopping without the hand-offs held: Redis does not answer'));
    await this.worker.close(true);
  }

  /** BullMQ's processor: one envelope. */
  async process(job: Job<EnvelopeData, unknown, string>): Promise<string> {
    await this.deliver(job.data);
    return 'handed_off';
  }

  /** One envelope, in a span that is a root of its own (an envelope carries many jobs' rows). */
  private deliver(data: EnvelopeData): Promise<number> {
    const span = tracer.startSpan('hand off', { root: true, attributes: { 'messaging.system': 'almanac', 'messaging.operation.type': 'process' } });
    return endWith(span, () => this.handOver(data), (rows) => ({ 'messaging.batch.message_count': rows }));
  }

  /**
   * The usual envelope, every row due within HANDOFF_WITHIN_MS (more on a host running ahead:
   * HOST_AHEAD_TRUSTED_MS): handed over; returns its rows. An envelope with rows due later goes
   * back on the hot queue whole, a coarse window part by part (drain), each in envelopes
   * (envelopesOf: rows already due in ones of at most ENVELOPE_MAX_ROWS out at once): a window
   * opened late can hold a whole burst, and 200,000 rows in one hand-off overflowed the call
   * stack. A window's reads and writes that Redis refuses go again, as a refused push does.
   */
  private async handOver(data: EnvelopeData): Promise<number> {
    const [now, hostMs, addedAtMs] = [this.clock.now(), this.clock.local.now().getTime(), Date.now()]; // BullMQ's clock: the host's
    const ahead = Math.min(Math.max(0, hostMs - now.getTime()), HOST_AHEAD_TRUSTED_MS);
    const windowStart = data.w;
    if (windowStart === undefined && data.l <= now.getTime() + ahead + HANDOFF_WITHIN_MS) {
      const flows = flowsOf(data);
      await this.dispatcher.handOff(flows, { repair: data.x === 1 });
      return flows.reduce((n, f) => n + f.items.length, 0);
    }
    const parts = windowStart === undefined ? [hintsOf(data)] : this.hotQueue.windows.drain(windowStart, now.getTime());
    // An envelope's own rows need ids of their own (it is still active); a window's are new. Safe
    // to send again: a part sent again gets the same envelope ids (a window's also from the job's
    // retry, but for rows due by then), adding nothing twice while they wait; one handed over and
    // removed is, and the claim drops the second hint. A window's rows go to no window (it is open).
    for await (const hints of parts) await retryHandOff(() => this.hotQueue.enqueue(hints, now, { repair: data.x === 1, resent: windowStart === undefined, addedAtMs: addedAtMs - ahead }));
    return 0;
  }
}
