import { Queue } from 'bullmq';
import { closeRedis, duplicateRedis, type RedisClient } from '../redis/redis';
import { within } from '../time/within';
import { CoarseWindows } from './coarse-windows';
import { type EnvelopeData, type EnvelopeOptions, envelopesOf, hintsOf, windowEnvelope } from './envelope';
import type { Hint } from '@almanac/domain';

export const HOT_QUEUE_NAME = 'hot';

/** Every envelope's BullMQ job name: one byte, stored in every job's hash. */
const ENVELOPE_NAME = 'e';

/**
 * The hot queue's own BullMQ options, the same wherever it is opened (each Queue writes them to
 * the queue's meta). Its event stream is read by nobody: BullMQ's 10,000 entries cost ~50 B a row
 * of Redis when the API adds a few hot rows per request (a test of 9,000 rows, 3 per add).
 */
export const HOT_QUEUE_OPTIONS = { streams: { events: { maxLen: 100 } } } as const;

const DEFAULT_WAIT_MS = 5000;
const REPLACE_AT_MOST_EVERY_MS = 1000;

/**
 * The hot queue: hints for the rows due in the next hours, in envelopes (see envelopesOf), one
 * BullMQ job each. The one way a hint enters Redis: the API at ingest, the promoter, a worker's
 * retry, the overdue sweep's repair all add here, and the dispatcher takes envelopes as they come
 * due. Nothing ever looks a hint up to remove it: cancel and reschedule change the row, and the
 * claim drops a hint the row no longer wants.
 *
 * Its producer side (the Queue and the windows' lists) has a connection of its own without
 * ioredis' offline queue: on BullMQ's connection (`maxRetriesPerRequest: null`, offline queue on)
 * every add made while Redis was down waited in memory, `within()` giving up on it but not
 * cancelling it, and all of them landed at once on reconnect (1,000 enqueues left 1,000
 * commands queued, hot-queue.spec.ts). Now a command Redis cannot take fails at once, and one
 * in flight when the connection drops fails at the next reconnect attempt instead of being sent
 * again. The dispatcher's Worker stays on BullMQ's connection (OpsModule): its blocking reads
 * need the retries. Every wait here is still bounded by `waitMs`: a stalled Redis fails an
 * enqueue, never hangs it.
 */
export class HotQueue {
  readonly windows: CoarseWindows;
  private current: Queue<EnvelopeData, unknown, string>;
  private closing = false;
  private replacedAtMs = -Infinity;

  private constructor(
    private readonly producer: RedisClient,
    private readonly prefixName: string,
    private readonly waitMs: number,
  ) {
    this.current = this.newQueue();
    // The windows' lists share the producer's connection: their keys are in the queue's slot on a cluster.
    this.windows = new CoarseWindows(producer, prefixName, waitMs, () => this.current.waitUntilReady());
  }

  /**
   * The hot queue under `prefix` on a connection of its own to where `connection` goes (closed
   * with it); `connection` stays its caller's to close.
   */
  static open(connection: RedisClient, prefix: string, waitMs = DEFAULT_WAIT_MS): HotQueue {
    const producer = duplicateRedis(connection, { enableOfflineQueue: false, autoResendUnfulfilledCommands: false, maxRetriesPerRequest: 0 });
    producer.on('error', () => undefined); // reported by the process-wide connection (createRedis)
    return new HotQueue(producer, prefix, waitMs);
  }

  /** The BullMQ Queue (tests and tools). */
  get queue(): Queue<EnvelopeData, unknown, string> {
    return this.current;
  }

