import { KIND_ASSERT_EVERY_MS, type KindRegistration, type KindsRepository } from '@almanac/persistence';
import { Ticker } from '@almanac/platform';
import type { Logger } from 'pino';
import { ANOTHER_DEFINITION_IN_USE, judgeRefusalsBy, type RefusalJudge } from './handler';
import type { HandlerRegistry } from './handler-registry';

/** A refusal reads a kind's registry entry again at most this often per kind, so a flood of bad payloads is no flood of queries. */
export const KIND_REREAD_EVERY_MS = 1_000;
/** How long such a reading is waited for (every wait on Postgres is bounded). */
export const KIND_READ_WAIT_MS = 2_000;

/** A refusal's reading of its kind's registry entry: when asked (ms, a monotonic clock: NTP steps no interval), and its answer once it came. */
interface Reading {
  askedMs: number;
  answer?: ReadingAnswer;
  answered: Promise<void>;
}
/** When it was read (ms, the database's clock; 0: it failed) and whether it found another definition in use. */
interface ReadingAnswer {
  readAtMs: number;
  anotherInUse: boolean;
}

/**
 * A worker's kinds in the registry: asserted before it takes work and every KIND_ASSERT_EVERY_MS
 * after, so the registry keeps the newest definition still asserted (REGISTER_KINDS_SQL). It
 * judges its handlers' schema refusals (keepRefused).
 */
export class KindAssertion implements RefusalJudge {
  private readonly ticker: Ticker;
  /** Kinds whose chosen definition is another worker's, with its pool: each said once, not every 30 s. */
  private superseded = new Map<string, string>();
  /** Per kind, the last reading on a refusal. */
  private readonly readings = new Map<string, Reading>();

  constructor(
    private readonly kinds: KindsRepository,
    readonly registrations: readonly KindRegistration[],
    private readonly workerId: string,
    private readonly logger: Logger,
    /** The handlers it runs, whose refused payloads it judges. */
    handlers?: HandlerRegistry,
  ) {
    this.ticker = new Ticker({
      turn: () => this.runOnce(),
      everyMs: KIND_ASSERT_EVERY_MS,
      firstAfterMs: KIND_ASSERT_EVERY_MS,
      onError: (err) => logger.warn({ err }, 'could not assert the kinds in the registry; trying again'),
      unref: true,
    });
    for (const r of registrations) {
      const handler = handlers?.get(r.kind);
      if (handler) judgeRefusalsBy(handler, this);
    }
  }

  async runOnce(): Promise<void> {
    const { moved, superseded } = await this.kinds.register(this.registrations, this.workerId);
    for (const m of moved) this.logger.warn({ kind: m.kind, from: m.previousPool }, 'kind moved to another pool by this registration');
    const now = new Map(superseded.map((s) => [s.kind, s.pool]));
    for (const [kind, pool] of now) this.supersededBy(kind, pool);
    for (const kind of this.superseded.keys()) if (!now.has(kind)) this.logger.info({ kind }, "this worker's definition of the kind is in use again");
    this.superseded = now;
  }

  /**
   * Why a job of `kind` made at `createdAt`, whose payload this worker's schema refused, is kept
   * (snoozed, no attempt spent) rather than discarded. The API checked it against the registry's
   * definition, which may be a newer build's this worker has not heard of since its last
   * assertion: it is discarded only once a reading made after the job was (that definition was in
   * the registry by then) finds this worker's definition in use. Read at most every
   * KIND_REREAD_EVERY_MS per kind (`nowMs`: a monotonic clock's); a job no such reading covers is
   * kept, to be judged again.
   */
  async keepRefused(kind: string, createdAt: Date, nowMs = performance.now()): Promise<string | undefined> {
    let last = this.readings.get(kind);
    // A reading that found another definition in use is read again once the assertion no longer says so.
    const outdated = (a: ReadingAnswer) => a.readAtMs <= createdAt.getTime() || a.anotherInUse;
    if (!this.superseded.has(kind) && (!last || (last.answer && outdated(last.answer) && nowMs - last.askedMs >= KIND_REREAD_EVERY_MS))) {
      const reading: Reading = { askedMs: nowMs, answered: this.read(kind).then((a) => void (reading.answer = a)) };
      this.readings.set(kind, (last = reading));
    }
    await last?.answered;
    if (this.superseded.has(kind)) return ANOTHER_DEFINITION_IN_USE;
    const answer = last?.answer;
    if (answer?.readAtMs === 0) return 'the kind registry could not be read; judged again later';
    // Strictly after: an id carries its creation time to the millisecond, floored.
    if (answer === undefined || answer.readAtMs <= createdAt.getTime()) return 'the kind registry was not read since the job was made; judged again later';
    // The covering reading's own verdict: an assertion answered since may have been read before it.
    return answer.anotherInUse ? ANOTHER_DEFINITION_IN_USE : undefined;
  }

  /** Reads `kind`'s registry entry against this worker's definition. */
  private async read(kind: string): Promise<ReadingAnswer> {
    const own = this.registrations.find((r) => r.kind === kind);
    if (!own) return { readAtMs: 0, anotherInUse: false };
    try {
      const { readAt, supersededBy } = await this.kinds.standing(own, KIND_READ_WAIT_MS);
      if (supersededBy !== undefined) this.supersededBy(kind, supersededBy);
      return { readAtMs: readAt.getTime(), anotherInUse: supersededBy !== undefined };
    } catch (err) {
      this.logger.warn({ err, kind }, 'could not read the kind registry to judge a refused payload; its job is kept');
      return { readAtMs: 0, anotherInUse: false };
    }
  }

  private supersededBy(kind: string, pool: string): void {
    if (this.superseded.get(kind) === pool) return;
    const own = this.registrations.find((r) => r.kind === kind)?.pool;
    this.logger.warn({ kind, pool, ownPool: own }, "another live worker build defines this kind differently, and its definition is the one in use (a rolling update, or deployments that disagree)");
    this.superseded.set(kind, pool);
  }

  start(): void {
    this.ticker.start();
  }

  stop(): Promise<void> {
    return this.ticker.stop();
  }
}
