import { type Liveness, LIVENESS_FLOOR_MS } from '@almanac/platform';
import type { Logger } from 'pino';
import type { Dispatcher } from './dispatcher';

/** Refill cadence while a pool has a backlog: a worker frees slots within milliseconds. */
const BUSY_MS = 5;
/** Nothing parked: only observe() runs, to learn of other replicas' parking and update gauges. */
const IDLE_MS = 100;
const OBSERVE_MS = 1000;
const LIVENESS_NAME = 'dispatcher-loop';

/**
 * The dispatcher's own timer: refills pools from the backlog as they get room, and observes the
 * pools once a second. Never overlaps itself; a failed turn is logged and the next one retries.
 */
export class DispatcherLoop {
  private timer: NodeJS.Timeout | undefined;
  private stopped = true;
  private running: Promise<void> | undefined;
  private lastObserve = 0;

  constructor(
    private readonly dispatcher: Dispatcher,
    private readonly logger: Logger,
    /** Told after every turn: a loop that stops turning fails /health/live. */
    private readonly liveness?: Liveness,
  ) {}

  /** One turn: observe if due, then refill. Returns how many jobs it moved. */
  async runOnce(nowMs = Date.now()): Promise<number> {
    if (nowMs - this.lastObserve >= OBSERVE_MS || nowMs < this.lastObserve) {
      this.lastObserve = nowMs;
      await this.dispatcher.observe();
    }
    return this.dispatcher.refillOnce();
  }

  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    this.liveness?.beat(LIVENESS_NAME, LIVENESS_FLOOR_MS);
    this.schedule(0);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.liveness?.forget(LIVENESS_NAME);
    clearTimeout(this.timer);
    await this.running;
  }

  private schedule(ms: number): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.running = this.turn();
    }, ms);
  }

  private async turn(): Promise<void> {
    let next: number;
    try {
      const moved = await this.runOnce();
      next = moved > 0 || this.dispatcher.backloggedPools.length > 0 ? BUSY_MS : IDLE_MS;
    } catch (err) {
      this.logger.error({ err }, 'dispatcher refill failed; retrying');
      next = OBSERVE_MS;
    }
    if (!this.stopped) this.liveness?.beat(LIVENESS_NAME, LIVENESS_FLOOR_MS);
    this.schedule(next);
  }
}