  /**
   * BullMQ sets a Queue's connection up once, as it connects (its version check, an INFO): on a
   * connection that resends nothing, a Redis lost during that INFO failed the setup, and every
   * call after it, for good. A Queue whose setup failed is replaced (on the same connection: the
   * new one waits for its next connect); the calls that saw the failure fail, bounded as ever.
   * At most one replacement a second: a setup that fails every time (INFO denied by an ACL) would
   * otherwise send an INFO and make a Queue every round trip.
   */
  private newQueue(): Queue<EnvelopeData, unknown, string> {
    const queue = new Queue<EnvelopeData, unknown, string>(HOT_QUEUE_NAME, { connection: this.producer, prefix: this.prefixName, ...HOT_QUEUE_OPTIONS });
    // Connection errors are the connection owner's to report (once per outage); without a
    // listener BullMQ prints every reconnect failure to stderr.
    queue.on('error', () => undefined);
    queue.waitUntilReady().catch(() => {
      const replace = () => {
        if (this.closing || this.current !== queue || this.producer.status === 'end') return;
        this.replacedAtMs = Date.now();
        this.current = this.newQueue();
        void queue.close().catch(() => undefined); // its listeners on the shared connection
      };
      const waitMs = this.replacedAtMs + REPLACE_AT_MOST_EVERY_MS - Date.now();
      if (waitMs > 0) setTimeout(replace, waitMs).unref();
      else replace();
    });
    return queue;
  }

  get prefix(): string {
    return this.prefixName;
  }

  /**
   * Adds hints: rows due beyond the fine horizon to their coarse windows' lists (one round trip),
   * each window's one job and the other rows' envelopes in another (`addBulk`). A dispatcher's
   * resend goes in envelopes of its own (see EnvelopeOptions). No removeOn* per job:
   * every option byte is stored in each job's hash (the consumer's Worker options say it once).
   */
  async enqueue(hints: readonly Hint[], now: Date, opts: EnvelopeOptions = {}): Promise<void> {
    if (hints.length === 0) return;
    // Until the first connect nothing can be sent (no offline queue): wait for it, boundedly.
    await within(this.waitMs, this.current.waitUntilReady(), 'hot queue connect');
    const nowMs = now.getTime();
    // A repair's far rows share windows too: its mark matters only to rows already due (a
    // promoter finding Redis emptied re-hints every queued row: ~1 KB a row in envelopes of their own).
    const windowed = opts.resent ? { windows: [], rest: hints } : await this.windows.add(hints, nowMs);
    // The rest: rows due within the fine horizon, and rows an open window refused (a producer's
    // clock behind the dispatcher's), which go in a coarse envelope of their own.
    const envelopes = [...windowed.windows.map((w) => windowEnvelope(w, nowMs)), ...envelopesOf(windowed.rest, nowMs, opts)];
    const timestamp = opts.addedAtMs; // unset: BullMQ's own Date.now() at the add, and no key stored
    const jobs = envelopes.map((e) => ({
      name: ENVELOPE_NAME, data: e.data, opts: timestamp === undefined ? { jobId: e.jobId, delay: e.delayMs } : { jobId: e.jobId, delay: e.delayMs, timestamp },
    }));
    if (jobs.length > 0) await within(this.waitMs, this.current.addBulk(jobs), 'hot queue addBulk');
    // Only once the jobs are in: a failed add leaves the flag unset, and the next add adds the job.
    await this.windows.jobAdded(windowed.windows, nowMs);
  }

  /** The hints waiting or delayed in the hot queue, with their envelope's state, windows opened (tests and tools). */
  async held(): Promise<{ hint: Hint; state: 'waiting' | 'delayed' }[]> {
    const out: { hint: Hint; state: 'waiting' | 'delayed' }[] = [];
    for (const state of ['waiting', 'delayed'] as const) {
      for (const job of await this.current.getJobs([state])) {
        if (!job) continue;
        const hints = job.data.w === undefined ? hintsOf(job.data) : await this.windows.peek(job.data.w);
        for (const hint of hints) out.push({ hint, state });
      }
    }
    return out;
  }

  async close(): Promise<void> {
    this.closing = true;
    await this.current.close();
    await closeRedis(this.producer);
  }
}

/**
 * What every Almanac consumer Worker removes once a queue job is finished: everything. The rows
 * and their attempts keep the history, and an envelope's id is derived from its rows: one left
 * in Redis would turn the next add of the same rows (a promoter retry after a crash) into a
 * silent no-op. (`true` is not accepted by BullMQ 6.7's Worker here; `{count: 0}` is.)
 */
export const CONSUMER_REMOVAL = {
  removeOnComplete: { count: 0 },
  removeOnFail: { count: 0 },
} as const;
